package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/types"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Tool visibility: which tools of a registry some call by a principal
// could get a decision other than deny.
//
// What is known when tools are listed is the principal, the endpoint (tool,
// method, path template, facts) and the risk class of the call, which is
// enumerated; the guard is taken to find nothing (a guard hit only ever
// turns a decision into a deny or break-glass). Everything else in the
// input (the call's concrete path, parameters, targets, time, and any
// field added later) is unknown.
//
// Cases (an endpoint with one of its risk classes) that the policy cannot
// tell apart (inputUse) form a class, decided once by visibleCase: by an
// evaluation on what is known, by a witness call, or by partial
// evaluation; each step is exact or over-approximate, never hiding a tool
// some call could be allowed. The built-in profiles compare input.path and
// input.method with constants and read nothing of the principal: the 9.1
// schema's 657 cases fall into 3 to 40 classes, none of them needing
// partial evaluation.

// listingKeys are the input's top-level keys known when tools are listed.
func listingKeys() []string {
	return []string{"principal", "tool", "method", "path", "risk", "endpoint", "guard"}
}

// caseKeys are the listing keys that differ from case to case.
func caseKeys() []string { return []string{"tool", "method", "path", "risk", "endpoint"} }

// unknownAtListing returns the input's top-level keys that are not known
// when tools are listed: every key of the input document but listingKeys.
func unknownAtListing() ([]string, error) {
	v, err := (&Input{}).Value()
	if err != nil {
		return nil, fmt.Errorf("policy: the input's keys: %w", err)
	}
	var out []string
	for _, k := range v.(ast.Object).Keys() {
		if s, ok := k.Value.(ast.String); ok && !slices.Contains(listingKeys(), string(s)) {
			out = append(out, string(s))
		}
	}
	return out, nil
}

// unknownBuiltin is what the evaluation copy of a policy calls where the
// policy reads an unknown field: it halts the evaluation.
const unknownBuiltin = "proxmox_mcp_visibility.unknown"

var errReadsUnknown = errors.New("the decision reads a part of the call that is unknown when tools are listed")

func unknownFunction() func(*rego.Rego) {
	return rego.Function1(&rego.Function{Name: unknownBuiltin, Decl: types.NewFunction(types.Args(types.S), types.A)},
		func(_ rego.BuiltinContext, _ *ast.Term) (*ast.Term, error) {
			return nil, rego.NewHaltError(errReadsUnknown)
		})
}

// haltOnUnknown is a compiler stage, run once references are resolved (so
// imports of input are expanded), that replaces every reference to an
// unknown field of the input with a call of unknownBuiltin.
func haltOnUnknown(unknown []string) ast.CompilerStageDefinition {
	op := ast.RefTerm(ast.VarTerm("proxmox_mcp_visibility"), ast.StringTerm("unknown"))
	field := func(v ast.Value) (string, bool) {
		ref, ok := v.(ast.Ref)
		if !ok || len(ref) < 2 || !ref.HasPrefix(ast.InputRootRef) {
			return "", false
		}
		s, ok := ref[1].Value.(ast.String)
		return string(s), ok && slices.Contains(unknown, string(s))
	}
	return ast.CompilerStageDefinition{
		Name:       "HaltOnUnknownInput",
		MetricName: "compile_stage_halt_on_unknown_input",
		Stage: func(c *ast.Compiler) *ast.Error {
			// ast.Transform hands over the values of terms.
			t := ast.NewGenericTransformer(func(x any) (any, error) {
				switch x := x.(type) {
				case *ast.Expr:
					// An expression that is only the reference
					// (input.params.force) becomes a call expression.
					if t, ok := x.Terms.(*ast.Term); ok {
						if f, ok := field(t.Value); ok {
							x.Terms = []*ast.Term{op, ast.StringTerm(f)}
						}
					}
				case ast.Ref:
					if f, ok := field(x); ok {
						return ast.Call{op, ast.StringTerm(f)}, nil
					}
				}
				return x, nil
			})
			for _, name := range sortedKeys(c.Modules) {
				for _, r := range c.Modules[name].Rules {
					if _, err := ast.Transform(t, r); err != nil {
						return ast.NewError(ast.CompileErr, r.Location, "%v", err)
					}
				}
			}
			return nil
		},
	}
}

// prepareListing prepares the evaluation copy of the policy: the decision
// query over modules in which reads of unknown fields halt. It is not
// strict (the policy itself compiled strictly): the rewriting may leave an
// import or a variable unused.
func prepareListing(ctx context.Context, pkg string, parsed []*ast.Module, unknown []string) (rego.PreparedEvalQuery, error) {
	opts := []func(*rego.Rego){
		rego.Capabilities(safeCapabilities()),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Query("data." + pkg + `.decision.effect != "deny"`),
		unknownFunction(),
		rego.CompilerHook(func(c *ast.Compiler) { c.WithStageAfterID(ast.StageResolveRefs, haltOnUnknown(unknown)) }),
	}
	for _, m := range parsed {
		opts = append(opts, rego.ParsedModule(m))
	}
	return rego.New(opts...).PrepareForEval(ctx)
}

// listingCase is one way an endpoint can be called as far as listing
// knows: the endpoint and the call's risk class.
type listingCase struct {
	ep       int // index into listingCases.tools
	endpoint *schema.Endpoint
	risk     schema.Risk
	vals     ast.Object  // the case keys' values
	keys     []*ast.Term // the same, in the order of caseKeys (nil: absent)
}

// listingCases are the cases of one registry, shared by every policy.
type listingCases struct {
	registry string // Registry.SHA256
	tools    []string
	cases    []listingCase
}

// newListingCases builds the cases of reg with the input's own encoding of
// endpoints (Input.Value), so that listing sees what a call would.
func newListingCases(reg *schema.Registry) (*listingCases, error) {
	eps := reg.Endpoints()
	lc := &listingCases{registry: reg.SHA256(), tools: make([]string, len(eps))}
	keys := caseKeys()
	for i, ep := range eps {
		lc.tools[i] = ep.Tool
		risks := callRisks(ep)
		obj, err := caseInput(ep, risks[0], time.Time{})
		if err != nil {
			return nil, err
		}
		for _, risk := range risks {
			vals := ast.NewObject()
			cs := listingCase{ep: i, endpoint: ep, risk: risk, vals: vals, keys: make([]*ast.Term, len(keys))}
			for j, k := range keys {
				kt := ast.InternedTerm(k)
				v := obj.Get(kt)
				if k == "risk" {
					v = ast.InternedTerm(risk.String())
				}
				if v != nil {
					vals.Insert(kt, v)
				}
				cs.keys[j] = v
			}
			lc.cases = append(lc.cases, cs)
		}
	}
	return lc, nil
}

// caseInput is the input of a call of ep with risk and nothing else: no
// parameters, no path values, no targets, at time t.
func caseInput(ep *schema.Endpoint, risk schema.Risk, t time.Time) (ast.Object, error) {
	in := BuildInput(ep, "", nil, nil, Principal{}, Guard{Evaluated: true}, t)
	in.Risk = risk
	full, err := in.Value()
	if err != nil {
		return nil, fmt.Errorf("policy: input of %s: %w", ep.Tool, err)
	}
	return full.(ast.Object), nil
}

// caseValues are the case keys of a call of ep with risk.
func caseValues(ep *schema.Endpoint, risk schema.Risk) (ast.Object, error) {
	obj, err := caseInput(ep, risk, time.Time{})
	if err != nil {
		return nil, err
	}
	vals := ast.NewObject()
	for _, k := range caseKeys() {
		if v := obj.Get(ast.InternedTerm(k)); v != nil {
			vals.Insert(ast.InternedTerm(k), v)
		}
	}
	return vals, nil
}

// caseGroups partitions a registry's cases into classes a policy cannot
// tell apart.
type caseGroups struct {
	registry string
	first    []int // class → its first case
	of       []int // case → class
}

// groupsFor returns the classes of lc's cases for c, computed once per
// registry.
func (c *Compiled) groupsFor(lc *listingCases) *caseGroups {
	c.groupMu.Lock()
	g, ok := c.groups.get(lc.registry)
	c.groupMu.Unlock()
	if ok {
		return g
	}
	g = &caseGroups{registry: lc.registry, of: make([]int, len(lc.cases))}
	index := map[string]int{}
	keys := caseKeys()
	uses := make([]*inputUse, len(keys))
	for i, k := range keys {
		uses[i] = c.use.get(k)
	}
	var b strings.Builder
	for i, cs := range lc.cases {
		b.Reset()
		for j, u := range uses {
			u.writeClass(&b, cs.keys[j])
			b.WriteByte('|')
		}
		key := b.String()
		gi, ok := index[key]
		if !ok {
			gi = len(g.first)
			index[key] = gi
			g.first = append(g.first, i)
		}
		g.of[i] = gi
	}
	c.groupMu.Lock()
	c.groups.put(lc.registry, g)
	c.groupMu.Unlock()
	return g
}

// principalClass returns the part of p the policy reads (as the input's
// principal) and its class key: principals with equal keys get equal
// decisions for every call.
func (c *Compiled) principalClass(p Principal) (*ast.Term, string, error) {
	u := c.use.get("principal")
	if u == nil {
		return ast.NewTerm(ast.NewObject()), "", nil
	}
	pv, err := p.value()
	if err != nil {
		return nil, "", err
	}
	v := ast.NewTerm(pv)
	var b strings.Builder
	u.writeClass(&b, v)
	m := u.mask(v)
	if m == nil {
		m = ast.NewTerm(ast.NewObject())
	}
	return m, b.String(), nil
}

// visibilityCounts says how the classes of one computation were decided.
type visibilityCounts struct {
	classes, evaluated, witnessed, partial int
}

func (n visibilityCounts) decided() int { return n.evaluated + n.witnessed + n.partial }

// visibleTools decides every class of lc's cases for the principal (as
// principalClass returned it) and returns the visible tools, sorted.
// cancel stops the evaluation in progress.
func (c *Compiled) visibleTools(ctx context.Context, cancel topdown.Cancel, lc *listingCases, principal *ast.Term) ([]string, visibilityCounts, error) {
	g := c.groupsFor(lc)
	n := visibilityCounts{classes: len(g.first)}
	visible := make([]bool, len(g.first))
	for gi, ci := range g.first {
		cs := &lc.cases[ci]
		ok, err := c.visibleCase(ctx, cancel, cs.endpoint, cs.risk, cs.vals, principal, &n)
		if err != nil {
			return nil, n, fmt.Errorf("policy %s: visibility of %s: %w", c.Name, cs.endpoint.Tool, err)
		}
		visible[gi] = ok
	}
	shown := make([]bool, len(lc.tools))
	for ci, cs := range lc.cases {
		if visible[g.of[ci]] {
			shown[cs.ep] = true
		}
	}
	var tools []string
	for i, ok := range shown {
		if ok {
			tools = append(tools, lc.tools[i])
		}
	}
	slices.Sort(tools)
	return tools, n, nil
}

// witnessTime is the time of the call that visibleCase tries when the
// decision depends on what is unknown: a Wednesday at noon, inside any
// working hours.
func witnessTime() time.Time { return time.Date(2026, time.March, 11, 12, 0, 0, 0, time.UTC) }

// visibleCase decides one case (vals: its case keys) in three steps:
//
//  1. The halting copy evaluates the decision on what is known. When it
//     completes, nothing unknown was read and its answer is exact.
//  2. Otherwise the decision of one concrete call is evaluated: no
//     parameters, path values or targets, at witnessTime. If it is not
//     deny, that call is a witness and the tool is visible.
//  3. Otherwise partial evaluation proves the tool hidden, or leaves a
//     query that can hold and shows it.
//
// Steps 1 and 3 can only hide a tool no call could use, and step 2 shows
// one that some call can; every answer is exact or over-approximate.
func (c *Compiled) visibleCase(ctx context.Context, cancel topdown.Cancel, ep *schema.Endpoint, risk schema.Risk, vals ast.Object, principal *ast.Term, n *visibilityCounts) (bool, error) {
	// The guard of a listed case has run and found nothing.
	in := ast.NewObject(
		ast.Item(ast.InternedTerm("principal"), principal),
		ast.Item(ast.InternedTerm("guard"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("evaluated"), ast.InternedTerm(true)),
			ast.Item(ast.InternedTerm("hits"), ast.ArrayTerm()),
		)),
	)
	vals.Foreach(func(k, v *ast.Term) { in.Insert(k, v) })
	if c.listing != nil {
		rs, err := c.listing.Eval(ctx, rego.EvalParsedInput(in), rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()))
		if err == nil {
			n.evaluated++
			return rs.Allowed(), nil
		}
		if cancel.Cancelled() {
			return false, err
		}
		// It read an unknown field, or failed (a conflict, a builtin
		// error): the next steps decide.
	}
	if ok, err := c.witness(ctx, cancel, ep, risk, principal); err != nil || ok {
		if err == nil {
			n.witnessed++
		}
		return ok, err
	}
	partial, err := c.visible.get(ctx)
	if err != nil {
		return false, fmt.Errorf("the partial evaluation query does not compile: %w", err)
	}
	pq, err := partial.Partial(ctx, rego.EvalParsedInput(in), rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()))
	if err != nil {
		return false, err
	}
	n.partial++
	return len(pq.Queries) > 0, nil
}

// witness reports whether the decision of a call of ep with risk by the
// principal, with nothing else (no parameters, path values, targets), at
// witnessTime, is not deny. An evaluation error is no witness; only a
// cancellation is an error.
func (c *Compiled) witness(ctx context.Context, cancel topdown.Cancel, ep *schema.Endpoint, risk schema.Risk, principal *ast.Term) (bool, error) {
	in, err := caseInput(ep, risk, witnessTime())
	if err != nil {
		return false, err
	}
	in.Insert(ast.InternedTerm("principal"), principal)
	rs, err := c.decide.Eval(ctx, rego.EvalParsedInput(in), rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()))
	if err != nil {
		if cancel.Cancelled() {
			return false, err
		}
		return false, nil
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return false, nil
	}
	d, ok := rs[0].Expressions[0].Value.(map[string]any)
	effect, _ := d["effect"].(string)
	return ok && effect != "" && effect != string(Deny), nil
}

// Visible reports whether some call of ep by p could get a decision other
// than deny (see the comment at the top of visibility.go). A visible tool
// may still be denied for a given call; a tool that is not visible is
// denied for every call. Engine.VisibleTools decides a whole registry,
// bounded in time and cached; Visible is bounded by ctx only.
func (c *Compiled) Visible(ctx context.Context, ep *schema.Endpoint, p Principal) (bool, error) {
	principal, _, err := c.principalClass(p)
	if err != nil {
		return false, err
	}
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	var n visibilityCounts
	for _, risk := range callRisks(ep) {
		vals, err := caseValues(ep, risk)
		if err != nil {
			return false, err
		}
		ok, err := c.visibleCase(ctx, cancel, ep, risk, vals, principal, &n)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return false, fmt.Errorf("policy %s: visibility of %s: %w", c.Name, ep.Tool, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// groupCache is embedded in Compiled: the classes of the cases of the
// last two registries listed (while the schema is swapped, requests in
// flight finish on the old registry).
type groupCache struct {
	groupMu sync.Mutex
	groups  lastTwo[*caseGroups] // by Registry.SHA256
}
