package tools

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// Every tool call is journalled. The calls that reach an endpoint write
// their own rows (an intent and a receipt for a write, one row otherwise);
// every other call (search, describe, schema status, a tool's own argument
// errors) gets one row from journalEveryCall, written before the answer
// leaves. A row the journal refuses turns the answer into an error: nothing
// is answered that is not recorded.

// auditMark says whether a handler wrote the call's row itself.
type auditMark struct{ done atomic.Bool }

type auditMarkKey struct{}

// markingAuditor marks the request's context when a row is written.
type markingAuditor struct{ next Auditor }

func mark(ctx context.Context) {
	if m, ok := ctx.Value(auditMarkKey{}).(*auditMark); ok {
		m.done.Store(true)
	}
}

func (a markingAuditor) Intent(ctx context.Context, c AuditCall) (string, error) {
	mark(ctx)
	return a.next.Intent(ctx, c)
}

func (a markingAuditor) Receipt(ctx context.Context, id string, o AuditOutcome) error {
	mark(ctx)
	return a.next.Receipt(ctx, id, o)
}

func (a markingAuditor) Record(ctx context.Context, c AuditCall, o AuditOutcome) error {
	mark(ctx)
	return a.next.Record(ctx, c, o)
}

// journalEveryCall writes the row of a call whose handler wrote none, and
// turns the refusals handlers return as errors (toolError: a bad argument
// of our own tools, a caller no longer accepted) into tool results the
// model can read, journalled with their outcome.
func (s *Server) journalEveryCall(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		m := &auditMark{}
		ctx = context.WithValue(ctx, auditMarkKey{}, m)
		start := s.opts.Now()
		res, err := next(ctx, req)
		out := AuditOutcome{Outcome: journal.OutcomeOK}
		var te *toolError
		switch {
		case errors.As(err, &te):
			res, err = errorResult(te.text), nil
			out.Outcome, out.Error = te.outcome, te.text
		case err != nil:
			out.Outcome, out.Error = journal.OutcomeError, err.Error()
		case res != nil && res.IsError:
			out.Outcome, out.Error = journal.OutcomeError, text(res)
		}
		c, ok := CallerFrom(ctx)
		if m.done.Load() || !ok {
			return res, err // written, or no caller: nothing was done
		}
		args, _ := argsOf(req)
		out.Duration = s.opts.Now().Sub(start)
		call := AuditCall{Time: start, Principal: c.Principal, Tool: req.Params.Name, Args: args}
		if rerr := s.audit.Record(journalContext(ctx), call, out); rerr != nil {
			return errorResult("the journal refused the record of this call, so its answer is withheld: " + rerr.Error()), nil
		}
		return res, err
	}
}

// text is the text content of a result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
