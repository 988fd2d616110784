package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// readResource reads a resource and decodes its JSON.
func readResource(t *testing.T, c *client.Client, ctx context.Context, uri string) (map[string]any, error) {
	t.Helper()
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return nil, err
	}
	if len(res.Contents) != 1 {
		t.Fatalf("%s: %d contents, want 1", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || tc.MIMEType != "application/json" || tc.URI != uri {
		t.Fatalf("%s: contents %#v", uri, res.Contents[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &m); err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	return m, nil
}

// complete asks for the completion of one argument of a template (uri) or
// of the onboarding prompt (uri empty).
func complete(t *testing.T, c *client.Client, ctx context.Context, uri, arg, value string, given map[string]string) ([]string, error) {
	t.Helper()
	req := mcp.CompleteRequest{}
	if uri == "" {
		req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: PromptOnboarding}
	} else {
		req.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: uri}
	}
	req.Params.Argument = mcp.CompleteArgument{Name: arg, Value: value}
	req.Params.Context = mcp.CompleteContext{Arguments: given}
	res, err := c.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Completion.Values, nil
}

func listed(t *testing.T, c *client.Client, ctx context.Context) (resources, templates []string) {
	t.Helper()
	rs, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.Resources {
		resources = append(resources, r.URI)
	}
	ts, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range ts.ResourceTemplates {
		templates = append(templates, tp.URITemplate.Raw())
	}
	slices.Sort(resources)
	slices.Sort(templates)
	return resources, templates
}

// Every resource and template is listed to a key that may use them, and
// each reads what its description says, through the journal.
func TestResourcesListAndRead(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("read-only")
	res, tpl := listed(t, c, ctx)
	if want := []string{ResourceJobs, ResourceJournal, ResourceSchemaStatus}; !slices.Equal(res, want) {
		t.Errorf("resources %v, want %v", res, want)
	}
	if want := []string{TemplateGuest, TemplateJob, TemplateNode, TemplateStorage}; !slices.Equal(tpl, want) {
		t.Errorf("templates %v, want %v", tpl, want)
	}
	cases := []struct {
		uri, path string
		check     func(map[string]any) string
	}{
		{ResourceSchemaStatus, "", func(m map[string]any) string {
			if m["sha256"] == "" || m["healthy"] == nil {
				return "no sha256 or health"
			}
			return ""
		}},
		{"proxmox://nodes/pve1", "/nodes/pve1/status", func(m map[string]any) string {
			d, _ := m["data"].(map[string]any)
			if d["memory"] == nil || d["cpu"] == nil {
				return "no memory or cpu"
			}
			return ""
		}},
		{"proxmox://guests/200", "/nodes/pve1/lxc/200/status/current", func(m map[string]any) string {
			d, _ := m["data"].(map[string]any)
			if d["node"] != "pve1" || d["type"] != "lxc" || d["status"] != "running" || d["maxmem"] == nil {
				return "not the summary of CT 200 on pve1"
			}
			for k := range d {
				if !slices.Contains(guestSummaryFields(), k) && k != "node" && k != "type" {
					return "key " + k + " is not a summary field"
				}
			}
			return ""
		}},
		{"proxmox://nodes/pve2/storage/local", "/nodes/pve2/storage/local/status", func(m map[string]any) string {
			d, _ := m["data"].(map[string]any)
			if d["total"] == nil || d["type"] != "dir" {
				return "not local's status"
			}
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			m, err := readResource(t, c, ctx, tc.uri)
			if err != nil {
				t.Fatal(err)
			}
			if why := tc.check(m); why != "" {
				t.Errorf("%s: %s: %v", tc.uri, why, m)
			}
			evs, err := h.journal.KeyEvents(t.Context(), "kreadonly", 1)
			if err != nil || len(evs) != 1 {
				t.Fatalf("journal %v %v", evs, err)
			}
			ev := evs[0]
			if ev.Tool != resourceTool(tc.uri) || ev.Path != tc.path || ev.Outcome != journal.OutcomeOK {
				t.Errorf("journal row tool %q path %q outcome %s, want %q %q ok", ev.Tool, ev.Path, ev.Outcome, resourceTool(tc.uri), tc.path)
			}
			if tc.path != "" && ev.Decision.Effect != "allow" {
				t.Errorf("read of %s not decided by the policy: %+v", tc.path, ev.Decision)
			}
		})
	}
}

// The journal resource holds the caller's rows and no one else's.
func TestResourceJournalIsTheCallersOwn(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	admin, actx := h.as("admin")
	if res, _ := call(t, admin, actx, ToolGet, map[string]any{"path": "/version"}); res.IsError {
		t.Fatal(text(res))
	}
	ro, rctx := h.as("read-only")
	if res, _ := call(t, ro, rctx, ToolGet, map[string]any{"path": "/cluster/status"}); res.IsError {
		t.Fatal(text(res))
	}
	m, err := readResource(t, ro, rctx, ResourceJournal)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := m["rows"].([]any)
	var paths []string
	for _, r := range rows {
		p, _ := r.(map[string]any)["path"].(string)
		paths = append(paths, p)
	}
	if !slices.Contains(paths, "/cluster/status") || slices.Contains(paths, "/version") {
		t.Errorf("the read-only key's journal rows hold paths %v: want its /cluster/status, not the admin's /version", paths)
	}
}

// Completion offers the caller's nodes, guests and storages that start
// with what it typed, narrowed by the node already chosen.
func TestCompletion(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	var ahead atomic.Int64 // how far the server's clock is moved on
	h.srv.opts.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	c, ctx := h.as("read-only")
	cases := []struct {
		name, uri, arg, value string
		given                 map[string]string
		want                  []string
	}{
		{"nodes", TemplateNode, "node", "", nil, []string{"pve1", "pve2", "pve3"}},
		{"node prefix", TemplateStorage, "node", "pve2", nil, []string{"pve2"}},
		{"no node", TemplateNode, "node", "x", nil, []string{}},
		{"vmids", TemplateGuest, "vmid", "", nil, []string{"100", "101", "102", "200", "201", "9000"}},
		{"vmid prefix", TemplateGuest, "vmid", "10", nil, []string{"100", "101", "102"}},
		{"storages on pve1", TemplateStorage, "storage", "local", map[string]string{"node": "pve1"}, []string{"local", "local-lvm"}},
		{"storages anywhere, once each", TemplateStorage, "storage", "", nil, []string{"local", "local-lvm", "backup"}},
		{"unknown argument", TemplateNode, "colour", "", nil, []string{}},
		{"another template", "proxmox://elsewhere/{x}", "node", "", nil, []string{}},
		{"prompt vmid on pve2", "", "vmid", "", map[string]string{"node": "pve2"}, []string{"102", "201"}},
		{"prompt node", "", "node", "pve1", nil, []string{"pve1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := complete(t, c, ctx, tc.uri, tc.arg, tc.value, tc.given)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("completion of %s %q: %v, want %v", tc.arg, tc.value, got, tc.want)
			}
		})
	}
	// The view behind them all was read once, as the caller, journaled.
	var reads []recorded
	for _, r := range h.audit.records {
		if r.call.Tool == ToolCompletion {
			reads = append(reads, r)
		}
	}
	if len(reads) != 1 || reads[0].call.ConcretePath != "/cluster/resources" || reads[0].call.Decision.Effect != policy.Allow || reads[0].out.Outcome != journal.OutcomeOK {
		t.Errorf("completion's reads %+v, want one allowed read of /cluster/resources", reads)
	}
	// Past its ten seconds the view is read again.
	ahead.Store(int64(viewTTL))
	if _, err := complete(t, c, ctx, TemplateNode, "node", "", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(h.audit.records); h.audit.records[n-1].call.Tool != ToolCompletion {
		t.Errorf("a view older than %v was not read again", viewTTL)
	}
}

// A key whose PVE token sees only some guests is offered only those, and
// cannot read the others' summaries: no name it cannot see leaks.
func TestCompletionOnlyVisibleGuests(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	tok, err := h.sim.AddToken("mcp@pve!narrow", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range [][2]string{{"/vms/101", "PVEAuditor"}, {"/nodes", "PVEAuditor"}} {
		if err := h.sim.Grant(g[0], "mcp@pve!narrow", g[1], true); err != nil {
			t.Fatal(err)
		}
	}
	tiers := h.srv.opts.PVE.(*simTiers)
	narrow, err := pve.New(pve.Config{BaseURL: tiers.url, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)}, TLS: pve.TLSTrust{Fingerprints: []string{tiers.fp}}})
	if err != nil {
		t.Fatal(err)
	}
	tiers.mu.Lock()
	tiers.clients[TierReadOnly] = narrow
	tiers.mu.Unlock()
	c, ctx := h.as("read-only")
	got, err := complete(t, c, ctx, TemplateGuest, "vmid", "", nil)
	if err != nil || !slices.Equal(got, []string{"101"}) {
		t.Errorf("vmids %v (%v), want only 101", got, err)
	}
	if _, err := readResource(t, c, ctx, "proxmox://guests/100"); err == nil || !strings.Contains(err.Error(), "no VM or container 100 is visible to your key") {
		t.Errorf("read of a guest the key cannot see: %v", err)
	}
	if _, err := readResource(t, c, ctx, "proxmox://guests/101"); err != nil {
		t.Errorf("read of the guest the key sees: %v", err)
	}
}

// A policy that refuses reads of some guests and of nodes' status hides
// them from completion, does not list the node template, and refuses the
// read, journaled as denied with the policy's reason.
func TestResourceRefusedByPolicy(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	h.activate("no-node-status", denyList(`input.path == "/nodes/{node}/status"
}

denied if {
	some id in input.targets.vmids
	id >= 200`))
	c, ctx := h.as("", "no-node-status")
	_, tpl := listed(t, c, ctx)
	if slices.Contains(tpl, TemplateNode) || !slices.Contains(tpl, TemplateGuest) {
		t.Errorf("templates %v: want the guest template and not the node one", tpl)
	}
	if got, _ := complete(t, c, ctx, TemplateGuest, "vmid", "", nil); !slices.Equal(got, []string{"100", "101", "102"}) {
		t.Errorf("vmids %v, want those under 200", got)
	}
	if got, _ := complete(t, c, ctx, TemplateNode, "node", "", nil); len(got) != 0 {
		t.Errorf("nodes %v offered to a key that may not read their status", got)
	}
	_, err := readResource(t, c, ctx, "proxmox://nodes/pve1")
	if err == nil || !strings.Contains(err.Error(), "denied by the test rule") {
		t.Fatalf("refused read: %v", err)
	}
	evs, err := h.journal.KeyEvents(t.Context(), "k", 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("journal %v %v", evs, err)
	}
	if ev := evs[0]; ev.Tool != TemplateNode || ev.Path != "/nodes/pve1/status" || ev.Outcome != journal.OutcomeDenied || ev.Decision.Effect != "deny" {
		t.Errorf("row %s %s %s %s, want the node read denied", ev.Tool, ev.Path, ev.Outcome, ev.Decision.Effect)
	}
}

// A bad template argument is refused naming it, and journaled as invalid.
func TestResourceBadArgument(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("operator")
	_, err := readResource(t, c, ctx, "proxmox://guests/abc")
	if err == nil || !strings.Contains(err.Error(), "argument vmid") {
		t.Fatalf("read of guest abc: %v", err)
	}
	evs, _ := h.journal.KeyEvents(t.Context(), "koperator", 1)
	if len(evs) != 1 || evs[0].Outcome != journal.OutcomeInvalid || evs[0].Tool != TemplateGuest {
		t.Errorf("rows %+v, want the read journaled as invalid", evs)
	}
	if _, err := readResource(t, c, ctx, "proxmox://nodes/no%20such"); err == nil {
		t.Error("a node name PVE's format refuses was read")
	}
}

// A request without an authenticated caller lists nothing, reads nothing
// and completes nothing.
func TestResourcesNeedACaller(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, _ := h.as("admin")
	ctx := context.Background()
	res, tpl := listed(t, c, ctx)
	if len(res) != 0 || len(tpl) != 0 {
		t.Errorf("an unauthenticated request lists %v %v", res, tpl)
	}
	for _, uri := range []string{ResourceSchemaStatus, "proxmox://nodes/pve1", "proxmox://guests/100"} {
		if _, err := readResource(t, c, ctx, uri); err == nil || !strings.Contains(err.Error(), "no authenticated caller") {
			t.Errorf("unauthenticated read of %s: %v", uri, err)
		}
	}
	if _, err := complete(t, c, ctx, TemplateGuest, "vmid", "", nil); err == nil {
		t.Error("an unauthenticated request was offered vmids")
	}
	if n := len(h.audit.records); n != 0 {
		t.Errorf("%d rows for requests that did nothing", n)
	}
}

// The onboarding prompt's examples use the guest its vmid names, on that
// guest's node; a guest the key cannot see is refused.
func TestOnboardingArguments(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("operator")
	get := func(args map[string]string) (string, error) {
		res, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: PromptOnboarding, Arguments: args}})
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	txt, err := get(map[string]string{"vmid": "201"})
	if err != nil || !strings.Contains(txt, "/nodes/pve2/lxc/201/config") {
		t.Errorf("onboarding for 201: %v\n%s", err, txt)
	}
	if txt, err := get(nil); err != nil || !strings.Contains(txt, "/nodes/pve1/qemu/100/config") {
		t.Errorf("onboarding without arguments: %v\n%s", err, txt)
	}
	if _, err := get(map[string]string{"vmid": "777"}); err == nil || !strings.Contains(err.Error(), "argument vmid") {
		t.Errorf("onboarding for a guest that is not there: %v", err)
	}
	if _, err := get(map[string]string{"node": "pve1", "vmid": "201"}); err == nil || !strings.Contains(err.Error(), "on node pve2") {
		t.Errorf("onboarding for a guest on another node: %v", err)
	}
}

// A completion answers at most 100 values and says there are more.
func TestCompletionBounded(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := Caller{Principal: policy.Principal{KeyID: "kro", Name: "ro", Transport: "loopback"}, Binding: policy.Binding{Profile: "read-only"}, Tier: TierReadOnly}
	var cands []candidate
	for i := range 150 {
		v := fmt.Sprintf("v%03d", i)
		cands = append(cands, candidate{v, fmt.Sprintf("/nodes/pve1/qemu/%d/status/current", 1000+i)}, candidate{v, fmt.Sprintf("/nodes/pve2/qemu/%d/status/current", 1000+i)})
	}
	got := h.srv.offer(t.Context(), c, &decisions{}, cands, "v")
	if len(got.Values) != maxCompletions || !got.HasMore || got.Values[0] != "v000" || got.Values[99] != "v099" {
		t.Errorf("%d values (%v…), hasMore %v: want v000 to v099 and more", len(got.Values), got.Values[:min(3, len(got.Values))], got.HasMore)
	}
	if got := h.srv.offer(t.Context(), c, &decisions{}, cands, "v14"); len(got.Values) != 10 || got.HasMore {
		t.Errorf("prefix v14: %v, hasMore %v: want v140 to v149 and no more", got.Values, got.HasMore)
	}
	// A policy that refuses all 300 reads is asked about 100 at most per
	// completion; the next completion goes on from where it stopped.
	h.activate("deny-guests", denyList("count(input.targets.vmids) > 0"))
	denied := Caller{Principal: c.Principal, Binding: policy.Binding{Policy: "deny-guests"}, Tier: TierAdmin}
	var known decisions
	for i, want := range []struct {
		more bool
		kept int
	}{{true, 100}, {true, 200}, {false, 300}} {
		if got := h.srv.offer(t.Context(), denied, &known, cands, "v"); len(got.Values) != 0 || got.HasMore != want.more || len(known.m) != want.kept {
			t.Errorf("completion %d under a refusing policy: %v, hasMore %v, %d decisions kept; want none, %v, %d", i, got.Values, got.HasMore, len(known.m), want.more, want.kept)
		}
	}
}

// A guest summary is read where the guest is now, even just after a
// completion saw it on another node.
func TestResourceGuestFollowsMigration(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	if got, err := complete(t, c, ctx, TemplateGuest, "vmid", "101", map[string]string{"node": "pve1"}); err != nil || !slices.Equal(got, []string{"101"}) {
		t.Fatalf("101 on pve1: %v %v", got, err)
	}
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/migrate", "params": map[string]any{"target": "pve2"}, "wait": float64(30)})
	if res.IsError {
		t.Fatalf("migrate: %s %v", text(res), content)
	}
	m, err := readResource(t, c, ctx, "proxmox://guests/101")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := m["data"].(map[string]any); d["node"] != "pve2" || m["path"] != "/nodes/pve2/qemu/101/status/current" {
		t.Errorf("VM 101 after its migration: %v", m)
	}
}

// BenchmarkCompletionOffer is the cost of one completion of a VMID in a
// cluster of 2000 guests, its view already read: the policy decisions of
// the 100 values offered, of the 100 (the bound) a policy refuses, and a
// completion whose decisions an earlier keystroke made.
func BenchmarkCompletionOffer(b *testing.B) {
	var cands []candidate
	for i := range 2000 {
		id := fmt.Sprint(1000 + i)
		cands = append(cands, candidate{id, "/nodes/pve1/qemu/" + id + "/status/current"})
	}
	for _, bc := range []struct {
		name, policy string
		warm         bool
		want         int
	}{{"allowed", "", false, maxCompletions}, {"refused", "deny-all-guests", false, 0}, {"allowed-decided", "", true, maxCompletions}} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, harnessOpts{})
			c := Caller{Principal: policy.Principal{KeyID: "kro", Name: "ro", Transport: "loopback"}, Binding: policy.Binding{Profile: "read-only"}, Tier: TierReadOnly}
			if bc.policy != "" {
				h.activate(bc.policy, denyList("count(input.targets.vmids) > 0"))
				c.Binding, c.Tier = policy.Binding{Policy: bc.policy}, TierAdmin
			}
			known := &decisions{}
			for b.Loop() {
				if !bc.warm {
					known = &decisions{}
				}
				if got := h.srv.offer(b.Context(), c, known, cands, ""); len(got.Values) != bc.want || !got.HasMore {
					b.Fatalf("%d values, hasMore %v", len(got.Values), got.HasMore)
				}
			}
		})
	}
}
