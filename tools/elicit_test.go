package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/host"
)

// person answers every confirmation asked of it with yes or no, and
// keeps what it was asked.
type person struct {
	mu    sync.Mutex
	yes   bool
	asked []string
}

func (p *person) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req.Params.Message)
	if !p.yes {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}, nil
}

// TestConfirmationByThePerson: where the client takes elicitation, the
// caller's own confirmation is asked of the person: their yes makes the
// call at once (no token reaches the model), their no sends nothing, and
// both are journaled; a client without elicitation still gets a token.
func TestConfirmationByThePerson(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	stop := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop"}

	no := &person{}
	c, ctx := h.asWith("operator", no)
	before := h.sim.Writes()
	res, _ := call(t, c, ctx, ToolCall, stop)
	if !res.IsError || !strings.Contains(text(res), "did not confirm") || h.sim.Writes() != before {
		t.Fatalf("declined: %s (writes %d)", text(res), h.sim.Writes()-before)
	}
	if len(no.asked) != 1 || !strings.Contains(no.asked[0], "POST /nodes/pve1/qemu/100/status/stop") {
		t.Fatalf("the person was asked %q", no.asked)
	}

	yes := &person{yes: true}
	c, ctx = h.asWith("operator", yes)
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/status/stop", "wait": 30})
	if res.IsError || content["upid"] == nil || content["confirm"] != nil {
		t.Fatalf("confirmed by the person: %s", text(res))
	}
	if h.sim.Writes() != before+1 {
		t.Errorf("%d writes, want 1", h.sim.Writes()-before)
	}
	confirmed := false
	for _, in := range h.audit.intents {
		for _, r := range in.Decision.Reasons {
			confirmed = confirmed || strings.Contains(r, "confirmed by the person")
		}
	}
	if !confirmed {
		t.Error("no intent says the person confirmed it")
	}

	// Without elicitation: the token, as before.
	c, ctx = h.as("operator")
	res, content = call(t, c, ctx, ToolCall, stop)
	if res.IsError || content["status"] != "confirmation_required" || content["confirm"] == nil {
		t.Fatalf("a client without elicitation: %s", text(res))
	}
}

// TestHostConfirmationByThePerson: the helper asks the caller to confirm
// a host write; where the client takes elicitation, the person's yes sends
// the helper's token back at once (the model never holds it), their no
// sends nothing more.
func TestHostConfirmationByThePerson(t *testing.T) {
	var mu sync.Mutex
	var sent []host.Request
	helper := func(_ context.Context, req host.Request, _ func(host.ExecProgress)) (host.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, req)
		if req.Confirm != "pmhc_the-helpers-token" {
			return host.Response{ID: req.ID, Error: &host.WireError{Code: "confirm", Token: "pmhc_the-helpers-token", Expires: time.Now().Add(time.Minute), Message: "writing needs confirmation"}}, nil
		}
		return host.Response{ID: req.ID, OK: true, Result: []byte(`{"path":"/srv/a.conf","size":2,"sha256":"x","created":true}`)}, nil
	}
	h := newHarness(t, harnessOpts{host: HostOptions{Helper: helper, Roots: []host.Root{{Path: "/srv", Write: true}}}})
	session := func(p *person) (*client.Client, context.Context) {
		return personSession(t, h, "admin", "pmcp_kadmin_secret", p)
	}
	write := map[string]any{"path": "/srv/a.conf", "content": "x\n", "sha256": "4a3ea2bea0f2d5e4ac0e5b1b2b7b6b7ad0cba4d0bbd1b1c3d6c4e0a4f5e6d7c8"}
	c, ctx := session(&person{})
	res, _ := call(t, c, ctx, ToolHostWrite, write)
	if !res.IsError || !strings.Contains(text(res), "did not confirm") || len(sent) != 1 {
		t.Fatalf("declined: %s (%d requests)", text(res), len(sent))
	}
	c, ctx = session(&person{yes: true})
	res, content := call(t, c, ctx, ToolHostWrite, write)
	if res.IsError || content["created"] != true || content["confirm"] != nil {
		t.Fatalf("confirmed: %s", text(res))
	}
	if len(sent) != 3 || sent[2].Confirm != "pmhc_the-helpers-token" || sent[1].Confirm != "" {
		t.Fatalf("the helper got %d requests: %+v", len(sent), sent)
	}
}

// personSession is a session of a key whose client answers elicitations
// with p.
func personSession(t *testing.T, h *harness, profile, key string, p *person) (*client.Client, context.Context) {
	t.Helper()
	return asKey(t, h, profile, key, client.WithElicitationHandler(p))
}

// TestContainerExecConfirmationByThePerson: an operator's command in a
// container, which the helper asks to confirm, runs on the person's yes
// with the helper's token, and not at all on their no.
func TestContainerExecConfirmationByThePerson(t *testing.T) {
	var mu sync.Mutex
	var sent []host.Request
	code := 0
	result, _ := json.Marshal(host.ExecResult{Unit: "pmcp-exec-1.service", Argv: []string{"true"}, Result: "success", ExitCode: &code,
		Stdout: host.Output{Encoding: "utf-8"}, Stderr: host.Output{Encoding: "utf-8"}})
	h := newHarness(t, harnessOpts{host: HostOptions{Helper: func(_ context.Context, req host.Request, _ func(host.ExecProgress)) (host.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, req)
		if req.Confirm != "hc1" {
			return host.Response{Error: &host.WireError{Code: "confirm", Message: "running a command inside lxc guest 200 needs confirmation", Token: "hc1", Expires: time.Now().Add(5 * time.Minute)}}, nil
		}
		return host.Response{OK: true, Result: result}, nil
	}}})
	args := map[string]any{"vmid": 200, "argv": []any{"true"}}
	c, ctx := personSession(t, h, "operator", "pmcp_koperator_secret", &person{})
	if res, _ := call(t, c, ctx, ToolGuestExec, args); !res.IsError || !strings.Contains(text(res), "did not confirm") || len(sent) != 1 {
		t.Fatalf("declined: %s (%d requests)", text(res), len(sent))
	}
	c, ctx = personSession(t, h, "operator", "pmcp_koperator_secret", &person{yes: true})
	res, content := call(t, c, ctx, ToolGuestExec, args)
	if res.IsError || content["exit_code"] != float64(0) || len(sent) != 3 || sent[2].Confirm != "hc1" {
		t.Fatalf("confirmed: %s (%d requests)", text(res), len(sent))
	}
}
