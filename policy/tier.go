package policy

import (
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Tiers are the PVE token tiers a policy can name, least privileged first.
var tierOrder = []string{ReadOnly, Operator, Admin, Root}

// DeclaredTier reads the PVE token tier a custom policy declares with a
// constant rule in its package:
//
//	tier := "operator"
//
// The tier is part of the policy text, so it is covered by the digest that
// activation checks. A policy that declares none runs with the read-only
// token: PVE's own permission check then refuses any change, whatever the
// policy allows.
func DeclaredTier(name string, src []byte) (string, error) {
	mod, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrCompile, err)
	}
	tier := ""
	for _, r := range mod.Rules {
		if r.Head.Name.String() != "tier" && r.Head.Ref().String() != "tier" {
			continue
		}
		s, ok := r.Head.Value.Value.(ast.String)
		if !ok || !r.Body.Equal(ast.NewBody(ast.NewExpr(ast.BooleanTerm(true)))) || r.Head.Args != nil || r.Else != nil {
			return "", fmt.Errorf("policy %s: tier must be a constant string (tier := \"operator\")", name)
		}
		if tier != "" && tier != string(s) {
			return "", fmt.Errorf("policy %s: tier is declared twice", name)
		}
		tier = string(s)
	}
	if tier == "" {
		return ReadOnly, nil
	}
	if !slices.Contains(tierOrder, tier) {
		return "", fmt.Errorf("policy %s: tier %q is not read-only, operator, admin or root", name, tier)
	}
	return tier, nil
}
