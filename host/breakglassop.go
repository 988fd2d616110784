package host

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// The helper's break-glass steps (docs/breakglass.md). The policy is
// asked about each in its own terms: a request, its confirmation and its
// requester's withdrawal are operations on the protected repository
// (input.host.op "breakglass.request", every target a guard hit), which
// only a policy that asks for break-glass lets through; an approval and
// another principal's denial are "breakglass.approve" (no guard hit),
// which the policy must allow; staging content and reading a request's
// status are "breakglass.stage" and "breakglass.status".
const (
	OpBreakglassRequest = "breakglass.request"
	OpBreakglassApprove = "breakglass.approve"
	OpBreakglassStage   = "breakglass.stage"
	OpBreakglassStatus  = "breakglass.status"
)

// MaxStageChunk bounds one chunk of a staged upload (decoded).
const MaxStageChunk = MaxWriteSize

// bgCaller is a break-glass step bound to its verified caller.
type bgCaller struct {
	who breakglass.Principal
	svc *breakglass.Service
}

func (c *bgCaller) bind(who breakglass.Principal, svc *breakglass.Service) { c.who, c.svc = who, svc }

// breakglassStep is what every break-glass operation is.
type breakglassStep interface {
	hostOp
	bind(who breakglass.Principal, svc *breakglass.Service)
	// wants is the effect the caller's policy must decide for the step
	// to run: breakglass for a requester's steps, allow for the others.
	wants() policy.Effect
}

// evidencer is an operation whose receipt carries evidence: the
// request's id and its preview's digest, which link its rows.
type evidencer interface {
	evidence() (id, digest string)
}

// principalOf is the caller as the protocol names it, with its key's
// lineage (the first key of its rotations).
func (s *Server) principalOf(pr keys.Principal) breakglass.Principal {
	lineage := pr.KeyID
	if s.opts.Lineage != nil {
		lineage = s.opts.Lineage(pr.KeyID)
	}
	return breakglass.Principal{KeyID: pr.KeyID, Name: pr.Name, Lineage: lineage, Profile: pr.Profile, Policy: pr.Policy}
}

// BreakglassInput is the policy's input for a break-glass step on the
// targets of a request: for a requester's step, each target a guard hit.
func BreakglassInput(p policy.Principal, h policy.HostOp, tool string, targets []breakglass.Target, hits bool) *policy.Input {
	g := policy.Guard{Evaluated: true}
	var t policy.Targets
	for _, tg := range targets {
		if tg.Role == "parent" {
			continue
		}
		kind, value := "path", tg.Path
		if tg.Volume != "" {
			kind, value = "volume", tg.Volume
		}
		if kind == "path" {
			t.Paths = append(t.Paths, value)
		}
		if hits {
			g.Hits = append(g.Hits, policy.GuardHit{Kind: kind, Value: value, Param: "operation." + tg.Role})
		}
	}
	return &policy.Input{Principal: p, Tool: tool, Risk: Risk(h), Guard: g, Time: time.Now(), Targets: t, Host: &h}
}

// opTargets are an operation's targets as named (before resolution), for
// the policy's first look at a request.
func opTargets(op breakglass.Operation) []breakglass.Target {
	switch op.Kind {
	case breakglass.OpDeleteVolume:
		return []breakglass.Target{{Role: "volume", Volume: op.Volume}}
	case breakglass.OpMove:
		return []breakglass.Target{{Role: "source", Path: op.Path}, {Role: "destination", Path: op.To}}
	}
	return []breakglass.Target{{Role: "file", Path: op.Path}}
}

func targetText(op breakglass.Operation) string {
	if op.Volume != "" {
		return op.Volume
	}
	return op.Path
}

// bgTarget is the policy's view of a step.
type bgTarget struct {
	t       policy.HostOp
	targets []breakglass.Target
	hits    bool
}

func (b *bgTarget) target() policy.HostOp { return b.t }

func (b *bgTarget) set(op, path string, targets []breakglass.Target, hits bool) policy.HostOp {
	b.t, b.targets, b.hits = policy.HostOp{Op: op, Path: path}, targets, hits
	return b.t
}

// policyInput is the step's input, for Server.input.
func (b *bgTarget) policyInput(p policy.Principal, tool string) *policy.Input {
	return BreakglassInput(p, b.t, tool, b.targets, b.hits)
}

func bgRecord(s *breakglass.Service, id string) (breakglass.Record, error) {
	if s == nil {
		return breakglass.Record{}, errNoBreakglass
	}
	return s.Get(id)
}

var errNoBreakglass = &WireError{Code: "refused", Message: "break-glass is not set up on this host: no protected.paths or protected.volumes are configured, or the helper has no break-glass directory"}

// bgAnswer is a step's answer: the record, where it stands, and for the
// requester the phrase that confirms it.
type bgAnswer struct {
	breakglass.Record
	State string `json:"state"`
	// Phrase is what the requester confirms with (shown until it has).
	Phrase string `json:"phrase,omitempty"`
	// Next says what happens next, in words.
	Next string `json:"next"`
}

// AnswerOf is a record as a step answers it, at now.
func AnswerOf(rec breakglass.Record, now time.Time, forRequester bool) bgAnswer {
	a := bgAnswer{Record: rec.Shown(), State: rec.State(now)}
	switch a.State {
	case breakglass.StateAwaitingConfirmation:
		if forRequester {
			a.Phrase = rec.Phrase()
		}
		a.Next = fmt.Sprintf("the requester confirms with the phrase (proxmox_breakglass_confirm) before %s; then another principal approves digest %s (proxmox_breakglass_approve, or `proxmox-mcp breakglass approve %s` as root on the host)",
			rec.Preview.Expires.Format(time.RFC3339), rec.Digest, rec.Preview.ID)
	case breakglass.StateAwaitingApproval:
		a.Next = fmt.Sprintf("another principal approves digest %s before %s: proxmox_breakglass_approve with another key, or `proxmox-mcp breakglass approve %s` as root on the host; the requester cannot",
			rec.Digest, rec.Preview.Expires.Format(time.RFC3339), rec.Preview.ID)
	case breakglass.StateQueued:
		a.Next = "signed and queued: the runner executes it once, within seconds; proxmox_breakglass_status shows its result"
	case breakglass.StateExpired:
		a.Next = "expired before it ran: nothing was done; ask again"
	case breakglass.StateDenied:
		a.Next = "denied: nothing was done"
	case breakglass.OutcomeDone:
		a.Next = "done"
	case breakglass.OutcomeRefused:
		a.Next = "the runner refused it: nothing was done"
	case breakglass.OutcomeFailed:
		a.Next = "the runner began and failed: look at the repository"
	}
	return a
}

// bgRequestOp asks for a change: the preview, waiting for the
// requester's confirmation.
type bgRequestOp struct {
	Operation breakglass.Operation `json:"operation"`
	bgCaller
	bgTarget
	rec breakglass.Record
}

func (o *bgRequestOp) tool() string         { return Ops[OpBreakglassRequest] }
func (o *bgRequestOp) path() string         { return targetText(o.Operation) }
func (o *bgRequestOp) writes() bool         { return true }
func (o *bgRequestOp) journalArgs() any     { return map[string]any{"operation": o.Operation} }
func (o *bgRequestOp) wants() policy.Effect { return policy.Breakglass }
func (o *bgRequestOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	if o.svc == nil {
		return policy.HostOp{}, errNoBreakglass
	}
	if err := o.Operation.Check(); err != nil {
		return policy.HostOp{}, err
	}
	return o.set(OpBreakglassRequest, targetText(o.Operation), opTargets(o.Operation), true), nil
}
func (o *bgRequestOp) do(ctx context.Context, _ *Server) (any, error) {
	rec, err := o.svc.Request(ctx, o.who, o.Operation)
	if err != nil {
		return nil, err
	}
	o.rec = rec
	return AnswerOf(rec, o.svc.Now(), true), nil
}
func (o *bgRequestOp) evidence() (string, string) { return o.rec.Preview.ID, o.rec.Digest }

// bgRecordStep is a step on a kept request.
type bgRecordStep struct {
	ID string `json:"id"`
	bgCaller
	bgTarget
	rec breakglass.Record
}

func (o *bgRecordStep) path() string { return targetText(o.rec.Preview.Operation) }

// load reads the request and sets the policy's view: the requester's
// own step on its targets (guard hits) or another principal's.
func (o *bgRecordStep) load(requesterStep bool) (policy.HostOp, error) {
	if !breakglass.ValidID(o.ID) {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "id", Message: fmt.Sprintf("id %q: must be a break-glass request id (bg- and 16 hex digits)", o.ID)}
	}
	rec, err := bgRecord(o.svc, o.ID)
	if err != nil {
		return policy.HostOp{}, err
	}
	o.rec = rec
	op := OpBreakglassApprove
	if requesterStep {
		op = OpBreakglassRequest
	}
	o.set(op, targetText(rec.Preview.Operation), rec.Preview.Targets, requesterStep)
	rq := rec.Preview.Requester
	o.t.Breakglass = &policy.BreakglassRef{ID: rec.Preview.ID, Kind: rec.Preview.Operation.Kind,
		RequesterKeyID: rq.KeyID, RequesterName: rq.Name, RequesterLineage: rq.Lineage}
	return o.t, nil
}

func (o *bgRecordStep) evidence() (string, string) { return o.rec.Preview.ID, o.rec.Digest }

type bgConfirmOp struct {
	Phrase string `json:"phrase"`
	bgRecordStep
}

func (o *bgConfirmOp) tool() string         { return Ops["breakglass.confirm"] }
func (o *bgConfirmOp) writes() bool         { return true }
func (o *bgConfirmOp) journalArgs() any     { return map[string]any{"id": o.ID, "digest": o.rec.Digest} }
func (o *bgConfirmOp) wants() policy.Effect { return policy.Breakglass }
func (o *bgConfirmOp) prepare(_ context.Context, _ *Server) (policy.HostOp, error) {
	return o.load(true)
}
func (o *bgConfirmOp) do(ctx context.Context, _ *Server) (any, error) {
	rec, err := o.svc.Confirm(ctx, o.who, o.ID, o.Phrase)
	if err != nil {
		return nil, err
	}
	return AnswerOf(rec, o.svc.Now(), true), nil
}

type bgApproveOp struct {
	Digest string `json:"digest"`
	bgRecordStep
}

func (o *bgApproveOp) tool() string         { return Ops[OpBreakglassApprove] }
func (o *bgApproveOp) writes() bool         { return true }
func (o *bgApproveOp) journalArgs() any     { return map[string]any{"id": o.ID, "digest": o.Digest} }
func (o *bgApproveOp) wants() policy.Effect { return policy.Allow }
func (o *bgApproveOp) prepare(_ context.Context, _ *Server) (policy.HostOp, error) {
	return o.load(false)
}
func (o *bgApproveOp) do(ctx context.Context, _ *Server) (any, error) {
	rec, err := o.svc.Approve(ctx, o.who, o.ID, o.Digest)
	if err != nil {
		return nil, err
	}
	return AnswerOf(rec, o.svc.Now(), false), nil
}

type bgDenyOp struct {
	Reason string `json:"reason,omitempty"`
	bgRecordStep
	requester bool
}

func (o *bgDenyOp) tool() string { return Ops["breakglass.deny"] }
func (o *bgDenyOp) writes() bool { return true }
func (o *bgDenyOp) journalArgs() any {
	return map[string]any{"id": o.ID, "digest": o.rec.Digest, "reason": o.Reason}
}
func (o *bgDenyOp) wants() policy.Effect {
	if o.requester {
		return policy.Breakglass
	}
	return policy.Allow
}
func (o *bgDenyOp) prepare(_ context.Context, _ *Server) (policy.HostOp, error) {
	// The requester withdraws its own request; anyone else denies it as
	// an approver would.
	h, err := o.load(false)
	if err != nil {
		return h, err
	}
	if o.rec.Preview.Requester.Same(o.who) {
		o.requester = true
		return o.load(true)
	}
	return h, nil
}
func (o *bgDenyOp) do(ctx context.Context, _ *Server) (any, error) {
	rec, err := o.svc.Deny(ctx, o.who, o.ID, o.Reason)
	if err != nil {
		return nil, err
	}
	return AnswerOf(rec, o.svc.Now(), false), nil
}

// bgStatusOp is one request's record and result, or (without an id)
// the requests kept, the newest first.
type bgStatusOp struct {
	ID    string `json:"id,omitempty"`
	Limit int    `json:"limit,omitempty"`
	bgCaller
	bgTarget
}

func (o *bgStatusOp) tool() string         { return Ops[OpBreakglassStatus] }
func (o *bgStatusOp) path() string         { return o.ID }
func (o *bgStatusOp) writes() bool         { return false }
func (o *bgStatusOp) journalArgs() any     { return map[string]any{"id": o.ID, "limit": o.Limit} }
func (o *bgStatusOp) wants() policy.Effect { return policy.Allow }
func (o *bgStatusOp) prepare(_ context.Context, _ *Server) (policy.HostOp, error) {
	if o.svc == nil {
		return policy.HostOp{}, errNoBreakglass
	}
	if o.ID != "" && !breakglass.ValidID(o.ID) {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "id", Message: fmt.Sprintf("id %q: must be a break-glass request id (bg- and 16 hex digits)", o.ID)}
	}
	if o.Limit < 0 || o.Limit > 100 {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "limit", Message: "limit: 1 to 100 (default 20)"}
	}
	return o.set(OpBreakglassStatus, "", nil, false), nil
}
func (o *bgStatusOp) do(_ context.Context, _ *Server) (any, error) {
	now := o.svc.Now()
	if o.ID != "" {
		rec, err := o.svc.Get(o.ID)
		if err != nil {
			return nil, err
		}
		return AnswerOf(rec, now, rec.Preview.Requester.Same(o.who)), nil
	}
	recs, err := o.svc.List()
	if err != nil {
		return nil, err
	}
	limit := o.Limit
	if limit == 0 {
		limit = 20
	}
	out := []bgAnswer{}
	for _, r := range recs[:min(limit, len(recs))] {
		out = append(out, AnswerOf(r, now, r.Preview.Requester.Same(o.who)))
	}
	return map[string]any{"requests": out, "total": len(recs)}, nil
}

// bgStageOp takes one chunk of put_file's content.
type bgStageOp struct {
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Offset  int64  `json:"offset"`
	Content string `json:"content"` // base64
	data    []byte
	bgCaller
	bgTarget
}

func (o *bgStageOp) tool() string { return Ops[OpBreakglassStage] }
func (o *bgStageOp) path() string { return o.SHA256 }
func (o *bgStageOp) writes() bool { return true }
func (o *bgStageOp) journalArgs() any {
	return map[string]any{"sha256": o.SHA256, "size": o.Size, "offset": o.Offset, "chunk_bytes": len(o.data)}
}
func (o *bgStageOp) wants() policy.Effect { return policy.Allow }
func (o *bgStageOp) prepare(_ context.Context, _ *Server) (policy.HostOp, error) {
	if o.svc == nil {
		return policy.HostOp{}, errNoBreakglass
	}
	data, err := base64.StdEncoding.DecodeString(o.Content)
	if err != nil {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "content", Message: "content: not valid base64: " + err.Error()}
	}
	if len(data) > MaxStageChunk {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "content", Message: fmt.Sprintf("content: a chunk of %d bytes is over %d", len(data), MaxStageChunk)}
	}
	o.data = data
	return o.set(OpBreakglassStage, "", nil, false), nil
}
func (o *bgStageOp) do(ctx context.Context, _ *Server) (any, error) {
	return o.svc.Stage(ctx, o.SHA256, o.Size, o.Offset, o.data)
}

// bgWire is a break-glass error as the wire says it.
func bgWire(err error) *WireError {
	var fe *breakglass.FieldError
	switch {
	case errors.As(err, &fe):
		return &WireError{Code: "bad_request", Field: fe.Field, Message: fe.Error()}
	case errors.Is(err, breakglass.ErrNotFound):
		return &WireError{Code: "not_found", Field: "id", Message: err.Error()}
	case errors.Is(err, breakglass.ErrPrincipal):
		return &WireError{Code: "denied", Message: err.Error() + "; nothing was done"}
	case errors.Is(err, breakglass.ErrState), errors.Is(err, breakglass.ErrTarget):
		return &WireError{Code: "refused", Message: err.Error() + "; nothing was done"}
	}
	return nil
}

// bgEvidence is a receipt's evidence of a break-glass step.
func bgEvidence(op hostOp, r *journal.Result) {
	e, ok := op.(evidencer)
	if !ok {
		return
	}
	id, digest := e.evidence()
	if id == "" {
		return
	}
	r.JobID = id
	r.Detail = &journal.Detail{Digest: digest}
}
