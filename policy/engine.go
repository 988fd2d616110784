package policy

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

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

// EngineOptions configure an Engine.
type EngineOptions struct {
	// Timeout bounds one evaluation (DefaultTimeout).
	Timeout time.Duration
	// Logger receives compile errors of custom policies (slog.Default()).
	Logger *slog.Logger
}

// Engine decides calls for keys: it holds the compiled built-in profiles
// and compiles each custom policy's active version once per change.
type Engine struct {
	store    *Store
	opts     EngineOptions
	builtins map[string]*Compiled

	mu     sync.Mutex
	custom map[string]*customEntry
	vis    map[visKey][]string
}

type customEntry struct {
	fp       fingerprint
	compiled *Compiled
}

// visKey keys the visibility cache. The Tailnet identity has lists and
// maps, so it is keyed by its canonical encoding: callers whose identities
// differ in anything (a capability's value included) never share an entry.
type visKey struct {
	digest, registry string
	principal        Principal // without Tailnet
	tailnet          string    // TailnetIdentity.cacheKey, "" without one
}

// NewEngine compiles the built-in profiles. store may be nil when no custom
// policy is used.
func NewEngine(ctx context.Context, store *Store, opts EngineOptions) (*Engine, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	e := &Engine{store: store, opts: opts, builtins: map[string]*Compiled{}, custom: map[string]*customEntry{}, vis: map[visKey][]string{}}
	for _, p := range Profiles() {
		c, err := CompileBuiltin(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("policy: built-in profile %s: %w", p, err)
		}
		e.builtins[p] = c
	}
	return e, nil
}

// Policy returns the compiled policy of a binding. A custom policy is
// recompiled when its active version changes; the check is one stat of the
// index per call.
func (e *Engine) Policy(ctx context.Context, b Binding) (*Compiled, error) {
	switch {
	case b.Profile != "" && b.Policy != "":
		return nil, fmt.Errorf("policy: a key has a profile or a policy, not both")
	case b.Profile != "":
		c := e.builtins[b.Profile]
		if c == nil {
			return nil, fmt.Errorf("policy: %q is not a built-in profile", b.Profile)
		}
		return c, nil
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
	defer e.mu.Unlock()
	if ce := e.custom[b.Policy]; ce != nil && ce.fp == fp && !racy {
		return ce.compiled, nil
	}
	v, err := e.store.Active(b.Policy)
	if err != nil {
		delete(e.custom, b.Policy)
		return nil, err
	}
	if ce := e.custom[b.Policy]; ce != nil && ce.compiled.Digest == v.Digest {
		ce.fp = fp
		return ce.compiled, nil
	}
	c, err := CompileCustom(ctx, fmt.Sprintf("%s@v%d", v.ID, v.Version), v.Source)
	if err != nil {
		e.opts.Logger.Error("policy: active version does not compile", "policy", b.Policy, "version", v.Version, "err", err)
		return nil, err
	}
	e.custom[b.Policy] = &customEntry{fp: fp, compiled: c}
	return c, nil
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

// VisibleTools returns the names of the tools of reg that the principal's
// policy could ever allow, sorted. It is computed once per policy digest,
// registry and principal, then cached. The daemon shows these tools in
// tools/list and treats any other tool name in tools/call as unknown, so
// the two agree: a hidden tool does not exist for the caller, and a
// visible one may still be denied call by call, with a reason.
func (e *Engine) VisibleTools(ctx context.Context, b Binding, p Principal, reg *schema.Registry) ([]string, error) {
	c, err := e.Policy(ctx, b)
	if err != nil {
		return nil, err
	}
	key := visKey{digest: c.Digest, registry: reg.SHA256(), principal: p}
	if p.Tailnet != nil {
		if key.tailnet, err = p.Tailnet.cacheKey(); err != nil {
			return nil, err
		}
		key.principal.Tailnet = nil
	}
	e.mu.Lock()
	if tools, ok := e.vis[key]; ok {
		e.mu.Unlock()
		return tools, nil
	}
	e.mu.Unlock()
	var tools []string
	for _, ep := range reg.Endpoints() {
		ok, err := c.Visible(ctx, ep, p)
		if err != nil {
			return nil, err
		}
		if ok {
			tools = append(tools, ep.Tool)
		}
	}
	sort.Strings(tools)
	e.mu.Lock()
	if len(e.vis) > 1024 {
		clear(e.vis)
	}
	e.vis[key] = tools
	e.mu.Unlock()
	return tools, nil
}
