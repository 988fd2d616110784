package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// defaultAPIDoc is where PVE installs its API schema.
const defaultAPIDoc = "/usr/share/pve-docs/api-viewer/apidoc.js"

func policyCommands() map[string]command {
	return map[string]command{
		"policy draft":    {"compile a Rego policy, run its tests, store it as a draft and print its digest", (*cli).policyDraft},
		"policy simulate": {"print the decision of a policy for each case of a JSON file", (*cli).policySimulate},
		"policy activate": {"activate the draft of a policy with exactly this digest", (*cli).policyActivate},
		"policy list":     {"list the built-in profiles and custom policies", (*cli).policyList},
		"policy show":     {"print the Rego source of a profile or a policy version", (*cli).policyShow},
	}
}

func (c *cli) policyStore(st stateFlags) (*policy.Store, error) {
	cfg, err := st.resolve()
	if err != nil {
		return nil, err
	}
	shared, err := c.clusterShared(cfg)
	if err != nil {
		return nil, err
	}
	return policy.NewSharedStore(cfg.StateDir, nil, shared)
}

// testFileOf returns FILE_test.rego beside FILE.rego.
func testFileOf(file string) string { return strings.TrimSuffix(file, ".rego") + "_test.rego" }

func (c *cli) policyDraft(args []string) error {
	fset := flag.NewFlagSet("policy draft", flag.ContinueOnError)
	st := addStateFlags(fset)
	id := fset.String("id", "", "policy id (default: the file name without .rego)")
	asJSON := fset.Bool("json", false, "print one JSON object")
	files, err := parse(fset, args, 1, "proxmox-mcp policy draft FILE.rego [--id ID] [--json]")
	if err != nil {
		return err
	}
	file := files[0]
	if !strings.HasSuffix(file, ".rego") || strings.HasSuffix(file, "_test.rego") {
		return usagef("policy draft takes the policy's FILE.rego (its tests are read from FILE_test.rego)")
	}
	if *id == "" {
		*id = strings.TrimSuffix(filepath.Base(file), ".rego")
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	tests, err := os.ReadFile(testFileOf(file))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	store, err := c.policyStore(st)
	if err != nil {
		return err
	}
	res, err := store.Draft(context.Background(), *id, src, tests)
	if !*asJSON {
		for _, t := range res.Tests {
			status := "PASS"
			if !t.Pass {
				status = "FAIL"
			}
			fmt.Fprintf(c.stdout, "%s %s.%s (%s)\n", status, t.Package, t.Name, t.Duration.Round(time.Microsecond))
			if t.Output != "" {
				fmt.Fprintf(c.stdout, "  %s\n", strings.ReplaceAll(strings.TrimSpace(t.Output), "\n", "\n  "))
			}
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, res)
	}
	fmt.Fprintf(c.stdout, "policy %s drafted: %d tests passed\ndigest %s\n", res.ID, len(res.Tests), res.Digest)
	fmt.Fprintf(c.stdout, "activate with: proxmox-mcp policy activate %s --digest %s\n", res.ID, res.Digest)
	return nil
}

// simCases is the JSON file policy simulate reads.
type simCases struct {
	Cases []simCase `json:"cases"`
}

type simCase struct {
	Name      string            `json:"name"`
	Principal simPrincipal      `json:"principal"`
	Method    string            `json:"method"`
	Path      string            `json:"path"`
	Params    map[string]any    `json:"params"`
	Time      string            `json:"time"`
	Guard     []policy.GuardHit `json:"guard_hits"`
	Expect    policy.Effect     `json:"expect"`
}

type simPrincipal struct {
	KeyID     string `json:"key_id"`
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Source    string `json:"source"`
	// Tailnet is what WhoIs would say: user, node, tags, capabilities.
	Tailnet *policy.TailnetIdentity `json:"tailnet"`
}

// loadPolicy compiles what simulate names: a .rego file, a built-in
// profile, or a stored policy's active version.
func loadPolicy(ctx context.Context, store *policy.Store, ref string) (*policy.Compiled, policy.Principal, error) {
	switch {
	case strings.HasSuffix(ref, ".rego"):
		src, err := os.ReadFile(ref)
		if err != nil {
			return nil, policy.Principal{}, err
		}
		id := strings.TrimSuffix(filepath.Base(ref), ".rego")
		c, err := policy.CompileCustom(ctx, id, src)
		return c, policy.Principal{Policy: id}, err
	case policy.IsProfile(ref):
		c, err := policy.CompileBuiltin(ctx, ref)
		return c, policy.Principal{Profile: ref}, err
	}
	v, err := store.Active(ref)
	if err != nil {
		return nil, policy.Principal{}, err
	}
	c, err := policy.CompileCustom(ctx, fmt.Sprintf("%s@v%d", v.ID, v.Version), v.Source)
	return c, policy.Principal{Policy: ref}, err
}

func (c *cli) policySimulate(args []string) error {
	fset := flag.NewFlagSet("policy simulate", flag.ContinueOnError)
	st := addStateFlags(fset)
	input := fset.String("input", "", "JSON file of cases: {\"cases\": [{name, principal, method, path, params, time, guard_hits, expect}]}")
	apidoc := fset.String("schema", defaultAPIDoc, "PVE apidoc.js that resolves the cases' paths")
	asJSON := fset.Bool("json", false, "print one JSON object")
	const synopsis = "proxmox-mcp policy simulate POLICY --input CASES.json [--schema APIDOC.js] [--json]"
	refs, err := parse(fset, args, 1, synopsis)
	if err != nil {
		return err
	}
	if *input == "" {
		return usagef("--input is required (usage: %s)", synopsis)
	}
	data, err := os.ReadFile(*input)
	if err != nil {
		return err
	}
	var cases simCases
	if err := json.Unmarshal(data, &cases, json.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	if len(cases.Cases) == 0 {
		return fmt.Errorf("%s: no cases", *input)
	}
	store, err := c.policyStore(st)
	if err != nil {
		return err
	}
	ctx := context.Background()
	compiled, base, err := loadPolicy(ctx, store, refs[0])
	if err != nil {
		return err
	}
	reg, err := schema.ParseFile(*apidoc)
	if err != nil {
		return fmt.Errorf("--schema: %w", err)
	}
	type result struct {
		Name     string          `json:"name"`
		Decision policy.Decision `json:"decision"`
		Expect   policy.Effect   `json:"expect,omitempty"`
		OK       bool            `json:"ok"`
	}
	var results []result
	mismatches := 0
	for i, cs := range cases.Cases {
		where := fmt.Sprintf("%s: cases[%d]", *input, i)
		if cs.Name == "" {
			cs.Name = strconv.Itoa(i)
		}
		if cs.Expect != "" && !validEffect(cs.Expect) {
			return fmt.Errorf("%s: expect %q is not allow, deny, confirm, dry_run or breakglass", where, cs.Expect)
		}
		now := time.Now()
		if cs.Time != "" {
			if now, err = time.Parse(time.RFC3339, cs.Time); err != nil {
				return fmt.Errorf("%s: time %q is not RFC 3339", where, cs.Time)
			}
		}
		p := base
		p.KeyID, p.Name, p.Transport, p.Source = cs.Principal.KeyID, cs.Principal.Name, cs.Principal.Transport, cs.Principal.Source
		if p.Transport == "" {
			p.Transport = "loopback"
		}
		p.Tailnet = cs.Principal.Tailnet
		// The case is planned like a real call (match, validation, the
		// guard's hits as the case states them, the decision), only
		// without the daemon-wide switches: what is shown is the policy.
		planner, err := plan.New(plan.Options{
			Registry: func() *schema.Registry { return reg },
			Guard:    plan.FixedGuard(policy.Guard{Evaluated: true, Hits: cs.Guard}),
			Policy:   plan.CompiledDecider(compiled, time.Second),
			Now:      func() time.Time { return now },
		})
		if err != nil {
			return err
		}
		pl, err := planner.Build(ctx, plan.Caller{Principal: p, Binding: policy.Binding{Profile: p.Profile, Policy: p.Policy}},
			plan.Request{Tool: "policy simulate", Method: cs.Method, Path: cs.Path, Args: cs.Params})
		if err != nil {
			var r *plan.Refusal
			if errors.As(err, &r) && r.Plan != nil && r.Plan.Endpoint != nil {
				return fmt.Errorf("%s: %s %s: %w", where, r.Plan.Endpoint.Method, r.Plan.Endpoint.Path, err)
			}
			return fmt.Errorf("%s: %w", where, err)
		}
		d := pl.Decision
		r := result{Name: cs.Name, Decision: d, Expect: cs.Expect, OK: cs.Expect == "" || cs.Expect == d.Effect}
		if !r.OK {
			mismatches++
		}
		results = append(results, r)
	}
	if *asJSON {
		if err := writeJSON(c, struct {
			Policy  string   `json:"policy"`
			Digest  string   `json:"digest"`
			Results []result `json:"results"`
		}{compiled.Name, compiled.Digest, results}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.stdout, "policy %s\ndigest %s\n", compiled.Name, compiled.Digest)
		tw := tabwriter.NewWriter(c.stdout, 2, 8, 2, ' ', 0)
		for _, r := range results {
			mark := "  "
			if !r.OK {
				mark = "!!"
			}
			exp := ""
			if r.Expect != "" && !r.OK {
				exp = " (expected " + string(r.Expect) + ")"
			}
			fmt.Fprintf(tw, "%s %s\t%s%s\t%s\n", mark, r.Name, r.Decision.Effect, exp, strings.Join(r.Decision.Reasons, "; "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if mismatches > 0 {
		return fmt.Errorf("%d of %d cases did not get the expected effect", mismatches, len(results))
	}
	return nil
}

func validEffect(e policy.Effect) bool {
	switch e {
	case policy.Allow, policy.Deny, policy.Confirm, policy.DryRun, policy.Breakglass:
		return true
	}
	return false
}

func (c *cli) policyActivate(args []string) error {
	fset := flag.NewFlagSet("policy activate", flag.ContinueOnError)
	st := addStateFlags(fset)
	digest := fset.String("digest", "", "the sha256 digest policy draft or simulate printed")
	asJSON := fset.Bool("json", false, "print one JSON object")
	const synopsis = "proxmox-mcp policy activate ID --digest SHA256 [--json]"
	ids, err := parse(fset, args, 1, synopsis)
	if err != nil {
		return err
	}
	if *digest == "" {
		return usagef("--digest is required (usage: %s)", synopsis)
	}
	store, err := c.policyStore(st)
	if err != nil {
		return err
	}
	v, err := store.Activate(context.Background(), ids[0], strings.TrimPrefix(*digest, "sha256:"))
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, v)
	}
	fmt.Fprintf(c.stdout, "policy %s version %d is active (digest %s)\n", ids[0], v.Version, v.Digest)
	return nil
}

func (c *cli) policyList(args []string) error {
	fset := flag.NewFlagSet("policy list", flag.ContinueOnError)
	st := addStateFlags(fset)
	asJSON := fset.Bool("json", false, "print one JSON object")
	if _, err := parse(fset, args, 0, "proxmox-mcp policy list [--json]"); err != nil {
		return err
	}
	store, err := c.policyStore(st)
	if err != nil {
		return err
	}
	custom, err := store.List()
	if err != nil {
		return err
	}
	type builtin struct {
		Name   string `json:"name"`
		Digest string `json:"digest"`
	}
	var profiles []builtin
	for _, p := range policy.Profiles() {
		src, err := policy.BuiltinSource(p)
		if err != nil {
			return err
		}
		profiles = append(profiles, builtin{p, policy.Digest(src)})
	}
	if *asJSON {
		return writeJSON(c, struct {
			Profiles []builtin        `json:"profiles"`
			Policies []policy.Summary `json:"policies"`
		}{profiles, custom})
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tACTIVE\tDIGEST\tDRAFTS")
	for _, p := range profiles {
		fmt.Fprintf(tw, "%s\tbuilt-in\t-\t%s\t-\n", p.Name, p.Digest[:12])
	}
	for _, s := range custom {
		active, digest := "-", "-"
		if s.ActiveVersion > 0 {
			active, digest = fmt.Sprintf("v%d of %d", s.ActiveVersion, s.Versions), s.Digest[:12]
		}
		fmt.Fprintf(tw, "%s\tcustom\t%s\t%s\t%d\n", s.ID, active, digest, len(s.Drafts))
	}
	return tw.Flush()
}

func (c *cli) policyShow(args []string) error {
	fset := flag.NewFlagSet("policy show", flag.ContinueOnError)
	st := addStateFlags(fset)
	version := fset.Int("version", 0, "version to show (default: the active one)")
	ids, err := parse(fset, args, 1, "proxmox-mcp policy show ID|PROFILE [--version N]")
	if err != nil {
		return err
	}
	if policy.IsProfile(ids[0]) {
		src, err := policy.BuiltinSource(ids[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "# profile %s, digest %s\n", ids[0], policy.Digest(src))
		_, err = c.stdout.Write(src)
		return err
	}
	store, err := c.policyStore(st)
	if err != nil {
		return err
	}
	v, err := store.Get(ids[0], *version)
	if err != nil {
		return err
	}
	state := "inactive"
	if v.Active {
		state = "active"
	}
	fmt.Fprintf(c.stdout, "# policy %s version %d (%s), digest %s\n", v.ID, v.Version, state, v.Digest)
	_, err = c.stdout.Write(v.Source)
	return err
}
