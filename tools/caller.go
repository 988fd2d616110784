package tools

import (
	"context"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Caller is who makes a request: the verified key's principal, what the key
// is bound to, and the PVE token tier its calls use. The transport that
// authenticated the request puts it in the context.
type Caller struct {
	Principal policy.Principal
	Binding   policy.Binding
	Tier      Tier
	// Recheck, when set, is asked before every call for the caller as it
	// is now: a session that outlives one request (stdio) must stop acting
	// the moment its key is revoked or expires, and follow a changed tier.
	Recheck func(context.Context) (Caller, error)
	// Key is the caller's API key, which the root helper verifies itself
	// for host operations; empty for local-root. It redacts itself.
	Key keys.Secret
}

type callerKey struct{}

// WithCaller returns a context carrying the caller.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller of a request; a request without one sees
// no tools and can call none.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// AuditCall describes a call for the journal.
type AuditCall struct {
	Time         time.Time
	Principal    policy.Principal
	Tool         string // the MCP tool the caller used
	Endpoint     string // the endpoint's tool name, when the call resolved to one
	Method       string
	Path         string // the template
	ConcretePath string
	// Args are the caller's arguments; the journal redacts secrets.
	Args     map[string]any
	Risk     schema.Risk
	Decision policy.Decision
	// PriorDigest and PriorConfig are the configuration a config edit was
	// planned against.
	PriorDigest string
	PriorConfig map[string]any
	// Detail is the change contract's part of the row: the operation key
	// and request digest of a write, or the configuration a read saw.
	Detail *journal.Detail
}

// Journal is the call as the journal records it.
func (c AuditCall) Journal() journal.Call {
	p := c.Principal
	jc := journal.Call{
		Time: c.Time, Tool: c.Tool, Endpoint: c.Endpoint, Method: c.Method, PathTemplate: c.Path, Path: c.ConcretePath,
		Risk: c.Risk.String(), Args: c.Args, PriorDigest: c.PriorDigest, Detail: c.Detail,
		Principal: journalPrincipal(p),
		Decision: journal.Decision{Effect: string(c.Decision.Effect), Reasons: c.Decision.Reasons, Policy: c.Decision.Policy,
			PolicyDigest: c.Decision.Digest},
	}
	if c.PriorConfig != nil {
		jc.PriorConfig = c.PriorConfig
	}
	return jc
}

// journalPrincipal is a principal as the journal records it.
func journalPrincipal(p policy.Principal) journal.Principal {
	jp := journal.Principal{KeyID: p.KeyID, KeyName: p.Name, Profile: p.Profile, Policy: p.Policy, Transport: p.Transport, Source: p.Source}
	if p.Tailnet != nil {
		jp.TailnetUser, jp.TailnetNode = p.Tailnet.User, p.Tailnet.Node
	}
	return jp
}

// AuditOutcome is how a call ended.
type AuditOutcome struct {
	Outcome  journal.Outcome
	Error    string
	Status   int // PVE's HTTP status, when it answered
	Duration time.Duration
	UPID     string
	JobID    string
	// Detail, on a write's receipt, is its evidence: the configuration
	// after it and the fields it changed.
	Detail *journal.Detail
}

// Journal is the outcome as the journal records it.
func (o AuditOutcome) Journal() journal.Result {
	return journal.Result{Outcome: o.Outcome, Error: o.Error, Status: o.Status, Duration: o.Duration, UPID: o.UPID, JobID: o.JobID, Detail: o.Detail}
}

// Auditor is the journal as the tools use it. Intent is written before a
// write is sent (a failure stops the call); Receipt closes it; Record
// writes reads, refusals and everything else in one row.
type Auditor interface {
	Intent(ctx context.Context, call AuditCall) (callID string, err error)
	Receipt(ctx context.Context, callID string, out AuditOutcome) error
	Record(ctx context.Context, call AuditCall, out AuditOutcome) error
}
