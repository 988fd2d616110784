package changes

import (
	"context"
	"fmt"
	"testing"
)

// What previewing an undo costs as the history of the configuration since
// the operation grows (reads through the daemon, each an observation undo
// must check): the journal's rows are read and judged, PVE is a fake.
func BenchmarkUndoPreview(b *testing.B) {
	for _, later := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("later=%d", later), func(b *testing.B) {
			l := newUndoLedger(b)
			id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096), "cores": float64(4)})
			for range later {
				l.read("agent", after)
			}
			p := &undoPVEFake{conf: after}
			u := testUndoer(b, l, p, nil)
			b.ResetTimer()
			for b.Loop() {
				plan, err := u.Preview(context.Background(), id)
				if err != nil || plan.Status != UndoReady {
					b.Fatalf("%+v %v", plan, err)
				}
			}
		})
	}
}
