package tools

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// ToolApprove approves a call whose policy requires another principal's
// confirmation (a confirm obligation with approver "other").
const ToolApprove = "proxmox_approve"

// maxPending bounds the calls waiting for another principal's approval.
const maxPending = 1000

// pendingCall is a call waiting for another principal's approval.
type pendingCall struct {
	requester Caller
	ep        *schema.Endpoint
	path      string // concrete
	vars      map[string]string
	args      map[string]any
	wire      url.Values
	expiry    time.Time
	// approvedBy is the approver's key id and name, once approved.
	approvedBy, approverName string
}

// hold issues a token for a call another principal must approve and keeps
// the call for the approver to see.
func (cf *confirmations) hold(p *pendingCall) (string, error) {
	token, expiry := cf.issue(p.requester, p.ep, p.wire)
	p.expiry = expiry
	cf.mu.Lock()
	defer cf.mu.Unlock()
	cf.prune()
	if len(cf.pending) >= maxPending {
		return "", fmt.Errorf("%d calls are already waiting for approval; try again when some have been approved or have expired", maxPending)
	}
	cf.pending[token] = p
	return token, nil
}

// prune drops expired pending calls; cf.mu is held.
func (cf *confirmations) prune() {
	now := cf.now()
	for t, p := range cf.pending {
		if now.After(p.expiry) {
			delete(cf.pending, t)
		}
	}
}

// lookup returns the pending call of a token.
func (cf *confirmations) lookup(token string) (*pendingCall, error) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	cf.prune()
	p := cf.pending[token]
	if p == nil {
		return nil, errors.New("no call is waiting for approval with this token (it expired, was used, or was never issued)")
	}
	return p, nil
}

// approve marks a pending call approved by a principal.
func (cf *confirmations) approve(token string, by Caller) error {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	p := cf.pending[token]
	if p == nil || cf.now().After(p.expiry) {
		return errors.New("the call is no longer waiting for approval")
	}
	p.approvedBy, p.approverName = by.Principal.KeyID, by.Principal.Name
	return nil
}

// takeApproved uses up an approved token; cf.mu is held by the caller.
func (cf *confirmations) takeApproved(token string) error {
	p := cf.pending[token]
	if p == nil {
		return errors.New("no call is waiting for approval with this token (it expired or was used)")
	}
	if p.approvedBy == "" {
		return errors.New("another principal has not approved it yet")
	}
	delete(cf.pending, token)
	return nil
}

func approveTool() mcp.Tool {
	return mcp.NewTool(ToolApprove,
		mcp.WithDescription("Approve a call another key made that its policy lets run only with a different principal's confirmation. "+
			"You see the call first; you may approve only a call your own policy would allow. The requester then makes the call with confirm set to the token."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"token":   map[string]any{"type": "string", "minLength": 1, "description": "The confirmation token the requester was given."},
				"approve": map[string]any{"type": "boolean", "description": "true approves; false (default) only shows the call."},
			},
			"required":             []string{"token"},
			"additionalProperties": false,
		}),
		annotate("Approve another key's call", hints{idempotent: true}),
	)
}

// handleApprove is proxmox_approve.
func (s *Server) handleApprove(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if bad := onlyKeys(a, "token", "approve"); bad != nil {
		return bad, nil
	}
	token, bad := optString(a, "token")
	if bad != nil {
		return bad, nil
	}
	if token == "" {
		return argError("token", "is required"), nil
	}
	approve, bad := optBool(a, "approve")
	if bad != nil {
		return bad, nil
	}
	start := s.opts.Now()
	p, err := s.confirm.lookup(token)
	if err != nil {
		return argError("token", err.Error()), nil
	}
	audit := AuditCall{Time: start, Principal: c.Principal, Tool: req.Params.Name, Endpoint: p.ep.Tool, Method: p.ep.Method,
		Path: p.ep.Path, ConcretePath: p.path, Args: p.args, Risk: p.ep.CallRisk(p.args)}
	content := map[string]any{
		"method": p.ep.Method, "path": p.path, "tool": p.ep.Tool, "risk": audit.Risk.String(), "params": flatten(p.wire),
		"requested_by": map[string]any{"key_id": p.requester.Principal.KeyID, "name": p.requester.Principal.Name},
		"expires_at":   p.expiry.UTC().Format(time.RFC3339), "approved": p.approvedBy != "",
	}
	what := fmt.Sprintf("%s %s (%s), asked by key %q", p.ep.Method, p.path, audit.Risk, p.requester.Principal.Name)
	if !approve {
		return structured("Waiting for approval: "+what+". To approve it: "+s.approveHint()+".", content), nil
	}
	if c.Principal.KeyID == p.requester.Principal.KeyID {
		return s.refuse(ctx, audit, OutcomeDenied, start, "Refused: the key that asked cannot approve its own call; a different principal must."), nil
	}
	if why := s.switchRefusal(p.ep.Method); why != "" {
		return s.refuse(ctx, audit, OutcomeDenied, start, "Refused: "+why+"."), nil
	}
	guard := s.opts.Guard.Check(ctx, p.ep, p.vars, p.args)
	in := policy.BuildInput(p.ep, p.path, p.vars, p.args, c.Principal, guard, start)
	d := s.opts.Policy.Decide(ctx, c.Binding, &in)
	audit.Decision = d
	if d.Effect != policy.Allow && d.Effect != policy.Confirm {
		return s.refuse(ctx, audit, OutcomeDenied, start, "Refused: your own policy does not allow this call, so you cannot approve it.\n"+reasonsText(d)), nil
	}
	if err := s.confirm.approve(token, c); err != nil {
		return s.refuse(ctx, audit, OutcomeError, start, "Not approved: "+err.Error()+"."), nil
	}
	if err := s.audit.Record(journalContext(ctx), audit, AuditOutcome{Outcome: OutcomeOK, Duration: s.opts.Now().Sub(start)}); err != nil {
		return errorResult("the journal refused the record of the approval: " + err.Error()), nil
	}
	content["approved"] = true
	return structured("Approved: "+what+". The requester makes the same call again with confirm set to the token, before it expires.", content), nil
}
