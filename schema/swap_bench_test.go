package schema

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSwapLatency measures how long a Source with the daemon's
// settings (DefaultDebounce, a last-known-good cache) takes from the moment a new apidoc.js is
// complete on disk to the moment its registry is served (Current returns
// it and the observer has been told). The real PVE 9.1 and 8.4.5 files
// alternate, so each write is a real change. "rename" writes the new
// bytes beside the file and renames them over it, as dpkg does; the clock
// starts when rename returns. "in-place" rewrites the file itself; the
// clock starts when the write is closed. Two callers take Current and
// match an endpoint every millisecond throughout; a call that finds no
// registry or no endpoint is a failure. Reports p50/p99 in ms, failed
// calls and rejected reads (a partial file seen and refused). Run with
// -benchtime 40x: one op is one swap.
func BenchmarkSwapLatency(b *testing.B) {
	for _, mode := range []struct {
		name  string
		write func(path string, data []byte) error
	}{
		{"rename", renameOver},
		{"in-place", writeInPlace},
	} {
		b.Run(mode.name, func(b *testing.B) { benchSwap(b, mode.write) })
	}
}

func renameOver(path string, data []byte) error {
	tmp := path + ".dpkg-new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeInPlace(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }

func benchSwap(b *testing.B, write func(path string, data []byte) error) {
	versions := [][]byte{fixture(b, pve91), fixture(b, pve845)}
	sums := []string{sha256Hex(versions[0]), sha256Hex(versions[1])}
	dir := b.TempDir()
	path := filepath.Join(dir, "apidoc.js")
	if err := os.WriteFile(path, versions[1], 0o644); err != nil {
		b.Fatal(err)
	}
	served := make(chan string, 16)
	watching := make(chan struct{})
	var once sync.Once
	var rejected atomic.Int64
	src := NewSource(SourceOptions{
		Path:   path,
		Cache:  NewCache(filepath.Join(dir, "state")),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observe: func(ev Event) {
			switch ev.Kind {
			case EventReloaded:
				served <- ev.Registry.SHA256()
			case EventRejected:
				rejected.Add(1)
			case EventUnchanged:
				once.Do(func() { close(watching) })
			}
		},
	})
	if err := src.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := src.Watch(ctx); err != nil {
			b.Error(err)
		}
	})
	<-watching
	var calls, failed atomic.Int64
	for range 2 {
		wg.Go(func() { callWhileSwapping(ctx, src, &calls, &failed) })
	}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		if err := write(path, versions[i%2]); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		waitServed(b, served, sums[i%2])
		lat = append(lat, time.Since(start))
	}
	cancel()
	wg.Wait()
	reportLatency(b, lat)
	b.ReportMetric(float64(failed.Load()), "failed-calls")
	b.ReportMetric(float64(calls.Load()), "calls")
	b.ReportMetric(float64(rejected.Load()), "rejected")
}

// callWhileSwapping resolves a path on the live registry every millisecond
// until ctx ends, as a tool call would, and counts calls that fail.
func callWhileSwapping(ctx context.Context, src *Source, calls, failed *atomic.Int64) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		calls.Add(1)
		reg := src.Current()
		if reg == nil {
			failed.Add(1)
			continue
		}
		if _, _, err := reg.Match("POST", "/nodes/pve1/qemu/100/status/start"); err != nil {
			failed.Add(1)
		}
	}
}

func waitServed(b *testing.B, served <-chan string, want string) {
	b.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-served:
			if got == want {
				return
			}
		case <-deadline:
			b.Fatalf("the new apidoc.js (%s) was not served within 30 s", want[:12])
		}
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
