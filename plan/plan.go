// Package plan builds the one typed plan every call of the Proxmox VE API
// goes through before anything is sent: the endpoint the request matches,
// its parameters as validated (typed by the schema) and in wire form, the
// canonical path, the call's risk and targets, what the protected-
// repository guard found, the policy's decision and the PVE token tier
// the call goes out with. The MCP tools, `policy simulate`, approvals and
// task waits all build their calls here, so that what a policy decides on
// is exactly what is sent.
//
// A plan is built in a fixed order: match (or take the endpoint of an
// expanded-mode tool), merge the path variables with the parameters,
// validate, check the daemon-wide switches, run the guard, decide. A
// request that fails a step before the decision is a [Refusal] with the
// outcome the journal records; a decision of any effect is a plan, and
// the caller acts on its effect.
package plan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Caller is who a plan is built for: the verified key's principal, what
// the key is bound to, and the PVE token tier its calls use.
type Caller struct {
	Principal policy.Principal
	Binding   policy.Binding
	Tier      string
}

// Request is a call as the caller asked for it.
type Request struct {
	// Tool is the MCP tool used.
	Tool string
	// Method and Path name the endpoint: a concrete path as written
	// (percent-encoded, a volume ID's '/' as %2F). Ignored when Endpoint
	// is set.
	Method, Path string
	// Endpoint, when set, is the endpoint itself (an expanded-mode tool):
	// nothing is matched, and the path variables come from Args.
	Endpoint *schema.Endpoint
	// Args are the endpoint's parameters as the caller gave them. A path
	// variable given here must agree with the path.
	Args map[string]any
}

// Plan is a call ready for its decision's effect.
type Plan struct {
	Caller   Caller
	Tool     string
	Endpoint *schema.Endpoint
	// Vars are the path variables, in canonical text (an integer as
	// strconv writes it).
	Vars map[string]string
	// Path is the canonical concrete path: the template with each variable
	// escaped once. It is what PVE receives and what the policy sees.
	Path string
	// Args are the caller's arguments with the path variables merged in:
	// what was asked, for the journal.
	Args map[string]any
	// Checked holds the parameters as validated: Wire for PVE, Values
	// (typed) for the policy.
	Checked schema.Validated
	// Risk is the class of this call, given its parameters.
	Risk schema.Risk
	// Input is what the policy decided on.
	Input policy.Input
	// Decision is the policy's answer, after the guard.
	Decision policy.Decision
	// Time is when the plan was built.
	Time time.Time
}

// Wire is a copy of the parameters PVE receives; the caller may add to it
// (the digest of a config edit) without changing the plan.
func (p *Plan) Wire() url.Values {
	out := make(url.Values, len(p.Checked.Wire)+1)
	for k, v := range p.Checked.Wire {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Guard is the protected-repository guard: it inspects a call, with its
// parameters as validated, before the policy decides.
type Guard interface {
	Check(ctx context.Context, ep *schema.Endpoint, vars map[string]string, values map[string]any) policy.Guard
}

// Decider decides a call for a binding (policy.Engine).
type Decider interface {
	Decide(ctx context.Context, b policy.Binding, in *policy.Input) policy.Decision
}

// Switches are the daemon-wide gates above every policy.
type Switches struct {
	// ReadOnly refuses every call that is not a read, for every key.
	ReadOnly bool
	// AllowMutations must be true for any write to happen.
	AllowMutations bool
	// PreviewWrites turns every write into a preview: it is planned and
	// decided, and answered as a dry run; nothing is sent.
	PreviewWrites bool
}

// Refusal names the daemon-wide switch that refuses a call of method, or
// is "" when the switches let it through.
func (sw Switches) Refusal(method string) string {
	if method == "GET" {
		return ""
	}
	if sw.ReadOnly {
		return "the daemon's read_only switch is on: no call that changes anything is accepted, whatever the key"
	}
	if !sw.AllowMutations {
		return "the daemon's allow_mutations switch is off: an operator must turn it on before any call may change anything"
	}
	return ""
}

// Options configure a Builder.
type Options struct {
	// Registry returns the live schema; a plan uses the registry it
	// started with throughout.
	Registry func() *schema.Registry
	// Guard inspects each call; required.
	Guard Guard
	// Policy decides; required.
	Policy Decider
	// Switches returns the daemon-wide switches; nil means none apply
	// (policy simulate shows the policy alone).
	Switches func() Switches
	// Protected, when set, says why a write's guests need a second
	// principal's approval whatever the policy decided (protected guests,
	// by VMID or tag); an error refuses the write (the guests could not be
	// told apart).
	Protected func(ctx context.Context, p *Plan) (reasons []string, err error)
	// Now is the clock (time.Now).
	Now func() time.Time
	// Resolver resolves the host names of the places outside the cluster
	// a call makes PVE fetch from (policy.Input.Outside); the system's
	// resolver when nil.
	Resolver Resolver
}

// Builder builds plans.
type Builder struct{ o Options }

// New returns a Builder.
func New(o Options) (*Builder, error) {
	switch {
	case o.Registry == nil:
		return nil, errors.New("plan: a schema registry is required")
	case o.Guard == nil:
		return nil, errors.New("plan: the protected-repository guard is required")
	case o.Policy == nil:
		return nil, errors.New("plan: a policy is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	return &Builder{o: o}, nil
}

// Stage is the step of a plan that refused a request.
type Stage string

// Stages that can refuse.
const (
	StageMatch    Stage = "match"    // no endpoint serves the method and path
	StageArgs     Stage = "args"     // a path variable is missing or given twice, differently
	StageValidate Stage = "validate" // PVE's parameter schema refuses an argument
	StageSwitch   Stage = "switch"   // a daemon-wide switch refuses the method
)

// Refusal is a request refused before its decision. Plan holds what was
// known by then (the endpoint from the match on), for the journal.
type Refusal struct {
	Stage Stage
	// Outcome is what the journal records: invalid before the switches,
	// denied by them.
	Outcome journal.Outcome
	// Field names the argument at fault, when one is.
	Field string
	Err   error
	Plan  *Plan
}

func (r *Refusal) Error() string { return r.Err.Error() }

func (r *Refusal) Unwrap() error { return r.Err }

func (b *Builder) refuse(stage Stage, field string, err error, p *Plan) *Refusal {
	out := journal.OutcomeInvalid
	if stage == StageSwitch {
		out = journal.OutcomeDenied
	}
	return &Refusal{Stage: stage, Outcome: out, Field: field, Err: err, Plan: p}
}

// Build runs a request through every step before dispatch. It returns a
// plan whatever the decision's effect, or a *Refusal.
func (b *Builder) Build(ctx context.Context, c Caller, req Request) (*Plan, error) {
	p := &Plan{Caller: c, Tool: req.Tool, Time: b.o.Now(), Args: req.Args}
	ep, vars, err := b.endpoint(req)
	if err != nil {
		return nil, b.refuse(StageMatch, "path", err, p)
	}
	p.Endpoint = ep
	args, field, err := mergeVars(ep, vars, req.Args, req.Endpoint != nil)
	if err != nil {
		return nil, b.refuse(StageArgs, field, err, p)
	}
	p.Args = args
	p.Checked, err = ep.Check(args)
	if err != nil {
		return nil, b.refuse(StageValidate, "", err, p)
	}
	p.Vars = make(map[string]string, len(ep.PathParams))
	for _, name := range ep.PathParams {
		p.Vars[name] = p.Checked.Wire.Get(name)
	}
	p.Path = ConcretePath(ep.Path, p.Vars)
	p.Risk = ep.CallRisk(p.Checked.Values)
	if b.o.Switches != nil {
		if why := b.o.Switches().Refusal(ep.Method); why != "" {
			p.Input = policy.BuildInput(ep, p.Path, p.Vars, p.Checked.Values, c.Principal, policy.Guard{}, p.Time)
			return nil, b.refuse(StageSwitch, "", errors.New(why), p)
		}
	}
	guard := b.o.Guard.Check(ctx, ep, p.Vars, p.Checked.Values)
	p.Input = policy.BuildInput(ep, p.Path, p.Vars, p.Checked.Values, c.Principal, guard, p.Time)
	if ep.Facts.ReachesOutside {
		p.Input.Outside = outside(ctx, b.o.Resolver, ep, p.Checked.Values)
	}
	p.Decision = b.o.Policy.Decide(ctx, c.Binding, &p.Input)
	if b.o.Protected != nil && ep.Method != "GET" {
		p.Decision = b.protect(ctx, p)
	}
	return p, nil
}

// protect makes a decision that lets a write to a protected guest go
// ahead (allow, confirm by the caller, dry run) a confirmation by another
// principal; a deny or break-glass stays.
func (b *Builder) protect(ctx context.Context, p *Plan) policy.Decision {
	d := p.Decision
	if d.Effect == policy.Deny || d.Effect == policy.Breakglass {
		return d
	}
	reasons, err := b.o.Protected(ctx, p)
	if err != nil {
		return policy.Decision{Effect: policy.Deny, Policy: d.Policy, Digest: d.Digest, Obligations: []policy.Obligation{},
			Reasons: []string{"whether the call's guests are protected could not be told, so no change is allowed: " + err.Error()}}
	}
	if len(reasons) == 0 {
		return d
	}
	out := d
	out.Reasons = append(slices.Clone(d.Reasons), reasons...)
	if d.Effect == policy.DryRun {
		return out
	}
	out.Effect = policy.Confirm
	out.Obligations = []policy.Obligation{{Type: "confirm", Approver: "other"}}
	for _, o := range d.Obligations {
		if o.Type != "confirm" {
			out.Obligations = append(out.Obligations, o)
		}
	}
	return out
}

// endpoint finds the endpoint of a request and its path variables as
// written (decoded); for an expanded-mode tool the variables come later,
// from the arguments.
func (b *Builder) endpoint(req Request) (*schema.Endpoint, map[string]string, error) {
	if req.Endpoint != nil {
		return req.Endpoint, nil, nil
	}
	reg := b.o.Registry()
	if reg == nil {
		return nil, nil, errors.New("no API schema is loaded")
	}
	return reg.Match(req.Method, req.Path)
}

// mergeVars puts the path variables into the arguments. A variable given in
// both must be the same value; with fromArgs (an expanded-mode tool) every
// variable must be among the arguments.
func mergeVars(ep *schema.Endpoint, vars map[string]string, args map[string]any, fromArgs bool) (map[string]any, string, error) {
	out := make(map[string]any, len(args)+len(vars))
	for k, v := range args {
		out[k] = v
	}
	if fromArgs {
		for _, name := range ep.PathParams {
			v, ok := args[name]
			if !ok || v == nil {
				return nil, name, fmt.Errorf("argument %s is required: it is part of the path %s", name, ep.Path)
			}
			if _, ok := pathText(v); !ok {
				return nil, name, fmt.Errorf("argument %s must be a string or a number: it is part of the path %s", name, ep.Path)
			}
		}
		return out, "", nil
	}
	for k, v := range vars {
		if prev, ok := out[k]; ok && prev != nil {
			text, ok := pathText(prev)
			if !ok || text != v {
				return nil, k, fmt.Errorf("parameter %s is %v in params but %q in the path; give it once", k, prev, v)
			}
		}
		out[k] = v
	}
	return out, "", nil
}

// pathText is the text of a path variable given as an argument.
func pathText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x)), true
		}
		return fmt.Sprint(x), true
	case int, int64:
		return fmt.Sprint(x), true
	case interface{ String() string }: // json.Number
		s := x.String()
		return s, s != ""
	}
	return "", false
}

// ConcretePath fills a template with variables, escaping each once (a
// volume ID's '/' becomes %2F): the one spelling of a call's path.
func ConcretePath(template string, vars map[string]string) string {
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

// FixedGuard is a guard that reports the same finding for every call:
// what a `policy simulate` case states.
func FixedGuard(g policy.Guard) Guard { return fixedGuard(g) }

type fixedGuard policy.Guard

func (g fixedGuard) Check(context.Context, *schema.Endpoint, map[string]string, map[string]any) policy.Guard {
	return policy.Guard(g)
}

// CompiledDecider decides every call with one compiled policy, whatever
// the binding (policy simulate of a policy file).
func CompiledDecider(c *policy.Compiled, timeout time.Duration) Decider {
	return compiledDecider{c, timeout}
}

type compiledDecider struct {
	c       *policy.Compiled
	timeout time.Duration
}

func (d compiledDecider) Decide(ctx context.Context, _ policy.Binding, in *policy.Input) policy.Decision {
	return d.c.Decide(ctx, in, d.timeout)
}
