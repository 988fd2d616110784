package policy

import (
	"strings"
	"testing"
)

func TestDeclaredTier(t *testing.T) {
	const head = "package proxmox_mcp.policy\n\ndefault decision := {\"effect\": \"deny\", \"reasons\": [\"x\"], \"obligations\": []}\n"
	for _, tc := range []struct{ body, want, err string }{
		{"", ReadOnly, ""},
		{`tier := "operator"`, Operator, ""},
		{`tier := "root"`, Root, ""},
		{`tier := "superuser"`, "", `tier "superuser" is not`},
		{`tier := input.tier`, "", "must be a constant string"},
		{`tier := 3`, "", "must be a constant string"},
		{"tier := \"admin\" if input.method == \"GET\"", "", "must be a constant string"},
		{"this is not rego", "", "compile"},
	} {
		got, err := DeclaredTier("p", []byte(head+tc.body+"\n"))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want error %q", tc.body, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.body, got, err, tc.want)
		}
	}
}
