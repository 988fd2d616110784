package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// callRequest is one call of an endpoint, however the caller asked for it.
type callRequest struct {
	tool    string // the MCP tool used
	method  string
	path    string // concrete
	args    map[string]any
	shape   Shape
	wait    time.Duration
	confirm string
	dryRun  bool
	// progressToken, when the client asked for progress.
	progressToken mcp.ProgressToken
}

// prepared is a call that passed every check before dispatch.
type prepared struct {
	ep       *schema.Endpoint
	vars     map[string]string
	wire     url.Values
	audit    AuditCall
	decision policy.Decision
	dryRun   bool
}

// prepare runs a call through the checks that come before PVE: match,
// visibility, validation, switches, guard, policy and confirmation. On a
// refusal it journals the call and returns the answer to give.
func (s *Server) prepare(ctx context.Context, c Caller, req callRequest, start time.Time) (*prepared, *mcp.CallToolResult) {
	reg := s.registry()
	audit := AuditCall{Time: start, Principal: c.Principal, Tool: req.tool, Method: strings.ToUpper(req.method), ConcretePath: req.path, Args: req.args}
	ep, vars, err := reg.Match(req.method, req.path)
	if err != nil {
		return nil, s.refuse(ctx, audit, OutcomeInvalid, start, noEndpointText(req.method, req.path, err))
	}
	audit.Endpoint, audit.Path, audit.Risk = ep.Tool, ep.Path, ep.Risk
	visible, err := s.visible(ctx, c, false)
	if err != nil {
		return nil, s.refuse(ctx, audit, OutcomeError, start, "the policy could not be evaluated; nothing was sent: "+err.Error())
	}
	if visible[ep.Tool] == nil {
		// A hidden endpoint does not exist for this caller.
		return nil, s.refuse(ctx, audit, OutcomeInvalid, start, noEndpointText(req.method, req.path, schema.ErrNoEndpoint))
	}
	args := make(map[string]any, len(req.args)+len(vars))
	for k, v := range req.args {
		args[k] = v
	}
	for k, v := range vars {
		if prev, ok := args[k]; ok && fmt.Sprint(prev) != v {
			return nil, s.refuse(ctx, audit, OutcomeInvalid, start, fmt.Sprintf("parameter %s is %v in params but %q in the path; give it once", k, prev, v))
		}
		args[k] = v
	}
	audit.Args = args
	wire, err := ep.Validate(args)
	if err != nil {
		return nil, s.refuse(ctx, audit, OutcomeInvalid, start, err.Error()+"\nNothing was sent. See "+s.describeHint(ep)+" for the parameters of "+ep.Method+" "+ep.Path+".")
	}
	audit.Risk = ep.CallRisk(args)
	if why := s.switchRefusal(ep.Method); why != "" {
		return nil, s.refuse(ctx, audit, OutcomeDenied, start, "Refused: "+why+". Nothing was sent.")
	}
	guard := s.opts.Guard.Check(ctx, ep, vars, args)
	in := policy.BuildInput(ep, req.path, vars, args, c.Principal, guard, start)
	decision := s.opts.Policy.Decide(ctx, c.Binding, &in)
	audit.Decision = decision
	p := &prepared{ep: ep, vars: vars, wire: wire, audit: audit, decision: decision, dryRun: req.dryRun}
	switch decision.Effect {
	case policy.Allow:
	case policy.Confirm:
		if req.dryRun {
			break // nothing will be sent: no confirmation is asked for or used up
		}
		if req.confirm == "" {
			return nil, s.askConfirmation(ctx, audit, c, ep, vars, wire, decision, start)
		}
		if err := s.confirm.redeem(req.confirm, c, ep, wire, approverOf(decision)); err != nil {
			return nil, s.refuse(ctx, audit, OutcomeDenied, start, "Confirmation refused: "+err.Error()+". Nothing was sent.")
		}
	case policy.DryRun:
		p.dryRun = true
	case policy.Breakglass:
		return nil, s.refuse(ctx, audit, OutcomeDenied, start, "Refused: this call touches the protected repository, which no call through this tool may change; "+
			"changes to it need the break-glass procedure on the host, run by an operator. Nothing was sent.\n"+reasonsText(decision))
	default:
		return nil, s.refuse(ctx, audit, OutcomeDenied, start, "Refused by policy "+decision.Policy+".\n"+reasonsText(decision)+"\nNothing was sent.")
	}
	return p, nil
}

// callEndpoint runs a call through every check, then PVE, then shapes the
// answer.
func (s *Server) callEndpoint(ctx context.Context, c Caller, req callRequest) *mcp.CallToolResult {
	start := s.opts.Now()
	p, refusal := s.prepare(ctx, c, req, start)
	if refusal != nil {
		return refusal
	}
	if p.dryRun {
		out := AuditOutcome{Outcome: OutcomeDryRun, Duration: s.opts.Now().Sub(start)}
		if err := s.audit.Record(journalContext(ctx), p.audit, out); err != nil {
			return errorResult("the journal refused the record; nothing was sent: " + err.Error())
		}
		return structured(fmt.Sprintf("Dry run: %s %s would be sent (%s); nothing was sent.", p.ep.Method, req.path, p.audit.Risk), map[string]any{
			"dry_run": true, "method": p.ep.Method, "path": req.path, "template": p.ep.Path, "tool": p.ep.Tool,
			"risk": p.audit.Risk.String(), "params": flatten(p.wire), "decision": p.decision,
		})
	}
	return s.dispatch(ctx, c, req, p.ep, p.vars, p.wire, p.audit, p.decision, start)
}

// dispatch sends an allowed call. A write is journalled before it leaves,
// carries the config digest it was planned against, and is never retried.
func (s *Server) dispatch(ctx context.Context, c Caller, req callRequest, ep *schema.Endpoint, vars map[string]string,
	wire url.Values, audit AuditCall, decision policy.Decision, start time.Time) *mcp.CallToolResult {
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return s.refuse(ctx, audit, OutcomeError, start, "no PVE token for tier "+string(c.Tier)+": "+err.Error()+"; nothing was sent")
	}
	path := concretePath(ep.Path, vars)
	var callID string
	if ep.Method != "GET" {
		if isConfigEdit(ep) && wire.Get("digest") == "" {
			digest, conf, err := s.currentConfig(ctx, client, path)
			if err != nil {
				return s.refuse(ctx, audit, OutcomeError, start, "could not read the current configuration to plan the edit: "+err.Error()+"; nothing was sent")
			}
			audit.PriorDigest, audit.PriorConfig = digest, conf
			wire.Set("digest", digest)
		} else if d := wire.Get("digest"); d != "" {
			audit.PriorDigest = d
		}
		callID, err = s.audit.Intent(journalContext(ctx), audit)
		if err != nil {
			return errorResult("the journal could not record the intent; nothing was sent: " + err.Error())
		}
	}
	sendCtx := ctx
	if ep.Method != "GET" {
		// Once the intent is recorded the write goes through to PVE's
		// answer even if the client hangs up, so the receipt says what
		// happened instead of "outcome unknown". The PVE client's own
		// timeout still bounds it.
		sendCtx = context.WithoutCancel(ctx)
	}
	resp, err := client.Do(sendCtx, ep.Method, path, wire)
	out := AuditOutcome{Duration: s.opts.Now().Sub(start)}
	if err != nil {
		return s.callFailed(ctx, audit, callID, out, ep, err)
	}
	result := map[string]any{"method": ep.Method, "path": req.path, "tool": ep.Tool}
	var notes []string
	for _, o := range decision.Obligations {
		if o.Type == "notify" && o.Message != "" {
			notes = append(notes, o.Message)
		}
	}
	var data any
	if err := json.Unmarshal(resp.Data, &data); err != nil {
		data = string(resp.Data)
	}
	summary := ""
	if upid, ok := data.(string); ok && pve.IsUPID(upid) {
		out.UPID, out.JobID = upid, upid
		result["upid"] = upid
		summary = fmt.Sprintf("%s %s started task %s.", ep.Method, req.path, upid)
		if req.wait > 0 {
			task, werr := s.follow(ctx, client, upid, req.wait, req.progressToken)
			result["task"] = task
			summary = taskSummary(ep, req.path, task)
			switch {
			case werr != nil && errors.Is(werr, pve.ErrTaskFailed):
				out.Outcome = OutcomeTaskFailed
			case werr != nil:
				out.Outcome = OutcomeTaskRunning
				notes = append(notes, "The task was still running when the wait ended: "+werr.Error()+". Follow it with "+s.followHint(upid)+".")
			}
		} else {
			notes = append(notes, "Follow it with "+s.followHint(upid)+", or pass wait.")
		}
	}
	if out.Outcome == "" {
		out.Outcome = OutcomeOK
	}
	out.Duration = s.opts.Now().Sub(start)
	if err := s.finishAudit(ctx, audit, callID, out); err != nil {
		return errorResult(fmt.Sprintf("%s %s was done, but the journal refused its receipt: %v", ep.Method, req.path, err))
	}
	if len(notes) > 0 {
		result["notes"] = notes
	}
	shaped := s.shape(data, req.shape, resp.Total)
	for k, v := range shaped {
		result[k] = v
	}
	if summary == "" {
		summary = dataSummary(ep.Method, req.path, shaped)
	}
	res := structured(summary, result)
	res.IsError = out.Outcome == OutcomeTaskFailed
	return res
}

// callFailed journals and explains a call PVE refused or whose outcome is
// unknown.
func (s *Server) callFailed(ctx context.Context, audit AuditCall, callID string, out AuditOutcome, ep *schema.Endpoint, err error) *mcp.CallToolResult {
	out.Error = err.Error()
	var text string
	var apiErr *pve.APIError
	switch {
	case errors.Is(err, pve.ErrOutcomeUnknown):
		out.Outcome = OutcomeUncertain
		text = fmt.Sprintf("Outcome unknown: %s %s was sent, then the answer was lost (%v). PVE may have done it. "+
			"Check the state (and the task list of the node) before trying again; the call was not retried.", ep.Method, audit.ConcretePath, errors.Unwrap(err))
	case errors.As(err, &apiErr):
		out.Outcome, out.Status = OutcomeError, apiErr.Status
		text = fmt.Sprintf("PVE refused %s %s: %d %s", ep.Method, audit.ConcretePath, apiErr.Status, apiErr.Message)
		for k, v := range apiErr.Errors {
			text += fmt.Sprintf("\n  %s: %s", k, v)
		}
		if errors.Is(err, pve.ErrDigestMismatch) {
			text += "\nThe configuration changed since it was read; read it again (its digest) and decide anew."
		}
		if errors.Is(err, pve.ErrPermission) {
			text += "\nPVE's own permission check refused the call: the PVE token of your tier lacks the privilege."
		}
	default:
		out.Outcome = OutcomeError
		text = fmt.Sprintf("%s %s failed before PVE answered: %v", ep.Method, audit.ConcretePath, err)
	}
	if aerr := s.finishAudit(ctx, audit, callID, out); aerr != nil {
		text += "\nThe journal also refused the record: " + aerr.Error()
	}
	return errorResult(text)
}

func (s *Server) finishAudit(ctx context.Context, audit AuditCall, callID string, out AuditOutcome) error {
	ctx = journalContext(ctx)
	if callID != "" {
		return s.audit.Receipt(ctx, callID, out)
	}
	return s.audit.Record(ctx, audit, out)
}

// journalContext keeps the request's values but not its cancellation: a
// client that hangs up must not leave an intent without its receipt, nor a
// refusal unrecorded.
func journalContext(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}

// refuse journals a call that ends before PVE and answers with the reason.
func (s *Server) refuse(ctx context.Context, audit AuditCall, outcome string, start time.Time, text string) *mcp.CallToolResult {
	out := AuditOutcome{Outcome: outcome, Error: text, Duration: s.opts.Now().Sub(start)}
	if err := s.audit.Record(journalContext(ctx), audit, out); err != nil {
		text += "\nThe journal also refused the record: " + err.Error()
	}
	return errorResult(text)
}

func noEndpointText(method, path string, err error) string {
	return fmt.Sprintf("No endpoint %s %s is available to your key (%v). Find one with %s; give a concrete path such as /nodes/pve1/qemu/100/config.",
		strings.ToUpper(method), path, err, ToolSearch)
}

func reasonsText(d policy.Decision) string {
	if len(d.Reasons) == 0 {
		return "Reason: none given by the policy."
	}
	return "Reasons: " + strings.Join(d.Reasons, "; ")
}

func approverOf(d policy.Decision) string {
	for _, o := range d.Obligations {
		if o.Type == "confirm" && o.Approver != "" {
			return o.Approver
		}
	}
	return "self"
}

// concretePath rebuilds the path from the template and the decoded
// variables, escaping each (a volume ID's '/' becomes %2F).
func concretePath(template string, vars map[string]string) string {
	var b strings.Builder
	for seg := range strings.SplitSeq(strings.TrimPrefix(template, "/"), "/") {
		b.WriteByte('/')
		if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
			b.WriteString(url.PathEscape(vars[seg[1:len(seg)-1]]))
			continue
		}
		b.WriteString(seg)
	}
	return b.String()
}

// isConfigEdit reports whether an endpoint edits a guest configuration
// that carries a digest.
func isConfigEdit(ep *schema.Endpoint) bool {
	return (ep.Method == "PUT" || ep.Method == "POST") && strings.HasSuffix(ep.Path, "/config") && ep.Param("digest") != nil &&
		strings.Contains(ep.Path, "/{vmid}/")
}

// currentConfig reads the configuration an edit is planned against.
func (s *Server) currentConfig(ctx context.Context, client *pve.Client, path string) (string, map[string]any, error) {
	var conf map[string]any
	if err := client.Get(ctx, path, nil, &conf); err != nil {
		return "", nil, err
	}
	digest, _ := conf["digest"].(string)
	if digest == "" {
		return "", nil, errors.New("the configuration has no digest")
	}
	return digest, conf, nil
}

func flatten(v url.Values) map[string]any {
	out := make(map[string]any, len(v))
	for k, vals := range v {
		if len(vals) == 1 {
			out[k] = vals[0]
		} else {
			out[k] = vals
		}
	}
	return out
}

// structured makes a result with structured content and the same JSON,
// after a one-line summary, as text for clients that read only text.
func structured(summary string, content map[string]any) *mcp.CallToolResult {
	b, err := json.Marshal(content)
	if err != nil {
		return errorResult("internal error: cannot encode the answer: " + err.Error())
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(summary + "\n" + string(b))},
		StructuredContent: content,
	}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, IsError: true}
}
