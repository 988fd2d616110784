package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// rawSession is a bare JSON-RPC client of the Streamable HTTP endpoint: the
// least a client can cost, so the figures are the daemon's.
type rawSession struct {
	url, key, session string
	hc                *http.Client
	id                int
}

func (r *rig) rawSession(tb testing.TB, key string) *rawSession {
	tb.Helper()
	s := &rawSession{url: r.url + "/mcp", key: key, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	resp, err := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil {
		tb.Fatal(err)
	}
	s.session = resp.Header.Get("Mcp-Session-Id")
	if _, err := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		tb.Fatal(err)
	}
	return s
}

func (s *rawSession) post(body string) (*http.Response, error) {
	req, err := http.NewRequest("POST", s.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%d: %s", resp.StatusCode, b)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// call invokes a tool and returns the body, failing on a tool error.
func (s *rawSession) call(tool string, args map[string]any) ([]byte, error) {
	s.id++
	a, _ := json.Marshal(args)
	resp, err := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, s.id, tool, a))
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(resp.Body)
	if bytes.Contains(b, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("%s: %s", tool, b)
	}
	return b, nil
}

// toolsListBytes is the size of a tools/list answer's result.
func (s *rawSession) toolsListBytes() (int, int, error) {
	s.id++
	resp, err := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, s.id))
	if err != nil {
		return 0, 0, err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &msg); err != nil {
		return 0, 0, fmt.Errorf("tools/list: %w: %s", err, b)
	}
	var list struct{ Tools []json.RawMessage }
	json.Unmarshal(msg.Result, &list) //nolint:errcheck // counted below
	return len(msg.Result), len(list.Tools), nil
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
			r := newRig(b, func(cfg map[string]any) { cfg["tools"] = map[string]any{"mode": mode} })
			r.start()
			s := r.rawSession(b, r.key("operator"))
			var n, tools int
			for b.Loop() {
				var err error
				if n, tools, err = s.toolsListBytes(); err != nil {
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
	r := newRig(b, nil)
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
	r := newRig(b, nil)
	r.start()
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
		s := r.rawSession(b, r.key("operator"))
		args := map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}
		var d []time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := s.call("proxmox_api_call", args); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(t0))
		}
		reportPercentiles(b, d, "")
	})
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
			r := newRig(b, realSchema(b))
			r.start()
			var ks []string
			for i := range keysN {
				ks = append(ks, r.keyNamed(b, fmt.Sprintf("bench-%d", i), "read-only"))
			}
			sessions := make([]*rawSession, 16)
			for i := range sessions {
				sessions[i] = r.rawSession(b, ks[i%len(ks)])
				if _, err := sessions[i].call("proxmox_schema_status", nil); err != nil { // warm the key cache
					b.Fatal(err)
				}
			}
			var next sync.Mutex
			remaining := 0
			b.ResetTimer()
			start := time.Now()
			remaining = b.N
			var wg sync.WaitGroup
			errc := make(chan error, len(sessions))
			for _, s := range sessions {
				wg.Add(1)
				go func(s *rawSession) {
					defer wg.Done()
					for {
						next.Lock()
						if remaining == 0 {
							next.Unlock()
							return
						}
						remaining--
						next.Unlock()
						if _, err := s.call("proxmox_schema_status", nil); err != nil {
							errc <- err
							return
						}
					}
				}(s)
			}
			wg.Wait()
			elapsed := time.Since(start)
			select {
			case err := <-errc:
				b.Fatal(err)
			default:
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
		})
	}
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
