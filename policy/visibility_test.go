package policy

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// byPartialEvaluationOnly is the reference visibility: every endpoint and
// risk partially evaluated on the whole principal, no classes, no
// evaluation shortcut (how visibility was computed before the classes).
func byPartialEvaluationOnly(t *testing.T, c *Compiled, reg *schema.Registry, p Principal) []string {
	t.Helper()
	var out []string
	for _, ep := range reg.Endpoints() {
		for _, risk := range callRisks(ep) {
			in := BuildInput(ep, "", nil, nil, p, Guard{Evaluated: true}, time.Time{})
			in.Risk = risk
			full, err := in.Value()
			if err != nil {
				t.Fatal(err)
			}
			known, err := caseValues(ep, risk)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"principal", "guard"} {
				known.Insert(ast.StringTerm(k), full.(ast.Object).Get(ast.StringTerm(k)))
			}
			partial, err := c.visible.get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			pq, err := partial.Partial(context.Background(), rego.EvalParsedInput(known))
			if err != nil {
				t.Fatal(err)
			}
			if len(pq.Queries) > 0 {
				out = append(out, ep.Tool)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// allowedBySample lists the tools with a sample call (golden_test's
// sampleCall, with and without each risk-raising parameter) that p's
// decision does not deny.
func allowedBySample(c *Compiled, reg *schema.Registry, p Principal) map[string]bool {
	ctx := context.Background()
	out := map[string]bool{}
	for _, ep := range reg.Endpoints() {
		whens := []string{""}
		for _, rc := range ep.RiskConditions() {
			whens = append(whens, rc.Param)
		}
		for _, when := range whens {
			concrete, vars, args := sampleCall(ep, when)
			in := BuildInput(ep, concrete, vars, args, p, Guard{Evaluated: true}, witnessTime())
			if c.Decide(ctx, &in, time.Second).Effect != Deny {
				out[ep.Tool] = true
			}
		}
	}
	return out
}

// adversarialPolicies read the input in every way the classes must see
// through.
var adversarialPolicies = map[string]string{
	"path-prefix": header + `decision := lib.allow("nodes") if {
	startswith(input.path, "/nodes/{node}/qemu")
	input.method == "GET"
}
`,
	"path-set": header + `decision := lib.allow("two") if input.path in {"/version", "/cluster/resources"}
`,
	"input-whole": header + `decision := lib.allow("get") if {
	x := input
	x.method == "GET"
	x.principal.name == "alice"
}
`,
	"imported-principal": "package proxmox_mcp.policy\n\nimport data.proxmox_mcp.lib\nimport input.principal as who\n\n" + `decision := lib.allow("alice reads") if {
	who.name == "alice"
	input.risk == "read"
}
`,
	"principal-dynamic": header + `decision := lib.allow("any field says alice") if {
	some k, v in input.principal
	v == "alice"
	k != "policy"
	input.risk != "destructive"
}
`,
	"negated-params": header + `decision := lib.allow("unforced writes") if {
	input.risk == "write"
	not input.params.force
}
`,
	"with-input": header + `reads if input.method == "GET"

decision := lib.allow("as if read") if {
	reads with input.method as "GET"
	input.path == "/nodes"
}
`,
	"endpoint-risk": header + `decision := lib.allow("read-only endpoints") if input.endpoint.risk == "read"
`,
	"tool-regex": header + `decision := lib.allow("lxc") if regex.match("_lxc_", input.tool)
`,
	"targets": header + `decision := lib.allow("guest 100") if {
	input.risk != "read"
	input.targets.vmids == [100]
}
`,
	"negated-builtin-error": header + `odd if to_number(input.principal.name) > 1

decision := lib.allow("not odd") if {
	input.risk == "read"
	not odd
}
`,
	"else-chain": header + `decision := lib.deny("no") if {
	input.method == "DELETE"
} else := lib.allow("yes") if {
	input.params.ok == true
} else := lib.deny("default")
`,
	"time": header + `decision := lib.allow("weekends") if {
	input.time.weekday == "Saturday"
	input.method == "POST"
}
`,
	"tailnet-tag": header + `decision := lib.allow("ci") if {
	"tag:ci" in input.principal.tailnet.tags
	input.risk == "read"
}
`,
}

func testPrincipals() []Principal {
	return []Principal{
		{KeyID: "abcdefghijklmnop", Name: "alice", Transport: "loopback", Source: "127.0.0.1"},
		{KeyID: "qrstuvwxyzabcdef", Name: "bob", Transport: "lan", Source: "10.0.0.5"},
		{KeyID: "tailnet000000000", Name: "3", Transport: "tailnet", Source: "100.64.0.2",
			Tailnet: &TailnetIdentity{User: "alice@example.com", Node: "laptop", Tags: []string{"tag:ci"}}},
	}
}

// The classes, the evaluation on what is known and the witness call never
// hide a tool that a call is allowed (every sample call that is not
// denied has a visible tool), never show one that partial evaluation of
// each endpoint proves hidden, and, for the built-in profiles, give
// exactly its answer.
func TestVisibilityIsSoundAndNoCoarserThanPartialEvaluation(t *testing.T) {
	if testing.Short() || raceEnabled {
		// Sequential work (the subtests share nothing mutable); under the
		// race detector it takes minutes and checks no more.
		t.Skip("partially evaluates every endpoint of PVE 9.1 for many policies; run without -short and -race")
	}
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	e, err := NewEngine(ctx, nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]*Compiled{}
	for _, prof := range Profiles() {
		policies[prof] = mustProfile(t, e, prof)
	}
	examples, err := os.ReadDir("examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range examples {
		name := f.Name()
		if !strings.HasSuffix(name, ".rego") || strings.HasSuffix(name, "_test.rego") {
			continue
		}
		src, err := os.ReadFile("examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := CompileCustom(ctx, name, src)
		if err != nil {
			t.Fatal(err)
		}
		policies["example "+name] = c
	}
	for name, src := range adversarialPolicies {
		c, err := CompileCustom(ctx, name, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		policies[name] = c
	}
	lc, err := newListingCases(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(policies) {
		c := policies[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The reference is computed once per class of principal; the
			// principals of a class must get one answer.
			refs := map[string][]string{}
			answers := map[string][]string{}
			for _, p := range testPrincipals() {
				if IsProfile(name) {
					p.Profile = name
				} else {
					p.Policy = name
				}
				principal, class, err := c.principalClass(p)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := c.visibleTools(ctx, topdown.NewCancel(), lc, principal)
				if err != nil {
					t.Fatal(err)
				}
				if prev, ok := answers[class]; ok && !slices.Equal(prev, got) {
					t.Errorf("%s: %d tools, another principal of its class %d", p.Name, len(got), len(prev))
				}
				answers[class] = got
				ref, ok := refs[class]
				if !ok {
					ref = byPartialEvaluationOnly(t, c, reg, p)
					refs[class] = ref
				}
				for tool := range allowedBySample(c, reg, p) {
					if !slices.Contains(got, tool) {
						t.Errorf("%s: %s is hidden, but a sample call of it is allowed", p.Name, tool)
					}
				}
				for _, tool := range got {
					if !slices.Contains(ref, tool) {
						t.Errorf("%s: %s is shown, but partial evaluation proves every call of it denied", p.Name, tool)
					}
				}
				if IsProfile(name) && !slices.Equal(got, ref) {
					t.Errorf("%d tools, partial evaluation %d: a built-in profile's visibility must be exact", len(got), len(ref))
				}
			}
		})
	}
}
