package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// session opens a bare MCP session (transport/mcptest) with a key.
func (r *rig) session(tb testing.TB, key string) *mcptest.Session {
	tb.Helper()
	s, err := mcptest.Dial(r.url+"/mcp", key)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func reportPercentiles(b *testing.B, d []time.Duration, prefix string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), prefix+"p50-µs")
	b.ReportMetric(p(0.99), prefix+"p99-µs")
}

// BenchmarkToolsListBytes: the size of tools/list per mode, for an operator
// key, with the built-in schema and (when the fixtures are present) the
// real PVE 9.1 schema.
func BenchmarkToolsListBytes(b *testing.B) {
	for _, mode := range []string{"compact", "search", "expanded"} {
		b.Run(mode, func(b *testing.B) {
			real := realSchema(b)
			r := newRig(b, func(cfg map[string]any) {
				if real != nil {
					real(cfg)
				}
				cfg["tools"] = map[string]any{"mode": mode}
			})
			r.start()
			s := r.session(b, r.key("operator"))
			var n, tools int
			for b.Loop() {
				var err error
				if n, tools, err = s.ToolsList(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "bytes")
			b.ReportMetric(float64(tools), "tools")
		})
	}
}

// BenchmarkColdStart: from a configuration on disk to a listener that
// answers, as `serve` does it (schema parse, keys, policies, journal).
func BenchmarkColdStart(b *testing.B) {
	r := newRig(b, realSchema(b))
	r.d.jrnl.Close()
	cfg, err := config.Load(r.cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		d, err := New(ctx, Options{Config: cfg, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		<-d.Ready()
		resp, err := http.Get("http://" + d.Addresses()["loopback"] + "/healthz")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkCallOverhead: one read of a VM's status through the daemon
// (bearer check, policy, validation, journal row, shaping) against the same
// read sent straight to the simulator with the PVE client. The difference
// of the medians is the daemon's overhead.
func BenchmarkCallOverhead(b *testing.B) {
	r := unlimitedRig(b)
	key := r.key("operator")
	b.Run("direct", func(b *testing.B) {
		c := r.pveClient(b, "operator")
		var d []time.Duration
		for b.Loop() {
			t0 := time.Now()
			var out map[string]any
			if err := c.Get(context.Background(), "/nodes/pve1/qemu/101/status/current", nil, &out); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(t0))
		}
		reportPercentiles(b, d, "")
	})
	b.Run("daemon", func(b *testing.B) {
		s := r.session(b, key)
		args := map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}
		if _, err := s.Call("proxmox_api_call", args); err != nil { // the key's first check, the visibility
			b.Fatal(err)
		}
		settleKeys()
		var d []time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := s.Call("proxmox_api_call", args); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(t0))
		}
		reportPercentiles(b, d, "")
	})
}

// BenchmarkCallOverhead16: the read of BenchmarkCallOverhead from 16
// clients at once, each sending its next call when its last is answered:
// straight to the simulator (one PVE client shared, as the daemon shares
// it) and through the daemon (a session and an operator key each). ns/op
// is per call across all clients; p50 and p99 are of single calls.
func BenchmarkCallOverhead16(b *testing.B) {
	const clients = 16
	r := unlimitedRig(b)
	const path = "/nodes/pve1/qemu/101/status/current"
	b.Run("direct", func(b *testing.B) {
		c := r.pveClient(b, "operator")
		call := func(int) error {
			var out map[string]any
			return c.Get(context.Background(), path, nil, &out)
		}
		runConcurrently(b, clients, call)
	})
	b.Run("daemon", func(b *testing.B) {
		sessions := make([]*mcptest.Session, clients)
		args := map[string]any{"method": "GET", "path": path}
		for i := range sessions {
			sessions[i] = r.session(b, r.keyNamed(b, fmt.Sprintf("overhead-%d-%d", time.Now().UnixNano(), i), "operator"))
			if _, err := sessions[i].Call("proxmox_api_call", args); err != nil { // the key's first check, the visibility
				b.Fatal(err)
			}
		}
		settleKeys()
		call := func(i int) error {
			_, err := sessions[i].Call("proxmox_api_call", args)
			return err
		}
		runConcurrently(b, clients, call)
	})
}

// settleKeys waits until keys.json, just written by the benchmark's key
// creation, is older than keys.RacyInterval: the calls are then measured
// as they are for any key not created or changed in the last two seconds
// (within them, each call's key check reads and hashes the file again,
// about 50 µs).
func settleKeys() { time.Sleep(keys.RacyInterval + 100*time.Millisecond) }

// runConcurrently makes b.N calls from n goroutines (call(i) is the i-th
// goroutine's), each timed, and reports their p50 and p99.
func runConcurrently(b *testing.B, n int, call func(i int) error) {
	var mu sync.Mutex
	remaining := b.N
	var d []time.Duration
	errc := make(chan error, n)
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range n {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { mu.Lock(); d = append(d, mine...); mu.Unlock() }()
			for {
				mu.Lock()
				if remaining == 0 {
					mu.Unlock()
					return
				}
				remaining--
				mu.Unlock()
				t0 := time.Now()
				if err := call(i); err != nil {
					errc <- err
					return
				}
				mine = append(mine, time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	reportPercentiles(b, d, "")
}

// pveClient is a PVE client of a tier's simulator token, as the daemon has.
func (r *rig) pveClient(tb testing.TB, tier string) *pve.Client {
	tb.Helper()
	c, err := r.d.pve.Client(tools.Tier(tier))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkThroughput16Clients: 16 clients, each with a session of its
// own, call proxmox_schema_status as fast as they can; with one key shared
// by all and with a key each. ns/op is per call across all clients; calls/s
// is reported.
func BenchmarkThroughput16Clients(b *testing.B) {
	for _, keysN := range []int{1, 16} {
		b.Run(fmt.Sprintf("keys=%d", keysN), func(b *testing.B) {
			r := unlimitedRig(b)
			var ks []string
			for i := range keysN {
				ks = append(ks, r.keyNamed(b, fmt.Sprintf("bench-%d", i), "read-only"))
			}
			sessions := make([]*mcptest.Session, 16)
			for i := range sessions {
				sessions[i] = r.session(b, ks[i%len(ks)])
				if _, err := sessions[i].Call("proxmox_schema_status", nil); err != nil { // warm the key cache
					b.Fatal(err)
				}
			}
			settleKeys()
			runConcurrently(b, len(sessions), func(i int) error {
				_, err := sessions[i].Call("proxmox_schema_status", nil)
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// unlimitedRig is a started rig on the real schema (when it is here)
// with no per-key rate limit to speak of: the daemon is measured, not
// the limiter.
func unlimitedRig(b *testing.B) *rig {
	real := realSchema(b)
	r := newRig(b, func(cfg map[string]any) {
		if real != nil {
			real(cfg)
		}
		cfg["http"] = map[string]any{"rate_per_key": 1e6, "burst_per_key": 1000}
	})
	r.start()
	return r
}

// realSchema points the daemon at the real PVE 9.1 apidoc.js when
// ../shared/fixtures is here (the simulator behind it keeps serving the
// demo schema's endpoints), so figures reflect what a host loads.
func realSchema(tb testing.TB) func(cfg map[string]any) {
	p, _ := filepath.Abs("../../shared/fixtures/pve-9.1/apidoc.js")
	if _, err := os.Stat(p); err != nil {
		tb.Logf("the real PVE 9.1 schema is not here (%v); measuring with the demo schema", err)
		return nil
	}
	return func(cfg map[string]any) { cfg["schema"] = map[string]any{"path": p} }
}
