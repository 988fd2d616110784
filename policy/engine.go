package policy

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"golang.org/x/sync/singleflight"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Binding is what a key is bound to: a built-in profile or a custom policy.
type Binding struct {
	Profile string
	Policy  string
}

func (b Binding) String() string {
	if b.Policy != "" {
		return "policy " + b.Policy
	}
	return "profile " + b.Profile
}

// DefaultVisibilityTimeout bounds the computation of one principal's
// visible tools over a registry. It takes milliseconds; the bound is for a
// custom policy with an expensive rule, which would otherwise hold
// tools/list (and every tools/call, which checks visibility first).
const DefaultVisibilityTimeout = 5 * time.Second

// DefaultVisibilityCacheEntries is how many visibility answers an engine
// keeps (least recently used first out).
const DefaultVisibilityCacheEntries = 1024

// EngineOptions configure an Engine.
type EngineOptions struct {
	// Timeout bounds one decision (DefaultTimeout).
	Timeout time.Duration
	// VisibilityTimeout bounds the computation of one principal's visible
	// tools over a registry (DefaultVisibilityTimeout). Past it the
	// evaluation in progress is cancelled and VisibleTools fails.
	VisibilityTimeout time.Duration
	// VisibilityCacheEntries bounds the visibility cache
	// (DefaultVisibilityCacheEntries).
	VisibilityCacheEntries int
	// Logger receives compile errors of custom policies (slog.Default()).
	Logger *slog.Logger
	// Profiles are the built-in profiles, for engines that share them
	// (CompileProfiles, LazyProfiles); nil: the engine's own, each
	// compiled on its first use.
	Profiles *CompiledProfiles
}

// CompiledProfiles are the built-in profiles, each compiled once, when
// first used (20 ms of CPU apiece; a stdio session or a CLI command uses
// one). A compiled policy is safe for concurrent use and keys what it
// caches by registry, so one set serves any number of engines: a process
// that makes several (the tests, a rig per case) compiles each profile
// once, not per engine.
type CompiledProfiles struct {
	byName map[string]func() (*Compiled, error)
}

// LazyProfiles returns a set that compiles each profile on first use;
// callers who ask while it compiles wait for that compilation.
func LazyProfiles() *CompiledProfiles {
	cp := &CompiledProfiles{byName: map[string]func() (*Compiled, error){}}
	for _, p := range Profiles() {
		cp.byName[p] = sync.OnceValues(func() (*Compiled, error) {
			c, err := CompileBuiltin(context.Background(), p)
			if err != nil {
				return nil, fmt.Errorf("policy: built-in profile %s: %w", p, err)
			}
			return c, nil
		})
	}
	return cp
}

// CompileProfiles compiles every built-in profile now.
func CompileProfiles(ctx context.Context) (*CompiledProfiles, error) {
	cp := &CompiledProfiles{byName: map[string]func() (*Compiled, error){}}
	for _, p := range Profiles() {
		c, err := CompileBuiltin(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("policy: built-in profile %s: %w", p, err)
		}
		cp.byName[p] = func() (*Compiled, error) { return c, nil }
	}
	return cp, nil
}

// get returns the compiled profile name, compiling it if it is the first
// use; ok is false for a name that is not a built-in profile.
func (cp *CompiledProfiles) get(name string) (c *Compiled, ok bool, err error) {
	f := cp.byName[name]
	if f == nil {
		return nil, false, nil
	}
	c, err = f()
	return c, true, err
}

// Engine decides calls for keys: it holds the compiled built-in profiles
// and compiles each custom policy's active version once per change.
type Engine struct {
	store    *Store
	opts     EngineOptions
	builtins *CompiledProfiles

	mu     sync.Mutex
	custom map[string]*customEntry
	cases  lastTwo[*listingCases] // of the last two registries listed, by SHA256

	compiling singleflight.Group // by policy id and digest
	flights   singleflight.Group // visibility computations, by cache key
	building  singleflight.Group // listing cases, by registry
	vis       *visCache

	// testHookJoined, when set, runs after a caller of VisibleTools has
	// joined (or started) a computation; testHookCompute at the start of
	// each computation.
	testHookJoined, testHookCompute func()
	// testHookCasesAsked, when set, runs as listingCases is called;
	// testHookCasesBuilt as a registry's cases are built.
	testHookCasesAsked, testHookCasesBuilt func()
}

// customEntry is the compiled active version of a custom policy, or why it
// does not compile, as of an index fingerprint.
type customEntry struct {
	fp       fingerprint
	digest   string
	compiled *Compiled
	err      error
}

// NewEngine returns an engine whose built-in profiles are opts.Profiles,
// or compiled each on its first use. store may be nil when no custom
// policy is used.
func NewEngine(ctx context.Context, store *Store, opts EngineOptions) (*Engine, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.VisibilityTimeout <= 0 {
		opts.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if opts.VisibilityCacheEntries <= 0 {
		opts.VisibilityCacheEntries = DefaultVisibilityCacheEntries
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	profiles := opts.Profiles
	if profiles == nil {
		profiles = LazyProfiles()
	}
	e := &Engine{store: store, opts: opts, builtins: profiles, custom: map[string]*customEntry{},
		vis: newVisCache(opts.VisibilityCacheEntries)}
	return e, nil
}

// Policy returns the compiled policy of a binding. A custom policy is
// recompiled when its active version changes; the check is one stat of the
// index per call. No lock is held while a policy compiles, and concurrent
// callers wait for one compilation.
func (e *Engine) Policy(ctx context.Context, b Binding) (*Compiled, error) {
	switch {
	case b.Profile != "" && b.Policy != "":
		return nil, fmt.Errorf("policy: a key has a profile or a policy, not both")
	case b.Profile != "":
		c, ok, err := e.builtins.get(b.Profile)
		if !ok {
			return nil, fmt.Errorf("policy: %q is not a built-in profile", b.Profile)
		}
		return c, err
	case b.Policy == "":
		return nil, fmt.Errorf("policy: the key has neither a profile nor a policy")
	case e.store == nil:
		return nil, fmt.Errorf("policy: custom policy %s but no policy store", b.Policy)
	}
	fp, racy, err := e.store.IndexFingerprint()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	ce := e.custom[b.Policy]
	e.mu.Unlock()
	if ce != nil && ce.fp == fp && !racy {
		return ce.compiled, ce.err
	}
	v, err := e.store.Active(b.Policy)
	if err != nil {
		e.mu.Lock()
		delete(e.custom, b.Policy)
		e.mu.Unlock()
		return nil, err
	}
	if ce != nil && ce.digest == v.Digest {
		e.remember(b.Policy, &customEntry{fp: fp, digest: ce.digest, compiled: ce.compiled, err: ce.err})
		return ce.compiled, ce.err
	}
	r, _, _ := e.compiling.Do(b.Policy+"\x00"+v.Digest, func() (any, error) {
		c, err := CompileCustom(context.WithoutCancel(ctx), fmt.Sprintf("%s@v%d", v.ID, v.Version), v.Source)
		if err != nil {
			e.opts.Logger.Error("policy: active version does not compile", "policy", b.Policy, "version", v.Version, "err", err)
		}
		return &customEntry{fp: fp, digest: v.Digest, compiled: c, err: err}, nil
	})
	ce = r.(*customEntry)
	e.remember(b.Policy, ce)
	return ce.compiled, ce.err
}

func (e *Engine) remember(id string, ce *customEntry) {
	e.mu.Lock()
	e.custom[id] = ce
	e.mu.Unlock()
}

// Tier returns the PVE token tier of a binding from its compiled policy: a
// profile's own name, or the tier the active version of a custom policy
// declares. It is read when the policy compiles, once per change, and
// found like Policy finds the policy (one stat of the index).
func (e *Engine) Tier(ctx context.Context, b Binding) (string, error) {
	c, err := e.Policy(ctx, b)
	if err != nil {
		return "", err
	}
	return c.Tier, nil
}

// Decide evaluates the call for the binding; any failure to find or
// compile the policy is a deny.
func (e *Engine) Decide(ctx context.Context, b Binding, in *Input) Decision {
	c, err := e.Policy(ctx, b)
	if err != nil {
		return denyf(b.String(), "", "no usable policy for %s: %v", b, err)
	}
	return c.Decide(ctx, in, e.opts.Timeout)
}

// DecideHost evaluates the principal's policy for a host operation of the
// root helper (in.Host set): Compiled.DecideHost.
func (e *Engine) DecideHost(ctx context.Context, b Binding, in *Input) Decision {
	c, err := e.Policy(ctx, b)
	if err != nil {
		return denyf(b.String(), "", "no usable policy for %s: %v", b, err)
	}
	return c.DecideHost(ctx, in, e.opts.Timeout)
}

// VisibleTools returns the names of the tools of reg that the principal's
// policy could ever allow, sorted. The daemon shows these tools in
// tools/list and treats any other tool name in tools/call as unknown, so
// the two agree: a hidden tool does not exist for the caller, and a
// visible one may still be denied call by call, with a reason.
//
// The answer is computed once per policy digest, registry and class of
// principal: only the principal's fields the policy reads count, so every
// key of a built-in profile shares one answer per registry. Concurrent
// callers with the same key wait for one computation, bounded by
// EngineOptions.VisibilityTimeout whatever the callers' contexts; a caller
// whose context ends stops waiting (the computation goes on and is
// cached). Answers are kept in a cache of the most recently used.
func (e *Engine) VisibleTools(ctx context.Context, b Binding, p Principal, reg *schema.Registry) ([]string, error) {
	c, err := e.Policy(ctx, b)
	if err != nil {
		return nil, err
	}
	principal, class, err := c.principalClass(p)
	if err != nil {
		return nil, err
	}
	key := strings.Join([]string{c.Package, c.Digest, reg.SHA256(), class}, "\x00")
	if tools, ok := e.vis.get(key); ok {
		return tools, nil
	}
	ch := e.flights.DoChan(key, func() (any, error) {
		return e.computeVisible(context.WithoutCancel(ctx), c, reg, principal, key)
	})
	if e.testHookJoined != nil {
		e.testHookJoined()
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]string), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("policy %s: visible tools: %w", c.Name, ctx.Err())
	}
}

// computeVisible computes and caches one visibility answer within the
// engine's bound.
func (e *Engine) computeVisible(ctx context.Context, c *Compiled, reg *schema.Registry, principal *ast.Term, key string) ([]string, error) {
	if e.testHookCompute != nil {
		e.testHookCompute()
	}
	lc, err := e.listingCases(reg)
	if err != nil {
		return nil, err
	}
	// One cancellation for every evaluation of the computation: the timer
	// fires it at the bound (OPA checks it between steps, so an expensive
	// rule stops there too).
	cancel := topdown.NewCancel()
	var timedOut atomic.Bool
	timer := time.AfterFunc(e.opts.VisibilityTimeout, func() { timedOut.Store(true); cancel.Cancel() })
	tools, n, err := c.visibleTools(ctx, cancel, lc, principal)
	timer.Stop()
	e.vis.update(func(s *VisibilityStats) {
		s.Computations++
		s.Evaluated += int64(n.evaluated)
		s.Witnessed += int64(n.witnessed)
		s.Partial += int64(n.partial)
		if err != nil {
			s.Failures++
		}
	})
	if err != nil {
		if timedOut.Load() {
			return nil, fmt.Errorf("policy %s: the visible tools were not decided within %s (EngineOptions.VisibilityTimeout); %d of %d classes of calls were", c.Name, e.opts.VisibilityTimeout, n.decided(), n.classes)
		}
		return nil, err
	}
	if tools == nil {
		tools = []string{}
	}
	e.mu.Lock()
	if _, listed := e.cases.get(lc.registry); listed {
		// A computation that ends after its registry was dropped is
		// answered, not kept.
		e.vis.put(key, lc.registry, tools)
	}
	e.mu.Unlock()
	return tools, nil
}

// listingCases returns the cases of reg, built once per registry: callers
// that ask while they are being built wait for that build.
func (e *Engine) listingCases(reg *schema.Registry) (*listingCases, error) {
	if e.testHookCasesAsked != nil {
		e.testHookCasesAsked()
	}
	e.mu.Lock()
	lc, ok := e.cases.get(reg.SHA256())
	e.mu.Unlock()
	if ok {
		return lc, nil
	}
	v, err, _ := e.building.Do(reg.SHA256(), func() (any, error) {
		e.mu.Lock()
		lc, ok := e.cases.get(reg.SHA256())
		e.mu.Unlock()
		if ok {
			return lc, nil
		}
		if e.testHookCasesBuilt != nil {
			e.testHookCasesBuilt()
		}
		lc, err := newListingCases(reg)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if dropped, ok := e.cases.put(lc.registry, lc); ok {
			// Answers for a registry no longer listed are never asked for
			// again (it is neither served nor finishing calls).
			e.vis.dropRegistry(dropped)
		}
		return lc, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*listingCases), nil
}

// PrepareListing builds reg's listing cases now, the part of a first
// listing every policy shares (9.5 ms on PVE 9.1), for a caller that does
// not know yet which policy will list.
func (e *Engine) PrepareListing(reg *schema.Registry) error {
	_, err := e.listingCases(reg)
	return err
}

// Warm computes, in advance, what the first listing of reg costs a key
// of each built-in profile: the registry's listing cases and, for each
// profile, its classes of cases and its visible tools (the built-in
// profiles read nothing of the principal, so one answer serves every
// key). The daemon calls it when a schema is loaded or swapped, so that
// no caller's first tools/list pays for it. It stops at the first error
// or when ctx ends.
func (e *Engine) Warm(ctx context.Context, reg *schema.Registry) error {
	for _, p := range Profiles() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := e.VisibleTools(ctx, Binding{Profile: p}, Principal{Profile: p}, reg); err != nil {
			return fmt.Errorf("policy: warm %s: %w", p, err)
		}
	}
	return nil
}

// VisibilityStats returns what VisibleTools did so far.
func (e *Engine) VisibilityStats() VisibilityStats { return e.vis.snapshot() }
