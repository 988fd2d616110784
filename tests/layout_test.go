package tests

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

type goPackage struct {
	ImportPath string
	Doc        string
	Deps       []string
	Imports    []string
}

// listPackages runs go list over the module.
func listPackages(t *testing.T, patterns ...string) []goPackage {
	t.Helper()
	args := append([]string{"list", "-json=ImportPath,Doc,Deps,Imports"}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []goPackage
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

const module = "github.com/proxmox-mcp/proxmox-mcp"

// The pure packages import no network code, directly or indirectly
// (DESIGN.md: schema, policy and keys import no network code; config
// neither). One exception is walked around, not ignored: OPA links its
// http.send and net.lookup_ip_addr builtins into every embedding, so the
// walk does not descend into OPA's packages; the policy package removes
// those builtins from the capabilities every policy compiles with, and its
// tests prove that a policy using them does not compile.
func TestPurePackagesImportNoNetworkCode(t *testing.T) {
	banned := []string{"net", "net/http", "net/rpc", "net/smtp", "crypto/tls", "os/exec", "tailscale.com"}
	pure := []string{module + "/schema", module + "/policy", module + "/keys", module + "/config"}
	walkedAround := "github.com/open-policy-agent/opa/"
	imports := map[string][]string{}
	for _, p := range listPackages(t, "-deps", "../...") {
		imports[p.ImportPath] = p.Imports
	}
	isBanned := func(dep string) bool {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, b+"/") && b != "net" {
				return true
			}
		}
		return false
	}
	for _, root := range pure {
		if _, ok := imports[root]; !ok {
			continue
		}
		seen := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, dep := range imports[p] {
				if _, ok := seen[dep]; ok || strings.HasPrefix(dep, walkedAround) {
					continue
				}
				seen[dep] = p
				if isBanned(dep) {
					t.Errorf("%s depends on %s (through %s)", root, dep, p)
					continue
				}
				queue = append(queue, dep)
			}
		}
	}
}

// Dependencies point one way: cmd → daemon → {tools, transport,
// installer} → {plan, changes, breakglass} → {policy, keys, pve, journal}
// → schema → leaf packages. schema is the floor of its group: the
// simulator and the policies are built on it; plan, the one call plan,
// sits under everything that builds a call, changes, the change
// contract's engines (reconcile, undo), beside it, and breakglass too:
// the guard and the break-glass protocol, whose steps the tools and the
// root helper take.
func TestDependencyDirection(t *testing.T) {
	layer := map[string]int{
		"atomicfile": 0,
		"schema":     1, "config": 1,
		"policy": 2, "keys": 2, "pve": 2, "pki": 2, "systemd": 2, "journal": 2,
		"plan": 3, "changes": 3, "metrics": 3, "cluster": 3, "breakglass": 3,
		"tools": 4, "transport": 4, "installer": 4,
		"daemon": 5,
		"cmd":    6,
	}
	layerOf := func(path string) (int, bool) {
		rel := strings.TrimPrefix(path, module+"/")
		if rel == path {
			return 0, false
		}
		top, _, _ := strings.Cut(rel, "/")
		l, ok := layer[top]
		return l, ok
	}
	for _, p := range listPackages(t, "../...") {
		from, ok := layerOf(p.ImportPath)
		if !ok || strings.HasSuffix(p.ImportPath, "/tests") {
			continue
		}
		for _, imp := range p.Imports {
			to, ok := layerOf(imp)
			if !ok {
				continue
			}
			if to >= from && topLevel(imp) != topLevel(p.ImportPath) {
				t.Errorf("%s (layer %d) imports %s (layer %d): dependencies must point down", p.ImportPath, from, imp, to)
			}
		}
	}
}

// topLevel is the module's top-level directory a package lives in.
func topLevel(path string) string {
	top, _, _ := strings.Cut(strings.TrimPrefix(path, module+"/"), "/")
	return top
}

// Every package says what it owns.
func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t, "../...") {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment", p.ImportPath)
		}
	}
}
