package tools

import (
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"strings"
	"testing"
)

// A policy can require a second person: the call is held, the requester
// cannot approve it, a different key whose own policy allows the call
// approves it, and the requester's repeat with the token goes through,
// once.
func TestApprovalByAnotherPrincipal(t *testing.T) {
	h := newHarness(t, harnessOpts{reg: demoRegistry(t)})
	activateTwoPerson(t, h)
	req, rctx := h.as("", "two-person")
	start := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"}
	before := h.sim.Writes()
	res, held := call(t, req, rctx, ToolCall, start)
	if res.IsError || held["status"] != "approval_required" || held["approver"] != "other" {
		t.Fatalf("held call: %s", text(res))
	}
	token := held["confirm"].(string)

	// The requester cannot use the token yet, nor approve its own call.
	res, _ = call(t, req, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "confirm": token})
	if !res.IsError || !strings.Contains(text(res), "has not approved it yet") {
		t.Errorf("unapproved token: %s", text(res))
	}
	res, _ = call(t, req, rctx, ToolApprove, map[string]any{"token": token, "approve": true})
	if !res.IsError || !strings.Contains(text(res), "cannot approve its own call") {
		t.Errorf("self-approval: %s", text(res))
	}

	// A read-only key cannot change anything, so it has no approve tool.
	ro, roctx := h.as("read-only")
	for _, n := range toolNames(t, ro, roctx) {
		if n == ToolApprove {
			t.Error("a read-only key sees the approve tool")
		}
	}

	// An operator sees the call, then approves it.
	op, opctx := h.as("operator")
	res, seen := call(t, op, opctx, ToolApprove, map[string]any{"token": token})
	if res.IsError || seen["approved"] != false || seen["path"] != "/nodes/pve1/qemu/101/status/start" {
		t.Fatalf("show: %s", text(res))
	}
	res, _ = call(t, op, opctx, ToolApprove, map[string]any{"token": token, "approve": true})
	if res.IsError || !strings.Contains(text(res), "Approved: POST /nodes/pve1/qemu/101/status/start") {
		t.Fatalf("approve: %s", text(res))
	}
	if h.sim.Writes() != before {
		t.Error("something was sent before the requester's confirmed call")
	}

	res, done := call(t, req, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "confirm": token, "wait": 30})
	if res.IsError || done["upid"] == nil {
		t.Fatalf("confirmed call: %s", text(res))
	}
	res, _ = call(t, req, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "confirm": token})
	if !res.IsError || !strings.Contains(text(res), "already used") {
		t.Errorf("second use: %s", text(res))
	}
	// The approval is journalled under the approver.
	found := false
	for _, r := range h.audit.records {
		if r.call.Tool == ToolApprove && r.out.Outcome == journal.OutcomeOK && r.call.Principal.Name == "operator-key" && r.call.ConcretePath == "/nodes/pve1/qemu/101/status/start" {
			found = true
		}
	}
	if !found {
		t.Error("no journal row for the approval")
	}
}

// In search mode the call tool approves (there is no approve tool), and
// the held call's answer says so.
func TestApprovalInSearchMode(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: ModeSearch, reg: demoRegistry(t)})
	activateTwoPerson(t, h)
	req, rctx := h.as("", "two-person")
	res, held := call(t, req, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	if res.IsError || !strings.Contains(text(res), `proxmox_api_call with approve {"token": ..., "approve": true}`) {
		t.Fatalf("held call: %s", text(res))
	}
	token := held["confirm"].(string)
	op, opctx := h.as("operator")
	res, _ = call(t, op, opctx, ToolCall, map[string]any{"approve": map[string]any{"token": token, "approve": true}})
	if res.IsError || !strings.Contains(text(res), "Approved: POST /nodes/pve1/qemu/101/status/start") {
		t.Fatalf("approve through the call tool: %s", text(res))
	}
	res, _ = call(t, req, rctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "confirm": token})
	if res.IsError {
		t.Errorf("approved call: %s", text(res))
	}
	res, _ = call(t, op, opctx, ToolCall, map[string]any{"approve": map[string]any{"token": token}, "method": "GET"})
	if !res.IsError || !strings.Contains(text(res), "argument method") {
		t.Errorf("approve with method: %s", text(res))
	}
}

// activateTwoPerson activates a custom policy that holds every change for a
// second principal's approval.
func activateTwoPerson(t *testing.T, h *harness) {
	t.Helper()
	src := []byte(`package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision if input.risk == "read"

decision := {"effect": "confirm", "reasons": ["changes need a second person"], "obligations": [{"type": "confirm", "approver": "other"}]} if input.risk != "read"
`)
	tests := []byte(`package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

test_write_needs_other if {
	policy.decision.obligations[0].approver == "other" with input as {"method": "POST", "risk": "write", "path": "/nodes/{node}/qemu/{vmid}/status/start"}
}
`)
	dr, err := h.store.Draft(t.Context(), "two-person", src, tests)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Activate(t.Context(), "two-person", dr.Digest); err != nil {
		t.Fatal(err)
	}
}
