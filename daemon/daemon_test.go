package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// rig is a daemon in front of the simulator, configured from a file on
// disk, as `proxmox-mcp serve --config` runs it.
type rig struct {
	t       testing.TB
	dir     string
	cfgPath string
	cfg     map[string]any
	sim     *sim.Sim
	d       *Daemon
	url     string
	cancel  context.CancelFunc
	done    chan error
}

// newRig writes apidoc.js (the simulator's built-in schema), the tier token
// files and a configuration, then builds the daemon. edit changes the
// configuration before it is written.
func newRig(t testing.TB, edit func(cfg map[string]any)) *rig {
	t.Helper()
	return newRigWith(t, edit, nil)
}

// newRigWith is newRig with the daemon's options changed by opts.
func newRigWith(t testing.TB, edit func(cfg map[string]any), opts func(*Options)) *rig {
	t.Helper()
	dir := t.TempDir()
	apidoc := sim.DemoSchema()
	if err := os.WriteFile(filepath.Join(dir, "apidoc.js"), apidoc, 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := schema.Parse(apidoc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: 1, TaskDuration: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Listen(s, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(context.Background())
	simDone := make(chan error, 1)
	go func() { simDone <- srv.Serve(simCtx) }()
	t.Cleanup(func() { stopSim(); <-simDone })
	toks, err := writeSimTokens(s, filepath.Join(dir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, cfgPath: filepath.Join(dir, "config.hujson"), sim: s}
	r.cfg = map[string]any{
		"version":         1,
		"state_dir":       filepath.Join(dir, "state"),
		"schema":          map[string]any{"path": filepath.Join(dir, "apidoc.js")},
		"allow_mutations": true,
		"pve":             map[string]any{"url": srv.URL, "fingerprint": srv.Fingerprint, "tokens": toks},
		"listen":          map[string]any{"loopback": map[string]any{"address": "127.0.0.1:0"}},
		"metrics":         map[string]any{"address": "127.0.0.1:0"},
	}
	if edit != nil {
		edit(r.cfg)
	}
	r.writeConfig()
	cfg, err := config.Load(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	profiles, err := builtinProfiles()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: cfg, ConfigPath: r.cfgPath, Version: "test", Logger: quietLogger(), Profiles: profiles}
	if opts != nil {
		opts(&o)
	}
	r.d, err = New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// builtinProfiles are the built-in profiles compiled once for the
// package's daemons (each compiling its own cost 0.4 s under -race).
var builtinProfiles = sync.OnceValues(func() (*policy.CompiledProfiles, error) {
	return policy.CompileProfiles(context.Background())
})

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (r *rig) writeConfig() {
	r.t.Helper()
	b, err := json.MarshalIndent(r.cfg, "", "  ")
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.cfgPath, b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// start runs the daemon until the test ends.
func (r *rig) start() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- r.d.Run(ctx) }()
	select {
	case <-r.d.Ready():
	case err := <-r.done:
		r.t.Fatalf("run: %v", err)
	case <-time.After(10 * time.Second):
		r.t.Fatal("the daemon did not become ready")
	}
	r.url = "http://" + r.d.Addresses()["loopback"]
	r.t.Cleanup(func() { r.stop() })
}

// stop ends Run and returns its error.
func (r *rig) stop() error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		return err
	case <-time.After(40 * time.Second):
		r.t.Fatal("Run did not return after its context ended")
		return nil
	}
}

// key creates a key bound to a profile and returns its secret.
func (r *rig) key(profile string) string {
	r.t.Helper()
	return r.keyNamed(r.t, "test-"+profile, profile)
}

func (r *rig) keyNamed(tb testing.TB, name, profile string) string {
	tb.Helper()
	created, err := r.d.Keys().Create(context.Background(), keys.CreateRequest{Name: name, Binding: keys.Binding{Profile: profile}})
	if err != nil {
		tb.Fatal(err)
	}
	return created.Key.Reveal()
}

// client connects over Streamable HTTP with a bearer key.
func (r *rig) client(key string) (*client.Client, context.Context) {
	r.t.Helper()
	return connectMCP(r.t, r.url+"/mcp", key, nil, "loopback")
}

// connectMCP starts mcp-go's Streamable HTTP client on url with a bearer
// key (through hc when not nil) and initializes a session; over names the
// path in failures.
func connectMCP(tb testing.TB, url, key string, hc *http.Client, over string) (*client.Client, context.Context) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	opts := []mcptransport.StreamableHTTPCOption{mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key})}
	if hc != nil {
		opts = append(opts, mcptransport.WithHTTPBasicClient(hc))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "daemon-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		tb.Fatalf("initialize over %s: %v", over, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, ctx
}

func callTool(t *testing.T, c *client.Client, ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var content map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &content) //nolint:errcheck // our own content
	}
	return res, content
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// A key-holder connects over loopback HTTP, sees the compact tools, starts
// a VM and waits for the task; the journal holds the call's intent and
// receipt under the key's name, and the VM runs on the simulated host.
func TestServeOverLoopbackHTTP(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	key := r.key("operator")
	c, ctx := r.client(key)

	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{tools.ToolCall, tools.ToolDescribe, tools.ToolSearch, tools.ToolGuestPower, tools.ToolSchemaStatus} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	res, content := callTool(t, c, ctx, tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30})
	if res.IsError {
		t.Fatalf("start: %s", resultText(res))
	}
	if task, _ := content["task"].(map[string]any); task["exitstatus"] != "OK" {
		t.Fatalf("task: %v", content)
	}
	_, st := callTool(t, c, ctx, tools.ToolGuestStatus, map[string]any{"vmid": 101})
	if data, _ := st["data"].(map[string]any); data["status"] != "running" {
		t.Errorf("guest status after the start: %v", st)
	}

	events, err := r.d.jrnl.Tail(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	var intent, receipt *journal.Event
	for i := range events {
		ev := &events[i]
		if ev.Method != "POST" || ev.PathTemplate != "/nodes/{node}/qemu/{vmid}/status/start" {
			continue
		}
		switch ev.Kind {
		case journal.KindIntent:
			intent = ev
		case journal.KindReceipt:
			receipt = ev
		}
	}
	if intent == nil || receipt == nil {
		t.Fatalf("the journal lacks the start's intent or receipt: %+v", events)
	}
	if p := intent.Principal; p.KeyName != "test-operator" || p.Transport != "loopback" || p.Source != "127.0.0.1" || intent.Decision.Effect != "allow" {
		t.Errorf("intent %+v", intent)
	}
	if receipt.CallID != intent.CallID || receipt.Outcome != journal.OutcomeOK || !strings.HasPrefix(receipt.UPID, "UPID:pve1:") {
		t.Errorf("receipt %+v", receipt)
	}
}

// Without a valid key the endpoint answers 401 and a bearer challenge; the
// health and readiness endpoints need no key and say what is ready.
func TestHTTPAuthenticationAndReadiness(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	for _, auth := range []string{"", "Bearer pmcp_nosuchkey_0123456789abcdef", "Basic dXNlcjpwYXNz"} {
		req, _ := http.NewRequest("POST", r.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: %d %q", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	resp, err := http.Get(r.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ready map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz %d: %v", resp.StatusCode, ready)
	}
	b, _ := json.Marshal(ready)
	for _, want := range []string{`"schema":"ok"`, `"policy":"ok"`, `"pve":"ok"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/readyz %s lacks %s", b, want)
		}
	}
}

// /readyz says when PVE cannot be reached, and answers 503.
func TestReadinessWithoutPVE(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(cfg map[string]any) {
		cfg["pve"].(map[string]any)["url"] = "https://127.0.0.1:1/api2/json"
	})
	r.start()
	resp, err := http.Get(r.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "unreachable") {
		t.Errorf("/readyz %d %s", resp.StatusCode, body)
	}
}

// A reload (SIGHUP) applies the switches from the file; a file that does
// not parse is not applied, the error names the field, and the running
// switches stay.
func TestReloadAppliesSwitches(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	c, ctx := r.client(r.key("operator"))
	start := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30}
	if res, _ := callTool(t, c, ctx, tools.ToolCall, start); res.IsError {
		t.Fatalf("start before the reload: %s", resultText(res))
	}

	r.cfg["read_only"], r.cfg["allow_mutations"] = true, false
	r.writeConfig()
	if err := r.d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/stop"}
	res, _ := callTool(t, c, ctx, tools.ToolCall, stop)
	if !res.IsError || !strings.Contains(resultText(res), "read_only switch is on") {
		t.Errorf("a write after read_only: %s", resultText(res))
	}

	r.cfg["read_only"] = false
	r.cfg["allow_mutation"] = true // misspelt: the file must be refused
	r.writeConfig()
	err := r.d.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "allow_mutation") {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if res, _ := callTool(t, c, ctx, tools.ToolCall, stop); !res.IsError || !strings.Contains(resultText(res), "read_only switch is on") {
		t.Errorf("the switches changed after a refused reload: %s", resultText(res))
	}

	delete(r.cfg, "allow_mutation")
	r.cfg["allow_mutations"] = true
	r.writeConfig()
	if err := r.d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res, _ := callTool(t, c, ctx, tools.ToolCall, stop); res.IsError {
		t.Errorf("stop after read_only was turned off: %s", resultText(res))
	}
}

// Stdio sessions verify the key once and act as its binding; a bad key is
// refused before anything is served.
func TestStdioCaller(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	key := r.key("admin")
	c, err := r.d.StdioCaller(context.Background(), key+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Tier != tools.TierAdmin || c.Principal.Name != "test-admin" || c.Principal.Transport != "stdio" {
		t.Errorf("caller %+v", c)
	}
	if _, err := r.d.StdioCaller(context.Background(), "pmcp_bogus_0000"); err == nil || !strings.Contains(err.Error(), "the key was not accepted") {
		t.Errorf("bad key: %v", err)
	}
	if lr := LocalRoot(); lr.Tier != tools.TierRoot || lr.Principal.Name != "local-root" {
		t.Errorf("local root %+v", lr)
	}

	// A session outlives requests: revoking its key stops it at the next call.
	srv, err := client.NewInProcessClient(r.d.tools.MCP())
	if err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithCaller(context.Background(), c)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := srv.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if res, _ := callTool(t, srv, ctx, tools.ToolSchemaStatus, nil); res.IsError {
		t.Fatalf("before the revocation: %s", resultText(res))
	}
	if _, err := r.d.Keys().Revoke(context.Background(), "test-admin"); err != nil {
		t.Fatal(err)
	}
	res, _ := callTool(t, srv, ctx, tools.ToolSchemaStatus, nil)
	if !res.IsError || !strings.Contains(resultText(res), "your key is no longer accepted") {
		t.Errorf("after the revocation: %s", resultText(res))
	}
}

// A daemon that cannot work refuses to start and says which part and why.
func TestNewRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(cfg map[string]any, dir string)
		want string
	}{
		{"no schema", func(cfg map[string]any, dir string) {
			cfg["schema"] = map[string]any{"path": filepath.Join(dir, "missing-apidoc.js")}
		}, "missing-apidoc.js"},
		{"unreadable token secret", func(cfg map[string]any, dir string) {
			toks := cfg["pve"].(map[string]any)["tokens"].(map[string]config.Token)
			tok := toks["operator"]
			tok.SecretFile = filepath.Join(dir, "no-such-secret")
			toks["operator"] = tok
		}, "pve.tokens.operator"},
		{"bad tools mode", func(cfg map[string]any, _ string) {
			cfg["tools"] = map[string]any{"mode": "everything"}
		}, "everything"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dir string
			base := newRig(t, func(cfg map[string]any) { dir = filepath.Dir(cfg["state_dir"].(string)) })
			base.d.jrnl.Close()
			tc.edit(base.cfg, dir)
			base.cfg["state_dir"] = filepath.Join(dir, "state2")
			base.writeConfig()
			cfg, err := config.Load(base.cfgPath)
			if err != nil {
				if strings.Contains(err.Error(), tc.want) {
					return // refused at load, naming the field
				}
				t.Fatal(err)
			}
			_, err = New(context.Background(), Options{Config: cfg, Logger: quietLogger()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// Stopping drains: Run returns nil once its context ends, the listener is
// closed and the journal is closed.
func TestRunStops(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	addr := r.url
	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := http.Get(addr + "/healthz"); err == nil {
		t.Error("the listener still answers after the stop")
	}
	if _, err := r.d.jrnl.Tail(context.Background(), 1); err == nil {
		t.Error("the journal is still open after the stop")
	}
}

// Every protocol version mcp-go speaks works over the loopback listener:
// the initialize handshake of each legacy revision negotiates that
// revision, and the stateless 2026-07-28 revision (server/discover, no
// session, per-request _meta) lists and calls tools with the bearer key on
// each request.
func TestEveryProtocolVersion(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	key := r.key("read-only")
	post := func(version, method, name, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", r.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version >= mcp.ProtocolVersion20250618 {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		if mcp.IsModernProtocol(version) {
			req.Header.Set("Mcp-Method", method)
			if name != "" {
				req.Header.Set("Mcp-Name", name)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var msg map[string]any
		json.NewDecoder(resp.Body).Decode(&msg) //nolint:errcheck // checked by the caller
		return resp.StatusCode, msg
	}
	for _, v := range mcp.LegacyProtocolVersions() {
		status, msg := post(v, "initialize", "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, v))
		res, _ := msg["result"].(map[string]any)
		if status != http.StatusOK || res["protocolVersion"] != v {
			t.Errorf("initialize %s: %d %v", v, status, msg)
		}
	}
	v := mcp.ProtocolVersion20260728
	meta := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`, v)
	status, msg := post(v, "server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	res, _ := msg["result"].(map[string]any)
	if status != http.StatusOK || !slices.Contains(anyStrings(res["supportedVersions"]), v) {
		t.Fatalf("server/discover: %d %v", status, msg)
	}
	status, msg = post(v, "tools/call", tools.ToolGuestStatus, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{`+meta+`,"name":"proxmox_guest_status","arguments":{"vmid":101}}}`)
	res, _ = msg["result"].(map[string]any)
	if status != http.StatusOK || res["isError"] == true || !strings.Contains(fmt.Sprint(res["structuredContent"]), "db01") {
		t.Errorf("stateless tools/call: %d %v", status, msg)
	}
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// A reload names the fields that changed but need a restart.
func TestRestartFields(t *testing.T) {
	t.Parallel()
	a := &config.Config{Version: 1, StateDir: "/s", ReadOnly: true}
	b := &config.Config{Version: 1, StateDir: "/s", AllowMutations: true, Tools: config.Tools{Mode: "search"}, Log: config.Log{Level: "debug"}}
	if got := restartFields(a, b); strings.Join(got, ",") != "log,tools" {
		t.Errorf("restart fields %v, want log and tools (the switches reload)", got)
	}
	if got := restartFields(a, a); len(got) != 0 {
		t.Errorf("no change gave %v", got)
	}
}

// A key over its rate gets 429 with Retry-After, on any listener; every
// refusal before a tool runs (here a bad key and the rate limit) is in the
// journal with its status and source.
func TestKeyRateLimitAndRefusalAudit(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(cfg map[string]any) {
		cfg["http"] = map[string]any{"rate_per_key": 0.5, "burst_per_key": 3}
	})
	r.start()
	key := r.key("read-only")
	s, err := mcptest.Dial(r.url+"/mcp", key) // initialize + initialized: two requests
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(tools.ToolSchemaStatus, nil); err != nil {
		t.Fatalf("third request, within the burst: %v", err)
	}
	_, err = s.Call(tools.ToolSchemaStatus, nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 429") || !strings.Contains(err.Error(), "http.rate_per_key") {
		t.Fatalf("fourth request: %v, want 429 naming http.rate_per_key", err)
	}
	req, _ := http.NewRequest("POST", r.url+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer pmcp_aaaaaaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	events, err := r.d.jrnl.Tail(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range events {
		if strings.HasPrefix(ev.Tool, "http ") {
			got = append(got, fmt.Sprintf("%d %s %s %s", ev.Status, ev.Outcome, ev.Principal.Transport, ev.Principal.KeyID))
			if ev.Principal.Source != "127.0.0.1" {
				t.Errorf("refusal row without the source: %+v", ev.Principal)
			}
		}
	}
	keyID := strings.Split(key, "_")[1]
	want := []string{"429 denied loopback " + keyID, "401 denied loopback aaaaaaaaaaaaaaaa"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("refusal rows %q, want %q", got, want)
	}
}

// A flood of refusals from one source is not a flood of journal rows: past
// a burst of 20 they are counted, and the count goes into the source's next
// row.
func TestRefusalFloodIsSummarised(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	bad := func() {
		req, _ := http.NewRequest("POST", r.url+"/mcp", strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for range 25 {
		bad()
	}
	rows := func() []journal.Event {
		events, err := r.d.jrnl.Tail(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []journal.Event
		for _, ev := range events {
			if strings.HasPrefix(ev.Tool, "http ") {
				out = append(out, ev)
			}
		}
		return out
	}
	if n := len(rows()); n < 20 || n > 21 {
		t.Fatalf("%d rows for 25 refusals, want the burst of 20 (21 if a token refilled)", n)
	}
	time.Sleep(1100 * time.Millisecond)
	bad()
	all := rows()
	last := all[len(all)-1]
	if !strings.Contains(last.Error, "earlier refusals from this source, not recorded one by one") || last.Principal.KeyName != "(no key)" {
		t.Errorf("the row after the flood: %+v", last)
	}
}
