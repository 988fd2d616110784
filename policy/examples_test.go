package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The examples of docs/policy.md compile, pass their own tests, and are
// visible only where they should be.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("examples/*.rego")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.rego") {
			continue
		}
		n++
		id := strings.TrimSuffix(filepath.Base(f), ".rego")
		t.Run(id, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tests, err := os.ReadFile(strings.TrimSuffix(f, ".rego") + "_test.rego")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Check(context.Background(), id, src, tests)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tests) < 2 {
				t.Errorf("%d tests, want a few", len(res.Tests))
			}
			if res.Digest != Digest(src) {
				t.Errorf("digest %s", res.Digest)
			}
		})
	}
	if n != 8 {
		t.Errorf("%d examples, want the 8 of docs/policy.md", n)
	}
}
