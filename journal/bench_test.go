package journal

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The write-path benchmarks run with one caller and with 16 concurrent
// callers. ns/op is wall time per call, so 1e9/(ns/op) is calls per second;
// p50-µs and p99-µs are the latency one caller sees for one whole call;
// rows/commit shows how many rows share one fsynced commit.

// BenchmarkRecord: a read recorded (one row).
func BenchmarkRecord(b *testing.B) { benchCalls(b, Options{}, 1, recordRead) }

// BenchmarkRecordRelaxed: a read recorded as the daemon records it
// (Options.RelaxCalls: the commit of call rows alone is not fsynced).
func BenchmarkRecordRelaxed(b *testing.B) { benchCalls(b, Options{RelaxCalls: true}, 1, recordRead) }

// BenchmarkRecordRelaxed16: the same, 16 concurrent callers.
func BenchmarkRecordRelaxed16(b *testing.B) { benchCalls(b, Options{RelaxCalls: true}, 16, recordRead) }

// BenchmarkRecord16: the same, 16 concurrent callers.
func BenchmarkRecord16(b *testing.B) { benchCalls(b, Options{}, 16, recordRead) }

// BenchmarkWriteCall: a write recorded: intent, then receipt (two rows, two
// commits one after the other).
func BenchmarkWriteCall(b *testing.B) { benchCalls(b, Options{}, 1, recordWrite) }

// BenchmarkWriteCall16: the same, 16 concurrent callers.
func BenchmarkWriteCall16(b *testing.B) { benchCalls(b, Options{}, 16, recordWrite) }

func recordRead(ctx context.Context, j *Journal) error {
	_, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK, Status: 200, Duration: time.Millisecond})
	return err
}

func recordWrite(ctx context.Context, j *Journal) error {
	in, err := j.Intent(ctx, writeCall())
	if err != nil {
		return err
	}
	_, err = j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK, Status: 200, UPID: "UPID:pve1:1:2:3:qmconfig:100:x@pve:"})
	return err
}

func benchCalls(b *testing.B, opts Options, callers int, call func(context.Context, *Journal) error) {
	j := openTest(b, opts)
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	var next atomic.Int64
	next.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(-1) >= 0 {
				start := time.Now()
				if err := call(ctx, j); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	if st := j.Stats(); st.Commits > 0 {
		b.ReportMetric(float64(st.Rows)/float64(st.Commits), "rows/commit")
	}
}

// BenchmarkVerify100k: walk and check a chain of 100,000 rows.
func BenchmarkVerify100k(b *testing.B) {
	j := openTest(b, Options{})
	fill(b, j, 100_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := j.Verify(ctx)
		if err != nil || rep.Rows != 100_000 {
			b.Fatalf("verify = %+v, %v", rep, err)
		}
	}
}

// BenchmarkRedactArgs: redact the arguments of a typical config edit.
func BenchmarkRedactArgs(b *testing.B) {
	r := testRedactor(b)
	args := map[string]any{
		"method": "POST", "path": "/nodes/pve1/qemu/100/config",
		"params": map[string]any{"memory": 4096, "cores": 4, "net0": "virtio,bridge=vmbr0,firewall=1",
			"cipassword": "hunter2", "description": "web server", "scsi0": "local-lvm:vm-100-disk-0,size=32G"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.JSON("/nodes/{node}/qemu/{vmid}/config", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTail: read the last 100 rows.
func BenchmarkTail(b *testing.B) {
	j := openTest(b, Options{})
	fill(b, j, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if evs, err := j.Tail(ctx, 100); err != nil || len(evs) != 100 {
			b.Fatal(len(evs), err)
		}
	}
}

// BenchmarkFsync is the floor under every durable commit on this disk: a
// 200-byte append and an fsync of a plain file, no SQLite.
func BenchmarkFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "fsync"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := make([]byte, 200)
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
