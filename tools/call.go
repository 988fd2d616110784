package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// callRequest is one call of an endpoint, however the caller asked for it.
type callRequest struct {
	tool   string // the MCP tool used
	method string
	path   string // concrete, as the caller wrote it
	// endpoint, when set, is the endpoint of an expanded-mode tool: its
	// path variables are among args, and nothing is matched.
	endpoint *schema.Endpoint
	args     map[string]any
	shape    Shape
	wait     time.Duration
	confirm  string
	dryRun   bool
	// operationKey is the caller's key for a write; change the group it
	// belongs to; undoOf the operation it undoes; retryOf the job it
	// retries, cancelOf the job whose task it cancels.
	operationKey, change, undoOf, retryOf, cancelOf string
	// keepPlan keeps a dry run as a plan; applyPlan is the plan this call
	// applies.
	keepPlan  bool
	applyPlan *keptPlan
	// progressToken, when the client asked for progress.
	progressToken mcp.ProgressToken
	// transform, when set, turns PVE's answer into the tool's before it
	// is shaped (a curated tool's filter or summary).
	transform func(data any) any
}

// prepared is a call that passed every check before dispatch.
type prepared struct {
	plan   *plan.Plan
	audit  AuditCall
	dryRun bool
	// preview says why a write is answered as a preview (the daemon-wide
	// switch), when it is.
	preview string
	// movedFrom is the node the call named, when the guest was found on
	// another (plan.Path names the node it is on).
	movedFrom string
}

// planCaller is the caller as the call plan knows it.
func (c Caller) planCaller() plan.Caller {
	return plan.Caller{Principal: c.Principal, Binding: c.Binding, Tier: string(c.Tier)}
}

// prepare builds the call's plan (match, validation, switches, guard,
// policy) and acts on the decision's effect up to dispatch: it asks for or
// redeems a confirmation, turns a dry-run-only decision into a dry run,
// and refuses denials and break-glass. On a refusal it journals the call
// and returns the answer to give.
func (s *Server) prepare(ctx context.Context, c Caller, req callRequest) (*prepared, *mcp.CallToolResult) {
	p, err := s.planner.Build(ctx, c.planCaller(), plan.Request{Tool: req.tool, Method: req.method, Path: req.path, Endpoint: req.endpoint, Args: req.args})
	if err != nil {
		var r *plan.Refusal
		if !errors.As(err, &r) {
			r = &plan.Refusal{Outcome: journal.OutcomeError, Err: err, Plan: &plan.Plan{Time: s.opts.Now(), Tool: req.tool, Args: req.args}}
		}
		return nil, s.refuse(ctx, auditOf(c, r.Plan, req), r.Outcome, s.refusalText(r, req))
	}
	movedFrom := ""
	if node, ok := s.moved(ctx, p); ok {
		// The guest lives on another node now (it migrated): the call goes
		// there, planned and decided again for that node.
		vars := make(map[string]string, len(p.Vars))
		for k, v := range p.Vars {
			vars[k] = v
		}
		movedFrom, vars["node"] = vars["node"], node
		again := plan.Request{Tool: req.tool, Method: p.Endpoint.Method, Path: plan.ConcretePath(p.Endpoint.Path, vars), Args: withoutNode(p.Args, node)}
		if p, err = s.planner.Build(ctx, c.planCaller(), again); err != nil {
			var r *plan.Refusal
			if !errors.As(err, &r) {
				r = &plan.Refusal{Outcome: journal.OutcomeError, Err: err, Plan: &plan.Plan{Time: s.opts.Now(), Tool: req.tool, Args: req.args}}
			}
			return nil, s.refuse(ctx, auditOf(c, r.Plan, req), r.Outcome, s.refusalText(r, req))
		}
	}
	audit := auditOf(c, p, req)
	if req.operationKey != "" {
		switch {
		case p.Endpoint.Method == "GET":
			return nil, s.refuse(ctx, audit, journal.OutcomeInvalid, "argument operation_key: only a write takes an operation key (a read is safe to repeat). Nothing was sent.")
		case s.opts.Ledger == nil:
			return nil, s.refuse(ctx, audit, journal.OutcomeInvalid, "argument operation_key: this server keeps no journal of operations, so it cannot honour one. Nothing was sent.")
		}
	}
	pr := &prepared{plan: p, audit: audit, dryRun: req.dryRun || req.keepPlan, movedFrom: movedFrom}
	if p.Endpoint.Method != "GET" && s.currentSwitches().PreviewWrites && !pr.dryRun {
		pr.dryRun, pr.preview = true, "the daemon's changes.preview_writes switch is on: every write is answered as a preview, and nothing is sent"
	}
	if req.keepPlan && p.Endpoint.Method == "GET" {
		return nil, s.refuse(ctx, audit, journal.OutcomeInvalid, "argument keep_plan: only a write can be kept as a plan. Nothing was sent.")
	}
	d := p.Decision
	switch d.Effect {
	case policy.Allow:
	case policy.Confirm:
		if req.dryRun {
			break // nothing will be sent: no confirmation is asked for or used up
		}
		if req.confirm == "" {
			if approverOf(d) == "self" {
				switch s.askPerson(ctx, confirmMessage(p)) {
				case personConfirmed:
					pr.audit.Decision.Reasons = append(slices.Clone(d.Reasons), "confirmed by the person at the client (elicitation)")
					return pr, nil
				case personDeclined:
					return nil, s.refuse(ctx, audit, journal.OutcomeDenied, "The person at the client did not confirm this call. Nothing was sent.")
				}
			}
			return nil, s.askConfirmation(ctx, audit, c, p)
		}
		if err := s.confirm.redeem(req.confirm, c, p.Endpoint, p.Checked.Wire, approverOf(d)); err != nil {
			return nil, s.refuse(ctx, audit, journal.OutcomeDenied, "Confirmation refused: "+err.Error()+". Nothing was sent.")
		}
	case policy.DryRun:
		pr.dryRun = true
	case policy.Breakglass:
		return nil, s.refuseDecision(ctx, audit, c, p, "Refused: this call touches the protected repository, which no call through this tool may change; "+
			"changes to it need the break-glass procedure on the host, run by an operator. Nothing was sent.")
	default:
		return nil, s.refuseDecision(ctx, audit, c, p, "")
	}
	return pr, nil
}

// withoutNode is a call's arguments with its node set to node (a path
// variable repeated among the arguments must agree with the path).
func withoutNode(args map[string]any, node string) map[string]any {
	if _, ok := args["node"]; !ok {
		return args
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = v
	}
	out["node"] = node
	return out
}

// auditOf describes a call for the journal from its plan, or from as much
// of it as was built before a refusal.
func auditOf(c Caller, p *plan.Plan, req callRequest) AuditCall {
	a := AuditCall{Time: p.Time, Principal: c.Principal, Tool: req.tool, Method: strings.ToUpper(req.method), ConcretePath: req.path,
		Args: p.Args, Decision: p.Decision}
	if a.Args == nil {
		a.Args = req.args
	}
	if ep := p.Endpoint; ep != nil {
		a.Endpoint, a.Method, a.Path, a.Risk = ep.Tool, ep.Method, ep.Path, ep.Risk
		if p.Path != "" {
			a.ConcretePath, a.Risk = p.Path, p.Risk
		} else if req.endpoint != nil {
			a.ConcretePath = ep.Path
		}
	}
	return a
}

// refusalText words a refusal before the decision for the caller.
func (s *Server) refusalText(r *plan.Refusal, req callRequest) string {
	switch r.Stage {
	case plan.StageMatch:
		return noEndpointText(req.method, req.path, r.Err)
	case plan.StageArgs:
		return r.Err.Error() + ". Nothing was sent."
	case plan.StageValidate:
		ep := r.Plan.Endpoint
		return r.Err.Error() + syntaxHints(ep, r.Err) + "\nNothing was sent. See " + s.describeHint(ep) + " for the parameters of " + ep.Method + " " + ep.Path + "."
	case plan.StageSwitch:
		return "Refused: " + r.Err.Error() + ". Nothing was sent."
	}
	return "The call could not be planned; nothing was sent: " + r.Err.Error()
}

// syntaxHints says, for each parameter a validation error names, how its
// value is written (syntax, unit, default) and a value that passes, so
// that the caller can fix the call without a describe.
func syntaxHints(ep *schema.Endpoint, err error) string {
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return ""
	}
	seen := map[string]bool{}
	var names []string
	for k := range ve.Errors {
		name, _, _ := strings.Cut(k, ".")
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		p := ep.ParamFor(name)
		if p == nil || (len(p.Enum) > 0 && p.TypeText == "") {
			continue // PVE's message already lists an enum's values
		}
		fmt.Fprintf(&b, "\n%s: %s.", name, p.Hint())
		if ex, ok := p.ExampleArg(name); ok {
			fmt.Fprintf(&b, " Example: %s.", ex)
		}
	}
	return b.String()
}

// callEndpoint runs a call through every check, then PVE, then shapes the
// answer.
func (s *Server) callEndpoint(ctx context.Context, c Caller, req callRequest) *mcp.CallToolResult {
	pr, refusal := s.prepare(ctx, c, req)
	if refusal != nil {
		return refusal
	}
	if pr.dryRun {
		return s.dryRunAnswer(ctx, c, req, pr)
	}
	return s.dispatch(ctx, c, req, pr)
}

// dispatch sends an allowed call. A write is journalled before it leaves,
// carries the config digest it was planned against, and is never retried.
func (s *Server) dispatch(ctx context.Context, c Caller, req callRequest, pr *prepared) *mcp.CallToolResult {
	p, audit := pr.plan, pr.audit
	ep := p.Endpoint
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return s.refuse(ctx, audit, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error()+"; nothing was sent")
	}
	wire := p.Wire()
	var callID string
	if ep.Method != "GET" {
		if ep.Facts.ConfigEdit {
			// The edit is planned against the configuration as it is now;
			// a digest the caller gave is sent as given (PVE refuses the
			// edit if it is stale).
			digest, conf, err := s.currentConfig(ctx, client, p.Path)
			if err != nil {
				return s.refuse(ctx, audit, journal.OutcomeError, "could not read the current configuration to plan the edit: "+err.Error()+"; nothing was sent")
			}
			if kp := req.applyPlan; kp != nil {
				if err := s.checkPlanned(kp, p, digest, conf); err != nil {
					return s.refuse(ctx, audit, journal.OutcomeDenied, "Plan "+kp.id+" refused: "+err.Error())
				}
				if kp.config != "" {
					wire.Set("digest", kp.config)
				}
			}
			switch given := wire.Get("digest"); {
			case given == "":
				audit.PriorDigest, audit.PriorConfig = digest, conf
				wire.Set("digest", digest)
			case given == digest:
				audit.PriorDigest, audit.PriorConfig = digest, conf
			default:
				audit.PriorDigest = given
			}
		} else if d := wire.Get("digest"); d != "" {
			audit.PriorDigest = d
		}
		if req.applyPlan != nil && !ep.Facts.ConfigEdit {
			if err := s.checkPlanned(req.applyPlan, p, "", nil); err != nil {
				return s.refuse(ctx, audit, journal.OutcomeDenied, "Plan "+req.applyPlan.id+" refused: "+err.Error())
			}
		}
		if req.operationKey != "" || req.change != "" || req.undoOf != "" || req.retryOf != "" || req.cancelOf != "" || req.applyPlan != nil || pr.movedFrom != "" {
			audit.Detail = &journal.Detail{Change: req.change, UndoOf: req.undoOf, RetryOf: req.retryOf, CancelOf: req.cancelOf}
			if req.applyPlan != nil {
				audit.Detail.Plan = req.applyPlan.id
			}
			if pr.movedFrom != "" {
				audit.Detail.Node = p.Vars["node"]
			}
			if req.operationKey != "" {
				audit.Detail.OperationKey, audit.Detail.RequestDigest = req.operationKey, requestDigest(p)
			}
		}
		// The token the write goes out with: reconciliation looks for the
		// operation's task under it in PVE's task index.
		if audit.Detail == nil {
			audit.Detail = &journal.Detail{}
		}
		audit.Detail.Token = client.TokenID()
		callID, err = s.audit.Intent(journalContext(ctx), audit)
		var ke *journal.OperationKeyError
		if errors.As(err, &ke) {
			return s.replay(ctx, audit, p, ke)
		}
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
	resp, err := client.Do(sendCtx, ep.Method, p.Path, wire)
	out := AuditOutcome{Duration: s.opts.Now().Sub(p.Time)}
	if err != nil {
		return s.callFailed(ctx, audit, callID, out, ep, err)
	}
	result := map[string]any{"method": ep.Method, "path": p.Path, "tool": ep.Tool}
	var notes []string
	for _, o := range p.Decision.Obligations {
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
		out.UPID, out.JobID = upid, callID
		result["upid"], result["job"] = upid, callID
		summary = fmt.Sprintf("%s %s started task %s.", ep.Method, p.Path, upid)
		if req.wait > 0 {
			task, werr := s.follow(ctx, client, upid, req.wait, req.progressToken)
			result["task"] = task
			summary = taskSummary(ep, p.Path, task)
			switch {
			case werr != nil && errors.Is(werr, pve.ErrTaskFailed):
				out.Outcome = journal.OutcomeTaskFailed
			case werr != nil:
				out.Outcome = journal.OutcomeTaskRunning
				notes = append(notes, "The task was still running when the wait ended: "+werr.Error()+". Follow it with "+s.followHint(upid)+".")
			}
		} else {
			notes = append(notes, "Follow it with "+s.followHint(upid)+", or pass wait.")
		}
	}
	if out.Outcome == "" {
		out.Outcome = journal.OutcomeOK
	}
	if req.applyPlan != nil && callID != "" {
		s.plans.markApplied(req.applyPlan.id, callID)
	}
	if pr.movedFrom != "" {
		result["found_on"] = map[string]any{"node": p.Vars["node"], "named": pr.movedFrom,
			"note": "the guest is on " + p.Vars["node"] + ", not on " + pr.movedFrom + " as the call said: the call went there"}
	}
	if callID != "" {
		ev := map[string]any{"operation": callID}
		if req.operationKey != "" {
			ev["operation_key"] = req.operationKey
		}
		if audit.PriorDigest != "" {
			ev["digest_before"] = audit.PriorDigest
		}
		if ep.Facts.ConfigEdit && out.Outcome == journal.OutcomeOK {
			s.afterEvidence(ctx, client, p, &audit, &out, ev)
		}
		result["evidence"] = ev
	} else if ep.Facts.ReadsConfig && wire.Get("snapshot") == "" {
		// A read of a configuration is an observation of it: undo's
		// evidence of what changed after a write.
		if conf, ok := data.(map[string]any); ok {
			if d, _ := conf["digest"].(string); d != "" {
				audit.Detail = &journal.Detail{Digest: d, Config: conf}
			}
		}
	}
	out.Duration = s.opts.Now().Sub(p.Time)
	if err := s.finishAudit(ctx, audit, callID, out); err != nil {
		return errorResult(fmt.Sprintf("%s %s was done, but the journal refused its receipt: %v", ep.Method, p.Path, err))
	}
	if out.UPID != "" {
		s.jobFollowed(ctx, callID, upidTask(result["task"]))
	}
	if len(notes) > 0 {
		result["notes"] = notes
	}
	if req.transform != nil {
		data = req.transform(data)
	}
	shaped := s.shape(data, req.shape, resp.Total)
	for k, v := range shaped {
		result[k] = v
	}
	if summary == "" {
		summary = dataSummary(ep.Method, p.Path, shaped)
	}
	res := structured(summary, result)
	res.IsError = out.Outcome == journal.OutcomeTaskFailed
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
		out.Outcome = journal.OutcomeUncertain
		text = fmt.Sprintf("Outcome unknown: %s %s was sent, then the answer was lost (%v). PVE may have done it. "+
			"Check the state (and the task list of the node) before trying again; the call was not retried.", ep.Method, audit.ConcretePath, errors.Unwrap(err))
	case errors.As(err, &apiErr):
		out.Outcome, out.Status = journal.OutcomeError, apiErr.Status
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
		out.Outcome = journal.OutcomeError
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
func (s *Server) refuse(ctx context.Context, audit AuditCall, outcome journal.Outcome, text string) *mcp.CallToolResult {
	out := AuditOutcome{Outcome: outcome, Error: text, Duration: s.opts.Now().Sub(audit.Time)}
	if err := s.audit.Record(journalContext(ctx), audit, out); err != nil {
		text += "\nThe journal also refused the record: " + err.Error()
	}
	return errorResult(text)
}

func noEndpointText(method, path string, err error) string {
	return fmt.Sprintf("No endpoint serves %s %s (%v). Find one with %s; give a concrete path such as /nodes/pve1/qemu/100/config.",
		strings.ToUpper(method), path, err, ToolSearch)
}

// confirmMessage is what the person is asked to confirm: the call, its
// arguments and the policy's reasons.
func confirmMessage(p *plan.Plan) string {
	return fmt.Sprintf("Confirm %s %s (%s) with %v? %s", p.Endpoint.Method, p.Path, p.Risk, flatten(p.Checked.Wire), reasonsText(p.Decision))
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

// structured makes a result with structured content and a one-line
// summary as its text; answerText adds the JSON to the text where the
// answer must carry it.
func structured(summary string, content map[string]any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(summary)},
		StructuredContent: content,
	}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, IsError: true}
}
