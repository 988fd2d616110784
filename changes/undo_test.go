package changes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

const (
	undoTemplate = "/nodes/{node}/qemu/{vmid}/config"
	undoPath     = "/nodes/pve1/qemu/100/config"
)

// undoLedger writes journal rows the way the daemon's tools do, into a real
// journal, at times it chooses.
type undoLedger struct {
	t   testing.TB
	j   *journal.Journal
	now time.Time
}

func newUndoLedger(t testing.TB) *undoLedger {
	t.Helper()
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), journal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &undoLedger{t: t, j: j, now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
}

// tick moves the undoLedger's clock on by two seconds (PVE's task times have a
// one-second resolution).
func (l *undoLedger) tick() time.Time {
	l.now = l.now.Add(2 * time.Second)
	return l.now
}

func undoPrincipal(key string) journal.Principal {
	return journal.Principal{KeyID: key, KeyName: key + "-name", Profile: "admin", Transport: "loopback"}
}

// write is one write as the tools journal it.
type undoWrite struct {
	key, method, template, path string
	args                        map[string]any
	prior                       map[string]any // a config edit's configuration before
	after                       map[string]any // and after (nil: no receipt detail)
	outcome                     journal.Outcome
	upid                        string
	undoOf, change              string
	open                        bool // no receipt
}

func (l *undoLedger) write(w undoWrite) string {
	l.t.Helper()
	ctx := context.Background()
	if w.key == "" {
		w.key = "agent"
	}
	if w.method == "" {
		w.method, w.template, w.path = "PUT", undoTemplate, undoPath
	}
	c := journal.Call{Time: l.tick(), Principal: undoPrincipal(w.key), Tool: "proxmox_api_call", Method: w.method, PathTemplate: w.template,
		Path: w.path, Risk: "write", Args: w.args, Decision: journal.Decision{Effect: "allow", Policy: "admin"}}
	if w.prior != nil {
		c.PriorDigest, c.PriorConfig = fakeDigest(w.prior), w.prior
	}
	if w.undoOf != "" || w.change != "" {
		c.Detail = &journal.Detail{UndoOf: w.undoOf, Change: w.change}
	}
	in, err := l.j.Intent(ctx, c)
	if err != nil {
		l.t.Fatal(err)
	}
	if w.open {
		return in.CallID
	}
	if w.outcome == "" {
		w.outcome = journal.OutcomeOK
	}
	res := journal.Result{Outcome: w.outcome, UPID: w.upid, Duration: time.Second}
	if w.after != nil && w.prior != nil {
		res.Detail = &journal.Detail{Scope: w.template, Digest: fakeDigest(w.after), Config: w.after, Changes: fieldDiff(w.prior, w.after)}
	}
	if _, err := l.j.Receipt(ctx, in.CallID, res); err != nil {
		l.t.Fatal(err)
	}
	return in.CallID
}

// edit journals a config edit by key that sets (and deletes) fields of
// conf, and returns its id and the configuration after it.
func (l *undoLedger) edit(key string, conf map[string]any, set map[string]any, del ...string) (string, map[string]any) {
	l.t.Helper()
	after := maps.Clone(conf)
	args := map[string]any{"node": "pve1", "vmid": 100}
	for k, v := range set {
		after[k], args[k] = v, v
	}
	for _, k := range del {
		delete(after, k)
	}
	if len(del) > 0 {
		args["delete"] = strings.Join(del, ",")
	}
	after["digest"] = fakeDigest(after)
	return l.write(undoWrite{key: key, args: args, prior: conf, after: after}), after
}

// read journals a read of the configuration (an observation).
func (l *undoLedger) read(key string, conf map[string]any) {
	l.t.Helper()
	c := journal.Call{Time: l.tick(), Principal: undoPrincipal(key), Tool: "proxmox_api_call", Method: "GET", PathTemplate: undoTemplate, Path: undoPath,
		Risk: "read", Decision: journal.Decision{Effect: "allow", Policy: "admin"}, Detail: &journal.Detail{Digest: fakeDigest(conf), Config: conf}}
	if _, err := l.j.Record(context.Background(), c, journal.Result{Outcome: journal.OutcomeOK}); err != nil {
		l.t.Fatal(err)
	}
}

// digest stands in for PVE's: any function of the values will do here.
func fakeDigest(conf map[string]any) string {
	c := maps.Clone(conf)
	delete(c, "digest")
	return fmt.Sprintf("d%08x", len(fmt.Sprint(c))*7919+int(fnv32(fmt.Sprint(c))))
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func fieldDiff(before, after map[string]any) map[string]journal.FieldChange {
	out := map[string]journal.FieldChange{}
	for k, a := range after {
		if k == "digest" {
			continue
		}
		if b, ok := before[k]; !ok || !same(a, b) {
			out[k] = journal.FieldChange{Before: before[k], After: a}
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok && k != "digest" {
			out[k] = journal.FieldChange{Before: b}
		}
	}
	return out
}

// undoPVEFake is PVE as undo reads it.
type undoPVEFake struct {
	conf      map[string]any
	confErr   error
	tasks     []GuestTask
	snapshots []Snapshot
}

func (f *undoPVEFake) Config(_ context.Context, path string) (map[string]any, error) {
	if f.confErr != nil {
		return nil, f.confErr
	}
	if path != undoPath {
		return nil, fmt.Errorf("no configuration at %s", path)
	}
	c := maps.Clone(f.conf)
	c["digest"] = fakeDigest(c)
	return c, nil
}

func (f *undoPVEFake) GuestTasks(_ context.Context, node string, vmid int, since time.Time) ([]GuestTask, error) {
	var out []GuestTask
	for _, t := range f.tasks {
		if t.UPID.Node == node && t.UPID.ID == fmt.Sprint(vmid) && (!t.UPID.Started().Before(since) || !t.Ended) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *undoPVEFake) Snapshots(context.Context, string) ([]Snapshot, error) { return f.snapshots, nil }

// task is a task in the index, started at a time, ended a second later.
func indexTask(typ, user string, at time.Time) GuestTask {
	u := pve.UPID{Node: "pve1", PID: 4242, PStart: 77, StartTime: at.Unix(), Type: typ, ID: "100", User: user}
	return GuestTask{UPID: u, Ended: true, End: at.Add(time.Second), Status: "OK"}
}

func testUndoer(t testing.TB, l *undoLedger, p *undoPVEFake, restorable func(string, string) string) *Undoer {
	t.Helper()
	u, err := NewUndoer(UndoOptions{Journal: l.j, PVE: p, Redact: l.j.Redactor().Value, Restorable: restorable})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var baseConf = map[string]any{"name": "web01", "memory": float64(2048), "cores": float64(2), "description": "web server", "onboot": float64(1)}

func fieldOf(p *UndoPlan, name string) *FieldUndo {
	for i := range p.Fields {
		if p.Fields[i].Field == name {
			return &p.Fields[i]
		}
	}
	return nil
}

// explainedPlan checks that every conflict says why, with evidence where
// evidence was the reason.
func explainedPlan(t *testing.T, p *UndoPlan) {
	t.Helper()
	if p.Status != UndoReady && p.Reason == "" {
		t.Errorf("status %s without a reason", p.Status)
	}
	for _, f := range p.Fields {
		if f.Action == FieldConflict && f.Why == "" {
			t.Errorf("field %s is a conflict without a reason", f.Field)
		}
	}
}

// One table for the rules of undo: each case journals a history, sets
// what PVE shows, and says what undo of the first operation must plan.
func TestUndoRules(t *testing.T) {
	type want struct {
		status   UndoStatus
		actions  map[string]FieldAction
		params   map[string]any
		reason   string // a part of the reason
		evidence string // a part of some evidence
	}
	cases := []struct {
		name string
		// build journals the history and sets PVE; it returns the
		// operation to undo and the operations assumed undone first.
		build      func(l *undoLedger, p *undoPVEFake) (string, []string)
		restorable func(string, string) string
		want       want
	}{
		{
			name: "a field set and nothing since is restored, with the digest of now",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}, params: map[string]any{"memory": float64(2048)}},
		},
		{
			name: "a field the operation added is deleted, one it deleted is set again",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"tags": "blue"}, "description")
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"tags": FieldDelete, "description": FieldRestore},
				params: map[string]any{"delete": "tags", "description": "web server"}},
		},
		{
			name: "a value changed outside the daemon is a conflict shown by the configuration now",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.conf = maps.Clone(after)
				p.conf["memory"] = float64(8192)
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}, reason: "memory", evidence: `memory = "8192"`},
		},
		{
			name: "A→B→C→B is a conflict when a read saw C",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				c := maps.Clone(after)
				c["memory"] = float64(1024)
				l.read("agent", c)
				p.conf = after // back to B
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}, evidence: `saw memory = "1024"`},
		},
		{
			name: "A→B→C→B is a conflict when the task index saw a config task, for every field",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096), "cores": float64(4)})
				p.tasks = append(p.tasks, indexTask("qmconfig", "root@pam", l.tick()), indexTask("qmconfig", "root@pam", l.tick()))
				p.conf = after
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict, "cores": FieldConflict}, evidence: "task qmconfig (OK) by root@pam"},
		},
		{
			name: "A→B→C→B that nothing saw is not seen: undo restores (PVE keeps no history)",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
		{
			name: "another key's write of the same field is a conflict naming it",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				_, c := l.edit("bob", after, map[string]any{"memory": float64(1024)})
				_, back := l.edit("bob", c, map[string]any{"memory": float64(4096)})
				p.conf = back
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}, reason: "memory", evidence: "changed memory"},
		},
		{
			name: "another key's write of another field leaves this one restorable",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				_, c := l.edit("bob", after, map[string]any{"cores": float64(8)})
				l.read("bob", c)
				p.conf = c
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}, params: map[string]any{"memory": float64(2048)}},
		},
		{
			name: "a power task or a backup since changes no field",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.tasks = append(p.tasks, indexTask("qmstop", "root@pam", l.tick()), indexTask("vzdump", "root@pam", l.tick()), indexTask("qmstart", "root@pam", l.tick()))
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
		{
			name: "a task that ended before the operation is not evidence against it",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				p.tasks = append(p.tasks, indexTask("qmconfig", "root@pam", l.tick()))
				l.tick()
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
		{
			name: "a task still running when the operation began is evidence against it",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				tk := indexTask("qmrollback", "root@pam", l.tick())
				tk.Ended = false
				p.tasks = append(p.tasks, tk)
				l.tick()
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}, evidence: "qmrollback"},
		},
		{
			name: "an own later write of the field blocks undo of the earlier one",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				_, c := l.edit("agent", after, map[string]any{"memory": float64(6144)})
				p.conf = c
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}},
		},
		{
			name: "… unless that later write is taken to be undone first (a change undone in reverse)",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				later, c := l.edit("agent", after, map[string]any{"memory": float64(6144), "cores": float64(3)})
				p.conf = c
				return id, []string{later}
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}, params: map[string]any{"memory": float64(2048)}},
		},
		{
			name: "… or was undone already",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				later, c := l.edit("agent", after, map[string]any{"memory": float64(6144)})
				l.read("agent", c)
				back := maps.Clone(after)
				back["digest"] = fakeDigest(back)
				l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: c, after: back, undoOf: later})
				p.conf = back
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
		{
			name: "an undo that did not set every field back is no excuse for what it saw",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				later, c := l.edit("agent", after, map[string]any{"memory": float64(6144), "cores": float64(3)})
				partial := maps.Clone(c)
				partial["memory"] = float64(4096)
				partial["digest"] = fakeDigest(partial)
				l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: c, after: partial, undoOf: later})
				p.conf = partial
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}, evidence: "changed memory"},
		},
		{
			name: "a write whose outcome is unknown may have changed what it named",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				l.write(undoWrite{key: "bob", args: map[string]any{"memory": float64(1024)}, prior: after, outcome: journal.OutcomeUncertain})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"memory": FieldConflict}, evidence: "may have changed"},
		},
		{
			name: "a write PVE refused changed nothing",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				l.write(undoWrite{key: "bob", args: map[string]any{"memory": float64(1024)}, prior: after, outcome: journal.OutcomeError})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
		{
			name: "a secret's value before cannot be written back",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				conf := maps.Clone(baseConf)
				conf["cipassword"] = "hunter2-old"
				id, after := l.edit("agent", conf, map[string]any{"cipassword": "hunter2-new"})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"cipassword": FieldConflict}, reason: "cipassword"},
		},
		{
			name: "a field the edit cannot set back is a conflict with the reason",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"scsi1": "local-lvm:vm-100-disk-1,size=4G", "memory": float64(4096)})
				p.conf = after
				return id, nil
			},
			restorable: func(tmpl, f string) string {
				if tmpl == undoTemplate && f == "scsi1" {
					return "scsi1 holds a volume"
				}
				return ""
			},
			want: want{status: UndoConflict, actions: map[string]FieldAction{"scsi1": FieldConflict, "memory": FieldRestore}, reason: "scsi1"},
		},
		{
			name: "fields the edit did not ask for are not its own",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				after := maps.Clone(baseConf)
				after["memory"], after["cores"] = float64(4096), float64(6)
				after["digest"] = fakeDigest(after)
				id := l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: baseConf, after: after})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}, params: map[string]any{"memory": float64(2048)}, evidence: "did not ask for it"},
		},
		{
			name: "an edit that set the values that were there has nothing to undo",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(2048)})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoNothing},
		},
		{
			name: "the configuration that cannot be read is a conflict",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, _ := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				p.confErr = errors.New("500 Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist")
				return id, nil
			},
			want: want{status: UndoConflict, reason: "does not exist"},
		},
		{
			name: "an operation PVE refused changed nothing",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				return l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: baseConf, outcome: journal.OutcomeError}), nil
			},
			want: want{status: UndoNothing, reason: "error"},
		},
		{
			name: "an open intent is unsettled",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				return l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: baseConf, open: true}), nil
			},
			want: want{status: UndoUnsettled, reason: "pending"},
		},
		{
			name: "a lost answer is unsettled",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				return l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: baseConf, outcome: journal.OutcomeUncertain}), nil
			},
			want: want{status: UndoUnsettled, reason: "uncertain"},
		},
		{
			name: "a failed task is not inverted by a guess",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				return l.write(undoWrite{method: "POST", template: undoTemplate, path: undoPath, args: map[string]any{"memory": float64(4096)}, prior: baseConf, outcome: journal.OutcomeTaskFailed}), nil
			},
			want: want{status: UndoNotInvertible, reason: "task failed"},
		},
		{
			name: "an asynchronous edit whose task the index does not show ended is unsettled",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				after := maps.Clone(baseConf)
				after["memory"] = float64(4096)
				tk := indexTask("qmconfig", "mcp@pve!admin", l.now.Add(2*time.Second))
				tk.Ended = false
				p.tasks = append(p.tasks, tk)
				p.conf = after
				return l.write(undoWrite{method: "POST", template: undoTemplate, path: undoPath, args: map[string]any{"memory": float64(4096)}, prior: baseConf, after: after, upid: tk.UPID.String()}), nil
			},
			want: want{status: UndoUnsettled, reason: "does not show ended"},
		},
		{
			name: "an asynchronous edit whose configuration after was read before its task is not known",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				after := maps.Clone(baseConf) // read too early: still the values before
				tk := indexTask("qmconfig", "mcp@pve!admin", l.now.Add(2*time.Second))
				p.tasks = append(p.tasks, tk)
				p.conf = after
				return l.write(undoWrite{method: "POST", template: undoTemplate, path: undoPath, args: map[string]any{"memory": float64(4096)}, prior: baseConf, after: after, upid: tk.UPID.String()}), nil
			},
			want: want{status: UndoNotInvertible, reason: "before its task applied it"},
		},
		{
			name: "an asynchronous edit is undone with the synchronous PUT",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				after := maps.Clone(baseConf)
				after["memory"] = float64(4096)
				tk := indexTask("qmconfig", "mcp@pve!admin", l.now.Add(2*time.Second))
				p.tasks = append(p.tasks, tk)
				p.conf = after
				return l.write(undoWrite{method: "POST", template: undoTemplate, path: undoPath, args: map[string]any{"memory": float64(4096)}, prior: baseConf, after: after, upid: tk.UPID.String()}), nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
		{
			name: "an operation undone already says by which",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				back := maps.Clone(baseConf)
				back["digest"] = fakeDigest(back)
				l.write(undoWrite{args: map[string]any{"memory": float64(2048)}, prior: after, after: back, undoOf: id})
				p.conf = back
				return id, nil
			},
			want: want{status: UndoDone, reason: "undid it already"},
		},
		{
			name: "an undo whose outcome is unknown must be settled first",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				l.write(undoWrite{args: map[string]any{"memory": float64(2048)}, prior: after, undoOf: id, outcome: journal.OutcomeUncertain})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoUnsettled, reason: "uncertain"},
		},
		{
			name: "an undo PVE refused leaves the operation to undo again",
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
				l.write(undoWrite{args: map[string]any{"memory": float64(2048)}, prior: after, undoOf: id, outcome: journal.OutcomeError})
				p.conf = after
				return id, nil
			},
			want: want{status: UndoReady, actions: map[string]FieldAction{"memory": FieldRestore}},
		},
	}
	for _, inv := range []struct{ method, template, reason string }{
		{"DELETE", "/nodes/{node}/qemu/{vmid}", "a delete cannot be undone"},
		{"POST", "/nodes/{node}/qemu/{vmid}/migrate", "migration"},
		{"PUT", "/nodes/{node}/qemu/{vmid}/resize", "cannot shrink"},
		{"POST", "/nodes/{node}/qemu", "destroy the guest"},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", "power action"},
		{"POST", "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", "rollback"},
		{"POST", "/nodes/{node}/qemu/{vmid}/move_disk", "moving a disk"},
		{"POST", "/nodes/{node}/qemu/{vmid}/template", "template"},
	} {
		cases = append(cases, struct {
			name       string
			build      func(l *undoLedger, p *undoPVEFake) (string, []string)
			restorable func(string, string) string
			want       want
		}{
			name: "not invertible: " + inv.method + " " + inv.template,
			build: func(l *undoLedger, p *undoPVEFake) (string, []string) {
				path := strings.NewReplacer("{node}", "pve1", "{vmid}", "100", "{snapname}", "s1").Replace(inv.template)
				return l.write(undoWrite{method: inv.method, template: inv.template, path: path, args: map[string]any{}}), nil
			},
			want: want{status: UndoNotInvertible, reason: inv.reason},
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newUndoLedger(t)
			p := &undoPVEFake{}
			id, assumed := tc.build(l, p)
			plan, err := testUndoer(t, l, p, tc.restorable).Preview(context.Background(), id, assumed...)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Status != tc.want.status {
				t.Fatalf("status %s (%s), want %s; fields %+v", plan.Status, plan.Reason, tc.want.status, plan.Fields)
			}
			explainedPlan(t, plan)
			for f, a := range tc.want.actions {
				fu := fieldOf(plan, f)
				if fu == nil || fu.Action != a {
					t.Errorf("field %s: %+v, want %s", f, fu, a)
				}
			}
			if len(tc.want.actions) > 0 && len(plan.Fields) != len(tc.want.actions) {
				t.Errorf("fields %+v, want only %v", plan.Fields, tc.want.actions)
			}
			if !strings.Contains(plan.Reason, tc.want.reason) {
				t.Errorf("reason %q, want it to mention %q", plan.Reason, tc.want.reason)
			}
			if tc.want.evidence != "" && !strings.Contains(fmt.Sprintf("%+v", plan), tc.want.evidence) {
				t.Errorf("no evidence mentions %q: %+v", tc.want.evidence, plan)
			}
			switch {
			case plan.Status == UndoReady:
				if plan.Request == nil || plan.Request.Method != "PUT" || plan.Request.Path != undoPath || plan.Request.Digest == "" || plan.Request.Params["digest"] != plan.Request.Digest {
					t.Fatalf("request %+v", plan.Request)
				}
				if p.conf != nil && plan.Request.Digest != fakeDigest(p.conf) {
					t.Errorf("the undo carries digest %s, the configuration now has %s", plan.Request.Digest, fakeDigest(p.conf))
				}
				for k, v := range tc.want.params {
					if got := plan.Request.Params[k]; !reflect.DeepEqual(got, v) {
						t.Errorf("param %s = %#v, want %#v", k, got, v)
					}
				}
			case plan.Request != nil:
				t.Errorf("a %s plan has a request: %+v", plan.Status, plan.Request)
			}
		})
	}
}

// The snapshot an operation made is deleted by its undo, only if it is
// still the one it made and nobody rolled the guest back since.
func TestUndoSnapshot(t *testing.T) {
	const snapTemplate = "/nodes/{node}/qemu/{vmid}/snapshot"
	cases := []struct {
		name   string
		pve    func(l *undoLedger, made time.Time, p *undoPVEFake)
		status UndoStatus
		reason string
	}{
		{"the snapshot it made is deleted", func(l *undoLedger, made time.Time, p *undoPVEFake) {
			p.snapshots = []Snapshot{{Name: "before-upgrade", Time: made.Add(-48 * time.Hour)}, {Name: "pre-mem", Time: made}}
		}, UndoReady, ""},
		{"a snapshot gone already leaves nothing to undo", func(l *undoLedger, made time.Time, p *undoPVEFake) {}, UndoNothing, "no longer exists"},
		{"a snapshot of that name made later is someone else's", func(l *undoLedger, made time.Time, p *undoPVEFake) {
			p.snapshots = []Snapshot{{Name: "pre-mem", Time: made.Add(time.Hour)}}
		}, UndoConflict, "someone else's"},
		{"a rollback since keeps it", func(l *undoLedger, made time.Time, p *undoPVEFake) {
			p.snapshots = []Snapshot{{Name: "pre-mem", Time: made}}
			p.tasks = append(p.tasks, indexTask("qmrollback", "root@pam", l.tick()))
		}, UndoConflict, "rolled back"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newUndoLedger(t)
			p := &undoPVEFake{}
			made := l.now.Add(2 * time.Second)
			tk := indexTask("qmsnapshot", "mcp@pve!admin", made)
			p.tasks = append(p.tasks, tk)
			id := l.write(undoWrite{method: "POST", template: snapTemplate, path: "/nodes/pve1/qemu/100/snapshot",
				args: map[string]any{"node": "pve1", "vmid": 100, "snapname": "pre-mem"}, upid: tk.UPID.String()})
			tc.pve(l, made, p)
			plan, err := testUndoer(t, l, p, nil).Preview(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Status != tc.status || !strings.Contains(plan.Reason, tc.reason) {
				t.Fatalf("%s (%s), want %s (%q)", plan.Status, plan.Reason, tc.status, tc.reason)
			}
			explainedPlan(t, plan)
			if tc.status == UndoReady && (plan.Request == nil || plan.Request.Method != "DELETE" || plan.Request.Path != "/nodes/pve1/qemu/100/snapshot/pre-mem") {
				t.Errorf("request %+v", plan.Request)
			}
		})
	}
}

// A config edit of a change that made a snapshot of the guest first is
// offered the rollback to it (undo never does it), and only then.
func TestUndoOffersRollbackOnlyToTheChangesSnapshot(t *testing.T) {
	l := newUndoLedger(t)
	p := &undoPVEFake{}
	made := l.now.Add(2 * time.Second)
	tk := indexTask("qmsnapshot", "mcp@pve!admin", made)
	p.tasks = []GuestTask{tk}
	p.snapshots = []Snapshot{{Name: "pre-mem", Time: made}, {Name: "before-upgrade", Time: made.Add(-time.Hour)}}
	l.write(undoWrite{method: "POST", template: "/nodes/{node}/qemu/{vmid}/snapshot", path: "/nodes/pve1/qemu/100/snapshot",
		args: map[string]any{"snapname": "pre-mem"}, upid: tk.UPID.String(), change: "mem-change"})
	after := maps.Clone(baseConf)
	after["memory"] = float64(4096)
	after["digest"] = fakeDigest(after)
	id := l.write(undoWrite{args: map[string]any{"memory": float64(4096)}, prior: baseConf, after: after, change: "mem-change"})
	alone, _ := l.edit("agent", after, map[string]any{"cores": float64(3)})
	p.conf = after
	u := testUndoer(t, l, p, nil)
	plan, err := u.Preview(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Rollback == nil || plan.Rollback.Snapshot != "pre-mem" || !strings.Contains(plan.Rollback.Note, "undo never does it") {
		t.Errorf("rollback offer %+v", plan.Rollback)
	}
	if plan, err = u.Preview(context.Background(), alone); err != nil || plan.Rollback != nil {
		t.Errorf("an edit outside the change was offered %+v (%v)", plan.Rollback, err)
	}
}

// A history longer than undo reads is refused, not judged on a part.
func TestUndoRefusesTooLongAHistory(t *testing.T) {
	l := newUndoLedger(t)
	p := &undoPVEFake{}
	id, after := l.edit("agent", baseConf, map[string]any{"memory": float64(4096)})
	for range 4 {
		l.read("agent", after)
	}
	p.conf = after
	for _, tc := range []struct {
		max    int
		status UndoStatus
	}{{3, UndoConflict}, {4, UndoReady}} {
		u, err := NewUndoer(UndoOptions{Journal: l.j, PVE: p, Redact: l.j.Redactor().Value, MaxHistory: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := u.Preview(context.Background(), id)
		if err != nil || plan.Status != tc.status {
			t.Fatalf("max %d: %+v %v, want %s", tc.max, plan, err, tc.status)
		}
		if tc.status == UndoConflict && !strings.Contains(plan.Reason, "more than 3 rows") {
			t.Errorf("reason %q", plan.Reason)
		}
	}
}

func TestUndoUnknownOperation(t *testing.T) {
	l := newUndoLedger(t)
	u := testUndoer(t, l, &undoPVEFake{}, nil)
	if _, err := u.Preview(context.Background(), "0123456789abcdef0123456789abcdef"); !errors.Is(err, ErrNotOperation) {
		t.Errorf("err %v, want ErrNotOperation", err)
	}
	l.read("agent", baseConf)
	evs, _ := l.j.Tail(context.Background(), 1)
	if _, err := u.Preview(context.Background(), evs[0].CallID); !errors.Is(err, ErrNotOperation) {
		t.Errorf("a read: err %v, want ErrNotOperation", err)
	}
}
