package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// The change contract's tools (docs/changes.md): an operation's evidence,
// and the caller's own journal rows.
const (
	ToolOperation = "proxmox_operation"
	ToolJournal   = "proxmox_journal"
)

// contractTools are served when the server has a ledger.
func (s *Server) contractTools() []server.ServerTool {
	if s.opts.Ledger == nil {
		return nil
	}
	return []server.ServerTool{
		{Tool: operationTool(), Handler: s.handleOperation},
		{Tool: journalTool(), Handler: s.handleJournal},
		{Tool: planApplyTool(), Handler: s.handlePlanApply},
		{Tool: reconcileTool(), Handler: s.handleReconcile},
		{Tool: undoTool(), Handler: s.handleUndo},
	}
}

func operationTool() mcp.Tool {
	return mcp.NewTool(ToolOperation,
		mcp.WithDescription("What the journal knows of one of your writes, by its operation id (the evidence.operation of the write's answer) or by your operation_key: "+
			"state (ok, error, uncertain, task_running, task_failed, pending, or a later resolution: applied, not_applied, unknown), the request, "+
			"the configuration digest before and after, the fields changed (before → after), the receipt and the journal rows."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"operation":     map[string]any{"type": "string", "minLength": 1, "description": "The operation id."},
				"operation_key": map[string]any{"type": "string", "minLength": 1, "description": "Your operation key, instead of the id."},
			},
			"additionalProperties": false,
		}),
		annotate("An operation and its evidence", hints{readOnly: true, idempotent: true}),
	)
}

func journalTool() mcp.Tool {
	return mcp.NewTool(ToolJournal,
		mcp.WithDescription("Your key's own journal rows, newest last: each call, write intent and receipt, resolution and plan (time, tool, method, path, decision, outcome, error, UPID, operation). Nothing of other keys."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 200, "description": "How many of the last rows (default 20)."},
			},
			"additionalProperties": false,
		}),
		annotate("Your journal rows", hints{readOnly: true, idempotent: true}),
	)
}

// mayReadOperation: a key reads its own operations; a root key and the
// host's local root read anyone's.
func mayReadOperation(c Caller, owner string) bool {
	return c.Principal.KeyID == owner || c.Binding.Profile == policy.Root
}

// handleOperation is proxmox_operation.
func (s *Server) handleOperation(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "operation", "operation_key")
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
	switch {
	case id == "" && key == "":
		return nil, argError("operation", "give the operation id, or operation_key")
	case id != "" && key != "":
		return nil, argError("operation", "give the operation id or operation_key, not both")
	case key != "":
		found, _, ok, err := s.opts.Ledger.OperationByKey(ctx, c.Principal.KeyID, key)
		if err != nil {
			return errorResult("the journal could not be read: " + err.Error()), nil
		}
		if !ok {
			return nil, argError("operation_key", fmt.Sprintf("your key has made no write with operation key %q", key))
		}
		id = found
	}
	evs, err := s.opts.Ledger.CallEvents(ctx, id)
	if errors.Is(err, journal.ErrInvalid) {
		return nil, argError("operation", err.Error())
	}
	if err != nil {
		return errorResult("the journal could not be read: " + err.Error()), nil
	}
	op, err := operationOf(evs)
	if err != nil || !mayReadOperation(c, op.intent.Principal.KeyID) {
		// Another key's operation is answered as none at all.
		return nil, argError("operation", errNotAnOperation.Error()+" of your key")
	}
	v := op.view()
	return structured(fmt.Sprintf("Operation %s: %s %s, %s.", id, op.intent.Method, op.intent.Path, v["state"]), v), nil
}

// handleJournal is proxmox_journal.
func (s *Server) handleJournal(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "limit")
	if err != nil {
		return nil, err
	}
	limit, set, err := optInt(a, "limit", 1, 200)
	if err != nil {
		return nil, err
	}
	if !set {
		limit = 20
	}
	evs, err := s.opts.Ledger.KeyEvents(ctx, c.Principal.KeyID, limit)
	if err != nil {
		return errorResult("the journal could not be read: " + err.Error()), nil
	}
	rows := make([]any, 0, len(evs))
	for _, ev := range evs {
		r := map[string]any{"id": ev.ID, "time": ev.Time.UTC().Format(time.RFC3339), "kind": ev.Kind, "tool": ev.Tool, "outcome": ev.Outcome}
		if ev.Method != "" {
			r["method"], r["path"] = ev.Method, ev.Path
		}
		if ev.Decision.Effect != "" {
			r["decision"] = ev.Decision.Effect
		}
		if ev.Error != "" {
			r["error"] = firstSentence(ev.Error)
		}
		if ev.UPID != "" {
			r["upid"] = ev.UPID
		}
		if ev.Kind == journal.KindIntent || ev.Kind == journal.KindReceipt || ev.Kind == journal.KindResolution {
			r["operation"] = ev.CallID
		}
		rows = append(rows, r)
	}
	return structured(fmt.Sprintf("%d journal rows of your key.", len(rows)), map[string]any{"rows": rows}), nil
}
