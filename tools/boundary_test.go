package tools

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// activate drafts and activates a custom policy, with a test that always
// holds (the tests here are about the daemon, not the policy).
func (h *harness) activate(id, src string) {
	h.t.Helper()
	tests := "package proxmox_mcp.policy_test\n\ntest_compiles if true\n"
	dr, err := h.store.Draft(h.t.Context(), id, []byte(src), []byte(tests))
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.store.Activate(h.t.Context(), id, dr.Digest); err != nil {
		h.t.Fatal(err)
	}
}

// denyList is an admin policy with one extra denial.
func denyList(rule string) string {
	return `package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision if not denied

decision := {"effect": "deny", "reasons": ["denied by the test rule"], "obligations": []} if denied

denied if {
` + rule + `
}
`
}

// Regression: the policy saw the path as the caller spelt it, so
// /nodes/pve1/qemu/%31%30%30/status/stop/ reached the endpoint a rule on
// input.concrete_path meant to stop. The input carries the canonical path.
func TestPolicySeesCanonicalPath(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.activate("no-stop-100", denyList(`	input.concrete_path == "/nodes/pve1/qemu/100/status/stop"`))
	c, ctx := h.as("", "no-stop-100")
	for _, path := range []string{"/nodes/pve1/qemu/100/status/stop", "/nodes/pve1/qemu/%31%30%30/status/stop/", "/nodes/pve1/qemu/1%300/status/stop"} {
		res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": path})
		if !res.IsError || !strings.Contains(text(res), "denied by the test rule") {
			t.Errorf("%s: not denied by the rule on the canonical path: %s", path, text(res))
		}
	}
	h.audit.mu.Lock()
	defer h.audit.mu.Unlock()
	for _, r := range h.audit.records {
		if r.call.ConcretePath != "/nodes/pve1/qemu/100/status/stop" {
			t.Errorf("journal row with path %q, want the canonical one", r.call.ConcretePath)
		}
	}
}

// Regression: params carried raw JSON types, so a rule on a boolean
// (input.params.skiplock == true) let 1 and "1" through. The input carries
// the values as validated, typed as the schema says.
func TestPolicySeesTypedValues(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.activate("no-skiplock", denyList(`	input.params.skiplock == true`))
	c, ctx := h.as("", "no-skiplock")
	for _, v := range []any{true, 1.0, "1"} {
		res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "params": map[string]any{"skiplock": v}})
		if !res.IsError || !strings.Contains(text(res), "denied by the test rule") {
			t.Errorf("skiplock=%#v: not denied: %s", v, text(res))
		}
	}
	// A rule on an integer sees a number however it was sent.
	h.activate("short-timeout", denyList(`	input.params.timeout > 60`))
	c, ctx = h.as("", "short-timeout")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/shutdown", "params": map[string]any{"timeout": "+0090"}})
	if !res.IsError || !strings.Contains(text(res), "denied by the test rule") {
		t.Errorf("timeout \"+0090\": not denied: %s", text(res))
	}
}

// Regression: targets omitted the guest that owns a volume named in the
// arguments, so a disk of VM 900 attached to VM 150 passed a policy
// limited to guests 100 to 199. Every vmid a volume id names is a target.
func TestTargetsHoldTheOwnerOfAVolume(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.activate("vm-range", denyList(`	some id in input.targets.vmids
	id > 199`))
	c, ctx := h.as("", "vm-range")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config",
		"params": map[string]any{"scsi1": "local-lvm:vm-900-disk-0,size=8G"}, "dry_run": true})
	if !res.IsError || !strings.Contains(text(res), "denied by the test rule") {
		t.Errorf("a disk of VM 900 attached to VM 101 passed a policy for 100-199: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config",
		"params": map[string]any{"scsi1": "local-lvm:vm-101-disk-5,size=8G"}, "dry_run": true})
	if res.IsError {
		t.Errorf("a disk of VM 101 itself was refused: %s", text(res))
	}
}

// Regression: dry_run: null was taken as absent and the call was made.
// A dry_run that is not a boolean is an argument error and nothing is sent.
func TestDryRunNullIsAnError(t *testing.T) {
	for _, mode := range []Mode{ModeCompact, ModeExpanded} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, harnessOpts{mode: mode})
			c, ctx := h.as("operator")
			name, args := ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "dry_run": nil}
			if mode == ModeExpanded {
				name, args = "post_nodes_qemu_status_stop", map[string]any{"node": "pve1", "vmid": 100, "_dry_run": nil}
			}
			res, _ := call(t, c, ctx, name, args)
			if !res.IsError || !strings.Contains(text(res), "dry_run: must be true or false") {
				t.Errorf("dry_run null: %s", text(res))
			}
			if out := h.audit.outcomes(); len(out) != 1 || out[0] != journal.OutcomeInvalid {
				t.Errorf("journal outcomes %v, want one invalid", out)
			}
			if len(h.audit.intents) != 0 {
				t.Error("an intent was recorded: the call was about to be sent")
			}
		})
	}
}

// Regression: fields and omit were searched linearly, so a 262,144-entry
// list cost half a second of CPU per answer. Their length is capped.
func TestShapeKeysAreBounded(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("read-only")
	huge := make([]any, 262144)
	for i := range huge {
		huge[i] = "k"
	}
	for _, arg := range []string{"fields", "omit"} {
		res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/cluster/resources", arg: huge})
		if !res.IsError || !strings.Contains(text(res), "argument "+arg+": has 262144 keys; at most 256") {
			t.Errorf("%s of 262144 keys: %s", arg, text(res))
		}
	}
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/cluster/resources", "fields": []any{"id", "id", "status"}, "limit": 2})
	if res.IsError {
		t.Fatal(text(res))
	}
	for _, it := range content["data"].([]any) {
		if obj := it.(map[string]any); len(obj) > 2 {
			t.Errorf("fields kept %v", obj)
		}
	}
}

// Regression: a refusal by policy said "no such endpoint" and suggested
// another path. It says that the endpoint exists, what refused the call,
// and which profile would allow it, and the answer carries the same as
// structured content.
func TestDenialNamesWhatWouldAllow(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("read-only")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop"})
	for _, want := range []string{
		"POST /nodes/pve1/qemu/100/status/stop exists (tool post_nodes_qemu_status_stop)",
		"your key's profile read-only does not allow this call",
		"profile operator, with confirmation",
		"profile admin",
	} {
		if !strings.Contains(text(res), want) {
			t.Errorf("denial lacks %q:\n%s", want, text(res))
		}
	}
	if content["status"] != "denied" || content["policy"] != "read-only" {
		t.Errorf("structured denial: %v", content)
	}
	// A path that no endpoint serves is told apart from a refusal.
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/nonsense"})
	if !strings.Contains(text(res), "No endpoint serves GET /nodes/pve1/nonsense") {
		t.Errorf("missing endpoint: %s", text(res))
	}
	if out := h.audit.outcomes(); len(out) != 2 || out[0] != journal.OutcomeDenied || out[1] != journal.OutcomeInvalid {
		t.Errorf("journal outcomes %v, want denied then invalid", out)
	}
}

// expensive is a rule that takes far longer than any bound to evaluate.
const expensive = `	every i in numbers.range(1, 100000) {
		every j in numbers.range(1, 100000) {
			i != 0 - j
		}
	}`

// Regression: a custom policy with an expensive rule made tools/list and
// an allowed tools/call hang (120 s in the review) with no journal row.
// Visibility is bounded like a decision: past its bound the caller sees
// only the generic tools and the failure is journalled; a call is decided
// (and denied) within the decision's own bound, and journalled too.
func TestSlowPolicyIsBoundedAndJournalled(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: ModeExpanded, engine: policy.EngineOptions{Timeout: 300 * time.Millisecond, VisibilityTimeout: 300 * time.Millisecond}})
	h.activate("slow", `package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision if slow

slow if {
`+expensive+`
}
`)
	c, ctx := h.as("", "slow")
	start := time.Now()
	names := toolNames(t, c, ctx)
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("tools/list took %s", took)
	}
	for _, n := range names {
		if !h.srv.alwaysVisible(n) {
			t.Errorf("tools/list of a policy whose visibility failed lists %s", n)
		}
	}
	if !slices.Contains(names, ToolCall) {
		t.Errorf("the generic tools are gone too: %v", names)
	}
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/version"})
	if !res.IsError || !strings.Contains(text(res), "did not decide within") {
		t.Errorf("a call under the slow policy: %s", text(res))
	}
	h.audit.mu.Lock()
	defer h.audit.mu.Unlock()
	var rows []string
	for _, r := range h.audit.records {
		rows = append(rows, r.call.Tool+":"+string(r.out.Outcome))
	}
	if !slices.Contains(rows, "tools/list:error") || !slices.Contains(rows, ToolCall+":denied") {
		t.Errorf("journal rows %v: want the failed listing and the denied call", rows)
	}
}
