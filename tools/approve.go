package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// ToolApprove approves a call whose policy requires another principal's
// confirmation (a confirm obligation with approver "other").
const ToolApprove = "proxmox_approve"

// maxPending bounds the calls waiting for another principal's approval.
const maxPending = 1000

// pendingCall is a call waiting for another principal's approval.
type pendingCall struct {
	requester Caller
	plan      *plan.Plan // the requester's
	expiry    time.Time
	// approvedBy is the approver's key id and name, once approved.
	approvedBy, approverName string
}

// hold issues a token for a call another principal must approve and keeps
// the call for the approver to see.
func (cf *confirmations) hold(p *pendingCall) (string, error) {
	token, expiry := cf.issue(p.requester, p.plan.Endpoint, p.plan.Checked.Wire)
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
	c, a, err := s.callerArgs(ctx, req, "token", "approve")
	if err != nil {
		return nil, err
	}
	token, err := optString(a, "token")
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, argError("token", "is required")
	}
	approve, err := optBool(a, "approve")
	if err != nil {
		return nil, err
	}
	pc, err := s.confirm.lookup(token)
	if err != nil {
		return nil, argError("token", err.Error())
	}
	rp := pc.plan
	content := map[string]any{
		"method": rp.Endpoint.Method, "path": rp.Path, "tool": rp.Endpoint.Tool, "risk": rp.Risk.String(), "params": flatten(rp.Checked.Wire),
		"requested_by": map[string]any{"key_id": pc.requester.Principal.KeyID, "name": pc.requester.Principal.Name},
		"expires_at":   pc.expiry.UTC().Format(time.RFC3339), "approved": pc.approvedBy != "",
	}
	what := fmt.Sprintf("%s %s (%s), asked by key %q", rp.Endpoint.Method, rp.Path, rp.Risk, pc.requester.Principal.Name)
	if !approve {
		return structured("Waiting for approval: "+what+". To approve it: "+s.approveHint()+".", content), nil
	}
	// The approver's own plan of the same call: its policy decides, on
	// the same endpoint and arguments, with the switches as they are now.
	creq := callRequest{tool: req.Params.Name, endpoint: rp.Endpoint, args: rp.Args}
	if c.Principal.KeyID == pc.requester.Principal.KeyID {
		audit := auditOf(c, rp, creq)
		audit.Time, audit.Decision = s.opts.Now(), policy.Decision{}
		return s.refuse(ctx, audit, journal.OutcomeDenied, "Refused: the key that asked cannot approve its own call; a different principal must."), nil
	}
	p, err := s.planner.Build(ctx, c.planCaller(), plan.Request{Tool: creq.tool, Endpoint: rp.Endpoint, Args: rp.Args})
	if err != nil {
		var r *plan.Refusal
		if errors.As(err, &r) {
			return s.refuse(ctx, auditOf(c, r.Plan, creq), r.Outcome, s.refusalText(r, creq)), nil
		}
		return nil, err
	}
	audit := auditOf(c, p, creq)
	if d := p.Decision; d.Effect != policy.Allow && d.Effect != policy.Confirm {
		return s.refuse(ctx, audit, journal.OutcomeDenied, "Refused: your own policy does not allow this call, so you cannot approve it.\n"+reasonsText(d)), nil
	}
	if err := s.confirm.approve(token, c); err != nil {
		return s.refuse(ctx, audit, journal.OutcomeError, "Not approved: "+err.Error()+"."), nil
	}
	if err := s.audit.Record(journalContext(ctx), audit, AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(audit.Time)}); err != nil {
		return errorResult("the journal refused the record of the approval: " + err.Error()), nil
	}
	content["approved"] = true
	return structured("Approved: "+what+". The requester makes the same call again with confirm set to the token, before it expires.", content), nil
}
