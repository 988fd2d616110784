package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// ToolPlanApply applies a plan a dry run kept.
const ToolPlanApply = "proxmox_plan_apply"

// keptPlan is a preview kept for later: the request as validated, bound to
// its digest and to the configuration it was planned against.
type keptPlan struct {
	id        string
	owner     string // the key that made it
	tool      string // the endpoint's tool name
	args      map[string]any
	digest    string         // of the request
	config    string         // the configuration's digest then ("" when not a config edit)
	current   map[string]any // the configuration then
	expires   time.Time
	change    string
	endpoint  string // method and template, for messages
	concrete  string
	applied   bool
	appliedAs string // the operation that applied it
}

// maxPlans bounds the plans kept at once.
const maxPlans = 1000

// plans are the kept plans, in memory (a restart forgets them; the journal
// keeps their record).
type plans struct {
	now func() time.Time
	ttl time.Duration

	mu   sync.Mutex
	byID map[string]*keptPlan
}

func newPlans(now func() time.Time, ttl time.Duration) *plans {
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	return &plans{now: now, ttl: ttl, byID: map[string]*keptPlan{}}
}

func (ps *plans) add(kp *keptPlan) error {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	kp.id = "pmpl-" + hex.EncodeToString(b)
	kp.expires = ps.now().Add(ps.ttl)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.pruneLocked()
	if len(ps.byID) >= maxPlans {
		return fmt.Errorf("%d plans are kept already; apply some, or wait until they expire", maxPlans)
	}
	ps.byID[kp.id] = kp
	return nil
}

func (ps *plans) pruneLocked() {
	now := ps.now()
	for id, kp := range ps.byID {
		if now.After(kp.expires) {
			delete(ps.byID, id)
		}
	}
}

// get returns a key's plan that has not expired.
func (ps *plans) get(id, owner string) (*keptPlan, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.pruneLocked()
	kp := ps.byID[id]
	if kp == nil || kp.owner != owner {
		return nil, errors.New("no plan of your key has this id (it expired, was never made, or the daemon restarted since)")
	}
	if kp.applied {
		return nil, fmt.Errorf("the plan was applied already, as operation %s", kp.appliedAs)
	}
	return kp, nil
}

func (ps *plans) markApplied(id, op string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if kp := ps.byID[id]; kp != nil {
		kp.applied, kp.appliedAs = true, op
	}
}

// configFields are the parameters of a config edit that are not fields of
// the configuration.
var configFields = map[string]bool{"node": false, "vmid": false, "digest": false, "delete": false, "revert": false,
	"skiplock": false, "background_delay": false, "force": false}

// previewOf is what a config edit would change: the current value of each
// field it sets or deletes, and the diff. Other writes have no preview of
// fields.
func (s *Server) previewOf(ctx context.Context, c Caller, p *plan.Plan) (current map[string]any, digest string, diff map[string]any, err error) {
	if !p.Endpoint.Facts.ConfigEdit {
		return nil, "", nil, nil
	}
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return nil, "", nil, err
	}
	digest, conf, err := s.currentConfig(ctx, client, p.Path)
	if err != nil {
		return nil, "", nil, err
	}
	diff = map[string]any{}
	current = map[string]any{}
	for k, vals := range p.Checked.Wire {
		if _, skip := configFields[k]; skip {
			continue
		}
		now := conf[k]
		current[k] = now
		next := strings.Join(vals, ",")
		if now == nil || !sameValue(now, next) {
			diff[k] = fieldDiff(p.Endpoint, k, now, next)
		}
	}
	if del := p.Checked.Wire.Get("delete"); del != "" {
		for _, k := range schema.SplitList(del) {
			now := conf[k]
			current[k] = now
			if now != nil {
				diff[k] = fieldDiff(p.Endpoint, k, now, nil)
			}
		}
	}
	return current, digest, diff, nil
}

func fieldDiff(ep *schema.Endpoint, k string, before, after any) map[string]any {
	if ep.Secret(k) {
		return map[string]any{"changed": true, "secret": true}
	}
	return map[string]any{"before": before, "after": after}
}

// dryRunAnswer answers a preview: the request as validated, the current
// values of the fields it would change and the diff, the decision and
// what it would still need; with keep, the preview is kept as a plan.
func (s *Server) dryRunAnswer(ctx context.Context, c Caller, req callRequest, pr *prepared) *mcp.CallToolResult {
	p := pr.plan
	out := AuditOutcome{Outcome: journal.OutcomeDryRun}
	content := map[string]any{
		"dry_run": true, "method": p.Endpoint.Method, "path": p.Path, "template": p.Endpoint.Path, "tool": p.Endpoint.Tool,
		"risk": p.Risk.String(), "params": flatten(p.Checked.Wire), "decision": p.Decision,
	}
	if pr.preview != "" {
		content["preview"] = pr.preview
	}
	switch p.Decision.Effect {
	case "confirm":
		if approverOf(p.Decision) == "other" {
			content["needs"] = "a second principal's approval (proxmox_approve), then a confirmation"
		} else {
			content["needs"] = "a confirmation: the real call answers with a token to repeat it with"
		}
	case "dry_run":
		content["needs"] = "nothing more: the policy allows only previews of this call"
	}
	current, digest, diff, err := s.previewOf(ctx, c, p)
	if err != nil {
		content["preview_error"] = "the current configuration could not be read: " + err.Error()
	} else if diff != nil {
		content["current"], content["diff"], content["digest"] = current, diff, digest
	}
	summary := fmt.Sprintf("Dry run: %s %s would be sent (%s); nothing was sent.", p.Endpoint.Method, p.Path, p.Risk)
	if req.keepPlan {
		kp := &keptPlan{owner: c.Principal.KeyID, tool: p.Endpoint.Tool, args: p.Args, digest: requestDigest(p), config: digest,
			current: current, change: req.change, endpoint: p.Endpoint.Key(), concrete: p.Path}
		if err := s.plans.add(kp); err != nil {
			return s.refuse(ctx, pr.audit, journal.OutcomeError, "The preview could not be kept as a plan: "+err.Error()+". Nothing was sent.")
		}
		if s.opts.Ledger != nil {
			_, err := s.opts.Ledger.KeepPlan(journalContext(ctx), journal.Plan{ID: kp.id, Time: p.Time, Principal: journalPrincipal(c.Principal),
				Tool: req.tool, Endpoint: p.Endpoint.Tool, PathTemplate: p.Endpoint.Path, Path: p.Path, Risk: p.Risk.String(),
				Decision: pr.audit.Journal().Decision, Request: journal.PlannedRequest{Method: p.Endpoint.Method, Path: p.Path, Params: p.Checked.Wire},
				Digest: digest, Expires: kp.expires, Change: req.change})
			if err != nil {
				return s.refuse(ctx, pr.audit, journal.OutcomeError, "The journal refused the plan's record: "+err.Error()+". Nothing was sent.")
			}
		}
		content["plan"] = map[string]any{"id": kp.id, "expires_at": kp.expires.UTC().Format(time.RFC3339), "config_digest": digest}
		summary += fmt.Sprintf(" Kept as plan %s until %s: apply it with %s.", kp.id, kp.expires.UTC().Format(time.RFC3339), ToolPlanApply)
	}
	out.Duration = s.opts.Now().Sub(p.Time)
	if err := s.audit.Record(journalContext(ctx), pr.audit, out); err != nil {
		return errorResult("the journal refused the record; nothing was sent: " + err.Error())
	}
	return structured(summary, content)
}

func planApplyTool() mcp.Tool {
	return mcp.NewTool(ToolPlanApply,
		mcp.WithDescription("Apply a plan a dry run kept (dry_run with keep_plan): everything is checked again (policy, switches, guard, the guest's node) "+
			"and exactly the previewed request is sent, with the digest of the configuration it was planned against; if the configuration changed since, "+
			"the plan is refused with the diff. A plan that needs another principal's approval is approved like a held call."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"plan":          map[string]any{"type": "string", "minLength": 1, "description": "The plan's id."},
				"confirm":       map[string]any{"type": "string", "description": "The confirmation token, when asked for one."},
				"wait":          map[string]any{"type": "integer", "minimum": 0, "maximum": 600, "description": "Seconds to wait for a task the call starts."},
				"operation_key": shapeProperties("")["operation_key"],
			},
			"required":             []string{"plan"},
			"additionalProperties": false,
		}),
		annotate("Apply a kept plan", hints{destructive: true}),
	)
}

// handlePlanApply is proxmox_plan_apply.
func (s *Server) handlePlanApply(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "plan", "confirm", "wait", "operation_key")
	if err != nil {
		return nil, err
	}
	shaping := map[string]any{}
	for _, k := range []string{"confirm", "wait", "operation_key"} {
		if v, ok := a[k]; ok {
			shaping[k] = v
		}
	}
	sh, err := shapingArgs(shaping, "")
	if err != nil {
		return nil, err
	}
	id, err := optString(a, "plan")
	if err != nil {
		return nil, err
	}
	kp, err := s.plans.get(id, c.Principal.KeyID)
	if err != nil {
		return nil, argError("plan", err.Error())
	}
	ep := s.registry().Tool(kp.tool)
	if ep == nil {
		return nil, argError("plan", "the API schema changed since the plan was made: its endpoint "+kp.endpoint+" is gone; make a new plan")
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ToolPlanApply, method: ep.Method, endpoint: ep, args: kp.args, wait: sh.wait,
		confirm: sh.confirm, operationKey: sh.operationKey, change: kp.change, applyPlan: kp, progressToken: progressToken(req)}), nil
}

// checkPlanned refuses applying a plan whose request or configuration is
// not the one previewed.
func (s *Server) checkPlanned(kp *keptPlan, p *plan.Plan, digest string, conf map[string]any) error {
	if requestDigest(p) != kp.digest {
		return errors.New("the request as validated now is not the one previewed (the schema, the guest's node or a default changed); make a new plan")
	}
	if kp.config == "" || digest == kp.config {
		return nil
	}
	diff := map[string]any{}
	for k, then := range kp.current {
		if now := conf[k]; !sameValue(now, then) && !(now == nil && then == nil) {
			diff[k] = fmt.Sprintf("%v → %v", then, now)
		}
	}
	return fmt.Errorf("the configuration changed since the plan was made (digest %s, now %s); the plan's fields changed by others: %v. Nothing was sent: make a new plan",
		short(kp.config), short(digest), diff)
}
