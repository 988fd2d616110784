package tools

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// otherParty is someone changing the simulator outside the daemon, with
// PVE's root token: nothing of it reaches the journal.
func otherParty(t *testing.T, h *harness) *pve.Client {
	t.Helper()
	tiers := h.srv.opts.PVE.(*simTiers)
	tok, ok := h.sim.Token("root@pam!sim")
	if !ok {
		t.Fatal("the simulator has no root@pam!sim token")
	}
	c, err := pve.New(pve.Config{BaseURL: tiers.url, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)}, TLS: pve.TLSTrust{Fingerprints: []string{tiers.fp}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func configOf(t *testing.T, c *client.Client, ctx context.Context, path string) map[string]any {
	t.Helper()
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": path})
	if res.IsError {
		t.Fatal(text(res))
	}
	return content["data"].(map[string]any)
}

const vm100 = "/nodes/pve1/qemu/100/config"

// An edit is previewed, undone through MCP as a write of its own (its own
// operation, conditional on the digest, journalled as undoing the edit),
// and undoing it again returns the recorded undo and sends nothing.
func TestUndoRestoresAnEdit(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	before := configOf(t, c, ctx, vm100)
	res, edit := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100,
		"params": map[string]any{"memory": 3072, "description": "set by the test", "delete": "tags"}, "operation_key": "mem-1"})
	if res.IsError {
		t.Fatal(text(res))
	}
	id := edit["evidence"].(map[string]any)["operation"].(string)

	writes := h.sim.Writes()
	res, view := call(t, c, ctx, ToolUndo, map[string]any{"operation_key": "mem-1"})
	if res.IsError || view["status"] != "ready" || view["runnable"] != true {
		t.Fatalf("preview: %s", text(res))
	}
	fields := view["fields"].(map[string]any)
	if fields["memory"].(map[string]any)["action"] != "restore" || fields["description"].(map[string]any)["action"] != "delete" ||
		fields["tags"].(map[string]any)["action"] != "restore" || len(fields) != 3 {
		t.Errorf("fields %v", fields)
	}
	if h.sim.Writes() != writes {
		t.Fatal("the preview sent a write")
	}

	res, done := call(t, c, ctx, ToolUndo, map[string]any{"operation": id, "preview": false})
	if res.IsError {
		t.Fatalf("undo: %s", text(res))
	}
	ev, _ := done["evidence"].(map[string]any)
	undoID, _ := ev["operation"].(string)
	if undoID == "" || undoID == id || done["undo_of"] != id {
		t.Fatalf("the undo's answer: %v", done)
	}
	after := configOf(t, c, ctx, vm100)
	for _, k := range []string{"memory", "tags", "description"} {
		if fmt.Sprint(after[k]) != fmt.Sprint(before[k]) {
			t.Errorf("%s is %v after undo, was %v before the edit", k, after[k], before[k])
		}
	}
	// The undo is an operation of its own that says what it undid.
	evs, err := h.journal.CallEvents(context.Background(), undoID)
	if err != nil || len(evs) != 2 {
		t.Fatalf("undo rows %v %v", evs, err)
	}
	d, _ := evs[0].DetailOf()
	if d.UndoOf != id || !strings.HasPrefix(d.OperationKey, "undo."+id+".") || evs[0].PriorDigest == "" || evs[0].Tool != ToolUndo {
		t.Errorf("the undo's intent: %+v %+v", evs[0], d)
	}
	// Again: undone already, nothing sent.
	writes = h.sim.Writes()
	res, again := call(t, c, ctx, ToolUndo, map[string]any{"operation": id, "preview": false})
	if res.IsError || again["status"] != "undone" || again["undone_by"] != undoID || h.sim.Writes() != writes {
		t.Errorf("a second undo: %s (writes %d → %d)", text(res), writes, h.sim.Writes())
	}
}

// A field someone changed since is a conflict with its evidence; the undo
// is refused whole, sends nothing, and the refusal is journalled.
func TestUndoRefusesAConflict(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	res, edit := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100, "params": map[string]any{"memory": 3072, "cores": 3}})
	if res.IsError {
		t.Fatal(text(res))
	}
	id := edit["evidence"].(map[string]any)["operation"].(string)
	root := otherParty(t, h)
	if _, err := root.Do(context.Background(), "PUT", vm100, url.Values{"memory": {"5120"}}); err != nil {
		t.Fatal(err)
	}
	writes := h.sim.Writes()
	res, view := call(t, c, ctx, ToolUndo, map[string]any{"operation": id, "preview": false})
	if !res.IsError || view["status"] != "conflict" || h.sim.Writes() != writes {
		t.Fatalf("undo over another's change: %s", text(res))
	}
	mem := view["fields"].(map[string]any)["memory"].(map[string]any)
	if mem["action"] != "conflict" || !strings.Contains(fmt.Sprint(mem["why"]), "5120") || mem["evidence"] == nil {
		t.Errorf("memory: %v", mem)
	}
	if cores := view["fields"].(map[string]any)["cores"].(map[string]any); cores["action"] != "restore" {
		t.Errorf("cores: %v (nobody touched it)", cores)
	}
	if got := configOf(t, c, ctx, vm100)["cores"]; fmt.Sprint(got) != "3" {
		t.Errorf("cores is %v: a refused undo changed it", got)
	}
	rows, err := h.journal.KeyEvents(context.Background(), "kadmin", 10)
	if err != nil {
		t.Fatal(err)
	}
	var refusal, observed bool
	for _, r := range rows {
		if r.Tool != ToolUndo {
			continue
		}
		switch {
		case r.Kind == "call" && r.Outcome == "error" && strings.Contains(r.Error, "cannot be undone"):
			refusal = true
		case r.Kind == "observation":
			d, _ := r.DetailOf()
			observed = fmt.Sprint(d.Config["memory"]) == "5120"
		}
	}
	if !refusal || !observed {
		t.Errorf("the journal has the refusal %v and what undo saw %v: %+v", refusal, observed, rows)
	}
}

// Undo is for the key that made the operation: another key finds none.
func TestUndoOfAnotherKeysOperation(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	res, edit := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100, "params": map[string]any{"memory": 3072}})
	if res.IsError {
		t.Fatal(text(res))
	}
	id := edit["evidence"].(map[string]any)["operation"].(string)
	other, octx := h.as("operator")
	if res, _ := call(t, other, octx, ToolUndo, map[string]any{"operation": id}); !res.IsError || !strings.Contains(text(res), "of your key") {
		t.Errorf("another key's undo: %s", text(res))
	}
	for _, args := range []map[string]any{
		{},
		{"operation": id, "change": "x"},
		{"operation": id, "preview": "no"},
		{"operation": id, "force": true},
		{"change": "bad name"},
		{"change": "c", "undo_key": "k"},
	} {
		if res, _ := call(t, c, ctx, ToolUndo, args); !res.IsError || !strings.Contains(text(res), "argument ") {
			t.Errorf("%v: %s", args, text(res))
		}
	}
}

// A change (a snapshot, then two edits of one field) is undone newest
// first: the field goes back through both edits, the snapshot it made is
// deleted, and a second call finds nothing left to do.
func TestUndoChangeInReverse(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	before := configOf(t, c, ctx, vm100)
	for _, step := range []map[string]any{
		{"method": "POST", "path": "/nodes/pve1/qemu/100/snapshot", "params": map[string]any{"snapname": "pre-change"}, "wait": 30},
		{"method": "PUT", "path": vm100, "params": map[string]any{"memory": 3072}},
		{"method": "PUT", "path": vm100, "params": map[string]any{"memory": 6144, "cores": 5}},
	} {
		step["change"] = "resize-web"
		if res, _ := call(t, c, ctx, ToolCall, step); res.IsError {
			t.Fatal(text(res))
		}
	}
	res, pv := call(t, c, ctx, ToolUndo, map[string]any{"change": "resize-web"})
	if res.IsError || pv["complete"] != true || len(pv["operations"].([]any)) != 3 {
		t.Fatalf("preview of the change: %s", text(res))
	}
	// The edit in the middle is offered the rollback to the change's snapshot.
	mid := pv["operations"].([]any)[1].(map[string]any)
	if offer, _ := mid["rollback_offer"].(map[string]any); offer == nil || offer["snapshot"] != "pre-change" {
		t.Errorf("rollback offer: %v", mid["rollback_offer"])
	}
	res, done := call(t, c, ctx, ToolUndo, map[string]any{"change": "resize-web", "preview": false})
	if res.IsError || done["complete"] != true || done["undone_now"] != float64(3) {
		t.Fatalf("undo of the change: %s", text(res))
	}
	after := configOf(t, c, ctx, vm100)
	for _, k := range []string{"memory", "cores"} {
		if fmt.Sprint(after[k]) != fmt.Sprint(before[k]) {
			t.Errorf("%s is %v, was %v", k, after[k], before[k])
		}
	}
	if n := snapshotsNamed(t, h, ctx, c, "pre-change"); n != 0 {
		t.Errorf("the change's snapshot is still there")
	}
	writes := h.sim.Writes()
	res, again := call(t, c, ctx, ToolUndo, map[string]any{"change": "resize-web", "preview": false})
	if res.IsError || again["complete"] != true || again["undone_now"] != float64(0) || h.sim.Writes() != writes {
		t.Errorf("undo of an undone change: %s", text(res))
	}
}

// A change whose newest edit conflicts stops there: nothing of it is
// undone, the answer says where and why; a conflict stays a conflict.
func TestUndoChangeStopsAtAConflict(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	for _, p := range []map[string]any{{"cores": 3}, {"memory": 3072}} {
		if res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100, "params": p, "change": "tune"}); res.IsError {
			t.Fatal(text(res))
		}
	}
	root := otherParty(t, h)
	if _, err := root.Do(context.Background(), "PUT", vm100, url.Values{"memory": {"5120"}}); err != nil {
		t.Fatal(err)
	}
	res, out := call(t, c, ctx, ToolUndo, map[string]any{"change": "tune", "preview": false})
	if !res.IsError || out["complete"] != false || out["undone_now"] != float64(0) || out["stopped_at"] == nil {
		t.Fatalf("a conflicting change: %s", text(res))
	}
	var conf map[string]any
	if err := root.Get(context.Background(), vm100, nil, &conf); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(conf["cores"]) != "3" {
		t.Errorf("cores %v: the older edit was undone past a conflict", conf["cores"])
	}
	// The other party puts memory back as the agent left it: A→B→C→B.
	// Undo saw C (its own read is journalled), so it is still a conflict.
	if _, err := root.Do(context.Background(), "PUT", vm100, url.Values{"memory": {"3072"}}); err != nil {
		t.Fatal(err)
	}
	res, out = call(t, c, ctx, ToolUndo, map[string]any{"change": "tune", "preview": false})
	if !res.IsError || out["complete"] != false || !strings.Contains(text(res), "5120") {
		t.Fatalf("A→B→C→B after undo saw C: %s", text(res))
	}
}

// A change whose undo stops (here: the guest became protected, so each
// write to it needs another principal's approval) continues where it
// stopped on the next call: nothing is undone twice, and the token of a
// confirmation goes to the operation that asked for it.
func TestUndoChangeResumes(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	approver, actx := h.as("root")
	before := configOf(t, c, ctx, vm100)
	for _, p := range []map[string]any{{"cores": 3}, {"memory": 3072}} {
		if res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100, "params": p, "change": "tune"}); res.IsError {
			t.Fatal(text(res))
		}
	}
	h.srv.SetProtected(ProtectedGuests{VMIDs: []int{100}})
	undo := map[string]any{"change": "tune", "preview": false}
	for round, want := range []float64{0, 1, 1} {
		res, out := call(t, c, ctx, ToolUndo, undo)
		if out["undone_now"] != want {
			t.Fatalf("round %d: %s", round, text(res))
		}
		if round == 2 {
			if res.IsError || out["complete"] != true {
				t.Fatalf("the last round: %s", text(res))
			}
			break
		}
		tok, _ := out["confirm"].(string)
		if res.IsError || out["complete"] != false || tok == "" {
			t.Fatalf("round %d: %s", round, text(res))
		}
		if res, _ := call(t, approver, actx, ToolApprove, map[string]any{"token": tok, "approve": true}); res.IsError {
			t.Fatalf("approve: %s", text(res))
		}
		undo["confirm"] = tok
	}
	after := configOf(t, c, ctx, vm100)
	if fmt.Sprint(after["cores"]) != fmt.Sprint(before["cores"]) || fmt.Sprint(after["memory"]) != fmt.Sprint(before["memory"]) {
		t.Errorf("after the change's undo: cores %v memory %v, want %v %v", after["cores"], after["memory"], before["cores"], before["memory"])
	}
}

// Writes that have no inverse say so at preview and are never sent.
func TestUndoNotInvertible(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	res, out := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30})
	if res.IsError {
		t.Fatal(text(res))
	}
	id := out["evidence"].(map[string]any)["operation"].(string)
	writes := h.sim.Writes()
	res, view := call(t, c, ctx, ToolUndo, map[string]any{"operation": id, "preview": false})
	if !res.IsError || view["status"] != "not_invertible" || !strings.Contains(fmt.Sprint(view["reason"]), "power action") || h.sim.Writes() != writes {
		t.Errorf("undo of a start: %s", text(res))
	}
}

// A→B→C→B, end to end: the agent sets memory to B, another party sets C
// and then B again outside the daemon. Whether undo may restore A depends
// on whether anything saw C: a read through the daemon, or a task in
// PVE's task index. When nothing did, PVE keeps no history that could
// tell, and undo restores (docs/changes.md says so).
func TestUndoABCB(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seeC   func(t *testing.T, h *harness, c *client.Client, ctx context.Context, root *pve.Client)
		status string
		cites  string
	}{
		{"a read saw C", func(t *testing.T, h *harness, c *client.Client, ctx context.Context, root *pve.Client) {
			if _, err := root.Do(context.Background(), "PUT", vm100, url.Values{"memory": {"5120"}}); err != nil {
				t.Fatal(err)
			}
			configOf(t, c, ctx, vm100)
		}, "conflict", `saw memory = \"5120`},
		{"the task index saw C", func(t *testing.T, h *harness, c *client.Client, ctx context.Context, root *pve.Client) {
			res, err := root.Do(context.Background(), "POST", vm100, url.Values{"memory": {"5120"}})
			if err != nil {
				t.Fatal(err)
			}
			var upid string
			if err := res.Decode(&upid); err != nil {
				t.Fatal(err)
			}
			if _, err := root.WaitTask(context.Background(), upid, pve.WaitOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "conflict", "task qmconfig"},
		{"nothing saw C", func(t *testing.T, h *harness, c *client.Client, ctx context.Context, root *pve.Client) {
			if _, err := root.Do(context.Background(), "PUT", vm100, url.Values{"memory": {"5120"}}); err != nil {
				t.Fatal(err)
			}
		}, "ready", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
			c, ctx := h.as("admin")
			res, edit := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100, "params": map[string]any{"memory": 3072}})
			if res.IsError {
				t.Fatal(text(res))
			}
			id := edit["evidence"].(map[string]any)["operation"].(string)
			root := otherParty(t, h)
			tc.seeC(t, h, c, ctx, root)
			if _, err := root.Do(context.Background(), "PUT", vm100, url.Values{"memory": {"3072"}}); err != nil {
				t.Fatal(err)
			}
			res, view := call(t, c, ctx, ToolUndo, map[string]any{"operation": id})
			if res.IsError || view["status"] != tc.status || !strings.Contains(text(res), tc.cites) {
				t.Errorf("undo after A→B→C→B: %s", text(res))
			}
		})
	}
}

// Several clients undo the same operation at once: one undo is sent; the
// others answer the recorded one, or that it is under way, or that the
// operation is undone already, and none says anything else.
func TestUndoConcurrentSendsOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, reg: demoRegistry(t)})
	c, ctx := h.as("admin")
	before := configOf(t, c, ctx, vm100)
	res, edit := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": vm100, "params": map[string]any{"memory": 3072}})
	if res.IsError {
		t.Fatal(text(res))
	}
	id := edit["evidence"].(map[string]any)["operation"].(string)
	writes := h.sim.Writes()
	var wg sync.WaitGroup
	answers := make([]string, 6)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, cctx := h.as("admin")
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = ToolUndo, map[string]any{"operation": id, "preview": false}
			res, err := cl.CallTool(cctx, req)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			answers[i] = text(res)
		}()
	}
	wg.Wait()
	if got := h.sim.Writes() - writes; got != 1 {
		t.Errorf("%d writes for 6 concurrent undos, want 1", got)
	}
	for _, a := range answers {
		if !strings.Contains(a, "set back") && !strings.Contains(a, "under way") && !strings.Contains(a, "undone already") &&
			!strings.Contains(a, "pending") && !strings.Contains(a, "nothing was sent again") {
			t.Errorf("an answer: %s", a)
		}
	}
	if got := configOf(t, c, ctx, vm100)["memory"]; fmt.Sprint(got) != fmt.Sprint(before["memory"]) {
		t.Errorf("memory %v, want %v", got, before["memory"])
	}
}
