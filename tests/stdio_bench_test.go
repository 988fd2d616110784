package tests

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// stdioPeer is a bare MCP client over a `proxmox-mcp stdio` process: one
// JSON-RPC message per line, one request at a time, so that what is timed
// is the daemon's work and the pipe, not a client library's.
type stdioPeer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startStdioPeer(tb testing.TB, h stdioHost, key string) *stdioPeer {
	tb.Helper()
	argv := h.command(tb)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PMCP_KEY="+key)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &stdioPeer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	tb.Cleanup(func() {
		p.in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// request sends one request and returns the raw result of its answer.
func (p *stdioPeer) request(tb testing.TB, method string, params any) json.RawMessage {
	tb.Helper()
	p.id++
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := p.in.Write(append(msg, '\n')); err != nil {
		tb.Fatalf("%s: write: %v", method, err)
	}
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			tb.Fatalf("%s: read: %v", method, err)
		}
		var ans struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &ans); err != nil {
			tb.Fatalf("%s: answer %q: %v", method, line, err)
		}
		if ans.ID == nil || *ans.ID != p.id {
			continue // a notification
		}
		if ans.Error != nil {
			tb.Fatalf("%s: error %s", method, ans.Error)
		}
		return ans.Result
	}
}

func (p *stdioPeer) notify(tb testing.TB, method string) {
	tb.Helper()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if _, err := p.in.Write(append(msg, '\n')); err != nil {
		tb.Fatal(err)
	}
}

func (p *stdioPeer) initialize(tb testing.TB) {
	tb.Helper()
	p.request(tb, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bench", "version": "1"},
	})
	p.notify(tb, "notifications/initialized")
}

// callTool calls a tool and fails the benchmark on a tool error.
func (p *stdioPeer) callTool(tb testing.TB, name string, args map[string]any) json.RawMessage {
	tb.Helper()
	res := p.request(tb, "tools/call", map[string]any{"name": name, "arguments": args})
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError {
		tb.Fatalf("%s: %s (%v)", name, res, err)
	}
	return res
}

// latencies reports the p50 and p99 of ds as benchmark metrics.
func reportLatencies(b *testing.B, ds []time.Duration, unit string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms"+unit)
	b.ReportMetric(at(0.99), "p99-ms"+unit)
}

// BenchmarkStdioCall: the built binary as `proxmox-mcp stdio` on the real
// PVE 9.1 schema (the demo schema without ../shared), an operator key, a
// bare line-by-line client; each op is one tools/call of
// proxmox_schema_status, journaled as every call is. Reports the p50 and
// p99 of one call as the client sees it. The journal is in the test's
// temporary directory (the VM's disk, or tmpfs where TMPDIR says so).
//
// The calls are timed once keys.json is more than keys' racy interval
// (2 s) old, as it is for any key but one created or changed in the last
// two seconds: within it, every call's recheck reads and hashes the file
// again (a change of the same size and time could not be seen otherwise),
// about 50 µs a call.
func BenchmarkStdioCall(b *testing.B) {
	h := startStdioHostWith(b, benchSchema(b))
	p := startStdioPeer(b, h, h.key(b, "bench", "operator"))
	p.initialize(b)
	for range 20 { // warm: the key's verification, visibility, caches
		p.callTool(b, "proxmox_schema_status", nil)
	}
	time.Sleep(keys.RacyInterval + 100*time.Millisecond)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		p.callTool(b, "proxmox_schema_status", nil)
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	reportLatencies(b, ds, "")
}

// BenchmarkStdioFirstToolsList: the first tools/list of a `proxmox-mcp
// stdio` session, as a client that has just started the process sees it:
// each op starts a process with a key of the profile, initializes, and
// times the first tools/list (the key's verification, the policy's
// visibility on this registry, the list's encoding). Reports its p50 and
// p99 and the answer's size.
func BenchmarkStdioFirstToolsList(b *testing.B) {
	schema := benchSchema(b)
	for _, profile := range []string{"read-only", "operator", "root"} {
		b.Run(profile, func(b *testing.B) {
			h := startStdioHostWith(b, schema)
			key := h.key(b, "bench", profile)
			ds := make([]time.Duration, 0, b.N)
			size := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				p := startStdioPeer(b, h, key)
				p.initialize(b)
				b.StartTimer()
				t0 := time.Now()
				res := p.request(b, "tools/list", map[string]any{})
				ds = append(ds, time.Since(t0))
				size = len(res)
				b.StopTimer()
				p.in.Close()
				p.cmd.Wait()
				b.StartTimer()
			}
			b.StopTimer()
			reportLatencies(b, ds, "")
			b.ReportMetric(float64(size), "bytes")
		})
	}
}

// benchSchema is the real PVE 9.1 apidoc.js when ../shared is here, the
// simulator's demo schema otherwise (said in the log).
func benchSchema(b *testing.B) []byte {
	p := "../../shared/fixtures/pve-9.1/apidoc.js"
	data, err := os.ReadFile(p)
	if err != nil {
		b.Logf("the real PVE 9.1 schema is not here (%v): measuring on the demo schema", err)
		return sim.DemoSchema()
	}
	return data
}
