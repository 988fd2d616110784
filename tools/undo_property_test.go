package tools

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"pgregory.net/rapid"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// The fields the property test edits, and the values each may take (""
// is "not set"): small domains, so that values come back (A→B→C→B).
var undoDomain = map[string][]string{
	"memory":      {"1024", "2048", "3072"},
	"cores":       {"1", "2", "3"},
	"description": {"", "x", "y"},
	"onboot":      {"", "0", "1"},
}

var undoFields = slices.Sorted(maps.Keys(undoDomain))

// stepKinds are drawn from: edits outside the daemon and reads twice as
// often, so that values are changed unseen and then seen (rapid leans
// towards the first).
var stepKinds = []string{"put", "read", "agent", "daemon", "post", "put", "read"}

// seededRapid runs rapid with a fixed seed and a bounded number of checks
// unless the command line chose its own (-rapid.seed, -rapid.checks),
// without writing fail files into the package (the failure names its
// seed), and puts the flags back after.
func seededRapid(t *testing.T, seed string, checks int) {
	t.Helper()
	for name, v := range map[string]string{"rapid.seed": seed, "rapid.checks": fmt.Sprint(checks), "rapid.nofailfile": "true"} {
		f := flag.Lookup(name)
		if f == nil || f.Value.String() != f.DefValue {
			continue
		}
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { flag.Set(name, f.DefValue) }) //nolint:errcheck // its own default
	}
}

// undoWorld is one simulator and journal behind a tool server whose clock
// is the simulator's: each step is two seconds after the last, so PVE's
// one-second task times never blur the order of events.
type undoWorld struct {
	h     *harness
	agent *client.Client
	actx  context.Context
	other *client.Client // another key, through the daemon (journalled)
	octx  context.Context
	root  *pve.Client // PVE's root, outside the daemon (not journalled)
	path  string
}

// undoBase is what every world shares: the registry and the policy
// engine (compiling the profiles is the costly part of a world).
type undoBase struct {
	reg    *schema.Registry
	engine *policy.Engine
}

func newUndoBase(t *testing.T) *undoBase {
	store, err := policy.NewStore(t.TempDir(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := policy.NewEngine(context.Background(), store, engineOptions(t, policy.EngineOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	return &undoBase{reg: demoRegistry(t), engine: engine}
}

// world builds a simulator, a journal and a tool server of their own.
func (b *undoBase) world(t *testing.T) *undoWorld {
	clock := sim.NewManualClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	s, err := sim.New(sim.Options{Registry: b.reg, Seed: 3, Clock: clock, TaskDuration: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.EnableHTTP2 = false
	ts.StartTLS()
	t.Cleanup(ts.Close)
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), journal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	srv, err := New(Options{Name: "proxmox-mcp", Version: "test", Registry: staticRegistry{b.reg}, Policy: b.engine,
		Audit: journalAuditor{j}, Ledger: j, Guard: openGuard{}, Switches: Switches{AllowMutations: true}, ConfirmKey: make([]byte, 32), Now: clock.Now,
		PVE: &simTiers{t: t, sim: s, url: ts.URL + sim.APIPrefix, fp: pve.Fingerprint(ts.Certificate().Raw), clients: map[Tier]*pve.Client{}}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, sim: s, clock: clock, engine: b.engine, journal: j}
	w := &undoWorld{h: h, root: otherParty(t, h), path: "/nodes/pve2/qemu/102/config"}
	w.agent, w.actx = h.as("admin")
	w.other, w.octx = h.as("root")
	return w
}

// tb is what the steps report failures to: a rapid check.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

func (w *undoWorld) tick() { w.h.clock.Advance(2 * time.Second) }

func (w *undoWorld) call(t tb, c *client.Client, ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
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

// values reads the configuration as it is, outside the daemon: the
// property's ground truth.
func (w *undoWorld) values(t tb) map[string]string {
	t.Helper()
	var conf map[string]any
	if err := w.root.Get(context.Background(), w.path, nil, &conf); err != nil {
		t.Fatalf("read %s: %v", w.path, err)
	}
	out := map[string]string{}
	for _, k := range undoFields {
		if v, ok := conf[k]; ok {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

// edit is one change of the fields: values to set ("" deletes).
type edit map[string]string

func (e edit) params(wire bool) (map[string]any, url.Values) {
	p := map[string]any{}
	q := url.Values{}
	var del []string
	for k, v := range e {
		if v == "" {
			del = append(del, k)
			continue
		}
		p[k] = v
		q.Set(k, v)
	}
	if len(del) > 0 {
		slices.Sort(del)
		p["delete"] = strings.Join(del, ",")
		q.Set("delete", strings.Join(del, ","))
	}
	return p, q
}

func drawEdit(t *rapid.T, label string) edit {
	n := rapid.IntRange(1, 2).Draw(t, label+"-fields")
	e := edit{}
	for range n {
		f := rapid.SampledFrom(undoFields).Draw(t, label+"-field")
		e[f] = rapid.SampledFrom(undoDomain[f]).Draw(t, label+"-value")
	}
	return e
}

// step is what happened at one point of the history, as the oracle needs
// it: the values before and after, who did it, and what saw it.
type step struct {
	kind   string // agent, daemon (another key), put (outside, no task), post (outside, a task), read
	before map[string]string
	after  map[string]string
	op     string // the agent's operation, for agent steps that wrote
}

// Undo, after random edits by the agent (through the tools) and by others
// (another key through the daemon; PVE's root outside it, with and
// without a task) and reads, behaves as the contract says:
//   - it never sets a field that is not one of the operation's, nor one
//     whose value is not the one the operation left: another party's
//     value is never overwritten;
//   - A→B→C→B is a conflict when the journal (a read, another write's
//     configuration before or after it) or the task index (a task that
//     changed the guest) saw C; and when nothing saw anything (nothing but
//     unseen edits that put the value back), it undoes;
//   - every conflict is explained, with evidence;
//   - an undo that runs puts each of the operation's fields back to its
//     value before; one that is refused sends nothing.
func TestUndoProperties(t *testing.T) {
	checks := 40
	if raceEnabled {
		checks = 25 // the race detector makes each history several times slower
	}
	seededRapid(t, "20261201", checks)
	base := newUndoBase(t)
	seen := map[string]int{} // why each history ended as it did, for the log
	ran := 0
	rapid.Check(t, func(rt *rapid.T) {
		// A world of its own for each history, so that a failure replays.
		w := base.world(t)
		ran++
		var hist []step
		// The values after a step (read once its tasks ended: the clock
		// moved on) are the values before the next.
		w.tick()
		current := w.values(rt)
		record := func(kind string, do func()) {
			before := current
			do()
			w.tick()
			current = w.values(rt)
			hist = append(hist, step{kind: kind, before: before, after: current})
		}
		// The first step is always the agent's, so there is something to
		// undo; the rest are drawn.
		firstEdit := drawEdit(rt, "first")
		p, _ := firstEdit.params(false)
		var firstID string
		record("agent", func() {
			res, out := w.call(rt, w.agent, w.actx, ToolCall, map[string]any{"method": "PUT", "path": w.path, "params": p})
			if res.IsError {
				rt.Fatalf("the agent's edit %v: %s", firstEdit, text(res))
			}
			firstID, _ = out["evidence"].(map[string]any)["operation"].(string)
		})
		hist[0].op = firstID
		n := rapid.IntRange(1, 6).Draw(rt, "steps")
		for i := range n {
			label := fmt.Sprintf("s%d", i)
			switch kind := rapid.SampledFrom(stepKinds).Draw(rt, label); kind {
			case "agent", "daemon":
				e := drawEdit(rt, label)
				p, _ := e.params(false)
				c, ctx := w.agent, w.actx
				if kind == "daemon" {
					c, ctx = w.other, w.octx
				}
				var id string
				record(kind, func() {
					res, out := w.call(rt, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": w.path, "params": p})
					if res.IsError {
						rt.Fatalf("%s's edit %v: %s", kind, e, text(res))
					}
					id, _ = out["evidence"].(map[string]any)["operation"].(string)
				})
				hist[len(hist)-1].op = id
			case "put", "post":
				e := drawEdit(rt, label)
				_, q := e.params(true)
				method := map[string]string{"put": "PUT", "post": "POST"}[kind]
				record(kind, func() {
					if _, err := w.root.Do(context.Background(), method, w.path, q); err != nil {
						rt.Fatalf("root's %s %v: %v", method, e, err)
					}
				})
			case "read":
				record("read", func() {
					if res, _ := w.call(rt, w.agent, w.actx, ToolCall, map[string]any{"method": "GET", "path": w.path}); res.IsError {
						rt.Fatalf("read: %s", text(res))
					}
				})
			}
		}
		// Undo one of the agent's operations.
		var agentSteps []int
		for i, s := range hist {
			if s.kind == "agent" {
				agentSteps = append(agentSteps, i)
			}
		}
		at := rapid.SampledFrom(agentSteps).Draw(rt, "undo")
		target := hist[at]
		now := current
		expect, why := undoOracle(hist, at, now)
		seen[why]++

		writes := w.h.sim.Writes()
		res, view := w.call(rt, w.agent, w.actx, ToolUndo, map[string]any{"operation": target.op, "preview": false})
		after := w.values(rt)
		plan := view
		if u, ok := view["undo"].(map[string]any); ok && view["undo_of"] != nil {
			plan = u // a sent undo's answer carries its plan
		}
		status, _ := plan["status"].(string)
		if status != expect {
			rt.Fatalf("undo of step %d: status %s, want %s (%s)\nhistory %+v\nnow %v\nanswer %s", at, status, expect, why, hist, now, text(res))
		}
		// Never another party's value, never a field not the operation's.
		own := changedFields(target)
		for _, k := range undoFields {
			if own[k] && now[k] == target.after[k] {
				continue
			}
			if after[k] != now[k] {
				rt.Fatalf("undo changed %s from %q to %q: not the operation's field, or not the value it left (%q)", k, now[k], after[k], target.after[k])
			}
		}
		switch expect {
		case "ready":
			if res.IsError {
				rt.Fatalf("undo refused: %s", text(res))
			}
			for k := range own {
				if after[k] != target.before[k] {
					rt.Fatalf("after undo %s = %q, want %q as before the operation", k, after[k], target.before[k])
				}
			}
		default:
			if w.h.sim.Writes() != writes {
				rt.Fatalf("a %s undo sent a write", expect)
			}
		}
		if expect == "conflict" {
			fields, _ := plan["fields"].(map[string]any)
			conflicts := 0
			for k, v := range fields {
				f := v.(map[string]any)
				if f["action"] != "conflict" {
					continue
				}
				conflicts++
				if ev, _ := f["evidence"].([]any); f["why"] == "" || f["why"] == nil || len(ev) == 0 {
					rt.Fatalf("conflict on %s without its reason and evidence: %v", k, f)
				}
			}
			if conflicts == 0 {
				rt.Fatalf("a conflict with no field in conflict: %s", text(res))
			}
		}
	})
	t.Logf("%d histories undone: %v", ran, seen)
	// The histories must reach every branch, or the property says little.
	for _, want := range []string{"nothing seen since", "a task changed the guest since", "the edit changed nothing", "a read saw", "a write through the daemon"} {
		n := 0
		for why, k := range seen {
			if strings.HasPrefix(why, want) {
				n += k
			}
		}
		if n == 0 {
			t.Errorf("no history ended in %q: %v", want, seen)
		}
	}
}

// changedFields are the fields an agent step changed.
func changedFields(s step) map[string]bool {
	out := map[string]bool{}
	for _, k := range undoFields {
		if s.before[k] != s.after[k] {
			out[k] = true
		}
	}
	return out
}

// undoOracle says what undo of the operation at step at must do, from the
// history as it really was, and why.
func undoOracle(hist []step, at int, now map[string]string) (string, string) {
	op := hist[at]
	own := changedFields(op)
	if len(own) == 0 {
		return "nothing_to_undo", "the edit changed nothing"
	}
	for _, s := range hist[at+1:] {
		switch s.kind {
		case "post":
			return "conflict", "a task changed the guest since"
		case "agent", "daemon":
			// The journal has the configuration before and after.
			for k := range own {
				if s.before[k] != op.after[k] || s.after[k] != op.after[k] {
					return "conflict", "a write through the daemon saw or changed " + k
				}
			}
		case "read":
			for k := range own {
				if s.before[k] != op.after[k] {
					return "conflict", "a read saw " + k + " = " + s.before[k]
				}
			}
		}
	}
	for k := range own {
		if now[k] != op.after[k] {
			return "conflict", k + " is not what the operation left"
		}
	}
	return "ready", "nothing seen since"
}
