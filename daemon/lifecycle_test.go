package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// recordedLifecycle is what systemd would have been told.
type recordedLifecycle struct {
	mu     sync.Mutex
	events []string
}

func (l *recordedLifecycle) add(kind, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, kind+": "+status)
}

func (l *recordedLifecycle) Ready(s string)     { l.add("READY", s) }
func (l *recordedLifecycle) Reloading(s string) { l.add("RELOADING", s) }
func (l *recordedLifecycle) Stopping(s string)  { l.add("STOPPING", s) }
func (l *recordedLifecycle) Status(s string)    { l.add("STATUS", s) }

func (l *recordedLifecycle) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events
	l.events = nil
	return ev
}

// READY once the listeners are up, RELOADING then READY around a reload
// (a failed one says why and keeps serving), a rejected apidoc.js in the
// status line until a good one returns, STOPPING at the end.
func TestLifecycleNotifications(t *testing.T) {
	t.Parallel()
	lc := &recordedLifecycle{}
	r := newRigWith(t, nil, func(o *Options) { o.Lifecycle = lc })
	r.start()
	ev := lc.take()
	ready := regexp.MustCompile(`^READY: serving \d+ PVE API endpoints; listeners: loopback 127\.0\.0\.1:\d+, metrics 127\.0\.0\.1:\d+$`)
	// Before READY, the steps of the start that may wait.
	if len(ev) != 3 || ev[0] != "STATUS: starting: loading the PVE API schema "+r.d.cfg.SchemaPath() ||
		ev[1] != "STATUS: starting: opening the audit journal "+r.d.cfg.JournalPath() || !ready.MatchString(ev[2]) {
		t.Fatalf("at start: %q", ev)
	}

	r.cfg["allow_mutation"] = true // misspelt: refused
	r.writeConfig()
	if err := r.d.Reload(context.Background()); err == nil {
		t.Fatal("a bad configuration reloaded")
	}
	ev = lc.take()
	if len(ev) != 2 || ev[0] != "RELOADING: reloading apidoc.js and the configuration" ||
		!strings.HasPrefix(ev[1], "READY: serving ") || !strings.Contains(ev[1], `last error: reload: the configuration was not applied`) ||
		!strings.Contains(ev[1], "allow_mutation") || !strings.HasSuffix(ev[1], "(the running configuration stays)") {
		t.Fatalf("failed reload: %q", ev)
	}
	delete(r.cfg, "allow_mutation")
	r.writeConfig()
	if err := r.d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev = lc.take(); len(ev) != 2 || strings.Contains(ev[1], "last error") {
		t.Fatalf("good reload: %q", ev)
	}

	// A truncated apidoc.js is rejected; the status says so until fixed.
	apidoc := filepath.Join(r.dir, "apidoc.js")
	good, _ := os.ReadFile(apidoc)
	if err := os.WriteFile(apidoc, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	r.d.Reload(context.Background()) //nolint:errcheck // the schema part is what is checked
	ev = lc.take()
	if !containsMatch(ev, `^READY: serving .*; last error: schema: `) {
		t.Errorf("rejected apidoc.js: %q", ev)
	}
	if err := os.WriteFile(apidoc, good, 0o644); err != nil {
		t.Fatal(err)
	}
	r.d.Reload(context.Background()) //nolint:errcheck
	if ev = lc.take(); !containsMatch(ev, `^READY: serving \d+ PVE API endpoints; listeners: loopback 127\.0\.0\.1:\d+, metrics 127\.0\.0\.1:\d+$`) {
		t.Errorf("after apidoc.js was fixed: %q", ev)
	}

	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// The schema events' STATUS lines are published asynchronously and may
	// land late; what matters is that STOPPING comes and nothing else does.
	var stopping int
	for _, e := range lc.take() {
		switch {
		case e == "STOPPING: stopping: draining calls in flight (up to 30 s)":
			stopping++
		case strings.HasPrefix(e, "STATUS: serving "):
		default:
			t.Errorf("at stop: %q", e)
		}
	}
	if stopping != 1 {
		t.Errorf("%d STOPPING messages, want 1", stopping)
	}
}

func containsMatch(ev []string, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, e := range ev {
		if re.MatchString(e) {
			return true
		}
	}
	return false
}

// Health passes while the daemon works and names the part that does not.
func TestHealth(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.d.Health(ctx); err != nil {
		t.Fatalf("healthy daemon: %v", err)
	}
	// A listener that accepts but never answers fails within the check's
	// deadline; one that answers an error fails with the status.
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hung.Close()
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if err := getHealthz(short, hung.Listener.Addr().String()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung listener: %v", err)
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer failing.Close()
	if err := getHealthz(ctx, failing.Listener.Addr().String()); err == nil || err.Error() != "/healthz answered 503 Service Unavailable" {
		t.Errorf("failing listener: %v", err)
	}
	// A journal that does not answer.
	r.d.jrnl.Close()
	// Said once: the status line read "unhealthy: journal: journal: head: …".
	if err := r.d.Health(ctx); err == nil || !strings.HasPrefix(err.Error(), "journal: ") || strings.HasPrefix(err.Error(), "journal: journal:") {
		t.Errorf("closed journal: %v", err)
	}
}

// captured collects log records.
type captured struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *captured) Enabled(context.Context, slog.Level) bool { return true }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captured) WithGroup(string) slog.Handler      { return c }

// calls returns the attributes of each "call" record.
func (c *captured) calls() []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]string
	for _, r := range c.records {
		if r.Message != "call" {
			continue
		}
		m := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	return out
}

// Every call is one log record with the fields journalctl filters on
// (key_id, tool, decision, outcome, upid), and never the arguments.
func TestCallLogRecords(t *testing.T) {
	t.Parallel()
	logs := &captured{}
	r := newRigWith(t, nil, func(o *Options) { o.Logger = slog.New(logs) })
	r.start()
	key := r.policyKey(t, "vm-range", []byte(`package proxmox_mcp.policy

import data.proxmox_mcp.profiles.operator

decision := operator.decision if not denied

decision := {"effect": "deny", "reasons": ["only VMs 100 to 199"], "obligations": []} if denied

denied if {
	some id in input.targets.vmids
	id > 199
}
`), []byte(`package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

test_vm_300_denied if {
	policy.decision.effect == "deny" with input as {"method": "POST", "risk": "write", "targets": {"vmids": [300]}, "path": "/nodes/{node}/qemu/{vmid}/status/start"}
}
`))
	keyID := strings.Split(key, "_")[1]
	c, ctx := r.client(key)
	callTool(t, c, ctx, tools.ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"})
	res, _ := callTool(t, c, ctx, tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/300/status/start"})
	if !res.IsError {
		t.Fatal("VM 300 was started")
	}
	op, opCtx := r.client(r.key("operator"))
	callTool(t, op, opCtx, tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30,
		"params": map[string]any{"timeout": 17}})

	calls := logs.calls()
	find := func(method, decision string) map[string]string {
		for _, c := range calls {
			if c["method"] == method && c["decision"] == decision {
				return c
			}
		}
		t.Fatalf("no %s call decided %s in %v", method, decision, calls)
		return nil
	}
	read := find("GET", "allow")
	if read["key_id"] != keyID || read["tool"] != tools.ToolCall || read["outcome"] != "ok" || read["level"] != "INFO" ||
		read["path"] != "/nodes/pve1/qemu/101/status/current" || read["transport"] != "loopback" {
		t.Errorf("read: %v", read)
	}
	denied := find("POST", "deny")
	if denied["key_id"] != keyID || denied["outcome"] != "denied" || denied["level"] != "WARN" {
		t.Errorf("denied: %v", denied)
	}
	start := find("POST", "allow")
	if !strings.HasPrefix(start["upid"], "UPID:pve1:") || start["outcome"] != "ok" || start["call_id"] == "" || start["key_name"] != "test-operator" {
		t.Errorf("start: %v", start)
	}
	for _, c := range calls {
		for k, v := range c {
			if k == "args" || k == "params" || strings.Contains(v, "timeout") {
				t.Errorf("the arguments in the log: %s=%s", k, v)
			}
		}
	}
}
