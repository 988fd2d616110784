package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// ToolReconcile settles the caller's writes whose outcome is not known
// from PVE's evidence (docs/changes.md).
const ToolReconcile = "proxmox_reconcile"

// Reconciler settles an operation from PVE's evidence
// (changes.Reconciler).
type Reconciler interface {
	Reconcile(ctx context.Context, callID string, req changes.Request) (changes.Verdict, error)
	SettleAfter() time.Duration
}

// Bounds of one proxmox_reconcile without an operation: how far back in
// the key's journal it looks, and how many operations it judges.
const (
	reconcileLookback = 2000
	reconcileMax      = 20
)

func reconcileTool() mcp.Tool {
	return mcp.NewTool(ToolReconcile,
		mcp.WithDescription("Settle your writes whose outcome is not known (state uncertain, pending, task_running or unknown: the answer was lost, or the daemon stopped) from PVE's own evidence: "+
			"the task the receipt names or a matching task in the node's task index (type, guest, token, start time), the configuration's digest and values for a config edit, the guest's existence for a create or a destroy. "+
			"Each verdict (applied, not_applied, unknown) is journaled with its evidence; absence of evidence is not success: what nothing shows stays unknown. "+
			"Give an operation id (or operation_key) for one, or nothing for your unsettled writes (the newest first). A write younger than the daemon's settle time may still be in flight and is left alone."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"operation":     map[string]any{"type": "string", "minLength": 1, "description": "The operation id (evidence.operation of the write's answer)."},
				"operation_key": map[string]any{"type": "string", "minLength": 1, "description": "Your operation key, instead of the id."},
				"again":         map[string]any{"type": "boolean", "description": "Judge again an operation a resolution already settled (applied or not_applied)."},
			},
			"additionalProperties": false,
		}),
		annotate("Settle uncertain writes from PVE's evidence", hints{idempotent: true}),
	)
}

// handleReconcile is proxmox_reconcile.
func (s *Server) handleReconcile(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "operation", "operation_key", "again")
	if err != nil {
		return nil, err
	}
	id, err := optString(a, "operation")
	if err != nil {
		return nil, err
	}
	key, err := optString(a, "operation_key")
	if err != nil {
		return nil, err
	}
	again, err := optBool(a, "again")
	if err != nil {
		return nil, err
	}
	if id != "" && key != "" {
		return nil, argError("operation", "give the operation id or operation_key, not both")
	}
	if s.opts.Reconciler == nil {
		return errorResult("This daemon cannot reconcile: it has no PVE token to read the evidence with (pve.tokens). Nothing was judged."), nil
	}
	if key != "" {
		found, _, ok, err := s.opts.Ledger.OperationByKey(ctx, c.Principal.KeyID, key)
		if err != nil {
			return errorResult("the journal could not be read: " + err.Error()), nil
		}
		if !ok {
			return nil, argError("operation_key", fmt.Sprintf("your key has made no write with operation key %q", key))
		}
		id = found
	}
	r := changes.Request{By: journalPrincipal(c.Principal), Tool: ToolReconcile, Again: again}
	var ids []string
	more := 0
	if id != "" {
		evs, err := s.opts.Ledger.CallEvents(ctx, id)
		if errors.Is(err, journal.ErrInvalid) {
			return nil, argError("operation", err.Error())
		}
		if err != nil {
			return errorResult("the journal could not be read: " + err.Error()), nil
		}
		op, err := changes.ReadOperation(evs)
		if err != nil || !mayReadOperation(c, op.Intent.Principal.KeyID) {
			// Another key's operation is answered as none at all.
			return nil, argError("operation", changes.ErrNotOperation.Error()+" of your key")
		}
		ids = []string{id}
	} else {
		if ids, more, err = s.unsettledOperations(ctx, c.Principal.KeyID); err != nil {
			return errorResult("the journal could not be read: " + err.Error()), nil
		}
	}
	verdicts := make([]any, 0, len(ids))
	count := map[string]int{}
	for _, opID := range ids {
		v, err := s.opts.Reconciler.Reconcile(ctx, opID, r)
		if err != nil {
			verdicts = append(verdicts, map[string]any{"operation": opID, "error": "not judged: " + err.Error()})
			count["error"]++
			continue
		}
		verdicts = append(verdicts, verdictView(v))
		count[v.State]++
	}
	out := map[string]any{"reconciled": verdicts, "settle_after": s.opts.Reconciler.SettleAfter().String()}
	if more > 0 {
		out["more"] = more
	}
	summary := fmt.Sprintf("Reconciled %d operations", len(ids))
	if len(ids) == 1 && len(verdicts) == 1 {
		if v, ok := verdicts[0].(map[string]any); ok {
			summary = fmt.Sprintf("Operation %s: %v (%v)", ids[0], v["state"], v["reason"])
		}
	} else if len(ids) == 0 {
		summary = "None of your writes has an unknown outcome"
	}
	if len(ids) > 1 {
		summary += fmt.Sprintf(": %d applied, %d not applied, %d unknown", count[journal.StateApplied], count[journal.StateNotApplied], count[journal.StateUnknown])
	}
	if more > 0 {
		summary += fmt.Sprintf("; %d more are left for another call", more)
	}
	return structured(summary+".", out), nil
}

// unsettledOperations are the key's operations whose outcome is not
// known, newest first, at most reconcileMax; more counts the rest.
func (s *Server) unsettledOperations(ctx context.Context, keyID string) (ids []string, more int, err error) {
	evs, err := s.opts.Ledger.KeyEvents(ctx, keyID, reconcileLookback)
	if err != nil {
		return nil, 0, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind != journal.KindIntent {
			continue
		}
		rows, err := s.opts.Ledger.CallEvents(ctx, evs[i].CallID)
		if err != nil {
			return nil, 0, err
		}
		op, err := changes.ReadOperation(rows)
		if err != nil || op.Settled() {
			continue
		}
		if len(ids) == reconcileMax {
			more++
			continue
		}
		ids = append(ids, op.ID())
	}
	return ids, more, nil
}

// verdictView is a verdict as the caller reads it.
func verdictView(v changes.Verdict) map[string]any {
	out := map[string]any{"operation": v.Operation, "state": v.State, "judged": v.Judged, "reason": v.Reason}
	if len(v.Evidence) > 0 {
		out["evidence"] = v.Evidence
	}
	if v.UPID != "" {
		out["upid"] = v.UPID
	}
	if v.Node != "" {
		out["found_on"] = v.Node
	}
	if v.Closed != "" {
		out["receipt"] = v.Closed
	}
	if len(v.Rows) > 0 {
		out["journal"] = v.Rows
	}
	return out
}
