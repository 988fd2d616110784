package tools

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

func breakglassToolNames(names []string) []string { return withPrefix(names, "proxmox_breakglass_") }

// TestBreakglassToolsThroughTheHelper: an agent with a root key asks, the
// requester confirms with the phrase, another person's key reads the
// preview and approves its digest, the runner executes it once, and both
// read the result; the requester can never approve, and keys whose
// policies do not ask for break-glass do not even see the tools.
func TestBreakglassToolsThroughTheHelper(t *testing.T) {
	b := newHostBedWith(t, hostBedOpts{keys: map[string]string{"root": "root", "carol": "root", "operator": "operator"}, protected: true})
	target := filepath.Join(b.repo, "model.gguf")
	if err := os.WriteFile(target, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, rootCtx := b.as(t, "root", "")
	carol, carolCtx := b.as(t, "root", b.keys["carol"])
	for _, p := range []string{"admin", "operator", "read-only"} {
		c, ctx := b.as(t, p, "")
		if got := breakglassToolNames(toolNames(t, c, ctx)); len(got) != 0 {
			t.Errorf("%s sees %v", p, got)
		}
	}
	if got := breakglassToolNames(toolNames(t, root, rootCtx)); len(got) != 6 {
		t.Errorf("root sees %v, want the six break-glass tools", got)
	}

	res, out := call(t, root, rootCtx, ToolBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": target}})
	if res.IsError || out["state"] != breakglass.StateAwaitingConfirmation {
		t.Fatalf("request: %s", text(res))
	}
	preview := out["preview"].(map[string]any)
	id, digest, phrase := preview["id"].(string), out["digest"].(string), out["phrase"].(string)
	if !strings.Contains(text(res), phrase) || !strings.Contains(text(res), digest) {
		t.Errorf("the summary names neither phrase nor digest: %s", text(res))
	}
	if res, _ := call(t, root, rootCtx, ToolBreakglassConfirm, map[string]any{"id": id, "phrase": phrase}); res.IsError {
		t.Fatalf("confirm: %s", text(res))
	}
	// The requester's own key is refused by the helper itself.
	if res, _ := call(t, root, rootCtx, ToolBreakglassApprove, map[string]any{"id": id, "digest": digest}); !res.IsError || !strings.Contains(text(res), "own approver") {
		t.Fatalf("self-approval: %s", text(res))
	}
	// Without a digest the approver reads the preview.
	res, out = call(t, carol, carolCtx, ToolBreakglassApprove, map[string]any{"id": id})
	if res.IsError || out["digest"] != digest || out["state"] != breakglass.StateAwaitingApproval || out["phrase"] != nil {
		t.Fatalf("approve without a digest: %s", text(res))
	}
	res, out = call(t, carol, carolCtx, ToolBreakglassApprove, map[string]any{"id": id, "digest": digest})
	if res.IsError || out["state"] != breakglass.StateQueued {
		t.Fatalf("approve: %s", text(res))
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal("the file went before the runner ran")
	}
	if err := b.bg.RunQueue(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("the runner did not delete the file")
	}
	res, out = call(t, root, rootCtx, ToolBreakglassStatus, map[string]any{"id": id})
	if res.IsError || out["state"] != breakglass.OutcomeDone {
		t.Fatalf("status: %s", text(res))
	}
	res, out = call(t, carol, carolCtx, ToolBreakglassStatus, map[string]any{})
	if res.IsError || len(out["requests"].([]any)) != 1 {
		t.Fatalf("the list: %s", text(res))
	}
	// The daemon's journal links the steps by the request's id.
	tools := b.h.audit.jobTools(id)
	for _, want := range []string{ToolBreakglassRequest, ToolBreakglassConfirm, ToolBreakglassApprove, ToolBreakglassStatus} {
		if !slices.Contains(tools, want) {
			t.Errorf("no journal row of %s names %s: %v", want, id, tools)
		}
	}
}

// phraseTyper is a person at an elicitation-capable client: it reads the
// phrase in the message shown to it and types it.
type phraseTyper struct{ asked []string }

func (p *phraseTyper) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.asked = append(p.asked, req.Params.Message)
	_, phrase, _ := strings.Cut(req.Params.Message, "type: ")
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"phrase": phrase}}}, nil
}

// TestBreakglassAsksThePersonThroughElicitation: where the client takes
// elicitation, the phrase goes to the person, never into the model's
// answer, and what the person types confirms the request.
func TestBreakglassAsksThePersonThroughElicitation(t *testing.T) {
	person := &phraseTyper{}
	b := newHostBedWith(t, hostBedOpts{keys: map[string]string{"root": "root"}, protected: true, elicit: person})
	target := filepath.Join(b.repo, "old.bin")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, ctx := b.as(t, "root", "")
	res, out := call(t, root, ctx, ToolBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": target}})
	if res.IsError || out["state"] != breakglass.StateAwaitingApproval {
		t.Fatalf("request with elicitation: %s", text(res))
	}
	if len(person.asked) != 1 || !strings.Contains(person.asked[0], "delete the file "+target) {
		t.Fatalf("the person was asked %q", person.asked)
	}
	if strings.Contains(text(res), "break glass bg-") || out["phrase"] != nil {
		t.Errorf("the model's answer carries the phrase: %s", text(res))
	}
}

// jobTools are the tools of the rows whose outcome names job id.
func (r *recorder) jobTools(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for cid, o := range r.receipts {
		if o.JobID == id {
			out = append(out, r.intents[cid].Tool)
		}
	}
	for _, rec := range r.records {
		if rec.out.JobID == id {
			out = append(out, rec.call.Tool)
		}
	}
	return out
}

// declinePhrase is a person who does not confirm.
type declinePhrase struct{}

func (declinePhrase) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

// TestBreakglassModelCannotConfirmForThePerson: when the person was asked
// and declined, nothing in the model's answer makes the phrase, so the
// model's own confirmation with what it was shown is refused.
func TestBreakglassModelCannotConfirmForThePerson(t *testing.T) {
	b := newHostBedWith(t, hostBedOpts{keys: map[string]string{"root": "root"}, protected: true, elicit: declinePhrase{}})
	target := filepath.Join(b.repo, "x.bin")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, ctx := b.as(t, "root", "")
	res, out := call(t, root, ctx, ToolBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": target}})
	if res.IsError || out["state"] != breakglass.StateAwaitingConfirmation || out["phrase"] != nil {
		t.Fatalf("request, declined by the person: %s", text(res))
	}
	id, digest := out["preview"].(map[string]any)["id"].(string), out["digest"].(string)
	for _, guess := range []string{"break glass " + id + " " + digest[:12], "break glass " + id} {
		if res, _ := call(t, root, ctx, ToolBreakglassConfirm, map[string]any{"id": id, "phrase": guess}); !res.IsError {
			t.Fatalf("the model confirmed with %q", guess)
		}
	}
	if res, out := call(t, root, ctx, ToolBreakglassStatus, map[string]any{"id": id}); res.IsError || out["state"] != breakglass.StateAwaitingConfirmation || out["code"] != nil {
		t.Fatalf("status: %s", text(res))
	}
}

// requesterOnly asks for break-glass on the repository and allows nothing
// else: no approvals.
const requesterOnly = `package proxmox_mcp.policy

import rego.v1

default decision := {"effect": "deny", "reasons": ["no API"], "obligations": []}

default host_decision := {"effect": "deny", "reasons": ["only break-glass requests"], "obligations": []}

host_decision := {"effect": "breakglass", "reasons": ["this key asks for break-glass"], "obligations": []} if {
	input.host.op == "breakglass.request"
	count(input.guard.hits) > 0
}
`

// TestBreakglassRequesterWithdrawsWithoutApprovalRights: a key whose
// policy only asks for break-glass may still deny (withdraw) its own
// request: the daemon lets the step through to the helper, which knows
// whose request it is and decides again.
func TestBreakglassRequesterWithdrawsWithoutApprovalRights(t *testing.T) {
	var sent []host.Request
	h := newHarness(t, harnessOpts{host: HostOptions{Protected: []string{"/mnt/model-repo"}, Helper: func(_ context.Context, req host.Request, _ func(host.ExecProgress)) (host.Response, error) {
		sent = append(sent, req)
		return host.Response{OK: true, Result: []byte(`{"state":"denied","next":"denied: nothing was done"}`)}, nil
	}}})
	h.activate("requester-only", requesterOnly)
	caller := Caller{Principal: policy.Principal{KeyID: "kreq", Name: "requester", Policy: "requester-only", Transport: "loopback", Source: "127.0.0.1"},
		Binding: policy.Binding{Policy: "requester-only"}, Tier: TierAdmin, Key: keys.Secret("pmcp_req")}
	ctx := WithCaller(context.Background(), caller)
	c, err := client.NewInProcessClient(h.srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "requester", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := breakglassToolNames(toolNames(t, c, ctx)); strings.Join(got, " ") != "proxmox_breakglass_confirm proxmox_breakglass_deny proxmox_breakglass_request proxmox_breakglass_status" {
		t.Errorf("a requester-only key sees %v", got)
	}
	res, _ := call(t, c, ctx, ToolBreakglassDeny, map[string]any{"id": "bg-0123456789abcdef", "reason": "changed my mind"})
	if res.IsError || len(sent) != 1 || sent[0].Op != "breakglass.deny" {
		t.Fatalf("the requester's withdrawal: %s (%d sent)", text(res), len(sent))
	}
}
