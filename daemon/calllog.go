package daemon

import (
	"context"
	"log/slog"
	"sync"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// callLog writes one structured log line per call, besides the journal
// row: under systemd the attributes become journal fields (PMCP_KEY_ID,
// PMCP_TOOL, PMCP_DECISION, PMCP_OUTCOME, PMCP_UPID, …), so that
// `journalctl -u proxmox-mcp PMCP_DECISION=deny` lists the denials. The
// arguments are not logged: they are in the journal, redacted.
type callLog struct {
	log *slog.Logger
	// open holds a write's call between its intent and its receipt.
	open sync.Map // call id → tools.AuditCall
}

func callAttrs(c tools.AuditCall) []any {
	p := c.Principal
	attrs := []any{
		"key_id", p.KeyID, "key_name", p.Name, "transport", p.Transport,
		"tool", c.Tool, "method", c.Method, "path", c.ConcretePath,
		"risk", c.Risk.String(), "decision", string(c.Decision.Effect),
	}
	if p.Source != "" {
		attrs = append(attrs, "source", p.Source)
	}
	if p.Tailnet != nil {
		attrs = append(attrs, "tailnet_user", p.Tailnet.User, "tailnet_node", p.Tailnet.Node)
	}
	return attrs
}

func outcomeAttrs(o tools.AuditOutcome) []any {
	attrs := []any{"outcome", o.Outcome, "duration_ms", o.Duration.Milliseconds()}
	if o.Status != 0 {
		attrs = append(attrs, "status", o.Status)
	}
	if o.UPID != "" {
		attrs = append(attrs, "upid", o.UPID)
	}
	if o.JobID != "" {
		attrs = append(attrs, "job_id", o.JobID)
	}
	if o.Error != "" {
		attrs = append(attrs, "error", o.Error)
	}
	return attrs
}

// level: refusals and failures stand out; the rest is information.
func outcomeLevel(o tools.AuditOutcome) slog.Level {
	switch o.Outcome {
	case journal.OutcomeOK, journal.OutcomeDryRun, journal.OutcomeConfirm, journal.OutcomeTaskRunning:
		return slog.LevelInfo
	default:
		return slog.LevelWarn
	}
}

// intent logs a write about to be sent.
func (l *callLog) intent(ctx context.Context, id string, c tools.AuditCall) {
	l.open.Store(id, c)
	l.log.InfoContext(ctx, "call: sending", append(callAttrs(c), "call_id", id)...)
}

// receipt logs how a write ended.
func (l *callLog) receipt(ctx context.Context, id string, o tools.AuditOutcome) {
	v, ok := l.open.LoadAndDelete(id)
	attrs := outcomeAttrs(o)
	if ok {
		attrs = append(callAttrs(v.(tools.AuditCall)), attrs...)
	}
	l.log.Log(ctx, outcomeLevel(o), "call", append(attrs, "call_id", id)...)
}

// record logs a call journalled in one row (reads, refusals).
func (l *callLog) record(ctx context.Context, c tools.AuditCall, o tools.AuditOutcome) {
	l.log.Log(ctx, outcomeLevel(o), "call", append(callAttrs(c), outcomeAttrs(o)...)...)
}
