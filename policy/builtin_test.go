package policy

import (
	"context"
	"testing"
)

// The Rego tests beside the built-in profiles pass.
func TestBuiltinRegoTests(t *testing.T) {
	tests, err := builtinTests()
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 4 {
		t.Fatalf("%d built-in test modules, want one per profile", len(tests))
	}
	results, err := RunTests(context.Background(), tests, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Logf("%s.%s: pass=%v %s", r.Package, r.Name, r.Pass, r.Output)
	}
}
