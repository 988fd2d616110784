package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Mode chooses the tool set.
type Mode string

// Tool modes.
const (
	ModeCompact  Mode = "compact"
	ModeExpanded Mode = "expanded"
	ModeSearch   Mode = "search"
)

// ParseMode reads compact, expanded or search.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeCompact, ModeExpanded, ModeSearch:
		return m, nil
	case "":
		return ModeCompact, nil
	}
	return "", fmt.Errorf("tool mode %q is not compact, expanded or search", s)
}

// Tier names the PVE API token a call goes out with.
type Tier string

// Tiers, one privilege-separated PVE token each.
const (
	TierReadOnly Tier = "read-only"
	TierOperator Tier = "operator"
	TierAdmin    Tier = "admin"
	TierRoot     Tier = "root"
)

// Registry is the live schema (schema.Source).
type Registry interface {
	Current() *schema.Registry
	Status() schema.Status
}

// Policy decides calls and says which tools a caller may ever use
// (policy.Engine).
type Policy interface {
	Decide(ctx context.Context, b policy.Binding, in *policy.Input) policy.Decision
	DecideHost(ctx context.Context, b policy.Binding, in *policy.Input) policy.Decision
	VisibleTools(ctx context.Context, b policy.Binding, p policy.Principal, reg *schema.Registry) ([]string, error)
}

// PVE gives the client that speaks with a tier's token.
type PVE interface {
	Client(tier Tier) (*pve.Client, error)
}

// Guard is the protected-repository guard: it inspects a call, with its
// parameters as validated, before the policy decides (plan.Guard).
type Guard = plan.Guard

// Switches are the daemon-wide gates above every policy: ReadOnly hides
// and refuses every call that is not a read, for every key;
// AllowMutations must be true for any write to happen (plan.Switches).
type Switches = plan.Switches

// Limits shape answers.
type Limits struct {
	// MaxResultBytes caps the JSON of one answer; 64 KiB when zero.
	MaxResultBytes int
	// DefaultListLimit is how many list items an answer holds when the
	// caller does not say; 200 when zero.
	DefaultListLimit int
	// MaxWait caps how long a call may wait for its task; 10 minutes when zero.
	MaxWait time.Duration
}

// Options configure the tool server.
type Options struct {
	Name, Version string
	Mode          Mode
	Registry      Registry
	Policy        Policy
	PVE           PVE
	Audit         Auditor
	// Ledger is the journal as the change contract reads it (operations,
	// evidence, plans); without one, the contract's tools are not served
	// and operation keys are refused.
	Ledger Ledger
	// Reconciler settles writes whose outcome is not known
	// (proxmox_reconcile); without one, that tool says it cannot.
	Reconciler Reconciler
	Guard      Guard
	Switches   Switches
	// Protected are the guests every write to which needs a second
	// principal's approval (changes.protected_guests).
	Protected ProtectedGuests
	// PlanTTL is how long a kept plan stays applicable (15 minutes when
	// zero).
	PlanTTL time.Duration
	Limits  Limits
	// AnswerText is what the text part of an answer with structured
	// content holds: the summary and the JSON again (AnswerJSON, the
	// default), or, for a tool that declares an outputSchema, the summary
	// only (AnswerSummary).
	AnswerText AnswerText
	// ConfirmKey signs confirmation tokens; 32 random bytes per daemon.
	ConfirmKey []byte
	Logger     *slog.Logger
	Now        func() time.Time
	// Resolver resolves the hosts a call makes PVE fetch from, for the
	// policy's input.outside (plan.Options.Resolver); the system's when nil.
	Resolver plan.Resolver
	// Host reaches the root helper for the host tools; without a helper
	// they are not served.
	Host HostOptions
	// Extra are tools served beside the catalog, in every mode, to every
	// caller the transport authenticated, whatever its policy: the fixtures
	// a test rig adds (the MCP conformance suite's). The daemon sets none.
	// A name the catalog uses is refused.
	Extra []server.ServerTool
}

// Server is the MCP server with the daemon's tools.
type Server struct {
	opts Options
	mcp  *server.MCPServer

	mu       sync.Mutex // guards reg and switches
	reg      *schema.Registry
	switches Switches
	confirm  *confirmations
	extra    map[string]bool // names of Options.Extra
	audit    Auditor         // Options.Audit, marking the calls it records
	planner  *plan.Builder   // every call's plan
	guests   *guestDirectory // where guests are and how they are tagged
	plans    *plans          // previews kept as plans

	protected ProtectedGuests // guarded by mu

	visCache visCache // the visibility maps of reg
	views    views    // each caller's view of the cluster, for resources and completion

	// waitsEnded is closed by EndWaits: the daemon is stopping.
	waitsEnded   chan struct{}
	endWaitsOnce sync.Once
}

// EndWaits ends every wait for a task, those under way and those to come:
// the daemon is stopping and its drain is nearly over. A call that waits
// answers at once with its task still running (its UPID, to follow after
// the restart), and its receipt is journaled, instead of being cut when
// the process exits with the receipt unwritten and the caller unanswered.
func (s *Server) EndWaits() { s.endWaitsOnce.Do(func() { close(s.waitsEnded) }) }

// SetSwitches changes the daemon-wide switches (a reload); the tool lists
// of clients with sessions are told to refresh.
func (s *Server) SetSwitches(sw Switches) {
	s.mu.Lock()
	s.switches = sw
	s.mu.Unlock()
	s.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
}

func (s *Server) currentSwitches() Switches {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.switches
}

// New builds the MCP server. Call Refresh whenever the registry changes.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Registry == nil || opts.Registry.Current() == nil:
		return nil, errors.New("tools: a loaded schema registry is required")
	case opts.Policy == nil:
		return nil, errors.New("tools: a policy engine is required")
	case opts.PVE == nil:
		return nil, errors.New("tools: PVE clients are required")
	case opts.Audit == nil:
		return nil, errors.New("tools: an audit journal is required")
	case opts.Guard == nil:
		return nil, errors.New("tools: the protected-repository guard is required")
	case len(opts.ConfirmKey) < 16:
		return nil, errors.New("tools: a confirmation key of at least 16 bytes is required")
	}
	mode, err := ParseMode(string(opts.Mode))
	if err != nil {
		return nil, err
	}
	opts.Mode = mode
	if opts.Name == "" {
		opts.Name = "proxmox-mcp"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Limits.MaxResultBytes <= 0 {
		opts.Limits.MaxResultBytes = 64 << 10
	}
	if opts.Limits.DefaultListLimit <= 0 {
		opts.Limits.DefaultListLimit = 200
	}
	if opts.Limits.MaxWait <= 0 {
		opts.Limits.MaxWait = 10 * time.Minute
	}
	s := &Server{opts: opts, switches: opts.Switches, confirm: newConfirmations(opts.ConfirmKey, opts.Now), extra: map[string]bool{}, audit: markingAuditor{opts.Audit}, waitsEnded: make(chan struct{})}
	for _, t := range opts.Extra {
		s.extra[t.Tool.Name] = true
	}
	s.guests = newGuestDirectory(opts.PVE, opts.Now)
	s.plans = newPlans(opts.Now, opts.PlanTTL)
	s.protected = opts.Protected
	if s.planner, err = plan.New(plan.Options{Registry: s.registry, Guard: opts.Guard, Policy: opts.Policy, Switches: s.currentSwitches,
		Protected: s.protectedReasons, Now: opts.Now, Resolver: opts.Resolver}); err != nil {
		return nil, err
	}
	for _, t := range s.catalog(opts.Registry.Current()) {
		if s.extra[t.Tool.Name] {
			return nil, fmt.Errorf("tools: extra tool %q has the name of a catalog tool", t.Tool.Name)
		}
	}
	s.mcp = server.NewMCPServer(opts.Name, opts.Version,
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(false),
		server.WithLogging(),
		// A break-glass request asks the person for its confirmation.
		server.WithElicitation(),
		server.WithRecovery(),
		server.WithToolHandlerMiddleware(s.journalEveryCall),
		server.WithToolHandlerMiddleware(s.answerText),
		server.WithToolFilter(s.filterTools),
		server.WithPromptFilter(s.filterPrompts),
		server.WithInstructions(instructions(opts.Mode)),
		server.WithPaginationLimit(ToolsPageSize),
	)
	s.mcp.AddPrompt(onboardingPrompt(), s.onboarding)
	s.serveResources()
	s.Refresh()
	return s, nil
}

// MCP is the underlying server, for the transports.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// instructions tell a client how to use the tools of the mode.
func instructions(m Mode) string {
	s := "This server operates a Proxmox VE host through its API, under a policy bound to your key. "
	if m == ModeSearch {
		s += "Find endpoints with proxmox_api_search (query), read an endpoint's parameters with proxmox_api_search " +
			"(describe: its tool name), read with proxmox_api_get (a concrete path such as /nodes/pve1/qemu, params) and change things with " +
			"proxmox_api_call (method POST, PUT or DELETE, path, params). " +
			"Long-running calls return a UPID; pass wait to follow the task, or read /nodes/{node}/tasks/{upid}/status with proxmox_api_get. "
	} else {
		s += "Find endpoints with proxmox_api_search, read their parameters with proxmox_api_describe, and call them with " +
			"proxmox_api_get (reads: a concrete path such as /nodes/pve1/qemu, params) or proxmox_api_call (changes: method POST, PUT or DELETE, path, params). " +
			"Long-running calls return a UPID; " +
			"pass wait to follow the task, or use proxmox_task_wait. "
	}
	if m == ModeExpanded {
		var control []string
		for k := range shapeProperties("_") {
			control = append(control, k)
		}
		sort.Strings(control)
		s += "Each endpoint is also a tool of its own, its parameters the tool's arguments; the arguments with a leading _ (" +
			strings.Join(control, ", ") + ") mean and take what proxmox_api_call's arguments of the same name do. " +
			"tools/list comes in pages: follow nextCursor. "
	}
	return s + "A refusal explains which rule refused and why; the prompt proxmox_onboarding says what your key may do."
}

// ToolsPageSize is how many tools one tools/list page holds; nextCursor
// leads to the next. Only expanded mode has more.
const ToolsPageSize = 100

// describeHint names how a caller reads an endpoint's parameters.
func (s *Server) describeHint(ep *schema.Endpoint) string {
	if s.opts.Mode == ModeSearch {
		return ToolSearch + " with describe " + ep.Tool
	}
	return ToolDescribe + " with tool " + ep.Tool
}

// approveHint names how another principal approves a held call.
func (s *Server) approveHint() string {
	if s.opts.Mode == ModeSearch {
		return ToolCall + " with approve {\"token\": ..., \"approve\": true}"
	}
	return ToolApprove + " with the token"
}

// followHint names how a caller follows a task.
func (s *Server) followHint(upid string) string {
	if s.opts.Mode == ModeSearch {
		node := "{node}"
		if u, err := pve.ParseUPID(upid); err == nil {
			node = u.Node
		}
		return ToolGet + " " + pve.Path("nodes", node, "tasks", upid, "status")
	}
	return ToolTaskWait
}

// Refresh rebuilds the tool set from the live registry (the schema was
// reloaded); clients with sessions get notifications/tools/list_changed.
func (s *Server) Refresh() {
	reg := s.opts.Registry.Current()
	s.mu.Lock()
	s.reg = reg
	s.mu.Unlock()
	s.visCache.reset(reg)
	s.mcp.SetTools(append(s.catalog(reg), s.opts.Extra...)...)
}

// registry returns the registry the tool set was built from.
func (s *Server) registry() *schema.Registry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg
}

// filterTools shows each caller only the tools its policy could ever allow
// and the switches permit. mcp-go applies it to tools/list and, with only
// the requested tool, to tools/call: a hidden tool does not exist. The
// generic tools need no visibility (they answer only about visible
// endpoints, and a call is decided on its own), so a call of them never
// waits for it. When visibility cannot be worked out (a policy that errs or
// exceeds its time bound) the caller sees none of the tools that need it,
// and the failure is journalled.
func (s *Server) filterTools(ctx context.Context, list []mcp.Tool) []mcp.Tool {
	c, ok := CallerFrom(ctx)
	if !ok {
		return nil
	}
	var visible visibility
	var verr error
	computed := false
	out := list[:0:0]
	for _, t := range list {
		if s.alwaysVisible(t.Name) {
			out = append(out, t)
			continue
		}
		if _, ok := hostOps[t.Name]; ok {
			if s.hostVisible(ctx, c, t.Name) {
				out = append(out, annotatedFor(c, t))
			}
			continue
		}
		if _, ok := breakglassOps[t.Name]; ok {
			if s.breakglassVisible(ctx, c, t.Name) {
				out = append(out, t)
			}
			continue
		}
		if t.Name == ToolGuestExec {
			if s.guestExecVisible(ctx, c) {
				out = append(out, t)
			}
			continue
		}
		if !computed {
			visible, verr = s.visible(ctx, c)
			computed = true
			if verr != nil {
				s.visibilityFailed(ctx, c, len(list), verr)
			}
		}
		if verr == nil && s.toolVisible(t.Name, visible) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// visibilityFailed logs and journals a visibility that could not be worked
// out: tools/list (or a call of a tool that needs it) answered without the
// policy's tools.
func (s *Server) visibilityFailed(ctx context.Context, c Caller, tools int, err error) {
	s.opts.Logger.Warn("tools: visibility failed; showing only the generic tools", "key", c.Principal.KeyID, "err", err)
	what := "tools/list"
	if tools == 1 {
		what = "tools/call"
	}
	call := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: what}
	out := AuditOutcome{Outcome: journal.OutcomeError, Error: "the tools your policy allows could not be worked out: " + err.Error()}
	if rerr := s.audit.Record(journalContext(ctx), call, out); rerr != nil {
		s.opts.Logger.Error("tools: the journal refused the row of a failed visibility", "key", c.Principal.KeyID, "err", rerr)
	}
}

func (s *Server) filterPrompts(ctx context.Context, list []mcp.Prompt) []mcp.Prompt {
	if _, ok := CallerFrom(ctx); !ok {
		return nil
	}
	return list
}

// visibility is the set of endpoint tools a caller may use, after the
// switches.
type visibility map[string]*schema.Endpoint

// writes reports whether the caller may use some endpoint that is not a read.
func (v visibility) writes() bool {
	for _, ep := range v {
		if ep.Method != "GET" {
			return true
		}
	}
	return false
}

// Warm works out now what the caller's first tools/list needs and keeps it
// (the policy's visible tools over the served registry, and the map built
// from them), so that the list does not wait for it; a list that comes
// while it runs joins it. An error is the policy's, and is the list's to
// report.
func (s *Server) Warm(ctx context.Context, c Caller) error {
	_, err := s.visible(ctx, c)
	return err
}

// visible is the set of endpoints the caller's policy could ever allow and
// the daemon-wide switches permit.
func (s *Server) visible(ctx context.Context, c Caller) (visibility, error) {
	reg := s.registry()
	names, err := s.opts.Policy.VisibleTools(ctx, c.Binding, c.Principal, reg)
	if err != nil {
		return nil, err
	}
	// The policy engine caches its answer per class of principal (what the
	// policy reads of it); the map built from
	// it is cached here, for that answer, registry and switches, so a call
	// costs a lookup and not a map of every visible endpoint.
	key := visCacheKey{n: len(names), sw: s.currentSwitches()}
	if len(names) > 0 {
		key.first = &names[0]
	}
	if v, ok := s.visCache.get(reg, key); ok {
		return v, nil
	}
	v := s.buildVisibility(reg, names)
	s.visCache.put(reg, key, v)
	return v, nil
}

func (s *Server) buildVisibility(reg *schema.Registry, names []string) visibility {
	v := make(visibility, len(names))
	for _, n := range names {
		ep := reg.Tool(n)
		if ep == nil {
			continue
		}
		if s.switchRefusal(ep.Method) != "" {
			continue
		}
		v[n] = ep
	}
	return v
}

// switchRefusal names the daemon-wide switch that refuses a method, if any.
func (s *Server) switchRefusal(method string) string {
	return s.currentSwitches().Refusal(method)
}
