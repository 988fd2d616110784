package tools

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// A write whose answer was lost is uncertain; proxmox_reconcile finds its
// task in PVE's task index and settles it as applied, with the evidence,
// in the journal and in proxmox_operation. Another key sees no such
// operation; a root key may reconcile it.
func TestReconcileToolSettlesALostAnswer(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("operator")
	h.sim.InjectFault(sim.Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", DropAfterApply: true, Times: 1})
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "operation_key": "start-101"})
	if !res.IsError || !strings.Contains(text(res), "Outcome unknown") {
		t.Fatalf("the lost answer: %s", text(res))
	}
	_, view := call(t, c, ctx, ToolOperation, map[string]any{"operation_key": "start-101"})
	id, _ := view["operation"].(string)
	if view["state"] != string(journal.OutcomeUncertain) || id == "" {
		t.Fatalf("before: %v", view)
	}
	// The harness's tasks take 40 ms of real time (its journal and the
	// simulator share the real clock): while the task runs, nothing is
	// judged and nothing is written.
	var res2 map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, out := call(t, c, ctx, ToolReconcile, map[string]any{})
		if res.IsError {
			t.Fatal(text(res))
		}
		list, _ := out["reconciled"].([]any)
		if len(list) == 1 && list[0].(map[string]any)["judged"] == false {
			if v := list[0].(map[string]any); !strings.Contains(v["reason"].(string), "still running") || v["journal"] != nil {
				t.Fatalf("not judged: %v", v)
			}
			if time.Now().After(deadline) {
				t.Fatal("the task did not end")
			}
			continue
		}
		res2 = out
		break
	}
	out := res2
	list, _ := out["reconciled"].([]any)
	if len(list) != 1 {
		t.Fatalf("reconciled %v", out)
	}
	v := list[0].(map[string]any)
	if v["operation"] != id || v["state"] != journal.StateApplied || v["judged"] != true || !strings.Contains(v["upid"].(string), ":qmstart:101:mcp@pve!operator:") {
		t.Fatalf("verdict %v", v)
	}
	_, after := call(t, c, ctx, ToolOperation, map[string]any{"operation": id})
	if after["state"] != journal.StateApplied || after["resolutions"] == nil {
		t.Errorf("after: %v", after)
	}
	// Nothing is left to settle.
	if _, again := call(t, c, ctx, ToolReconcile, map[string]any{}); len(again["reconciled"].([]any)) != 0 {
		t.Errorf("second pass: %v", again)
	}

	// Another key sees no such operation.
	other, octx := h.as("admin")
	if res, _ := call(t, other, octx, ToolReconcile, map[string]any{"operation": id}); !res.IsError || !strings.Contains(text(res), "of your key") {
		t.Errorf("another key: %s", text(res))
	}
	// A key that can write nothing has nothing to settle, and no such tool.
	ro, rctx := h.as("read-only")
	if names := toolNames(t, ro, rctx); slices.Contains(names, ToolReconcile) || slices.Contains(names, ToolUndo) || slices.Contains(names, ToolPlanApply) {
		t.Errorf("a read-only key is shown the contract's write tools: %v", names)
	}
	// A root key may: it is settled already, and not judged again.
	root, rootCtx := h.as("root")
	res, out = call(t, root, rootCtx, ToolReconcile, map[string]any{"operation": id})
	v = out["reconciled"].([]any)[0].(map[string]any)
	if res.IsError || v["judged"] != false || !strings.Contains(v["reason"].(string), "settled by resolution") {
		t.Errorf("root: %s", text(res))
	}
	// Unless asked; the resolution is the root key's.
	_, out = call(t, root, rootCtx, ToolReconcile, map[string]any{"operation": id, "again": true})
	if v = out["reconciled"].([]any)[0].(map[string]any); v["judged"] != true {
		t.Errorf("again: %v", v)
	}
	evs, err := h.journal.CallEvents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Kind != journal.KindResolution || last.Tool != ToolReconcile || last.Principal.KeyName != "root-key" {
		t.Errorf("the last row %+v", last)
	}
}

// Bad arguments are refused, naming the argument and the rule.
func TestReconcileToolArguments(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("operator")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"operation": "a", "operation_key": "b"}, "argument operation: give the operation id or operation_key, not both"},
		{map[string]any{"force": true}, "argument force: is not an argument of this tool"},
		{map[string]any{"again": "yes"}, "argument again: must be true or false"},
		{map[string]any{"operation_key": "never-used"}, `argument operation_key: your key has made no write with operation key "never-used"`},
		{map[string]any{"operation": "0123456789abcdef0123456789abcdef"}, "argument operation: no operation has this id"},
	} {
		if res, _ := call(t, c, ctx, ToolReconcile, tc.args); !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%v: %s, want %q", tc.args, text(res), tc.want)
		}
	}
}
