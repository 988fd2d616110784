package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// A dry run of a config edit answers the request as validated, the
// current values of the fields it would change and the diff, and the
// decision; nothing is sent.
func TestDryRunShowsTheDiff(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	_, before := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/config"})
	conf := before["data"].(map[string]any)
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config",
		"params": map[string]any{"memory": 6144, "delete": "description"}, "dry_run": true})
	if res.IsError {
		t.Fatal(text(res))
	}
	diff, _ := content["diff"].(map[string]any)
	mem, _ := diff["memory"].(map[string]any)
	if mem == nil || fmt.Sprint(mem["before"]) != fmt.Sprint(conf["memory"]) || fmt.Sprint(mem["after"]) != "6144" {
		t.Errorf("diff %v", diff)
	}
	if conf["description"] != nil {
		if d, _ := diff["description"].(map[string]any); d == nil || d["after"] != nil {
			t.Errorf("the deleted field is not in the diff: %v", diff)
		}
	}
	if content["digest"] != conf["digest"] || content["decision"] == nil {
		t.Errorf("preview %v", content)
	}
	_, after := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/config"})
	if after["data"].(map[string]any)["digest"] != conf["digest"] {
		t.Error("a dry run changed the configuration")
	}
}

// A preview kept as a plan is applied later exactly as previewed; a plan
// whose configuration changed since is refused with the diff; a plan is
// its key's alone and is applied once.
func TestKeptPlanAppliesExactlyOrNotAtAll(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config",
		"params": map[string]any{"memory": 5120}, "dry_run": true, "keep_plan": true})
	if res.IsError {
		t.Fatal(text(res))
	}
	id := content["plan"].(map[string]any)["id"].(string)
	// Another key cannot apply it.
	other, octx := h.as("root")
	if res, _ := call(t, other, octx, ToolPlanApply, map[string]any{"plan": id}); !res.IsError {
		t.Errorf("another key applied the plan: %s", text(res))
	}
	res, applied := call(t, c, ctx, ToolPlanApply, map[string]any{"plan": id})
	if res.IsError {
		t.Fatal(text(res))
	}
	ch := applied["evidence"].(map[string]any)["changes"].(map[string]any)
	if fmt.Sprint(ch["memory"].(map[string]any)["after"]) != "5120" {
		t.Errorf("applied changes %v", ch)
	}
	if res, _ := call(t, c, ctx, ToolPlanApply, map[string]any{"plan": id}); !res.IsError || !strings.Contains(text(res), "applied already") {
		t.Errorf("a plan applied twice: %s", text(res))
	}
	// The journal holds the plan and the operation that applied it.
	op := applied["evidence"].(map[string]any)["operation"].(string)
	evs, _ := h.journal.CallEvents(ctx, op)
	if d, _ := evs[0].DetailOf(); d.Plan != id {
		t.Errorf("the operation does not name its plan: %+v", d)
	}

	// A plan whose configuration changes before it is applied is refused.
	_, content = call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config",
		"params": map[string]any{"memory": 7168}, "dry_run": true, "keep_plan": true})
	stale := content["plan"].(map[string]any)["id"].(string)
	if res, _ := call(t, other, octx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": map[string]any{"memory": 2048}}); res.IsError {
		t.Fatal(text(res))
	}
	res, _ = call(t, c, ctx, ToolPlanApply, map[string]any{"plan": stale})
	if !res.IsError || !strings.Contains(text(res), "the configuration changed since the plan was made") || !strings.Contains(text(res), "memory") {
		t.Errorf("a stale plan: %s", text(res))
	}
	_, now := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/config"})
	if fmt.Sprint(now["data"].(map[string]any)["memory"]) != "2048" {
		t.Errorf("a refused plan changed the configuration: %v", now["data"])
	}
}

// With changes.preview_writes every write is answered as a preview.
func TestPreviewSwitch(t *testing.T) {
	h := newHarness(t, harnessOpts{switches: &Switches{AllowMutations: true, PreviewWrites: true}})
	c, ctx := h.as("operator")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	if res.IsError || content["dry_run"] != true || !strings.Contains(fmt.Sprint(content["preview"]), "preview_writes") {
		t.Fatalf("a write under preview_writes: %s", text(res))
	}
	if len(h.audit.intents) != 0 {
		t.Error("an intent was recorded under preview_writes")
	}
	if out := h.audit.outcomes(); len(out) != 1 || out[0] != journal.OutcomeDryRun {
		t.Errorf("outcomes %v", out)
	}
}

// A protected guest, by VMID or by tag, needs a second principal's
// approval for every write, whatever the key's profile: a root key gets an
// approval request, not the change.
func TestProtectedGuestsNeedASecondPrincipal(t *testing.T) {
	h := newHarness(t, harnessOpts{protected: ProtectedGuests{VMIDs: []int{100}, Tags: []string{"prod"}}})
	h.srv.guests.ttl = 0 // every lookup reads the cluster's guests again
	root, rctx := h.as("root")
	res, content := call(t, root, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop"})
	if content["status"] != "approval_required" || !strings.Contains(text(res), "guest 100 is protected") {
		t.Errorf("a root key's stop of protected guest 100: %s", text(res))
	}
	// Tag guest 101 prod (the tag itself is not protected yet: 101 is not).
	if res, _ := call(t, root, rctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config", "params": map[string]any{"tags": "prod"}}); res.IsError {
		t.Fatal(text(res))
	}
	res, content = call(t, root, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	if content["status"] != "approval_required" || !strings.Contains(text(res), `tagged "prod"`) {
		t.Errorf("a write to a guest tagged prod: %s", text(res))
	}
	// A read is not held.
	if res, _ := call(t, root, rctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/config"}); res.IsError {
		t.Errorf("a read of a protected guest: %s", text(res))
	}
}

// A write that names the node a guest has left goes to the node it is on,
// decided again for that node, and the answer says where it was found.
func TestGuestFoundWhereItMigrated(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.srv.guests.ttl = 0
	root, rctx := h.as("root")
	res, _ := call(t, root, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/migrate", "params": map[string]any{"target": "pve2"}, "wait": 60})
	if res.IsError {
		t.Fatal(text(res))
	}
	res, content := call(t, root, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	if res.IsError {
		t.Fatalf("start on the old node: %s", text(res))
	}
	found, _ := content["found_on"].(map[string]any)
	if found["node"] != "pve2" || found["named"] != "pve1" || content["path"] != "/nodes/pve2/qemu/101/status/start" {
		t.Errorf("the answer %v", content)
	}
}
