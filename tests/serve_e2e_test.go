package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// served is `proxmox-mcp serve --config` running in front of the simulator.
type served struct {
	host stdioHost
	cfg  map[string]any
	url  string
	proc *process
}

// startServe writes a loopback listener on a free port into the host's
// configuration and runs `proxmox-mcp serve` until /healthz answers.
func startServe(t testing.TB, h stdioHost, edits ...func(cfg map[string]any)) *served {
	t.Helper()
	s := launchServe(t, h, nil, edits...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /healthz within 30 s\nstderr:\n%s", s.proc.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// launchServe writes a loopback listener on a free port into the host's
// configuration and starts `proxmox-mcp serve` with env added to this
// process's environment; it does not wait for it.
func launchServe(t testing.TB, h stdioHost, env []string, edits ...func(cfg map[string]any)) *served {
	t.Helper()
	raw, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{host: h}
	if err := json.Unmarshal(raw, &s.cfg); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	s.cfg["listen"] = map[string]any{"loopback": map[string]any{"address": addr}}
	s.cfg["metrics"] = map[string]any{"address": "127.0.0.1:0"}
	for _, edit := range edits {
		edit(s.cfg)
	}
	s.writeConfig(t)
	s.url = "http://" + addr
	cmd := exec.Command(binary(t), "serve", "--config", h.config)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	s.proc = &process{name: "proxmox-mcp serve", cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = s.proc.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.proc.stop(t) })
	return s
}

func (s *served) writeConfig(t testing.TB) {
	t.Helper()
	b, err := json.MarshalIndent(s.cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.host.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// freeLoopbackAddr finds a free TCP port on 127.0.0.1.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// connect opens an MCP session over Streamable HTTP with a key.
func (s *served) connect(t testing.TB, key string) (*client.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, err := client.NewStreamableHttpClient(s.url+"/mcp", mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "serve-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

func callText(t testing.TB, c *client.Client, ctx context.Context, name string, args map[string]any) (bool, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res.IsError, b.String()
}

// The built binary serves from a configuration file: a key-holder starts a
// VM; SIGHUP applies read_only from the edited file and the next write is
// refused naming the switch; `audit tail --json` reads every call from the
// journal while the daemon runs; SIGTERM stops it cleanly.
func TestServeBinary(t *testing.T) {
	h := startStdioHost(t)
	key := h.key(t, "alice", "operator")
	s := startServe(t, h)
	c, ctx := s.connect(t, key)

	if isErr, text := callText(t, c, ctx, "proxmox_api_call", map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 60}); isErr || !strings.Contains(text, "task finished OK") {
		t.Fatalf("start: %s", text)
	}

	s.cfg["read_only"], s.cfg["allow_mutations"] = true, false
	s.writeConfig(t)
	if err := s.proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.proc.stderr.String(), "daemon: reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged within 10 s of SIGHUP\nstderr:\n%s", s.proc.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/shutdown"}
	if isErr, text := callText(t, c, ctx, "proxmox_api_call", stop); !isErr || !strings.Contains(text, "read_only switch is on") {
		t.Fatalf("a write after SIGHUP applied read_only: %s", text)
	}

	out, err := exec.Command(binary(t), "audit", "tail", "--json", "-n", "50", "--state-dir", h.stateDir).Output()
	if err != nil {
		t.Fatalf("audit tail: %v", err)
	}
	var kinds []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var row struct {
			Kind         string `json:"kind"`
			Outcome      string `json:"outcome"`
			PathTemplate string `json:"path_template"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("audit tail line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, fmt.Sprintf("%s:%s:%s", row.Kind, row.Outcome, row.PathTemplate))
	}
	joined := strings.Join(kinds, "\n")
	for _, want := range []string{
		"intent:pending:/nodes/{node}/qemu/{vmid}/status/start",
		"receipt:ok:/nodes/{node}/qemu/{vmid}/status/start",
		"call:denied:/nodes/{node}/qemu/{vmid}/status/shutdown",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("audit tail lacks %s:\n%s", want, joined)
		}
	}
}

// BenchmarkServeUnderLoad: the built binary (`serve`, with the simulator
// in a process of its own) and 16 MCP clients over loopback HTTP, each with
// a key of its own. schema_status: every call is proxmox_schema_status;
// mixed: half of them read a VM's status through PVE. With the real PVE 9.1
// schema when ../shared/fixtures is here, the built-in demo schema
// otherwise. Reports calls/s, and the daemon's peak resident memory (VmHWM)
// and resident memory after the run (VmRSS) in MiB.
func BenchmarkServeUnderLoad(b *testing.B) {
	schema, name := sim.DemoSchema(), "demo"
	if p, _ := filepath.Abs("../../shared/fixtures/pve-9.1/apidoc.js"); p != "" {
		if data, err := os.ReadFile(p); err == nil {
			schema, name = data, "pve-9.1"
		}
	}
	for _, mix := range []string{"schema_status", "mixed"} {
		b.Run(name+"/"+mix, func(b *testing.B) { serveUnderLoad(b, schema, mix == "mixed") })
	}
}

func serveUnderLoad(b *testing.B, schema []byte, mixed bool) {
	h := startStdioHostWith(b, schema)
	var keys []string
	for i := range 16 {
		keys = append(keys, h.key(b, fmt.Sprintf("load-%d", i), "operator"))
	}
	// The per-key rate limit (100 calls/s by default) is raised: this
	// measures how fast the daemon serves, not the limit.
	s := startServe(b, h, func(cfg map[string]any) { cfg["http"] = map[string]any{"rate_per_key": 1e6, "burst_per_key": 1000} })
	sessions := make([]*mcptest.Session, len(keys))
	for i, k := range keys {
		ss, err := mcptest.Dial(s.url+"/mcp", k)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(ss.Close)
		sessions[i] = ss
	}
	calls := []struct {
		name string
		args map[string]any
	}{
		{"proxmox_schema_status", nil},
		{"proxmox_api_call", map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}},
	}
	if !mixed {
		calls = calls[:1]
	}
	hwmStart, _ := procMemory(b, s.proc.cmd.Process.Pid)
	// Warm up: each key's first verification (scrypt) and visibility.
	for _, ss := range sessions {
		if _, err := ss.Call(calls[0].name, calls[0].args); err != nil {
			b.Fatal(err)
		}
	}
	hwmWarm, _ := procMemory(b, s.proc.cmd.Process.Pid)
	var mu sync.Mutex
	remaining := 0
	b.ResetTimer()
	start := time.Now()
	remaining = b.N
	var wg sync.WaitGroup
	errc := make(chan error, len(sessions))
	for i, ss := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				mu.Lock()
				if remaining == 0 {
					mu.Unlock()
					return
				}
				remaining--
				mu.Unlock()
				cl := calls[(i+n)%len(calls)]
				if _, err := ss.Call(cl.name, cl.args); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	hwm, rss := procMemory(b, s.proc.cmd.Process.Pid)
	b.ReportMetric(hwmStart, "peak-RSS-at-start-MiB")
	b.ReportMetric(hwmWarm, "peak-RSS-after-16-keys-MiB")
	b.ReportMetric(hwm, "peak-RSS-MiB")
	b.ReportMetric(rss, "RSS-MiB")
}

// procMemory reads VmHWM and VmRSS of a process, in MiB.
func procMemory(tb testing.TB, pid int) (hwm, rss float64) {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			hwm = kb / 1024
		case "VmRSS:":
			rss = kb / 1024
		}
	}
	return hwm, rss
}

// `stdio --local-root` acts as root without a key for uid 0 only, and the
// journal names the caller local-root; for anyone else it refuses to start.
func TestStdioLocalRoot(t *testing.T) {
	h := startStdioHost(t)
	if os.Geteuid() != 0 {
		out, err := exec.Command(binary(t), "stdio", "--config", h.config, "--local-root").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--local-root is only for uid 0") {
			t.Fatalf("non-root --local-root: %v\n%s", err, out)
		}
		return
	}
	c, err := client.NewStdioMCPClient(binary(t), os.Environ(), "stdio", "--config", h.config, "--local-root")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if isErr, text := callText(t, c, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}); isErr {
		t.Fatalf("read as local-root: %s", text)
	}
	c.Close()
	out, err := exec.Command(binary(t), "audit", "tail", "--json", "-n", "5", "--state-dir", h.stateDir).Output()
	if err != nil {
		t.Fatalf("audit tail: %v", err)
	}
	if !strings.Contains(string(out), `"key_id":"local-root"`) || !strings.Contains(string(out), `"transport":"stdio"`) {
		t.Errorf("the journal does not name local-root:\n%s", out)
	}
	// A key and --local-root together are refused.
	cmd := exec.Command(binary(t), "stdio", "--config", h.config, "--local-root")
	cmd.Env = append(os.Environ(), "PMCP_KEY=pmcp_x_y")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--local-root takes no key") {
		t.Errorf("--local-root with a key: %v\n%s", err, out)
	}
}
