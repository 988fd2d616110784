package policy

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

//go:embed rego/*.rego
var builtinFS embed.FS

// Built-in profiles, in order of power.
const (
	ReadOnly = "read-only"
	Operator = "operator"
	Admin    = "admin"
	Root     = "root"
)

// Profiles returns the built-in profile names.
func Profiles() []string { return []string{ReadOnly, Operator, Admin, Root} }

// IsProfile reports whether name is a built-in profile.
func IsProfile(name string) bool { return slices.Contains(Profiles(), name) }

// Rego packages.
const (
	libPackage      = "proxmox_mcp.lib"
	profilesPackage = "proxmox_mcp.profiles"
	// CustomPackage is the package every custom policy declares.
	CustomPackage = "proxmox_mcp.policy"
)

// profilePackage maps a profile name to its Rego package.
func profilePackage(name string) string {
	return profilesPackage + "." + strings.ReplaceAll(name, "-", "_")
}

// Module is one Rego source file.
type Module struct {
	Name   string
	Source []byte
}

// Digest is the sha256 of a policy's source, lower-case hex.
func Digest(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// builtinModules returns the library and profile modules (tests excluded).
func builtinModules() ([]Module, error) {
	return readModules(func(name string) bool { return !strings.HasSuffix(name, "_test.rego") })
}

// builtinTests returns the Rego tests of the library and profiles.
func builtinTests() ([]Module, error) {
	return readModules(func(name string) bool { return strings.HasSuffix(name, "_test.rego") })
}

func readModules(keep func(string) bool) ([]Module, error) {
	entries, err := fs.ReadDir(builtinFS, "rego")
	if err != nil {
		return nil, fmt.Errorf("policy: built-in modules: %w", err)
	}
	var out []Module
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".rego") || !keep(e.Name()) {
			continue
		}
		src, err := builtinFS.ReadFile(path.Join("rego", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("policy: built-in modules: %w", err)
		}
		out = append(out, Module{Name: "builtin/" + e.Name(), Source: src})
	}
	return out, nil
}

// BuiltinSource returns the Rego source of a built-in profile.
func BuiltinSource(profile string) ([]byte, error) {
	if !IsProfile(profile) {
		return nil, fmt.Errorf("policy: %q is not a built-in profile (%s)", profile, strings.Join(Profiles(), ", "))
	}
	return builtinFS.ReadFile("rego/" + strings.ReplaceAll(profile, "-", "_") + ".rego")
}

// Compiled is a policy prepared for evaluation: compiled once, evaluated
// concurrently.
type Compiled struct {
	// Name is the profile, or id@version for a custom policy.
	Name string
	// Digest is the sha256 of the deciding module's source.
	Digest string
	// Package is the Rego package whose decision rule is queried.
	Package string
	// Tier is the PVE token tier the daemon calls with for this policy: a
	// profile's own name, or what a custom policy declares (DeclaredTier).
	Tier string

	decide rego.PreparedEvalQuery
	// host evaluates host_decision, for the root helper's host
	// operations; nil when the policy has none (it decides no host
	// operation, and DecideHost denies them).
	host *rego.PreparedEvalQuery
	// listing evaluates the visibility query on a copy of the policy
	// whose reads of unknown fields halt (nil when the policy reads the
	// input as a whole, or the copy does not compile); visible partially
	// evaluates it, prepared when first needed (the profiles never need
	// it). See visibility.go.
	listing *rego.PreparedEvalQuery
	visible *partialQuery
	// use is what the policy reads of its input.
	use *inputUse
	// parts are the input's parts that repeat from call to call.
	parts *inputParts

	groupCache
}

// partialQuery is the visibility query prepared for partial evaluation on
// first use.
type partialQuery struct {
	once sync.Once
	opts []func(*rego.Rego)
	q    rego.PreparedPartialQuery
	err  error
}

func (p *partialQuery) get(ctx context.Context) (rego.PreparedPartialQuery, error) {
	p.once.Do(func() {
		p.q, p.err = rego.New(p.opts...).PrepareForPartial(context.WithoutCancel(ctx))
		p.opts = nil
	})
	return p.q, p.err
}

// ErrCompile marks a policy that does not compile.
var ErrCompile = errors.New("policy does not compile")

// regoOptions are the options every compilation shares.
func regoOptions() []func(*rego.Rego) {
	return []func(*rego.Rego){
		rego.Capabilities(safeCapabilities()),
		rego.Strict(true),
		rego.SetRegoVersion(ast.RegoV1),
	}
}

// parseModules parses every module once.
func parseModules(mods []Module) ([]*ast.Module, error) {
	out := make([]*ast.Module, 0, len(mods))
	for _, m := range mods {
		pm, err := ast.ParseModuleWithOpts(m.Name, string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, err
		}
		if pm == nil {
			return nil, fmt.Errorf("%s is empty", m.Name)
		}
		out = append(out, pm)
	}
	return out, nil
}

// OPA's table of interned strings is process-wide and not safe to write
// while compiles read it; the input document's keys are added once, before
// anything runs.
func init() {
	ast.InternStringTerm(inputKeys()...)
}

// compile prepares the decision query of pkg over mods (which must include
// the library and profiles), the visibility queries, and what the policy
// reads of its input.
func compile(ctx context.Context, name, digest, pkg, tier string, mods []Module) (*Compiled, error) {
	parsed, err := parseModules(mods)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
	}
	query := "data." + pkg + ".decision"
	var compiler *ast.Compiler
	opts := regoOptions()
	for _, m := range parsed {
		opts = append(opts, rego.ParsedModule(m))
	}
	// A builtin error (to_number("abc")) stops the evaluation with the
	// error, which denies: without it the expression would be undefined,
	// and in a negated rule (not blocked) undefined is success, so a
	// policy could fail open. Policy tests run the same way (RunTests).
	decide, err := rego.New(append(opts, rego.Query(query), rego.StrictBuiltinErrors(true),
		rego.CompilerHook(func(c *ast.Compiler) { compiler = c }))...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
	}
	use := analyzeInput(compiler, ast.MustParseRef(query))
	host, err := prepareHost(ctx, pkg, parsed, opts)
	if err != nil {
		return nil, err
	}
	// What is not known when tools are listed (unknownAtListing): the
	// call's path, parameters, targets and time. Its risk is enumerated,
	// and the guard is taken to find nothing (a guard hit only ever turns
	// a decision into a deny or break-glass).
	unknown, err := unknownAtListing()
	if err != nil {
		return nil, err
	}
	unknownRefs := make([]*ast.Term, len(unknown))
	for i, k := range unknown {
		unknownRefs[i] = ast.NewTerm(ast.InputRootRef.Append(ast.StringTerm(k)))
	}
	vopts := regoOptions()
	var vmods []*ast.Module
	for _, m := range parsed {
		if packageOf(m) == pkg {
			m = withoutDenyDefault(m)
		}
		vmods = append(vmods, m)
		vopts = append(vopts, rego.ParsedModule(m))
	}
	// Partial evaluation does not stop at a builtin error: the expression
	// is undefined. That can only show more tools (never hide one a strict
	// evaluation allows): an evaluation without errors is the same either
	// way, and one with an error denies.
	c := &Compiled{Name: name, Digest: digest, Package: pkg, Tier: tier, decide: decide, host: host, use: use, parts: newInputParts(),
		visible: &partialQuery{opts: append(vopts, rego.Query(query+`.effect != "deny"`), rego.ParsedUnknowns(unknownRefs))}}
	if !use.whole {
		// When the copy does not compile (a rewritten reference where
		// Rego wants a reference), partial evaluation decides every case.
		if listing, err := prepareListing(ctx, pkg, vmods, unknown); err == nil {
			c.listing = &listing
		}
	}
	if c.listing == nil {
		// Partial evaluation is prepared when first needed; without the
		// copy it always is, and its errors (a decision that is not an
		// object with an effect) are this policy's compile errors.
		if _, err := c.visible.get(ctx); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
		}
	}
	return c, nil
}

// hostRule is the rule that decides the root helper's host operations.
const hostRule = "host_decision"

// prepareHost prepares data.<pkg>.host_decision when a module of pkg
// defines it, as strictly as the decision query.
func prepareHost(ctx context.Context, pkg string, parsed []*ast.Module, opts []func(*rego.Rego)) (*rego.PreparedEvalQuery, error) {
	defines := slices.ContainsFunc(parsed, func(m *ast.Module) bool {
		return packageOf(m) == pkg && slices.ContainsFunc(m.Rules, func(r *ast.Rule) bool {
			return r.Head.Name.String() == hostRule || r.Head.Ref().String() == hostRule
		})
	})
	if !defines {
		return nil, nil
	}
	q, err := rego.New(append(slices.Clone(opts), rego.Query("data."+pkg+"."+hostRule), rego.StrictBuiltinErrors(true))...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
	}
	return &q, nil
}

// DecidesHost says whether the policy decides host operations (it has a
// host_decision rule).
func (c *Compiled) DecidesHost() bool { return c.host != nil }

// withoutDenyDefault returns m without a "default decision" whose effect is
// deny. For the visibility query (effect != "deny") such a default can
// never make a tool visible, but partial evaluation keeps every rule with a
// default, so the query would always leave a residue. Removing it keeps
// the answer exact; a default of any other effect is kept, and then the
// tool is visible (an over-approximation, never a tool wrongly hidden).
func withoutDenyDefault(m *ast.Module) *ast.Module {
	out := m.Copy()
	out.Rules = slices.DeleteFunc(out.Rules, func(r *ast.Rule) bool {
		if !r.Default || r.Head.Name != "decision" || r.Head.Value == nil {
			return false
		}
		obj, ok := r.Head.Value.Value.(ast.Object)
		if !ok {
			return false
		}
		eff := obj.Get(ast.StringTerm("effect"))
		return eff != nil && eff.Value.Compare(ast.String(Deny)) == 0
	})
	return out
}

// compileMessage flattens OPA's error list into one line per error.
func compileMessage(err error) string {
	var errs ast.Errors
	if errors.As(err, &errs) {
		parts := make([]string, 0, len(errs))
		for _, e := range errs {
			parts = append(parts, e.Error())
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}

// CompileBuiltin compiles a built-in profile.
func CompileBuiltin(ctx context.Context, profile string) (*Compiled, error) {
	src, err := BuiltinSource(profile)
	if err != nil {
		return nil, err
	}
	mods, err := builtinModules()
	if err != nil {
		return nil, err
	}
	return compile(ctx, profile, Digest(src), profilePackage(profile), profile, mods)
}

// CompileCustom checks and compiles a custom policy module.
func CompileCustom(ctx context.Context, name string, src []byte) (*Compiled, error) {
	if err := checkCustom(name, src); err != nil {
		return nil, err
	}
	tier, err := DeclaredTier(name, src)
	if err != nil {
		if !errors.Is(err, ErrCompile) {
			err = fmt.Errorf("%w: %w", ErrCompile, err)
		}
		return nil, err
	}
	mods, err := builtinModules()
	if err != nil {
		return nil, err
	}
	return compile(ctx, name, Digest(src), CustomPackage, tier, append(mods, Module{Name: name, Source: src}))
}

// checkCustom parses a custom policy and checks its package and rules.
func checkCustom(name string, src []byte) error {
	mod, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
	}
	if mod == nil {
		return fmt.Errorf("%w: %s is empty", ErrCompile, name)
	}
	if pkg := packageOf(mod); pkg != CustomPackage {
		return fmt.Errorf("%w: %s declares package %s; a custom policy is package %s", ErrCompile, name, pkg, CustomPackage)
	}
	if !slices.ContainsFunc(mod.Rules, func(r *ast.Rule) bool { return r.Head.Name == "decision" || r.Head.Ref().String() == "decision" }) {
		return fmt.Errorf("%w: %s does not define decision (an object {effect, reasons, obligations})", ErrCompile, name)
	}
	return nil
}

func packageOf(m *ast.Module) string {
	return strings.TrimPrefix(m.Package.Path.String(), "data.")
}
