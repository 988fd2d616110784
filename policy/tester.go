package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestResult is the outcome of one Rego test rule.
type TestResult struct {
	Package  string        `json:"package"`
	Name     string        `json:"name"`
	Pass     bool          `json:"pass"`
	Error    string        `json:"error,omitempty"`
	Output   string        `json:"output,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// ErrTestsFailed marks a policy whose tests did not all pass.
var ErrTestsFailed = errors.New("policy tests failed")

// DefaultTestTimeout bounds each Rego test: a policy that loops or does
// too much work fails its tests.
const DefaultTestTimeout = 5 * time.Second

// RunTests runs the test_ rules of mods (the built-in library and profiles
// are added) with the same capabilities and strictness as evaluation. It
// returns every result, and an error wrapping ErrTestsFailed when a test
// fails, errs, or when there is no test at all.
func RunTests(ctx context.Context, mods []Module, timeout time.Duration) ([]TestResult, error) {
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	builtins, err := builtinModules()
	if err != nil {
		return nil, err
	}
	all := append(builtins, mods...)
	parsed, err := parseModules(all)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
	}
	modules := make(map[string]*ast.Module, len(parsed))
	for i, m := range parsed {
		modules[all[i].Name] = m
	}
	compiler := ast.NewCompiler().
		WithCapabilities(safeCapabilities()).
		WithStrict(true).
		WithEnablePrintStatements(true)
	store := inmem.New()
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy tests: %w", err)
	}
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		SetTimeout(timeout).
		RunTests(ctx, txn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, compileMessage(err))
	}
	var out []TestResult
	var failed []string
	for r := range ch {
		tr := TestResult{Package: strings.TrimPrefix(r.Package, "data."), Name: r.Name, Pass: r.Pass(), Output: string(r.Output), Duration: r.Duration}
		if r.Error != nil {
			tr.Error = oneLine(r.Error.Error())
		} else if r.Fail {
			tr.Error = "failed"
			if r.FailedAt != nil {
				tr.Error = fmt.Sprintf("failed at %s: %s", r.FailedAt.Location, r.FailedAt)
			}
		}
		if !tr.Pass && !r.Skip {
			failed = append(failed, tr.Package+"."+tr.Name+" ("+tr.Error+")")
		}
		out = append(out, tr)
	}
	if len(failed) > 0 {
		return out, fmt.Errorf("%w: %d of %d: %s", ErrTestsFailed, len(failed), len(out), strings.Join(failed, "; "))
	}
	if len(out) == 0 {
		return out, fmt.Errorf("%w: there are no tests (rules named test_...)", ErrTestsFailed)
	}
	return out, nil
}
