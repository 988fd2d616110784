// Package daemon is the running system: it builds every subsystem from the
// configuration (schema source, keys, policies, journal, PVE clients, the
// guard, the tools, the listeners), owns their lifecycle (start, reload on
// SIGHUP, graceful drain and stop) and answers readiness.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"tailscale.com/tsnet"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/metrics"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport"
)

// Options configure a daemon.
type Options struct {
	// Config is the parsed configuration.
	Config *config.Config
	// ConfigPath is where it came from, for Reload ("" when built in code).
	ConfigPath string
	// StateDirOverride is a --state-dir that replaced the file's state_dir;
	// a reload applies it again.
	StateDirOverride string
	// Version is the build's version.
	Version string
	Logger  *slog.Logger
	// Lifecycle hears of readiness, reloads and stopping (systemd).
	Lifecycle Lifecycle
	// Profiles are the built-in policy profiles already compiled, for a
	// process that makes several daemons (the demo's, the tests'); nil:
	// New compiles them.
	Profiles *policy.CompiledProfiles
}

// Daemon is the running system.
type Daemon struct {
	opts   Options
	cfg    *config.Config
	log    *slog.Logger
	schema *schema.Source
	keys   *keys.Store
	verify *keys.Verifier
	pstore *policy.Store
	engine *policy.Engine
	jrnl   *journal.Journal
	pve    *tierClients
	guard  *breakglass.Guard
	tools  *tools.Server
	// metrics are the daemon's Prometheus series (metrics.go).
	metrics *metrics.Metrics
	// reconciler settles writes whose outcome is unknown (nil without a
	// PVE token); recon is its start-up pass, reconWG waits for it.
	reconciler *changes.Reconciler
	recon      reconciliation
	reconWG    sync.WaitGroup
	// warm works out first listings in advance (warm.go).
	warm warmer

	// The HTTP guards every listener shares.
	sessions      *transport.Sessions
	keyLimiter    *transport.Limiter
	sourceLimiter *transport.Limiter
	refusals      *refusalAudit

	// bindLAN binds the LAN listeners: net.Listen, or a test's seam.
	bindLAN bindFunc

	// lastErr and extraStatus feed the status line (StatusLine).
	lastErr     lastError
	extraStatus string

	// tailnet is the embedded Tailscale node of listen.tailnet, if any;
	// tailnetStarted, when set (tests), is called with it once started.
	tailnet        *tailnetNode
	tailnetStarted func(*tsnet.Server)

	mu        sync.Mutex
	listeners []*listener
	// running: Run serves the listeners (one added later is served at
	// once); stopping: Run is draining them (one added later is refused).
	running, stopping bool
	// errc carries the first listener failure to Run.
	errc  chan error
	ready chan struct{}
	// started is when New began (Status).
	started time.Time
}

type listener struct {
	name string
	addr string
	ln   net.Listener
	srv  *http.Server
}

// New builds every subsystem. It fails, saying which and why, when one
// cannot work: no usable schema, an unreadable state directory or journal,
// a token secret that cannot be read.
func New(ctx context.Context, opts Options) (*Daemon, error) {
	if opts.Config == nil {
		return nil, errors.New("daemon: a configuration is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := opts.Config
	d := &Daemon{opts: opts, cfg: cfg, log: opts.Logger, ready: make(chan struct{}), errc: make(chan error, 1), started: time.Now()}
	d.warm.log = d.log
	if err := os.MkdirAll(cfg.StateDir, 0o750); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	// Until READY=1, the status line says which step the start is at: a
	// start held up (a locked journal) shows where in systemctl status.
	d.lifecycle().Status("starting: loading the PVE API schema " + cfg.SchemaPath())
	var err error
	if d.metrics, err = d.newMetrics(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	d.schema = schema.NewSource(schema.SourceOptions{
		Path:   cfg.SchemaPath(),
		Cache:  schema.NewCache(cfg.SchemaCacheDir()),
		Logger: d.log,
		Observe: func(ev schema.Event) {
			if ev.Kind == schema.EventReloaded && d.tools != nil {
				d.tools.Refresh()
				// Not on the swap's path: the new schema is served (and
				// its status shown) without waiting for a full collection.
				go releaseStartGarbage()
				d.warm.kick()
			}
			d.observeSchema(ev)
			d.observeSchemaMetrics(ev)
		},
	})
	if err := d.schema.Load(ctx); err != nil {
		return nil, err
	}
	if d.pstore, err = policy.NewStore(cfg.StateDir, time.Now); err != nil {
		return nil, fmt.Errorf("policy store: %w", err)
	}
	if d.engine, err = policy.NewEngine(ctx, d.pstore, policy.EngineOptions{Logger: d.log, Profiles: opts.Profiles}); err != nil {
		return nil, fmt.Errorf("policy engine: %w", err)
	}
	if d.keys, err = keys.Open(cfg.StateDir, keys.Options{Logger: d.log}); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if d.verify, err = keys.NewVerifier(d.keys, keys.VerifierOptions{Logger: d.log, AfterHash: afterHash}); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	d.lifecycle().Status("starting: opening the audit journal " + cfg.JournalPath())
	if d.jrnl, err = journal.Open(ctx, cfg.JournalPath(), journal.Options{Logger: d.log, ObserveCommit: d.metrics.JournalCommit, RelaxCalls: true}); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if d.pve, err = newTierClients(cfg, d.log, d.metrics.PVERequest); err != nil {
		d.jrnl.Close()
		return nil, err
	}
	g := cfg.HTTP.Guards()
	if d.reconciler, err = d.newReconciler(); err != nil {
		d.jrnl.Close()
		return nil, err
	}
	var reconciler tools.Reconciler
	if d.reconciler != nil {
		reconciler = d.reconciler
	}
	d.sessions = transport.NewSessions(transport.SessionLimits{Max: g.MaxSessions, PerKey: g.MaxSessionsPerKey}, nil)
	d.keyLimiter = transport.NewLimiter(g.RatePerKey, g.BurstPerKey, 0, nil)
	d.sourceLimiter = transport.NewLimiter(g.RatePerSource, g.BurstPerSource, 0, nil)
	d.refusals = newRefusalAudit(d.jrnl, d.log)
	// The guard reads PVE's view with the least privileged token there is.
	var inventory breakglass.Reader
	for _, t := range []tools.Tier{tools.TierReadOnly, tools.TierOperator, tools.TierAdmin, tools.TierRoot} {
		if c := d.pve.clients[t]; c != nil && inventory == nil {
			inventory = c
		}
	}
	if d.guard, err = breakglass.NewGuard(breakglass.Protected{Paths: cfg.Protected.Paths, Volumes: cfg.Protected.Volumes, Devices: cfg.Protected.Devices},
		breakglass.Options{PVE: inventory, Logger: d.log}); err != nil {
		d.jrnl.Close()
		return nil, err
	}
	mode, err := tools.ParseMode(cfg.Tools.Mode)
	if err != nil {
		return nil, err
	}
	answerText, err := tools.ParseAnswerText(cfg.Tools.AnswerText)
	if err != nil {
		return nil, err
	}
	confirmKey := make([]byte, 32)
	if _, err := rand.Read(confirmKey); err != nil {
		return nil, err
	}
	d.tools, err = tools.New(tools.Options{
		Name: "proxmox-mcp", Version: opts.Version, Mode: mode,
		Registry: d.schema, Policy: d.engine, PVE: d.pve, Audit: meteredAuditor{next: &auditor{j: d.jrnl, calls: &callLog{log: d.log}}, m: d.metrics}, Ledger: d.jrnl, Guard: d.guard,
		Reconciler: reconciler,
		Switches:   switchesOf(cfg),
		Protected:  protectedOf(cfg),
		PlanTTL:    cfg.PlanLifetime(),
		Limits:     tools.Limits{MaxResultBytes: cfg.Tools.MaxResultBytes},
		AnswerText: answerText,
		ConfirmKey: confirmKey, Logger: d.log,
		Host: hostOf(cfg),
	})
	if err != nil {
		d.jrnl.Close()
		return nil, err
	}
	return d, nil
}

// hostOf is how the tools reach the root helper: through its socket when
// it is installed (the socket exists when the daemon starts), with the
// roots and protected paths of the same configuration the helper reads.
// Without the socket no host tool is served.
func hostOf(cfg *config.Config) tools.HostOptions {
	socket := cfg.Host.HelperSocket()
	if _, err := os.Stat(socket); err != nil {
		return tools.HostOptions{}
	}
	var roots []host.Root
	for _, r := range cfg.Host.HostRoots() {
		roots = append(roots, host.Root{Path: r.Path, Write: r.Write, CrossMounts: r.CrossMounts})
	}
	return tools.HostOptions{
		Helper: func(ctx context.Context, req host.Request, progress func(host.ExecProgress)) (host.Response, error) {
			return host.Call(ctx, socket, req, progress)
		},
		Roots: roots, Protected: cfg.Protected.Paths, ProtectedVolumes: host.ProtectedLVs(cfg.Protected),
	}
}

// Keys is the key store, for the demo and the installer.
func (d *Daemon) Keys() *keys.Store { return d.keys }

// Schema is the live schema source.
func (d *Daemon) Schema() *schema.Source { return d.schema }

// Run opens the listeners, follows apidoc.js and serves until ctx ends,
// then drains calls in flight (up to 30 s) and closes everything.
func (d *Daemon) Run(ctx context.Context) error {
	started := time.Now() // the intents before it are the last run's
	if err := d.listen(); err != nil {
		d.jrnl.Close()
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		if err := d.schema.Watch(watchCtx); err != nil {
			d.log.Error("daemon: schema watcher stopped", "error", err)
		}
	}()
	d.mu.Lock()
	d.running = true
	for _, l := range d.listeners {
		d.serveLocked(l)
	}
	d.mu.Unlock()
	if d.tailnet != nil {
		d.tailnet.start()
	}
	releaseStartGarbage()
	// READY goes to systemd before Ready() answers, so that whoever waits
	// on Ready() sees it said (the lifecycle test raced the two).
	d.lifecycle().Ready(d.StatusLine())
	close(d.ready)
	reconCtx, stopRecon := context.WithCancel(ctx)
	defer stopRecon()
	d.reconWG.Go(func() { d.reconcileOpen(reconCtx, started) })
	// Every key of a built-in profile shares its first listing: worked out
	// now and after each swap, no caller waits for it.
	warmCtx, stopWarm := context.WithCancel(ctx)
	defer stopWarm()
	d.warm.start(warmCtx, func(ctx context.Context) error { return d.engine.Warm(ctx, d.schema.Current()) })
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-d.errc:
	}
	d.log.Info("daemon: stopping; draining calls in flight")
	d.lifecycle().Stopping("stopping: draining calls in flight (up to 30 s)")
	d.mu.Lock()
	d.stopping = true
	listeners := slices.Clone(d.listeners)
	d.mu.Unlock()
	if d.tailnet != nil {
		d.tailnet.stopWatching()
	}
	drain, cancel := context.WithTimeout(context.Background(), drainTime)
	defer cancel()
	// Calls waiting for a task answer with it still running before the
	// drain ends, so that their receipts are journaled and their callers
	// hear the UPID; the rest of a call is quick.
	endWaits := time.AfterFunc(drainTime-waitsEndBefore, d.tools.EndWaits)
	defer endWaits.Stop()
	for _, l := range listeners {
		if err := l.srv.Shutdown(drain); err != nil {
			d.log.Warn("daemon: listener did not drain", "listener", l.name, "error", err)
		}
	}
	if d.tailnet != nil {
		d.tailnet.close()
	}
	stopWatch()
	stopRecon()
	stopWarm()
	d.warm.stop()
	d.reconWG.Wait()
	d.pve.close()
	if err := d.jrnl.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("journal: %w", err)
	}
	return runErr
}

// drainTime bounds the drain of calls in flight at stop (TimeoutStopSec is
// 45 s); waits for tasks end waitsEndBefore its end.
const (
	drainTime      = 30 * time.Second
	waitsEndBefore = 5 * time.Second
)

// errStopping refuses a listener added while Run drains the others.
var errStopping = errors.New("the daemon is stopping")

// serveLocked serves a listener until Run shuts it down; a failure ends
// Run. d.mu is held.
func (d *Daemon) serveLocked(l *listener) {
	go func() {
		d.log.Info("daemon: listening", "listener", l.name, "address", l.addr)
		if err := l.srv.Serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.fail(fmt.Errorf("listener %s: %w", l.name, err))
		}
	}()
}

// fail ends Run with err (the first failure; later ones are logged).
func (d *Daemon) fail(err error) {
	select {
	case d.errc <- err:
	default:
		d.log.Error("daemon: listener failed", "error", err)
	}
}

// Ready is closed once every listener is open, the Tailnet's aside: that
// one opens when the node has logged in (see tailnetNode).
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Addresses returns the listeners' actual addresses, by name; the Tailnet
// listener's (its Tailscale IP and port) once it serves.
func (d *Daemon) Addresses() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for _, l := range d.listeners {
		out[l.name] = l.addr
	}
	return out
}

// listen opens every configured listener: loopback always, then the LAN
// TLS listeners and the Tailnet node.
func (d *Daemon) listen() error {
	if err := d.listenLoopback(); err != nil {
		return err
	}
	if err := d.listenLAN(); err != nil {
		return err
	}
	if err := d.listenMetrics(); err != nil {
		return err
	}
	return d.listenTailnet()
}

func (d *Daemon) listenLoopback() error {
	addr := d.cfg.LoopbackAddress()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("loopback listener: %w", err)
	}
	// With port 0 the real port is known only now.
	hosts, err := transport.LoopbackHosts(ln.Addr().String())
	if err != nil {
		ln.Close()
		return err
	}
	var origins []string
	if lb := d.cfg.Listen.Loopback; lb != nil {
		origins = lb.AllowedOrigins
	}
	return d.addHTTPListener(httpListener{name: "loopback", ln: ln, hosts: hosts, origins: origins})
}

// httpListener is one HTTP listener the daemon serves MCP on.
type httpListener struct {
	// name is loopback, lan or tailnet: the caller's transport.
	name string
	// ln accepts connections (TLS already, for LAN; the tsnet node's, for
	// the Tailnet).
	ln net.Listener
	// addr is what Addresses reports (ln.Addr() when empty).
	addr string
	// hosts are the Host header values accepted; origins the browser
	// origins. hostAllowed, when set, is asked about any other Host (a
	// listener whose names change while it runs).
	hosts, origins []string
	hostAllowed    func(host string) bool
	// identify, when set, tells what the listener knows of the caller
	// beyond the key: the Tailnet identity (WhoIs).
	identify func(r *http.Request) (*policy.TailnetIdentity, error)
}

// addHTTPListener serves MCP on a listener behind the HTTP guards; Run
// starts it. It owns ln from here on, closing it on failure.
func (d *Daemon) addHTTPListener(l httpListener) error {
	auth := func(ctx context.Context, key, listenerName, source string, r *http.Request) (context.Context, error) {
		return d.authenticate(ctx, key, listenerName, source, r, l.identify)
	}
	g := d.cfg.HTTP.Guards()
	opts := transport.HTTPOptions{
		Listener: l.name,
		MCP: transport.NewStreamable(d.tools.MCP(), transport.StreamableOptions{
			Sessions: d.sessions, IdleTTL: g.SessionIdleTimeout.Std(), Logger: d.log,
		}),
		Authenticate:   auth,
		AllowedHosts:   l.hosts,
		HostAllowed:    l.hostAllowed,
		AllowedOrigins: l.origins,
		MaxBodyBytes:   g.MaxBodyBytes,
		Ready:          d.readiness,
		Refused: func(r *http.Request, status int, reason string) {
			d.metrics.Refusal(l.name, status)
			d.refusals.record(l.name, r, status, reason)
		},
		Sessions:     d.sessions,
		SessionOwner: sessionOwner,
		Logger:       d.log,
	}
	if l.name != "loopback" {
		opts.SourceLimiter = d.sourceLimiter
	}
	h, err := transport.NewHandler(opts)
	if err != nil {
		l.ln.Close()
		return err
	}
	srv := transport.NewServer(h, transport.Timeouts{ReadHeader: g.ReadHeaderTimeout.Std(), Read: g.ReadTimeout.Std(), Idle: g.IdleTimeout.Std()})
	if l.addr == "" {
		l.addr = l.ln.Addr().String()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		l.ln.Close()
		return fmt.Errorf("listener %s: %w", l.name, errStopping)
	}
	ln := &listener{name: l.name, addr: l.addr, ln: l.ln, srv: srv}
	d.listeners = append(d.listeners, ln)
	if d.running {
		d.serveLocked(ln)
	}
	return nil
}

// sessionOwner is who a session belongs to: the key, and the Tailnet user
// and node when the caller came over the tailnet, so that neither another
// key nor another Tailnet identity with the same key can use the session.
func sessionOwner(ctx context.Context) transport.SessionOwner {
	c, ok := tools.CallerFrom(ctx)
	if !ok {
		return transport.SessionOwner{}
	}
	o := transport.SessionOwner{Key: c.Principal.KeyID}
	if t := c.Principal.Tailnet; t != nil {
		o.Identity = "tailnet " + strconv.Quote(t.User) + " " + strconv.Quote(t.Node)
	}
	return o
}

// authenticate verifies a bearer key and makes the caller of the request.
func (d *Daemon) authenticate(ctx context.Context, key, listenerName, source string, r *http.Request,
	identify func(*http.Request) (*policy.TailnetIdentity, error)) (context.Context, error) {
	host := source
	if h, _, err := net.SplitHostPort(source); err == nil {
		host = h
	}
	// What the listener knows of the caller comes first: a caller it
	// cannot identify is refused (transport.ForbiddenError: 403) whatever
	// its key, and costs no key check.
	var tailnet *policy.TailnetIdentity
	if identify != nil {
		id, err := identify(r)
		if err != nil {
			return nil, fmt.Errorf("the %s listener could not tell who is calling: %w", listenerName, err)
		}
		tailnet = id
	}
	p, err := d.verify.Verify(ctx, key, host)
	if err != nil {
		if le := (*keys.LimitError)(nil); errors.As(err, &le) {
			return nil, &transport.RateLimitError{RetryAfter: max(le.RetryAfter, time.Second), Reason: le.Reason}
		}
		if errors.Is(err, keys.ErrRateLimited) {
			return nil, &transport.RateLimitError{RetryAfter: 10 * time.Second}
		}
		d.metrics.KeyFailure(listenerName)
		return nil, err
	}
	if ok, wait := d.keyLimiter.Allow(p.KeyID); !ok {
		return nil, &transport.RateLimitError{RetryAfter: wait, Reason: fmt.Sprintf("key %s is over its rate (http.rate_per_key)", p.KeyID)}
	}
	c, err := d.caller(ctx, p, listenerName, host)
	if err != nil {
		return nil, err
	}
	c.Principal.Tailnet = tailnet
	c.Key = keys.Secret(key)
	return tools.WithCaller(ctx, c), nil
}

// caller turns a verified key into the caller the tools see.
func (d *Daemon) caller(ctx context.Context, p keys.Principal, transportName, source string) (tools.Caller, error) {
	b := policy.Binding{Profile: p.Profile, Policy: p.Policy}
	tier, err := d.tierOf(ctx, b)
	if err != nil {
		return tools.Caller{}, err
	}
	return tools.Caller{
		Principal: policy.Principal{KeyID: p.KeyID, Name: p.Name, Profile: p.Profile, Policy: p.Policy, Transport: transportName, Source: source},
		Binding:   b,
		Tier:      tier,
	}, nil
}

// tierOf is the PVE token tier of a binding: a profile's own, a custom
// policy's declared tier, from the compiled policy (read once per change
// of the active version, like the decisions).
func (d *Daemon) tierOf(ctx context.Context, b policy.Binding) (tools.Tier, error) {
	t, err := d.engine.Tier(ctx, b)
	if err != nil {
		return "", fmt.Errorf("the key's binding %s: %w", b, err)
	}
	return tools.Tier(t), nil
}

// LocalRoot is the caller of `proxmox-mcp stdio --local-root`: uid 0 on the
// host itself, audited as local-root.
func LocalRoot() tools.Caller {
	return tools.Caller{
		Principal: policy.Principal{KeyID: "local-root", Name: "local-root", Profile: policy.Root, Transport: "stdio"},
		Binding:   policy.Binding{Profile: policy.Root},
		Tier:      tools.TierRoot,
	}
}

// StdioCaller verifies a key for a stdio session.
// While the key is checked (scrypt), the listing cases every policy
// shares are built; once it is accepted, the caller's own first listing
// (ServeStdio).
func (d *Daemon) StdioCaller(ctx context.Context, key string) (tools.Caller, error) {
	key = strings.TrimSpace(key)
	d.warm.start(ctx, func(context.Context) error { return d.engine.PrepareListing(d.schema.Current()) })
	p, err := d.verify.Verify(ctx, key, "stdio")
	if err != nil {
		return tools.Caller{}, fmt.Errorf("the key was not accepted: %w", err)
	}
	c, err := d.caller(ctx, p, "stdio", "")
	if err != nil {
		return tools.Caller{}, err
	}
	c.Key = keys.Secret(key)
	// The session lasts; before every call the key is verified again (a
	// cached check) and its caller made anew, so a revocation or expiry
	// stops it at once and a custom policy's new tier applies.
	var recheck func(context.Context) (tools.Caller, error)
	recheck = func(ctx context.Context) (tools.Caller, error) {
		p, err := d.verify.Verify(ctx, key, "stdio")
		if err != nil {
			return tools.Caller{}, err
		}
		fresh, err := d.caller(ctx, p, "stdio", "")
		fresh.Recheck = recheck
		fresh.Key = keys.Secret(key)
		return fresh, err
	}
	c.Recheck = recheck
	return c, nil
}

// ServeStdio serves one caller over stdin and stdout until they close.
func (d *Daemon) ServeStdio(ctx context.Context, in *os.File, out *os.File, c tools.Caller) error {
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	go d.schema.Watch(watchCtx) //nolint:errcheck // status reports watcher errors
	defer d.jrnl.Close()
	defer d.pve.close()
	// The session's one caller lists first, while the client is still
	// initializing: its visible tools are worked out now, and after a swap.
	defer d.warm.stop()
	defer stop()
	d.warm.start(watchCtx, func(ctx context.Context) error { return d.tools.Warm(ctx, c) })
	return transport.ServeStdio(ctx, d.tools.MCP(), in, out, func(ctx context.Context) context.Context {
		return tools.WithCaller(ctx, c)
	}, d.log)
}

// Reload re-reads apidoc.js and the configuration's switches (SIGHUP).
// Keys and policies need no reload: they are re-read when they change. A
// configuration that fails to parse keeps the running one and says why.
func (d *Daemon) Reload(ctx context.Context) error {
	d.lifecycle().Reloading("reloading apidoc.js and the configuration")
	err := d.reload(ctx)
	if err != nil {
		d.lastErr.set("reload", strings.TrimPrefix(err.Error(), "reload: ")+" (the running configuration stays)")
	} else {
		d.lastErr.set("reload", "")
	}
	d.lifecycle().Ready(d.StatusLine())
	return err
}

func (d *Daemon) reload(ctx context.Context) error {
	if _, err := d.schema.Reload(ctx); err != nil {
		d.log.Warn("daemon: reload: schema kept", "error", err)
	}
	// Keys and policies are re-read whenever their files change; a reload
	// reads them now, so that a broken file is reported here.
	if _, err := d.keys.Snapshot(); err != nil {
		return fmt.Errorf("reload: keys: %w", err)
	}
	if _, err := d.pstore.List(); err != nil {
		return fmt.Errorf("reload: policies: %w", err)
	}
	if d.opts.ConfigPath == "" {
		return nil
	}
	cfg, err := config.Load(d.opts.ConfigPath)
	if err != nil {
		return fmt.Errorf("reload: the configuration was not applied: %w", err)
	}
	if d.opts.StateDirOverride != "" {
		cfg.StateDir = d.opts.StateDirOverride
	}
	d.tools.SetSwitches(switchesOf(cfg))
	d.tools.SetProtected(protectedOf(cfg))
	d.log.Info("daemon: reloaded", "read_only", cfg.ReadOnly, "allow_mutations", cfg.AllowMutations, "preview_writes", cfg.Changes.PreviewWrites)
	if changed := restartFields(d.cfg, cfg); len(changed) > 0 {
		d.log.Warn("daemon: reload: these fields changed and take effect only after a restart", "fields", strings.Join(changed, ", "))
	}
	return nil
}

// switchesOf are the daemon-wide switches of a configuration.
func switchesOf(cfg *config.Config) tools.Switches {
	return tools.Switches{ReadOnly: cfg.ReadOnly, AllowMutations: cfg.AllowMutations, PreviewWrites: cfg.Changes.PreviewWrites}
}

// protectedOf are the protected guests of a configuration.
func protectedOf(cfg *config.Config) tools.ProtectedGuests {
	return tools.ProtectedGuests{VMIDs: cfg.Changes.ProtectedGuests.VMIDs, Tags: cfg.Changes.ProtectedGuests.Tags}
}

// restartFields names the top-level fields that differ between two
// configurations, the switches (which a reload applies) left aside.
func restartFields(running, next *config.Config) []string {
	flat := func(c *config.Config) map[string]json.RawMessage {
		e := c.Effective() // a default spelt out is no change
		e.ReadOnly, e.AllowMutations = false, false
		e.Changes.PreviewWrites, e.Changes.ProtectedGuests = false, config.ProtectedGuests{}
		b, _ := json.Marshal(e)
		m := map[string]json.RawMessage{}
		json.Unmarshal(b, &m) //nolint:errcheck // our own encoding
		return m
	}
	a, b := flat(running), flat(next)
	var out []string
	for k := range a {
		if string(a[k]) != string(b[k]) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// readiness is /readyz: the schema is the file's, the policy engine
// answers, PVE answers.
func (d *Daemon) readiness(ctx context.Context) map[string]string {
	out := map[string]string{}
	st := d.schema.Status()
	switch {
	case st.Healthy():
		out["schema"] = "ok"
	case st.Origin == schema.OriginCache:
		out["schema"] = "serving the last-known-good copy: " + st.LastError
	default:
		out["schema"] = "error: " + st.LastError
	}
	out["policy"] = "ok"
	if _, err := d.engine.Policy(ctx, policy.Binding{Profile: policy.ReadOnly}); err != nil {
		out["policy"] = "error: " + err.Error()
	}
	out["pve"] = d.pve.ping(ctx)
	if check, ok := d.clusterReadiness(); ok {
		out["cluster"] = check
	}
	if d.tailnet != nil {
		out["tailnet"] = d.tailnet.readiness()
	}
	return out
}

// auditor adapts the journal to the tools.
type auditor struct {
	j     *journal.Journal
	calls *callLog
}

func (a *auditor) Intent(ctx context.Context, c tools.AuditCall) (string, error) {
	ev, err := a.j.Intent(ctx, c.Journal())
	if err != nil {
		return "", err
	}
	a.calls.intent(ctx, ev.CallID, c)
	return ev.CallID, nil
}

func (a *auditor) Receipt(ctx context.Context, id string, o tools.AuditOutcome) error {
	_, err := a.j.Receipt(ctx, id, o.Journal())
	a.calls.receipt(ctx, id, o)
	return err
}

func (a *auditor) Record(ctx context.Context, c tools.AuditCall, o tools.AuditOutcome) error {
	_, err := a.j.Record(ctx, c.Journal(), o.Journal())
	a.calls.record(ctx, c, o)
	return err
}

// tierClients holds one PVE client per configured tier token.
type tierClients struct {
	clients map[tools.Tier]*pve.Client
	log     *slog.Logger
}

func newTierClients(cfg *config.Config, log *slog.Logger, observe func(method, path string, status int, d time.Duration)) (*tierClients, error) {
	tc := &tierClients{clients: map[tools.Tier]*pve.Client{}, log: log}
	if len(cfg.PVE.Tokens) == 0 {
		return tc, nil
	}
	fp, certFile, caFile, err := cfg.PVETrust(func(p string) bool { _, err := os.Stat(p); return err == nil })
	if err != nil {
		return nil, err
	}
	trust := pve.TLSTrust{CertFile: certFile, CAFile: caFile}
	if fp != "" {
		trust.Fingerprints = []string{fp}
	}
	for tier, tok := range cfg.PVE.Tokens {
		secret, err := os.ReadFile(tok.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("pve.tokens.%s: %w", tier, err)
		}
		c, err := pve.New(pve.Config{
			BaseURL: cfg.PVEURL(), Token: pve.Token{ID: tok.ID, Secret: pve.Secret(strings.TrimSpace(string(secret)))},
			TLS: trust, UserAgent: "proxmox-mcp", Logger: log, Observe: observe,
		})
		if err != nil {
			return nil, fmt.Errorf("pve.tokens.%s: %w", tier, err)
		}
		tc.clients[tools.Tier(tier)] = c
	}
	return tc, nil
}

// Client returns the client of a tier.
func (tc *tierClients) Client(t tools.Tier) (*pve.Client, error) {
	if c := tc.clients[t]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no PVE token is configured for the %s tier (pve.tokens.%s)", t, t)
}

// ping asks PVE for its version with the least privileged token there is.
func (tc *tierClients) ping(ctx context.Context) string {
	for _, t := range []tools.Tier{tools.TierReadOnly, tools.TierOperator, tools.TierAdmin, tools.TierRoot} {
		if c := tc.clients[t]; c != nil {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if err := c.Get(pctx, "/version", nil, nil); err != nil {
				return "unreachable: " + err.Error()
			}
			return "ok"
		}
	}
	return "no PVE token configured"
}

func (tc *tierClients) close() {
	for _, c := range tc.clients {
		c.Close()
	}
}
