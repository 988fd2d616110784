package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// Every tool of every mode has an object input schema that compiles as
// draft 2020-12, uses nothing major clients reject, and sets all four
// annotations.
func TestToolSchemasAndAnnotations(t *testing.T) {
	for _, mode := range []Mode{ModeCompact, ModeExpanded, ModeSearch} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, harnessOpts{mode: mode})
			c, ctx := h.as("root")
			res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) == 0 {
				t.Fatal("no tools")
			}
			for _, tl := range res.Tools {
				raw, err := json.Marshal(tl)
				if err != nil {
					t.Fatal(err)
				}
				var wire struct {
					InputSchema json.RawMessage `json:"inputSchema"`
					Annotations map[string]any  `json:"annotations"`
				}
				json.Unmarshal(raw, &wire) //nolint:errcheck // just marshalled
				for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
					if _, ok := wire.Annotations[hint].(bool); !ok {
						t.Errorf("%s: annotation %s not set", tl.Name, hint)
					}
				}
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(wire.InputSchema))
				if err != nil {
					t.Fatalf("%s: %v", tl.Name, err)
				}
				if root, _ := doc.(map[string]any); root["type"] != "object" {
					t.Errorf("%s: input schema root %v, want object", tl.Name, root["type"])
				}
				c := jsonschema.NewCompiler()
				c.DefaultDraft(jsonschema.Draft2020)
				if err := c.AddResource("mem://"+tl.Name, doc); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Compile("mem://" + tl.Name); err != nil {
					t.Errorf("%s: input schema does not compile: %v", tl.Name, err)
				}
				for _, banned := range []string{`"$ref"`, `"$schema"`, `"$defs"`, `"type":[`, `"oneOf"`, `"allOf"`} {
					if bytes.Contains(wire.InputSchema, []byte(banned)) {
						t.Errorf("%s: schema uses %s", tl.Name, banned)
					}
				}
				if a := wire.Annotations; a["readOnlyHint"] == true && a["destructiveHint"] == true {
					t.Errorf("%s: read-only and destructive at once", tl.Name)
				}
			}
			switch mode {
			case ModeSearch:
				if len(res.Tools) != 3 {
					t.Errorf("search mode has %d tools, want 3", len(res.Tools))
				}
			case ModeExpanded:
				if len(res.Tools) < 600 {
					t.Errorf("expanded mode has %d tools", len(res.Tools))
				}
			}
		})
	}
}

// Endpoint tools take their annotations from the risk table.
func TestEndpointAnnotations(t *testing.T) {
	reg := realRegistry(t)
	for _, tc := range []struct {
		key                                      string
		readOnly, destructive, idempotent, world bool
	}{
		{"GET /nodes/{node}/qemu", true, false, true, false},
		{"POST /nodes/{node}/qemu/{vmid}/status/start", false, false, false, false},
		{"POST /nodes/{node}/qemu/{vmid}/status/stop", false, true, false, false},
		{"DELETE /nodes/{node}/qemu/{vmid}", false, true, true, false},
		{"PUT /nodes/{node}/qemu/{vmid}/config", false, true, true, false},
		{"POST /nodes/{node}/storage/{storage}/download-url", false, false, false, true},
	} {
		method, path, _ := strings.Cut(tc.key, " ")
		tl := endpointTool(reg.Lookup(method, path))
		a := tl.Annotations
		if *a.ReadOnlyHint != tc.readOnly || *a.DestructiveHint != tc.destructive || *a.IdempotentHint != tc.idempotent || *a.OpenWorldHint != tc.world {
			t.Errorf("%s: annotations %v/%v/%v/%v", tc.key, *a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint)
		}
	}
}

// The compact tools/list stays small (the TypeScript reference sends
// 38,406 bytes for 49 tools).
func TestCompactListSize(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("root")
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	// 19 KiB held the eleven tools before the curated ones; the 25
	// curated tools, each with the registry's parameter schemas and an
	// output schema, bring it to 58 KiB (the reference server's list is
	// 622 KB); the three console and two download tools add 8.7 KiB (67 KiB).
	if len(b) > 68*1024 {
		t.Errorf("compact tools/list is %d bytes, over 68 KiB", len(b))
	}
	t.Logf("compact tools/list: %d tools, %d bytes", len(res.Tools), len(b))
}

// A read-only key does not see write tools, and cannot call them.
func TestVisibilityFollowsPolicy(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: ModeExpanded})
	ro, roCtx := h.as("read-only")
	names := toolNames(t, ro, roCtx)
	if slices.Contains(names, "post_nodes_qemu_status_start") || slices.Contains(names, ToolGuestPower) {
		t.Errorf("read-only key sees write tools")
	}
	if !slices.Contains(names, "get_nodes_qemu") || !slices.Contains(names, ToolResources) {
		t.Errorf("read-only key misses read tools: %d tools", len(names))
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "post_nodes_qemu_status_start"
	req.Params.Arguments = map[string]any{"node": "pve1", "vmid": 101}
	if _, err := ro.CallTool(roCtx, req); err == nil {
		t.Fatal("read-only key called a hidden tool")
	}
	// Through the generic tool the endpoint is not "missing": the answer
	// says it exists, what refused it, and which profile would allow it.
	res, _ := call(t, ro, roCtx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	for _, want := range []string{"POST /nodes/pve1/qemu/101/status/start exists", "profile read-only does not allow", "profile operator"} {
		if !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("generic call of a hidden endpoint: want %q in %s", want, text(res))
		}
	}
	op, opCtx := h.as("operator")
	if names := toolNames(t, op, opCtx); !slices.Contains(names, "post_nodes_qemu_status_start") {
		t.Error("operator key does not see the start tool")
	}
	// No caller, no tools.
	if res, err := ro.ListTools(t.Context(), mcp.ListToolsRequest{}); err == nil && len(res.Tools) != 0 {
		t.Errorf("a request without a caller sees %d tools", len(res.Tools))
	}
}

// An operator starts a stopped VM, waits for the task, and the journal has
// the intent and its receipt.
func TestStartAndWait(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	task, _ := content["task"].(map[string]any)
	if task["exitstatus"] != "OK" || task["ok"] != true || !strings.HasPrefix(content["upid"].(string), "UPID:pve1:") {
		t.Fatalf("task %v", content)
	}
	_, st := call(t, c, ctx, ToolGuestStatus, map[string]any{"vmid": 101})
	if data, _ := st["data"].(map[string]any); data["status"] != "running" {
		t.Errorf("status after the start: %v", st)
	}
	if len(h.audit.intents) != 1 || len(h.audit.receipts) != 1 {
		t.Fatalf("journal: %d intents, %d receipts", len(h.audit.intents), len(h.audit.receipts))
	}
	for id, intent := range h.audit.intents {
		if intent.Method != "POST" || intent.Path != "/nodes/{node}/qemu/{vmid}/status/start" || intent.Decision.Effect != "allow" {
			t.Errorf("intent %+v", intent)
		}
		if r := h.audit.receipts[id]; r.Outcome != journal.OutcomeOK || r.UPID == "" {
			t.Errorf("receipt %+v", r)
		}
	}
}

// Bad arguments are refused before anything is sent, naming the parameter.
func TestValidationBeforeSending(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	before := h.sim.Writes()
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "params": map[string]any{"timeout": -3, "frobnicate": true}})
	if !res.IsError || !strings.Contains(text(res), "timeout: value must have a minimum value of 0") || !strings.Contains(text(res), "frobnicate: property is not defined") {
		t.Errorf("refusal: %s", text(res))
	}
	if h.sim.Writes() != before {
		t.Error("something was sent to PVE")
	}
	if out := h.audit.outcomes(); len(out) != 1 || out[0] != journal.OutcomeInvalid {
		t.Errorf("journal outcomes %v", out)
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "PATCH", "path": "/version"})
	if !res.IsError || !strings.Contains(text(res), "argument method: must be GET, POST, PUT or DELETE") {
		t.Errorf("bad method: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/version", "verbose": true})
	if !res.IsError || !strings.Contains(text(res), "argument verbose: is not an argument of this tool") {
		t.Errorf("unknown argument: %s", text(res))
	}
}

// The switches refuse writes for every key and say which switch refused.
func TestSwitches(t *testing.T) {
	for _, tc := range []struct {
		name string
		sw   Switches
		want string
	}{
		{"mutations off", Switches{}, "allow_mutations switch is off"},
		{"read-only", Switches{ReadOnly: true, AllowMutations: true}, "read_only switch is on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{mode: ModeExpanded, switches: &tc.sw})
			c, ctx := h.as("root")
			names := toolNames(t, c, ctx)
			if slices.Contains(names, "post_nodes_qemu_status_start") || slices.Contains(names, ToolGuestPower) {
				t.Error("write tools are listed")
			}
			if !slices.Contains(names, "get_nodes_qemu") {
				t.Error("read tools are hidden")
			}
			res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("refusal: %s", text(res))
			}
			if res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/version"}); res.IsError {
				t.Errorf("a read was refused: %s", text(res))
			}
		})
	}
}

// A policy denial is a readable tool result with the policy's reasons.
func TestPolicyDenialIsReadable(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	src := []byte(`package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision if not denied

decision := {"effect": "deny", "reasons": ["only VMs 100 to 199"], "obligations": []} if denied

denied if {
	some id in input.targets.vmids
	id > 199
}
`)
	tests := []byte(`package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

test_vm_300_denied if {
	policy.decision.effect == "deny" with input as {"method": "POST", "risk": "write", "targets": {"vmids": [300]}, "path": "/nodes/{node}/qemu/{vmid}/status/start"}
}
`)
	dr, err := h.store.Draft(t.Context(), "vm-range", src, tests)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Activate(t.Context(), "vm-range", dr.Digest); err != nil {
		t.Fatal(err)
	}
	c, ctx := h.as("", "vm-range")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/lxc/200/status/stop"})
	if !res.IsError || !strings.Contains(text(res), "only VMs 100 to 199") || !strings.Contains(text(res), "Nothing was sent") {
		t.Errorf("denial: %s", text(res))
	}
	if res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"}); res.IsError {
		t.Errorf("allowed call refused: %s", text(res))
	}
}

// Answers are shaped: fields, omit, paging with next_offset, and a size cap
// that never cuts JSON.
func TestShaping(t *testing.T) {
	h := newHarness(t, harnessOpts{limits: Limits{MaxResultBytes: 900}})
	c, ctx := h.as("root")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/cluster/resources", "fields": []any{"id", "status"}, "limit": 4})
	if res.IsError {
		t.Fatal(text(res))
	}
	items := content["data"].([]any)
	if len(items) != 4 || content["next_offset"] != float64(4) || content["total"].(float64) < 10 {
		t.Fatalf("page %v", content)
	}
	for _, it := range items {
		if m := it.(map[string]any); len(m) != 2 || m["id"] == nil {
			t.Errorf("item %v has more than the fields asked for", m)
		}
	}
	// Without fields the cap cuts the page short, and says where to go on.
	res, content = call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/cluster/resources", "omit": []any{"cpu"}})
	if content["truncated"] != true || content["next_offset"] == nil || !json.Valid([]byte(strings.SplitN(text(res), "\n", 2)[1])) {
		t.Fatalf("capped answer %v", content)
	}
	for _, it := range content["data"].([]any) {
		if _, has := it.(map[string]any)["cpu"]; has {
			t.Error("omit did not drop cpu")
		}
	}
	// A large object loses whole keys, named.
	small := newHarness(t, harnessOpts{limits: Limits{MaxResultBytes: 500}})
	c, ctx = small.as("root")
	_, content = call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/status"})
	if content["truncated"] != true || len(content["omitted_keys"].([]any)) == 0 {
		t.Errorf("object over the cap: %v", content)
	}
}

// The describe tool answers for the largest endpoint in complete pages.
func TestDescribePagesLargeEndpoint(t *testing.T) {
	h := newHarness(t, harnessOpts{limits: Limits{MaxResultBytes: 8 << 10}})
	c, ctx := h.as("root")
	_, sum := call(t, c, ctx, ToolDescribe, map[string]any{"tool": "put_nodes_qemu_config"})
	total := int(sum["param_count"].(float64))
	if total < 80 {
		t.Fatalf("param_count %d", total)
	}
	seen := map[string]bool{}
	offset := 0
	for pages := 0; ; pages++ {
		res, page := call(t, c, ctx, ToolDescribe, map[string]any{"tool": "put_nodes_qemu_config", "section": "params", "offset": offset})
		if res.IsError {
			t.Fatal(text(res))
		}
		body := strings.SplitN(text(res), "\n", 2)[1]
		if !json.Valid([]byte(body)) || len(body) > 8<<10 {
			t.Fatalf("page %d: %d bytes, valid JSON %v", pages, len(body), json.Valid([]byte(body)))
		}
		for _, p := range page["params"].([]any) {
			seen[p.(map[string]any)["name"].(string)] = true
		}
		next, ok := page["next_offset"].(float64)
		if !ok {
			break
		}
		offset = int(next)
		if pages > 100 {
			t.Fatal("no end to the pages")
		}
	}
	if len(seen) != total {
		t.Errorf("pages covered %d of %d parameters", len(seen), total)
	}
	_, net := call(t, c, ctx, ToolDescribe, map[string]any{"tool": "put_nodes_qemu_config", "param": "net0"})
	p := net["param"].(map[string]any)
	if p["name"] != "net[n]" || len(p["keys"].([]any)) < 10 {
		t.Errorf("net[n] %v", p)
	}
}

func TestSearchTool(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ro, ctx := h.as("read-only")
	_, content := call(t, ro, ctx, ToolSearch, map[string]any{"query": "start vm"})
	for _, r := range content["results"].([]any) {
		if r.(map[string]any)["risk"] != "read" {
			t.Errorf("read-only key found %v", r)
		}
	}
	root, rctx := h.as("root")
	_, content = call(t, root, rctx, ToolSearch, map[string]any{"query": "start vm", "limit": 3})
	first := content["results"].([]any)[0].(map[string]any)
	if first["tool"] != "post_nodes_qemu_status_start" {
		t.Errorf("first result %v", first)
	}
}

// A search returns five results by default, without scores, and costs
// about what the describe of its first result costs, which an agent reads
// next: at most 2.5 KB on 9.1 (2.0-2.3 KB; the describes 1.2-2.7 KB). With
// ten results and their scores it was about 4 KB.
func TestSearchCostsLessThanDescribe(t *testing.T) {
	h := newHarness(t, harnessOpts{reg: realRegistry(t)})
	c, ctx := h.as("root")
	for _, q := range []string{"start vm", "snapshot", "migrate container", "cloud-init"} {
		res, content := call(t, c, ctx, ToolSearch, map[string]any{"query": q})
		if q == "start vm" && len(content["results"].([]any)) != searchDefaultLimit {
			t.Errorf("search %q: %d results, want the default %d", q, len(content["results"].([]any)), searchDefaultLimit)
		}
		results, _ := content["results"].([]any)
		if res.IsError || len(results) == 0 || len(results) > searchDefaultLimit {
			t.Fatalf("search %q: %d results, want 1 to %d: %s", q, len(results), searchDefaultLimit, text(res))
		}
		first := results[0].(map[string]any)
		if _, has := first["score"]; has {
			t.Errorf("search %q: results carry scores", q)
		}
		desc, _ := call(t, c, ctx, ToolDescribe, map[string]any{"tool": first["tool"]})
		sb, _ := json.Marshal(res)
		db, _ := json.Marshal(desc)
		t.Logf("%q: search %d bytes, describe of %s %d bytes", q, len(sb), first["tool"], len(db))
		if len(sb) > 2500 {
			t.Errorf("search %q is %d bytes, over 2.5 KB (the describe of its first result: %d)", q, len(sb), len(db))
		}
	}
}

// A config edit without a digest is planned against the current one; a
// stale digest is PVE's refusal, explained.
func TestConfigEditCarriesDigest(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config", "params": map[string]any{"description": "db server"}})
	if res.IsError {
		t.Fatal(text(res))
	}
	var intent AuditCall
	for _, i := range h.audit.intents {
		intent = i
	}
	if len(intent.PriorDigest) != 40 || intent.PriorConfig["name"] != "db01" {
		t.Errorf("intent prior digest %q config %v", intent.PriorDigest, intent.PriorConfig["name"])
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config", "params": map[string]any{"cores": 2, "digest": intent.PriorDigest}})
	if !res.IsError || !strings.Contains(text(res), "detected modified configuration") || !strings.Contains(text(res), "read it again") {
		t.Errorf("stale digest: %s", text(res))
	}
}

// A lost answer to a write is reported as an unknown outcome and journalled
// as uncertain; it is not retried.
func TestOutcomeUnknown(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	h.sim.InjectFault(sim.Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", DropAfterApply: true, Times: 1})
	before := h.sim.Writes()
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	if !res.IsError || !strings.Contains(text(res), "Outcome unknown") {
		t.Errorf("dropped answer: %s", text(res))
	}
	if n := h.sim.Writes() - before; n != 1 {
		t.Errorf("%d writes reached PVE, want 1 (no retry)", n)
	}
	found := false
	for _, r := range h.audit.receipts {
		found = found || r.Outcome == journal.OutcomeUncertain
	}
	if !found {
		t.Errorf("no uncertain receipt: %v", h.audit.receipts)
	}
}

// The operator profile asks to confirm a destructive guest action; the token
// works once, for that exact call only.
func TestConfirmation(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop"})
	if res.IsError || content["status"] != "confirmation_required" {
		t.Fatalf("first call: %s", text(res))
	}
	token := content["confirm"].(string)
	// The token does not fit another call.
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/102/status/stop", "confirm": token})
	if !res.IsError || !strings.Contains(text(res), "issued for a different call") {
		t.Errorf("token on another VM: %s", text(res))
	}
	res, content = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "confirm": token, "wait": 30})
	if res.IsError || content["upid"] == nil {
		t.Fatalf("confirmed call: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "confirm": token})
	if !res.IsError || !strings.Contains(text(res), "already used") {
		t.Errorf("reused token: %s", text(res))
	}
}

func TestDryRun(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	before := h.sim.Writes()
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "dry_run": true})
	if res.IsError || content["dry_run"] != true || h.sim.Writes() != before {
		t.Errorf("dry run: %s (requests %d)", text(res), h.sim.Writes()-before)
	}
	// A dry run of a call that needs confirmation neither asks for one nor
	// uses up a token it is given.
	stop := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop"}
	_, asked := call(t, c, ctx, ToolCall, stop)
	token, _ := asked["confirm"].(string)
	if token == "" {
		t.Fatalf("no confirmation asked: %v", asked)
	}
	res, content = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "dry_run": true, "confirm": token})
	if res.IsError || content["dry_run"] != true {
		t.Fatalf("dry run with a token: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "confirm": token})
	if res.IsError {
		t.Errorf("the token was used up by the dry run: %s", text(res))
	}
}

// A client that hangs up does not stop the journal: the receipt of a write
// and the record of a refusal are written with a context that outlives the
// request.
func TestJournalOutlivesTheClient(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A call the journal takes (the recorder checks as the journal does).
	stop := AuditCall{Tool: ToolCall, Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/stop", ConcretePath: "/nodes/pve1/qemu/100/status/stop",
		Principal: policy.Principal{KeyID: "k1", Name: "alice", Transport: "loopback"}, Decision: policy.Decision{Effect: policy.Allow}}
	id, err := h.audit.Intent(context.Background(), stop)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.finishAudit(ctx, stop, id, AuditOutcome{Outcome: journal.OutcomeOK}); err != nil {
		t.Errorf("receipt after the client left: %v", err)
	}
	stop.Time, stop.Decision = time.Now(), policy.Decision{Effect: policy.Deny}
	h.srv.refuse(ctx, stop, journal.OutcomeDenied, "no")
	if out := h.audit.outcomes(); len(out) != 2 {
		t.Errorf("journal outcomes %v, want the receipt and the refusal", out)
	}
}

// The journal failing to record an intent stops the write before PVE.
func TestNoIntentNoWrite(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	tasks := func() int {
		t.Helper()
		ro, rctx := h.as("root")
		_, content := call(t, ro, rctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/tasks", "params": map[string]any{"vmid": 101, "source": "all"}})
		return len(content["data"].([]any))
	}
	before := tasks()
	h.audit.fail = errors.New("disk full")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	h.audit.fail = nil
	if !res.IsError || !strings.Contains(text(res), "nothing was sent") || tasks() != before {
		t.Errorf("write without an intent: %s (tasks of 101 before %d, after %d)", text(res), before, tasks())
	}
}

// proxmox_task_wait follows a task and sends progress notifications.
func TestTaskWaitProgress(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	var mu = make(chan mcp.JSONRPCNotification, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu <- n
		}
	})
	_, content := call(t, c, ctx, ToolGuestPower, map[string]any{"vmid": 101, "action": "start"})
	upid := content["upid"].(string)
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolTaskWait
	req.Params.Arguments = map[string]any{"upid": upid, "timeout_seconds": 30}
	req.Params.Meta = &mcp.Meta{ProgressToken: "p1"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("wait: %v %s", err, text(res))
	}
	select {
	case <-mu:
	case <-time.After(2 * time.Second):
		t.Error("no progress notification")
	}
	if !strings.Contains(text(res), "task finished OK") {
		t.Errorf("wait answer: %s", text(res))
	}
}

// The journal row of a wait says how the task ended: failed, or still
// running at the deadline.
func TestTaskWaitOutcome(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	h.sim.InjectTaskFault(sim.TaskFault{Type: "qmstart", Fail: "start failed: QEMU exited with code 1"})
	_, content := call(t, c, ctx, ToolGuestPower, map[string]any{"vmid": 101, "action": "start"})
	res, _ := call(t, c, ctx, ToolTaskWait, map[string]any{"upid": content["upid"], "timeout_seconds": 30})
	if !res.IsError {
		t.Errorf("a failed task's wait is not an error: %s", text(res))
	}
	last := h.audit.records[len(h.audit.records)-1]
	if last.out.Outcome != journal.OutcomeTaskFailed || !strings.Contains(last.out.Error, "QEMU exited") {
		t.Errorf("journal outcome of the wait %+v", last.out)
	}
}

func TestOnboardingPrompt(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("read-only")
	req := mcp.GetPromptRequest{}
	req.Params.Name = PromptOnboarding
	res, err := c.GetPrompt(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	body := res.Messages[0].Content.(mcp.TextContent).Text
	for _, want := range []string{`key "read-only-key"`, "read-only", "0 write, 0 destructive", "proxmox_api_search"} {
		if !strings.Contains(body, want) {
			t.Errorf("onboarding lacks %q:\n%s", want, body)
		}
	}
}

// proxmox_api_get reads with a read tool's annotations: GET only, shaped
// like any answer, journalled under its own name; the write arguments are
// not its own, and a write path is read, never written.
func TestAPIGet(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("read-only")
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range res.Tools {
		if tl.Name != ToolGet {
			continue
		}
		found = true
		a := tl.Annotations
		if !*a.ReadOnlyHint || *a.DestructiveHint || !*a.IdempotentHint {
			t.Errorf("%s: annotations readOnly %v destructive %v idempotent %v", ToolGet, *a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint)
		}
	}
	if !found {
		t.Fatalf("a read-only key is not shown %s", ToolGet)
	}
	r, content := call(t, c, ctx, ToolGet, map[string]any{"path": "/cluster/resources", "params": map[string]any{"type": "vm"}, "fields": []any{"vmid", "status"}, "limit": 2})
	if r.IsError {
		t.Fatal(text(r))
	}
	if items, _ := content["data"].([]any); len(items) != 2 || len(items[0].(map[string]any)) != 2 {
		t.Errorf("shaped read: %v", content)
	}
	for _, bad := range []map[string]any{
		{"path": "/nodes/pve1/qemu/101/status/start", "method": "POST"},
		{"path": "/nodes/pve1/qemu/101/status/current", "dry_run": true},
		{"path": "/nodes/pve1/qemu/101/status/current", "operation_key": "k1"},
	} {
		r, _ := call(t, c, ctx, ToolGet, bad)
		if !r.IsError || !strings.Contains(text(r), "is not an argument of this tool") {
			t.Errorf("%v: %s", bad, text(r))
		}
	}
	// A path that has only a POST is not a read.
	r, _ = call(t, c, ctx, ToolGet, map[string]any{"path": "/nodes/pve1/qemu/101/status/start"})
	if !r.IsError {
		t.Errorf("GET of a POST-only path: %s", text(r))
	}
	_, content = call(t, c, ctx, ToolGuestStatus, map[string]any{"vmid": 101})
	if st, _ := content["data"].(map[string]any); st["status"] != "stopped" {
		t.Errorf("VM 101 after the reads: %v", content)
	}
	h.audit.mu.Lock()
	defer h.audit.mu.Unlock()
	var methods []string
	for _, rec := range h.audit.records {
		if rec.call.Tool == ToolGet {
			methods = append(methods, rec.call.Method)
		}
	}
	// The argument errors are journalled before any method is known.
	if !slices.Contains(methods, "GET") || slices.ContainsFunc(methods, func(m string) bool { return m != "GET" && m != "" }) {
		t.Errorf("journal rows of %s: methods %v, want GET only", ToolGet, methods)
	}
}

// A validation error says how the value is written (PVE's syntax, the
// unit its description names, the default), so the caller can fix the
// call without a describe.
func TestValidationErrorTeachesSyntax(t *testing.T) {
	h := newHarness(t, harnessOpts{reg: realRegistry(t)})
	c, ctx := h.as("root")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": map[string]any{"memory": "lots", "cores": 0}})
	got := text(res)
	for _, want := range []string{
		"memory: syntax [current=]<integer>, in MiB, default 512.",
		"cores: syntax <integer> (1 - N), default 1.",
		"Nothing was sent.",
	} {
		if !res.IsError || !strings.Contains(got, want) {
			t.Errorf("validation error lacks %q:\n%s", want, got)
		}
	}
}

// proxmox_guest_status answers only the keys asked for with fields, or
// without those of omit.
func TestGuestStatusFields(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("read-only")
	res, full := call(t, c, ctx, ToolGuestStatus, map[string]any{"vmid": 100, "all": true})
	if res.IsError {
		t.Fatal(text(res))
	}
	res, content := call(t, c, ctx, ToolGuestStatus, map[string]any{"vmid": 100, "fields": []any{"status", "mem", "maxmem"}})
	data, _ := content["data"].(map[string]any)
	if res.IsError || len(data) != 3 || data["status"] != "running" || data["maxmem"] == nil {
		t.Fatalf("fields: %s", text(res))
	}
	_, content = call(t, c, ctx, ToolGuestStatus, map[string]any{"vmid": 100, "omit": []any{"status"}})
	data, _ = content["data"].(map[string]any)
	if _, has := data["status"]; has || len(data) != len(full["data"].(map[string]any))-1 {
		t.Errorf("omit status: %v", data)
	}
	fb, _ := json.Marshal(full)
	sb, _ := json.Marshal(content)
	t.Logf("guest status: %d bytes in full, %d without status", len(fb), len(sb))
}
