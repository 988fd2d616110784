package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// crashHost is the simulator served from this test's process, so that its
// faults can be set while the daemon runs (the same simulator `proxmox-mcp
// sim` serves), and a daemon configuration that uses it with every tier's
// token.
type crashHost struct {
	stdioHost
	sim  *sim.Sim
	root *pve.Client // the test's own view of PVE
}

func startCrashHost(t *testing.T) crashHost {
	t.Helper()
	dir := t.TempDir()
	apidoc := filepath.Join(dir, "apidoc.js")
	if err := os.WriteFile(apidoc, sim.DemoSchema(), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := schema.Parse(sim.DemoSchema())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: 13, TaskDuration: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Listen(s, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { stop(); <-served })
	tokens := map[string]any{}
	var root *pve.Client
	for _, tier := range []string{"read-only", "operator", "admin", "root"} {
		tok, ok := s.Token("mcp@pve!" + tier)
		if !ok {
			t.Fatalf("the simulator has no %s token", tier)
		}
		secret := filepath.Join(dir, "token-"+tier)
		if err := os.WriteFile(secret, []byte(tok.Secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tokens[tier] = map[string]string{"id": tok.ID, "secret_file": secret}
		if tier == "root" {
			if root, err = pve.New(pve.Config{BaseURL: srv.URL, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)},
				TLS: pve.TLSTrust{Fingerprints: []string{srv.Fingerprint}}}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(root.Close)
		}
	}
	h := crashHost{stdioHost: stdioHost{config: filepath.Join(dir, "config.hujson"), stateDir: filepath.Join(dir, "state")}, sim: s, root: root}
	cfg, err := json.MarshalIndent(map[string]any{
		"version": 1, "state_dir": h.stateDir, "schema": map[string]string{"path": apidoc}, "allow_mutations": true,
		"pve": map[string]any{"url": srv.URL, "fingerprint": srv.Fingerprint, "tokens": tokens},
		// A write can be in flight at PVE for a second here, not a minute:
		// the restart comes soon after the kill.
		"changes": map[string]any{"settle_after": "1s"},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// crashCase is one write the daemon is killed in the middle of: the fault
// that holds it where the kill lands, and what reconciliation must find.
type crashCase struct {
	name string
	key  string         // its operation_key
	call map[string]any // proxmox_api_call's arguments
	// faults are set before the call; then, once a request reached the
	// first one, next (if any) is set and the kill waits for it.
	faults []sim.Fault
	next   *sim.Fault
	// want is the state reconciliation must reach; effect says whether
	// PVE (the simulator) shows the write done.
	want   string
	effect func(t *testing.T, h crashHost) bool
	// survives: the write's answer comes (lost) before the kill, and its
	// receipt is written: the start-up pass leaves it to proxmox_reconcile.
	survives bool
}

func configHas(node, kind, vmid, field, value string) func(*testing.T, crashHost) bool {
	return func(t *testing.T, h crashHost) bool {
		var conf map[string]any
		if err := h.root.Get(context.Background(), "/nodes/"+node+"/"+kind+"/"+vmid+"/config", nil, &conf); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(conf[field]) == value
	}
}

func taskRan(node, typ, vmid string) func(*testing.T, crashHost) bool {
	return func(t *testing.T, h crashHost) bool {
		var list []map[string]any
		q := url.Values{"source": {"all"}, "typefilter": {typ}, "vmid": {vmid}}
		if err := h.root.Get(context.Background(), "/nodes/"+node+"/tasks", q, &list); err != nil {
			t.Fatal(err)
		}
		return len(list) > 0
	}
}

// The daemon binary is killed with SIGKILL while writes are at each point
// of their way, under each of the simulator's faults: after the intent
// (the request held before PVE acts), after sending (PVE acted, the answer
// held; a hung request; a refusal on its way), before the receipt (the
// read after an edit, or the wait for a task, hangs), and with the answer
// lost while the daemon still ran. After a restart, reconciliation reaches
// the right outcome or leaves it unknown, and never says applied when PVE
// shows nothing done.
func TestCrashInjection(t *testing.T) {
	began := time.Now()
	phase := func(what string) { t.Logf("%6.2fs %s", time.Since(began).Seconds(), what) }
	h := startCrashHost(t)
	key := h.key(t, "agent", "admin")
	phase("host and key")
	hold := time.Minute
	reached := make(chan string, 64)
	cases := []crashCase{
		{name: "config edit, killed after the intent", key: "crash-a",
			call:   map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": map[string]any{"memory": 3072}},
			faults: []sim.Fault{{Method: "PUT", Path: "/nodes/pve1/qemu/100/config", Latency: hold}},
			want:   journal.StateNotApplied, effect: configHas("pve1", "qemu", "100", "memory", "3072")},
		{name: "config edit, hung request", key: "crash-b",
			call:   map[string]any{"method": "PUT", "path": "/nodes/pve2/qemu/102/config", "params": map[string]any{"memory": 3072}},
			faults: []sim.Fault{{Method: "PUT", Path: "/nodes/pve2/qemu/102/config", Hang: true}},
			want:   journal.StateNotApplied, effect: configHas("pve2", "qemu", "102", "memory", "3072")},
		{name: "config edit, 500 on its way", key: "crash-c",
			call:   map[string]any{"method": "PUT", "path": "/nodes/pve1/lxc/200/config", "params": map[string]any{"memory": 1024}},
			faults: []sim.Fault{{Method: "PUT", Path: "/nodes/pve1/lxc/200/config", Latency: hold, Status: 500, Message: "simulated failure"}},
			want:   journal.StateNotApplied, effect: configHas("pve1", "lxc", "200", "memory", "1024")},
		{name: "config edit, killed after PVE applied it", key: "crash-d",
			call:   map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config", "params": map[string]any{"memory": 1536}},
			faults: []sim.Fault{{Method: "PUT", Path: "/nodes/pve1/qemu/101/config", Hold: hold}},
			want:   journal.StateApplied, effect: configHas("pve1", "qemu", "101", "memory", "1536")},
		{name: "config edit, killed before the receipt", key: "crash-e",
			call:   map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/9000/config", "params": map[string]any{"description": "edited before the crash"}},
			faults: []sim.Fault{{Method: "PUT", Path: "/nodes/pve1/qemu/9000/config", Hold: 300 * time.Millisecond}},
			next:   &sim.Fault{Method: "GET", Path: "/nodes/pve1/qemu/9000/config", Hang: true, Times: 1},
			want:   journal.StateApplied, effect: configHas("pve1", "qemu", "9000", "description", "edited before the crash")},
		{name: "start, killed after the intent", key: "crash-f",
			call:   map[string]any{"method": "POST", "path": "/nodes/pve2/lxc/201/status/start"},
			faults: []sim.Fault{{Method: "POST", Path: "/nodes/pve2/lxc/201/status/start", Latency: hold}},
			want:   journal.StateUnknown, effect: taskRan("pve2", "vzstart", "201")},
		{name: "start, killed after PVE started it, the connection lost", key: "crash-g",
			call:   map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"},
			faults: []sim.Fault{{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", Hold: hold, DropAfterApply: true}},
			want:   journal.StateApplied, effect: taskRan("pve1", "qmstart", "101")},
		{name: "reboot, killed while it waits for the task", key: "crash-h",
			call:   map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/reboot", "wait": 30},
			faults: []sim.Fault{{Method: "GET", Path: "/nodes/pve1/tasks/", Hang: true, Times: 1}},
			want:   journal.StateApplied, effect: taskRan("pve1", "qmreboot", "100")},
		{name: "suspend, hung request", key: "crash-j",
			call:   map[string]any{"method": "POST", "path": "/nodes/pve2/qemu/102/status/suspend"},
			faults: []sim.Fault{{Method: "POST", Path: "/nodes/pve2/qemu/102/status/suspend", Hang: true}},
			want:   journal.StateUnknown, effect: taskRan("pve2", "qmsuspend", "102")},
		{name: "stop, the answer lost while the daemon ran", key: "crash-i", survives: true,
			call:   map[string]any{"method": "POST", "path": "/nodes/pve1/lxc/200/status/stop"},
			faults: []sim.Fault{{Method: "POST", Path: "/nodes/pve1/lxc/200/status/stop", DropAfterApply: true, Times: 1}},
			want:   journal.StateApplied, effect: taskRan("pve1", "vzstop", "200")},
	}

	s := startServe(t, h.stdioHost)
	phase("daemon serving")
	var wg sync.WaitGroup
	survived := make(chan string, len(cases))
	for i := range cases {
		cs := &cases[i]
		for _, f := range cs.faults {
			f.Reached = reached
			h.sim.InjectFault(f)
		}
		c, ctx := s.connect(t, key)
		args := map[string]any{"operation_key": cs.key}
		for k, v := range cs.call {
			args[k] = v
		}
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "proxmox_api_call", args
			res, err := c.CallTool(ctx, req)
			if cs.survives && err == nil {
				survived <- mcpText(res)
			}
		})
	}
	// Every request is where its fault holds it (the second fault of the
	// edit killed before its receipt is set once its first is reached).
	waiting := map[string]*crashCase{}
	for i := range cases {
		waiting[cases[i].faults[0].Method+" "+cases[i].faults[0].Path] = &cases[i]
	}
	deadline := time.After(30 * time.Second)
	for len(waiting) > 0 {
		select {
		case got := <-reached:
			for where, cs := range waiting {
				if !strings.HasPrefix(got, where) {
					continue
				}
				delete(waiting, where)
				if cs.next != nil {
					f := *cs.next
					f.Reached = reached
					h.sim.InjectFault(f)
					waiting[f.Method+" "+f.Path] = &crashCase{name: cs.name + " (the read after it)"}
				}
			}
		case <-deadline:
			t.Fatalf("requests not reached: %v\nstderr:\n%s", keysOf(waiting), s.proc.stderr)
		}
	}
	phase("every request held")
	select {
	case text := <-survived:
		if !strings.Contains(text, "Outcome unknown") {
			t.Fatalf("the lost answer: %s", text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the write whose answer was lost did not end")
	}
	killed := time.Now()
	if err := s.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.proc.cmd.Wait() //nolint:errcheck // killed
	wg.Wait()
	phase("killed")
	h.sim.ClearFaults()

	// The journal holds every killed write as an open intent.
	j, err := journal.Open(context.Background(), filepath.Join(h.stateDir, "journal.db"), journal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	open, err := j.OpenIntents(context.Background(), time.Time{})
	j.Close()
	if err != nil || len(open) != len(cases)-1 {
		t.Fatalf("open intents after the kill: %d (%v), want %d", len(open), err, len(cases)-1)
	}

	// Restarted once the writes can no longer be in flight
	// (changes.settle_after is 1s), the daemon reconciles them.
	time.Sleep(time.Until(killed.Add(1100 * time.Millisecond)))
	s = startServe(t, h.stdioHost)
	phase("restarted")
	c, ctx := s.connect(t, key)
	state := func(cs *crashCase) (string, map[string]any) {
		res, out := callJSON(t, c, ctx, "proxmox_operation", map[string]any{"operation_key": cs.key})
		if res.IsError {
			t.Fatalf("%s: proxmox_operation: %s", cs.name, mcpText(res))
		}
		st, _ := out["state"].(string)
		return st, out
	}
	deadline = time.After(30 * time.Second)
	for i := range cases {
		cs := &cases[i]
		for {
			st, _ := state(cs)
			if st != "pending" {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("%s: still pending after the restart\nstderr:\n%s", cs.name, s.proc.stderr)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	phase("reconciled at start")
	for i := range cases {
		cs := &cases[i]
		st, view := state(cs)
		// What the start-up pass does not settle (an answer lost while the
		// daemon ran; a task still running) proxmox_reconcile does.
		if st == string(journal.OutcomeUncertain) || st == string(journal.OutcomeTaskRunning) {
			if res, _ := callJSON(t, c, ctx, "proxmox_reconcile", map[string]any{"operation_key": cs.key}); res.IsError {
				t.Fatalf("%s: proxmox_reconcile: %s", cs.name, mcpText(res))
			}
			st, view = state(cs)
		}
		done := cs.effect(t, h)
		switch {
		case st == journal.StateApplied && !done:
			t.Errorf("%s: applied, but PVE shows nothing done: %v", cs.name, view)
		case st != cs.want:
			t.Errorf("%s: %s, want %s (PVE shows it done: %v): %v", cs.name, st, cs.want, done, view["resolutions"])
		case (cs.want == journal.StateApplied) != done:
			t.Errorf("%s: %s, but PVE shows it done: %v", cs.name, st, done)
		}
	}
	phase("checked")
	if out, err := run(context.Background(), t, nil, "", binary(t), "audit", "verify", "--state-dir", h.stateDir); err != nil || !strings.Contains(string(out), "chain intact") || !strings.Contains(string(out), "open intents: 0") {
		t.Errorf("audit verify: %s %v", out, err)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func callJSON(t *testing.T, c *client.Client, ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out) //nolint:errcheck // our own content
	}
	return res, out
}
