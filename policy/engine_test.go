package policy

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// activate drafts and activates src as policy id in s.
func activate(t *testing.T, s *Store, id, src, tests string) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Draft(ctx, id, []byte(src), []byte(tests))
	if err != nil {
		t.Fatalf("Draft(%s): %v", id, err)
	}
	if _, err := s.Activate(ctx, id, res.Digest); err != nil {
		t.Fatalf("Activate(%s): %v", id, err)
	}
}

// A store whose clock runs an hour ahead: the index written by a test is
// not "just changed" (IndexFingerprint's racy window), as on a host where
// a policy was activated a while ago.
func settledStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := NewStore(dir, func() time.Time { return time.Now().Add(time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// Reproduces: a builtin error in a negated rule made the rule undefined,
// so `not blocked` succeeded and the policy allowed the call (OPA ran
// without StrictBuiltinErrors in production, with it in policy tests).
func TestNegatedBuiltinErrorDenies(t *testing.T) {
	ctx := context.Background()
	src := header + `blocked if to_number(input.params.x) > 5

decision := lib.allow("not blocked") if {
	input.method != ""
	not blocked
}
`
	c, err := CompileCustom(ctx, "p.rego", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		x    any
		want Effect
		why  string
	}{
		{"3", Allow, "not blocked"},
		{"9", Deny, "gave no decision"},
		{"abc", Deny, `eval_builtin_error: to_number: strconv.ParseFloat: parsing "abc": invalid syntax`},
	} {
		in := call("POST", "/nodes/{node}/qemu/{vmid}/config", schema.RiskWrite)
		in.Params = map[string]any{"x": tt.x}
		d := c.Decide(ctx, in, 0)
		if d.Effect != tt.want || !strings.Contains(strings.Join(d.Reasons, " "), tt.why) {
			t.Errorf("x=%v: %+v, want %s with %q", tt.x, d, tt.want, tt.why)
		}
	}
	// The policy's own tests run the same way: a test that expects the
	// erroring call to be allowed fails with the error.
	tests := "package proxmox_mcp.policy_test\n\nimport data.proxmox_mcp.policy\n\n" +
		`test_abc if policy.decision.effect == "allow" with input as {"method": "POST", "params": {"x": "abc"}}` + "\n"
	_, err = RunTests(ctx, []Module{{Name: "p.rego", Source: []byte(src)}, {Name: "p_test.rego", Source: []byte(tests)}}, 0)
	if !errors.Is(err, ErrTestsFailed) || !strings.Contains(err.Error(), "to_number") {
		t.Errorf("RunTests: %v, want a failure naming to_number", err)
	}
}

// Reproduces: the tier of a custom policy was read from disk and parsed
// on every request (Store.Tier → Store.Active). The tier is part of the
// compiled policy: once the active version is compiled, its file is not
// read again until the index changes.
func TestEngineTierIsReadOncePerChange(t *testing.T) {
	ctx := context.Background()
	s, dir := settledStore(t)
	const tests = allowAllTests
	activate(t, s, "ops", allowAll+"tier := \"operator\"\n", tests)
	e, err := NewEngine(ctx, s, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Policy: "ops"}
	if tier, err := e.Tier(ctx, b); err != nil || tier != Operator {
		t.Fatalf("Tier = %q, %v; want operator", tier, err)
	}
	// The version's text is gone: a per-request read would fail now.
	v1 := filepath.Join(dir, "policies", "ops", "v1.rego")
	if err := os.Remove(v1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if tier, err := e.Tier(ctx, b); err != nil || tier != Operator {
			t.Fatalf("Tier after the first request = %q, %v; want operator without reading %s", tier, err, v1)
		}
	}
	if _, err := s.Active("ops"); err == nil {
		t.Fatal("the store still reads the removed version: the test proves nothing")
	}
	// A change (a new active version) is picked up, with its tier.
	activate(t, s, "ops", allowAll+"tier := \"admin\"\n", tests)
	if tier, err := e.Tier(ctx, b); err != nil || tier != Admin {
		t.Fatalf("Tier after activating v2 = %q, %v; want admin", tier, err)
	}
	// A policy that declares none runs with the read-only token; profiles
	// are their own tier.
	activate(t, s, "plain", allowAll, tests)
	for _, tt := range []struct {
		b    Binding
		want string
	}{{Binding{Policy: "plain"}, ReadOnly}, {Binding{Profile: Root}, Root}, {Binding{Profile: ReadOnly}, ReadOnly}} {
		if tier, err := e.Tier(ctx, tt.b); err != nil || tier != tt.want {
			t.Errorf("Tier(%s) = %q, %v; want %s", tt.b, tier, err, tt.want)
		}
	}
	if _, err := e.Tier(ctx, Binding{Profile: "superuser"}); err == nil {
		t.Error("Tier of an unknown profile succeeded")
	}
}

// A tier that is not a constant, known tier makes the policy fail to
// compile, so draft refuses it (it used to fail only at request time).
func TestCompileRejectsBadTier(t *testing.T) {
	for _, body := range []string{`tier := "superuser"`, `tier := input.tier`} {
		_, err := CompileCustom(context.Background(), "p.rego", []byte(allowAll+body+"\n"))
		if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "tier") {
			t.Errorf("%s: %v, want a compile error about the tier", body, err)
		}
	}
}

// Reproduces: a custom policy whose active version does not compile (a
// newer OPA, a changed library) was recompiled, and the failure logged,
// on every request.
func TestEngineRemembersCompileFailure(t *testing.T) {
	ctx := context.Background()
	s, dir := settledStore(t)
	activate(t, s, "p", allowAll, allowAllTests)
	var logged atomic.Int64
	e, err := NewEngine(ctx, s, EngineOptions{Logger: countingLogger(&logged)})
	if err != nil {
		t.Fatal(err)
	}
	// Make the stored version fail to compile while keeping its digest:
	// the index records the digest, so rewrite the index entry too.
	broken := header + "decision := lib.allow(\"x\") if http.send({}).status_code == 200\n"
	if err := os.WriteFile(filepath.Join(dir, "policies", "p", "v1.rego"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "policies", "index.json")
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(string(data), Digest([]byte(allowAll)), Digest([]byte(broken))))
	if err := os.WriteFile(index, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in := call("GET", "/version", schema.RiskRead)
	for range 5 {
		if d := e.Decide(ctx, Binding{Policy: "p"}, in); d.Effect != Deny || !strings.Contains(d.Reasons[0], "undefined function http.send") {
			t.Fatalf("Decide = %+v, want deny naming the compile error", d)
		}
	}
	if n := logged.Load(); n != 1 {
		t.Errorf("the compile error was logged %d times, want once per change", n)
	}
}

// Reproduces: a custom policy with an expensive rule made tools/list (and
// every allowed tools/call, which checks visibility first) hang for as
// long as the rule ran, with no bound but the caller's context.
func TestVisibleToolsIsBoundedInTime(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	s, _ := settledStore(t)
	slow := header + `decision := lib.allow("eventually") if {
	every i in numbers.range(1, 100000) {
		every j in numbers.range(1, 100000) {
			i != 0 - j
		}
	}
}
`
	activate(t, s, "slow", slow, "package proxmox_mcp.policy_test\n\ntest_nothing if true\n")
	e, err := NewEngine(ctx, s, EngineOptions{VisibilityTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.VisibleTools(context.Background(), Binding{Policy: "slow"}, Principal{KeyID: "k", Policy: "slow"}, reg)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "were not decided within 200ms") {
			t.Fatalf("VisibleTools: %v, want the bound named", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("VisibleTools did not return a minute after its 200ms bound")
	}
	st := e.VisibilityStats()
	if st.Failures != 1 || st.Entries != 0 {
		t.Errorf("stats %+v: want one failed computation, nothing cached", st)
	}
}

// A caller whose context ends stops waiting at once; the computation it
// started goes on for the others, within its own bound.
func TestVisibleToolsCallerGivesUp(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	e, err := NewEngine(context.Background(), nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	e.testHookCompute = func() { <-release }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.VisibleTools(ctx, Binding{Profile: Operator}, Principal{KeyID: "a"}, reg); !errors.Is(err, context.Canceled) {
		t.Fatalf("VisibleTools with a cancelled context: %v", err)
	}
	close(release)
	tools, err := e.VisibleTools(context.Background(), Binding{Profile: Operator}, Principal{KeyID: "b"}, reg)
	if err != nil || len(tools) != 336 {
		t.Fatalf("VisibleTools afterwards: %d tools, %v; want operator's 336", len(tools), err)
	}
	if st := e.VisibilityStats(); st.Computations != 1 {
		t.Errorf("%d computations, want 1: the abandoned one finished and was shared", st.Computations)
	}
}

// Reproduces: concurrent tools/list requests of one key each computed the
// whole visibility (a custom policy paid it N times at once).
func TestVisibleToolsComputedOnceForConcurrentCallers(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	e, err := NewEngine(context.Background(), nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var joined sync.WaitGroup
	joined.Add(n)
	e.testHookJoined = joined.Done
	// The computation waits until every caller has joined it.
	e.testHookCompute = joined.Wait
	results := make([][]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tools, err := e.VisibleTools(context.Background(), Binding{Profile: Operator}, Principal{KeyID: "k", Profile: Operator}, reg)
			if err != nil {
				t.Error(err)
			}
			results[i] = tools
		})
	}
	wg.Wait()
	st := e.VisibilityStats()
	if st.Computations != 1 || st.Misses != n {
		t.Fatalf("stats %+v: want %d misses sharing 1 computation", st, n)
	}
	one := e.VisibilityStats().Evaluated + st.Witnessed + st.Partial
	if one == 0 {
		t.Fatal("no class was evaluated")
	}
	for i, r := range results {
		if len(r) != 336 || &r[0] != &results[0][0] {
			t.Errorf("caller %d got %d tools (a separate answer?)", i, len(r))
		}
	}
}

// Reproduces: the visibility cache was keyed by the whole principal, so
// every key (and every client address) of a profile computed its own
// answer. Only the fields the policy reads count: a profile reads none,
// a policy that reads input.principal.source gets an answer per class of
// source.
func TestVisibilityKeyedByWhatThePolicyReads(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	s, _ := settledStore(t)
	bastion := header + `decision := lib.allow("from the bastion") if {
	input.principal.source == "10.0.0.5"
	input.risk == "read"
}
`
	activate(t, s, "bastion", bastion, "package proxmox_mcp.policy_test\n\ntest_nothing if true\n")
	e, err := NewEngine(ctx, s, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := func(b Binding, key, source string) []string {
		t.Helper()
		tools, err := e.VisibleTools(ctx, b, Principal{KeyID: key, Name: key, Profile: b.Profile, Policy: b.Policy, Transport: "lan", Source: source}, reg)
		if err != nil {
			t.Fatal(err)
		}
		return tools
	}
	op := Binding{Profile: Operator}
	a, b := list(op, "alice", "10.0.0.5"), list(op, "bob", "192.168.1.9")
	if st := e.VisibilityStats(); st.Computations != 1 || st.Entries != 1 || &a[0] != &b[0] {
		t.Fatalf("two operator keys: stats %+v; want one shared answer", st)
	}
	pol := Binding{Policy: "bastion"}
	in, out, other := list(pol, "alice", "10.0.0.5"), list(pol, "bob", "10.0.0.6"), list(pol, "carol", "10.0.0.7")
	if len(in) == 0 || len(out) != 0 || len(other) != 0 {
		t.Fatalf("bastion policy: %d tools from 10.0.0.5, %d from 10.0.0.6, %d from 10.0.0.7; want some, none, none", len(in), len(out), len(other))
	}
	// 10.0.0.6 and 10.0.0.7 are both "not the bastion": one class.
	if st := e.VisibilityStats(); st.Computations != 3 || st.Entries != 3 {
		t.Errorf("stats %+v: want 3 answers (operator; bastion; not the bastion)", st)
	}
}

// Reproduces: at 1,024 entries the visibility cache was cleared as a
// whole, so a busy daemon recomputed the answers of its active keys. Now
// the least recently used answer goes.
func TestVisibilityCacheKeepsRecentEntries(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	s, _ := settledStore(t)
	perKey := header + `decision := lib.allow("named keys") if {
	startswith(input.principal.key_id, "k")
	input.risk == "read"
}
`
	activate(t, s, "per-key", perKey, "package proxmox_mcp.policy_test\n\ntest_nothing if true\n")
	e, err := NewEngine(ctx, s, EngineOptions{VisibilityCacheEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Policy: "per-key"}
	list := func(key string) {
		t.Helper()
		if _, err := e.VisibleTools(ctx, b, Principal{KeyID: key, Policy: "per-key"}, reg); err != nil {
			t.Fatal(err)
		}
	}
	computed := func() int64 { return e.VisibilityStats().Computations }
	list("k1")
	list("k2")
	list("k3")
	list("k1") // k1 is now the most recent, k2 the least
	list("k4") // evicts k2
	if n := computed(); n != 4 {
		t.Fatalf("%d computations for k1 k2 k3 k1 k4, want 4", n)
	}
	list("k1")
	list("k3")
	list("k4")
	if n := computed(); n != 4 {
		t.Errorf("k1, k3 and k4 were recomputed (%d computations): the recent entries were dropped", n)
	}
	list("k2")
	if n := computed(); n != 5 {
		t.Errorf("k2 was not evicted (%d computations, want 5)", n)
	}
	if st := e.VisibilityStats(); st.Entries != 3 || st.Evictions != 2 {
		t.Errorf("stats %+v: want 3 entries after 2 evictions", st)
	}
}

func TestVisCacheLRU(t *testing.T) {
	c := newVisCache(2)
	c.put("a", "r", []string{"a"})
	c.put("b", "r", []string{"b"})
	c.get("a")
	c.put("c", "r", []string{"c"})
	if _, ok := c.get("b"); ok {
		t.Error("b, the least recently used, survived")
	}
	for _, k := range []string{"a", "c"} {
		if v, ok := c.get(k); !ok || v[0] != k {
			t.Errorf("%s: %v %v", k, v, ok)
		}
	}
	c.put("a", "r", []string{"A"})
	if v, _ := c.get("a"); v[0] != "A" {
		t.Errorf("a was not replaced: %v", v)
	}
	if st := c.snapshot(); st.Entries != 2 || st.Evictions != 1 {
		t.Errorf("stats %+v", st)
	}
}

// countingLogger counts the records of level error it receives.
func countingLogger(n *atomic.Int64) *slog.Logger { return slog.New(countHandler{n}) }

type countHandler struct{ n *atomic.Int64 }

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.n.Add(1)
	}
	return nil
}

func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h countHandler) WithGroup(string) slog.Handler { return h }

// The evaluation copy compiles for the built-in profiles and the examples;
// the profiles need no partial evaluation, and their cases fall into few
// classes. (A regression here is a regression in the cost of the first
// tools/list of every key: see BenchmarkVisibleTools.)
func TestListingDecidesProfilesWithoutPartialEvaluation(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	lc, err := newListingCases(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, prof := range Profiles() {
		c, err := CompileBuiltin(ctx, prof)
		if err != nil {
			t.Fatal(err)
		}
		if c.listing == nil {
			t.Fatalf("%s has no evaluation copy", prof)
		}
		principal, class, err := c.principalClass(Principal{KeyID: "k", Name: "n", Profile: prof, Transport: "lan", Source: "10.1.2.3"})
		if err != nil || class != "" {
			t.Fatalf("%s: principal class %q, %v; a profile reads nothing of the principal", prof, class, err)
		}
		_, n, err := c.visibleTools(ctx, topdown.NewCancel(), lc, principal)
		if err != nil {
			t.Fatal(err)
		}
		if n.partial != 0 || n.classes*5 > len(lc.cases) {
			t.Errorf("%s: %+v for %d cases: want no partial evaluation and a fifth of the cases or fewer", prof, n, len(lc.cases))
		}
	}
	examples, err := filepath.Glob("examples/*.rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range examples {
		if strings.HasSuffix(f, "_test.rego") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := CompileCustom(ctx, filepath.Base(f), src)
		if err != nil {
			t.Fatal(err)
		}
		if c.listing == nil {
			t.Errorf("%s has no evaluation copy", f)
		}
	}
}

// Reproduces: computations that began at once (two policies' first
// listings, or the daemon warming every profile) each built the
// registry's listing cases, 9.5 ms of CPU apiece on PVE 9.1.
func TestListingCasesBuiltOnceForConcurrentComputations(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	e, err := NewEngine(context.Background(), nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var asked sync.WaitGroup
	asked.Add(2)
	e.testHookCasesAsked = asked.Done
	var builds atomic.Int32
	e.testHookCasesBuilt = func() {
		// The first build goes on once the other computation has asked.
		if builds.Add(1) == 1 {
			asked.Wait()
		}
	}
	var wg sync.WaitGroup
	for _, p := range []string{Operator, Admin} {
		wg.Go(func() {
			if _, err := e.VisibleTools(context.Background(), Binding{Profile: p}, Principal{KeyID: p, Profile: p}, reg); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("the listing cases were built %d times for two computations at once, want 1", n)
	}
}

// After Warm, the first listing of any key of a built-in profile is a
// cache hit with the answer a cold engine computes.
func TestWarmLeavesNothingForTheFirstListing(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	warm, err := NewEngine(ctx, nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cold, err := NewEngine(ctx, nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Warm(ctx, reg); err != nil {
		t.Fatal(err)
	}
	after := warm.VisibilityStats()
	if after.Computations != int64(len(Profiles())) {
		t.Fatalf("Warm made %d computations, want one per built-in profile (%d)", after.Computations, len(Profiles()))
	}
	for _, p := range Profiles() {
		principal := Principal{KeyID: "first-" + p, Name: "alice", Profile: p, Transport: "tailnet", Source: "100.64.0.7:41000"}
		got, err := warm.VisibleTools(ctx, Binding{Profile: p}, principal, reg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cold.VisibleTools(ctx, Binding{Profile: p}, principal, reg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: warmed answer has %d tools, a cold engine's %d", p, len(got), len(want))
		}
	}
	if st := warm.VisibilityStats(); st.Computations != after.Computations {
		t.Errorf("the first listings after Warm made %d computations, want none", st.Computations-after.Computations)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := cold.Warm(cancelled, reg); !errors.Is(err, context.Canceled) {
		t.Errorf("Warm with a cancelled context: %v, want context.Canceled", err)
	}
}

// Engines given one set of compiled profiles share them and answer as an
// engine that compiled its own; each keeps its own visibility cache.
func TestEnginesShareCompiledProfiles(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ctx := context.Background()
	profiles, err := CompileProfiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewEngine(ctx, nil, EngineOptions{Profiles: profiles})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewEngine(ctx, nil, EngineOptions{Profiles: profiles})
	if err != nil {
		t.Fatal(err)
	}
	own, err := NewEngine(ctx, nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Profiles() {
		if mustProfile(t, a, p) != mustProfile(t, b, p) {
			t.Errorf("%s compiled twice for engines given the same profiles", p)
		}
		got, err := a.VisibleTools(ctx, Binding{Profile: p}, Principal{KeyID: "k"}, reg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := own.VisibleTools(ctx, Binding{Profile: p}, Principal{KeyID: "k"}, reg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d visible tools with shared profiles, %d with its own", p, len(got), len(want))
		}
	}
	if st := b.VisibilityStats(); st.Computations != 0 || st.Entries != 0 {
		t.Errorf("engine b's cache %+v: want it untouched by engine a's listings", st)
	}
}

// mustProfile is the engine's compiled profile p.
func mustProfile(tb testing.TB, e *Engine, p string) *Compiled {
	tb.Helper()
	c, err := e.Policy(context.Background(), Binding{Profile: p})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// An engine compiles a built-in profile when it is first used, once
// however many callers ask at once.
func TestProfilesCompiledOnFirstUse(t *testing.T) {
	e, err := NewEngine(context.Background(), nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]*Compiled, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = mustProfile(t, e, Operator) })
	}
	wg.Wait()
	for i, c := range got {
		if c != got[0] {
			t.Fatalf("caller %d got another compilation of operator", i)
		}
	}
	if _, err := e.Policy(context.Background(), Binding{Profile: "operators"}); err == nil || !strings.Contains(err.Error(), `"operators" is not a built-in profile`) {
		t.Errorf("an unknown profile: %v", err)
	}
}
