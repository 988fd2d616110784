package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

const header = "package proxmox_mcp.policy\n\nimport data.proxmox_mcp.lib\n\n"

const allowAll = header + `decision := lib.allow("all") if input.method != ""` + "\n"

const allowAllTests = "package proxmox_mcp.policy_test\n\nimport data.proxmox_mcp.policy\n\ntest_allows if policy.decision.effect == \"allow\" with input as {\"method\": \"GET\"}\n"

func call(method, path string, risk schema.Risk) *Input {
	return &Input{Principal: Principal{KeyID: "k", Transport: "loopback"}, Method: method, Path: path, Risk: risk,
		Guard: Guard{Evaluated: true}, Time: time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC)}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"http.send", header + `decision := lib.allow("x") if http.send({"method": "get", "url": "http://x"}).status_code == 200` + "\n", "undefined function http.send"},
		{"net.lookup_ip_addr", header + `decision := lib.allow("x") if count(net.lookup_ip_addr("example.com")) > 0` + "\n", "undefined function net.lookup_ip_addr"},
		{"opa.runtime", header + `decision := lib.allow("x") if opa.runtime().env.HOME` + "\n", "undefined function opa.runtime"},
		{"time.now_ns", header + `decision := lib.allow("x") if time.now_ns() > 0` + "\n", "undefined function time.now_ns"},
		{"syntax", header + `decision := {` + "\n", "rego_parse_error"},
		{"rego v0 syntax", "package proxmox_mcp.policy\n\ndecision = {\"effect\": \"allow\"} { true }\n", "rego_parse_error"},
		{"strict: unused import", "package proxmox_mcp.policy\n\nimport data.proxmox_mcp.lib\nimport data.proxmox_mcp.profiles.root\n\n" + `decision := lib.allow("x")` + "\n", "import data.proxmox_mcp.profiles.root unused"},
		{"strict: unused variable", header + `decision := lib.allow("x") if { y := 1; input.method != "" }` + "\n", "assigned var y unused"},
		{"recursion", header + "a if b\nb if a\n" + `decision := lib.allow("x") if a` + "\n", "rego_recursion_error"},
		{"wrong package", "package evil\n\ndecision := 1\n", "declares package evil; a custom policy is package proxmox_mcp.policy"},
		{"no decision", header + `allow if lib.guard_hit` + "\n", "does not define decision"},
		{"empty", "", "rego_parse_error"},
		{"decision not an object", "package proxmox_mcp.policy\n\ndecision := \"allow\"\n", "rego_type_error"},
		{"decision without effect", "package proxmox_mcp.policy\n\ndecision := {\"reasons\": []}\n", "rego_type_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileCustom(context.Background(), "bad.rego", []byte(tt.src))
			if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CompileCustom: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRemovedBuiltinsAreGone(t *testing.T) {
	caps := safeCapabilities()
	for _, b := range caps.Builtins {
		for _, removed := range RemovedBuiltins() {
			if b.Name == removed {
				t.Errorf("%s is still in the capabilities", removed)
			}
		}
	}
	if caps.AllowNet == nil || len(caps.AllowNet) != 0 {
		t.Errorf("AllowNet = %v, want empty (no host)", caps.AllowNet)
	}
}

// Anything but a well-formed decision denies.
func TestDecideFailsClosed(t *testing.T) {
	ctx := context.Background()
	tests := []struct{ name, body, want string }{
		{"undefined", `decision := lib.allow("x") if input.method == "PATCH"`, "gave no decision"},
		{"bad effect", `decision := {"effect": "permit", "reasons": [], "obligations": []}`, `decision.effect "permit" is not one of`},
		{"unknown field", `decision := {"effect": "allow", "because": 1}`, "unknown field"},
		{"reasons not strings", `decision := {"effect": "allow", "reasons": [1]}`, "array of strings"},
		{"unknown obligation", `decision := {"effect": "allow", "obligations": [{"type": "email_ceo"}]}`, `obligation type "email_ceo" is not known`},
		{"confirm obligation on allow", `decision := {"effect": "allow", "obligations": [{"type": "confirm"}]}`, "a confirm obligation needs effect confirm"},
		{"bad approver", `decision := {"effect": "confirm", "obligations": [{"type": "confirm", "approver": "nobody"}]}`, `approver "nobody"`},
		{"conflict", "decision := lib.allow(\"a\") if input.method\ndecision := lib.deny(\"b\") if input.method", "failed"},
		{"builtin error", `decision := lib.allow(x) if x := to_number(input.method)`, `eval_builtin_error: to_number: strconv.ParseFloat: parsing "GET"`},
		{"slow", `decision := lib.allow("x") if count([i | some i in numbers.range(1, 100000000)]) > 0`, "did not decide within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := CompileCustom(ctx, "p.rego", []byte(header+tt.body+"\n"))
			if err != nil {
				if strings.Contains(tt.body, "lib.") {
					t.Fatal(err)
				}
				c, err = CompileCustom(ctx, "p.rego", []byte("package proxmox_mcp.policy\n\n"+tt.body+"\n"))
				if err != nil {
					t.Fatal(err)
				}
			}
			d := c.Decide(ctx, call("GET", "/version", schema.RiskRead), 50*time.Millisecond)
			if d.Effect != Deny || len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0], tt.want) {
				t.Fatalf("Decide = %+v, want deny with %q", d, tt.want)
			}
		})
	}
}

func TestDecideObligations(t *testing.T) {
	ctx := context.Background()
	c, err := CompileCustom(ctx, "p.rego", []byte("package proxmox_mcp.policy\n\n"+`decision := {"effect": "confirm", "reasons": ["sure?"], "obligations": [{"type": "notify", "message": "hi"}]}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Decide(ctx, call("DELETE", "/x", schema.RiskDestructive), 0)
	if d.Effect != Confirm || len(d.Obligations) != 2 || d.Obligations[1] != (Obligation{Type: "confirm", Approver: "self"}) {
		t.Fatalf("Decide = %+v: a confirm decision gains a confirm obligation", d)
	}
	if d.Policy != "p.rego" || d.Digest == "" {
		t.Errorf("decision does not name its policy: %+v", d)
	}
}

// The guard applies after every policy, custom ones included.
func TestGuardOverridesPolicies(t *testing.T) {
	ctx := context.Background()
	custom, err := CompileCustom(ctx, "allow.rego", []byte(allowAll))
	if err != nil {
		t.Fatal(err)
	}
	bg, err := CompileCustom(ctx, "bg.rego", []byte(header+`decision := lib.breakglass("ask") if lib.guard_hit`+"\n"+`decision := lib.allow("ok") if not lib.guard_hit`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := CompileBuiltin(ctx, Root)
	if err != nil {
		t.Fatal(err)
	}
	hit := Guard{Evaluated: true, Hits: []GuardHit{{Kind: "path", Value: "/mnt/model-repo", Param: "path"}}}
	tests := []struct {
		name  string
		c     *Compiled
		risk  schema.Risk
		guard Guard
		want  Effect
		why   string
	}{
		{"custom allow, guard not run", custom, schema.RiskWrite, Guard{}, Deny, "guard did not run"},
		{"custom allow, read without guard", custom, schema.RiskRead, Guard{}, Allow, ""},
		{"custom allow, guard hit", custom, schema.RiskDestructive, hit, Deny, "touches the protected repository (/mnt/model-repo)"},
		{"custom allow, guard hit on a read", custom, schema.RiskRead, hit, Allow, ""},
		{"custom breakglass, guard hit", bg, schema.RiskDestructive, hit, Breakglass, ""},
		{"root, guard hit", root, schema.RiskWrite, hit, Breakglass, ""},
		{"root, guard not run", root, schema.RiskWrite, Guard{}, Deny, "guard did not run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := call("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", tt.risk)
			in.Guard = tt.guard
			d := tt.c.Decide(ctx, in, 0)
			if d.Effect != tt.want || tt.why != "" && !strings.Contains(strings.Join(d.Reasons, " "), tt.why) {
				t.Fatalf("Decide = %+v, want %s (%s)", d, tt.want, tt.why)
			}
		})
	}
}

func TestRunTestsReportsFailures(t *testing.T) {
	ctx := context.Background()
	failing := "package proxmox_mcp.policy_test\n\nimport data.proxmox_mcp.policy\n\ntest_denies if policy.decision.effect == \"deny\" with input as {\"method\": \"GET\"}\n"
	looping := "package proxmox_mcp.policy_test\n\ntest_loops if count([i | some i in numbers.range(1, 1000000000)]) > 0\n"
	tests := []struct{ name, src, tests, want string }{
		{"failing test", allowAll, failing, "policy tests failed: 1 of 1: proxmox_mcp.policy_test.test_denies"},
		{"looping test", allowAll, looping, "policy tests failed"},
		{"no tests", allowAll, "", "has no tests"},
		{"tests do not compile", allowAll, "package x\n\ntest_y if z\n", "rego_"},
		{"policy does not compile", header + "decision := \n", allowAllTests, "rego_parse_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := checkWithTimeout(ctx, tt.src, tt.tests, 300*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check: %v, want %q", err, tt.want)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

// checkWithTimeout is Check with a short per-test timeout.
func checkWithTimeout(ctx context.Context, src, tests string, timeout time.Duration) ([]TestResult, error) {
	if _, err := CompileCustom(ctx, "p.rego", []byte(src)); err != nil {
		return nil, err
	}
	if strings.TrimSpace(tests) == "" {
		_, err := Check(ctx, "p", []byte(src), nil)
		return nil, err
	}
	return RunTests(ctx, []Module{{Name: "p.rego", Source: []byte(src)}, {Name: "p_test.rego", Source: []byte(tests)}}, timeout)
}

func TestStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(allowAll)
	tests := []byte(allowAllTests)
	// A failing draft stores nothing.
	if _, err := s.Draft(ctx, "open", src, []byte(strings.Replace(allowAllTests, `"allow"`, `"deny"`, 1))); !errors.Is(err, ErrTestsFailed) {
		t.Fatalf("Draft with failing tests: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "policies", "index.json")); !os.IsNotExist(err) {
		t.Fatalf("a failed draft wrote the index: %v", err)
	}
	res, err := s.Draft(ctx, "open", src, tests)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != Digest(src) || len(res.Tests) != 1 {
		t.Fatalf("Draft = %+v", res)
	}
	if _, err := s.Activate(ctx, "open", Digest([]byte("other text"))); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Activate with another digest: %v", err)
	}
	if _, err := s.Activate(ctx, "open", "abc"); err == nil || !strings.Contains(err.Error(), "64 lower-case hex") {
		t.Fatalf("Activate with a malformed digest: %v", err)
	}
	v, err := s.Activate(ctx, "open", res.Digest)
	if err != nil || v.Version != 1 {
		t.Fatalf("Activate = %+v, %v", v, err)
	}
	if _, err := s.Activate(ctx, "open", res.Digest); err == nil {
		t.Fatal("activating the same draft twice succeeded")
	}
	src2 := []byte(allowAll + "# v2\n")
	res2, err := s.Draft(ctx, "open", src2, tests)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Activate(ctx, "open", res2.Digest); err != nil || v.Version != 2 {
		t.Fatalf("second Activate = %+v, %v", v, err)
	}
	got, err := s.Active("open")
	if err != nil || got.Version != 2 || string(got.Source) != string(src2) {
		t.Fatalf("Active = %+v, %v", got, err)
	}
	old, err := s.Get("open", 1)
	if err != nil || string(old.Source) != string(src) || old.Active {
		t.Fatalf("Get(v1) = %+v, %v", old, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].ActiveVersion != 2 || list[0].Versions != 2 || len(list[0].Drafts) != 0 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	// Stored versions are immutable: an edit on disk is detected.
	if err := os.WriteFile(filepath.Join(dir, "policies", "open", "v2.rego"), []byte(allowAll+"# edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Active("open"); err == nil || !strings.Contains(err.Error(), "was changed on disk") {
		t.Fatalf("Active after an edit on disk: %v", err)
	}
	for _, id := range []string{"root", "Bad Id", ""} {
		if _, err := s.Draft(ctx, id, src, tests); err == nil {
			t.Errorf("Draft(%q) accepted", id)
		}
	}
}

// The engine picks up a newly activated version on the next decision.
func TestEngineFollowsActivation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(ctx, s, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Policy: "p"}
	in := call("GET", "/version", schema.RiskRead)
	if d := e.Decide(ctx, b, in); d.Effect != Deny || !strings.Contains(d.Reasons[0], "no active version") {
		t.Fatalf("before activation: %+v", d)
	}
	denyAll := header + `decision := lib.deny("closed") if input.method != ""` + "\n"
	denyTests := "package proxmox_mcp.policy_test\n\nimport data.proxmox_mcp.policy\n\ntest_denies if policy.decision.effect == \"deny\" with input as {\"method\": \"GET\"}\n"
	for i, step := range []struct {
		src, tests string
		want       Effect
	}{{denyAll, denyTests, Deny}, {allowAll, allowAllTests, Allow}} {
		res, err := s.Draft(ctx, "p", []byte(step.src), []byte(step.tests))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Activate(ctx, "p", res.Digest); err != nil {
			t.Fatal(err)
		}
		d := e.Decide(ctx, b, in)
		if d.Effect != step.want || d.Policy != "p@v"+string(rune('1'+i)) {
			t.Fatalf("after activating v%d: %+v", i+1, d)
		}
	}
	if d := e.Decide(ctx, Binding{Profile: "superuser"}, in); d.Effect != Deny {
		t.Fatalf("unknown profile: %+v", d)
	}
	if d := e.Decide(ctx, Binding{Profile: ReadOnly}, in); d.Effect != Allow {
		t.Fatalf("read-only read: %+v", d)
	}
}

func TestParseDecisionRejects(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"string", `"allow"`, "decision is a string, want an object"},
		{"no effect", `{"reasons": []}`, "decision.effect is missing"},
		{"effect number", `{"effect": 1}`, "is not one of"},
		{"obligation not object", `{"effect": "allow", "obligations": ["x"]}`, "must be an object"},
		{"notify without message", `{"effect": "allow", "obligations": [{"type": "notify"}]}`, "needs a message"},
		{"obligation field", `{"effect": "allow", "obligations": [{"type": "audit_arguments", "level": 2}]}`, "is not known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.json), &v); err != nil {
				t.Fatal(err)
			}
			if _, err := parseDecision(v); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parseDecision(%s): %v, want %q", tt.json, err, tt.want)
			}
		})
	}
}

// Visibility is cached per principal; two Tailnet callers whose identities
// differ only in a capability grant's value never share a cached answer,
// and a policy requiring the grant sees each caller's own.
func TestVisibleToolsPerTailnetGrant(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	s, err := NewStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	src := header + `default decision := {"effect": "deny", "reasons": ["no grant"], "obligations": []}

decision := lib.allow("granted") if {
	some g in input.principal.tailnet.capabilities["example.com/cap/pmcp"]
	g.role == "reader"
	input.method == "GET"
}
`
	tests := "package proxmox_mcp.policy_test\n\nimport data.proxmox_mcp.policy\n\n" +
		`test_grant if policy.decision.effect == "allow" with input as {"method": "GET", "principal": {"tailnet": {"capabilities": {"example.com/cap/pmcp": [{"role": "reader"}]}}}}` + "\n"
	res, err := s.Draft(ctx, "grant", []byte(src), []byte(tests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Activate(ctx, "grant", res.Digest); err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(ctx, s, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Policy: "grant"}
	caller := func(role string) Principal {
		id := &TailnetIdentity{User: "alice@example.com", Node: "laptop"}
		if role != "" {
			id.Capabilities = map[string][]any{"example.com/cap/pmcp": {map[string]any{"role": role}}}
		}
		return Principal{KeyID: "k", Policy: "grant", Transport: "tailnet", Source: "100.64.0.2", Tailnet: id}
	}
	visible := func(p Principal) int {
		t.Helper()
		tools, err := e.VisibleTools(ctx, b, p, reg)
		if err != nil {
			t.Fatal(err)
		}
		return len(tools)
	}
	reader := visible(caller("reader"))
	if reader == 0 {
		t.Fatal("the caller with the grant sees no tool")
	}
	for _, role := range []string{"writer", ""} {
		if n := visible(caller(role)); n != 0 {
			t.Errorf("a caller with grant %q sees %d tools (the cached answer of another caller?)", role, n)
		}
	}
	if n := visible(caller("reader")); n != reader {
		t.Errorf("the reader again: %d tools, want %d", n, reader)
	}
	// The decisions agree with the visibility.
	for role, want := range map[string]Effect{"reader": Allow, "writer": Deny, "": Deny} {
		in := call("GET", "/version", schema.RiskRead)
		in.Principal = caller(role)
		if d := e.Decide(ctx, b, in); d.Effect != want {
			t.Errorf("grant %q: %+v, want %s", role, d, want)
		}
	}
}
