package tools

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var (
	regOnce sync.Once
	reg91   *schema.Registry
	regErr  error
)

// builtinProfiles are the built-in profiles compiled once for the
// package's engines (each compiling its own cost 0.4 s under -race, a
// third of the package's run).
var builtinProfiles = sync.OnceValues(func() (*policy.CompiledProfiles, error) {
	return policy.CompileProfiles(context.Background())
})

// engineOptions are opts with the package's compiled profiles.
func engineOptions(t testing.TB, opts policy.EngineOptions) policy.EngineOptions {
	t.Helper()
	profiles, err := builtinProfiles()
	if err != nil {
		t.Fatal(err)
	}
	opts.Profiles = profiles
	return opts
}

func realRegistry(t testing.TB) *schema.Registry {
	t.Helper()
	const path = "../../shared/fixtures/pve-9.1/apidoc.js"
	if _, err := os.Stat(path); os.IsNotExist(err) {
		t.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", path)
	}
	regOnce.Do(func() { reg91, regErr = schema.ParseFile(path) })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return reg91
}

// staticRegistry serves one registry as the live one.
type staticRegistry struct{ r *schema.Registry }

func (s staticRegistry) Current() *schema.Registry { return s.r }
func (s staticRegistry) Status() schema.Status {
	return schema.Status{Source: "test", Origin: schema.OriginFile, SHA256: s.r.SHA256(), Paths: s.r.Paths(), Methods: s.r.Methods()}
}

// recorder is an in-memory journal that keeps every row.
type recorder struct {
	mu       sync.Mutex
	intents  map[string]AuditCall
	receipts map[string]AuditOutcome
	records  []recorded
	n        int
	fail     error // when set, every write fails
}

type recorded struct {
	call AuditCall
	out  AuditOutcome
}

func newRecorder() *recorder {
	return &recorder{intents: map[string]AuditCall{}, receipts: map[string]AuditOutcome{}}
}

func (r *recorder) Intent(ctx context.Context, call AuditCall) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return "", r.fail
	}
	// What the journal would refuse, the recorder refuses too.
	if err := journal.CheckIntent(call.Journal()); err != nil {
		return "", fmt.Errorf("journal: %w", err)
	}
	r.n++
	id := fmt.Sprintf("call-%d", r.n)
	r.intents[id] = call
	return id, nil
}

func (r *recorder) Receipt(ctx context.Context, id string, out AuditOutcome) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.intents[id]; !ok {
		return fmt.Errorf("receipt for unknown call %s", id)
	}
	r.receipts[id] = out
	return nil
}

func (r *recorder) Record(ctx context.Context, call AuditCall, out AuditOutcome) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	if err := journal.CheckRecord(call.Journal(), out.Journal()); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	r.records = append(r.records, recorded{call, out})
	return nil
}

// last returns the last finished call of any kind: a record or a receipt.
func (r *recorder) outcomes() []journal.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []journal.Outcome
	for _, rec := range r.records {
		out = append(out, rec.out.Outcome)
	}
	for _, o := range r.receipts {
		out = append(out, o.Outcome)
	}
	return out
}

// openGuard finds nothing protected.
type openGuard struct{}

func (openGuard) Check(context.Context, *schema.Endpoint, map[string]string, map[string]any) policy.Guard {
	return policy.Guard{Evaluated: true}
}

// simTiers gives each tier the simulator's token of that tier.
type simTiers struct {
	t       testing.TB
	sim     *sim.Sim
	url     string
	fp      string
	mu      sync.Mutex
	clients map[Tier]*pve.Client
}

func (p *simTiers) Client(tier Tier) (*pve.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clients[tier]; c != nil {
		return c, nil
	}
	tok, ok := p.sim.Token("mcp@pve!" + string(tier))
	if !ok {
		return nil, fmt.Errorf("no token for tier %s", tier)
	}
	c, err := pve.New(pve.Config{BaseURL: p.url, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)},
		TLS: pve.TLSTrust{Fingerprints: []string{p.fp}}})
	if err != nil {
		return nil, err
	}
	p.clients[tier] = c
	return c, nil
}

// harness is a tool server on a simulator, the real policy engine and an
// in-memory journal.
type harness struct {
	t      testing.TB
	srv    *Server
	sim    *sim.Sim
	clock  *sim.ManualClock
	audit  *recorder
	engine *policy.Engine
	store  *policy.Store
	// journal is the real journal, with harnessOpts.journal.
	journal *journal.Journal
}

type harnessOpts struct {
	mode     Mode
	switches *Switches
	limits   Limits
	clock    bool // a manual clock for the simulator
	extra    []server.ServerTool
	// reg replaces the real PVE 9.1 registry (the simulator's built-in
	// demo schema, for tests that must run without the fixtures).
	reg *schema.Registry
	// engine configures the policy engine (bounds, for slow policies).
	engine policy.EngineOptions
	// protected are the protected guests.
	protected ProtectedGuests
	// journal records into a real journal (SQLite in a temporary
	// directory), which is also the ledger of the change contract; the
	// recorder is then unused.
	journal bool
	// host reaches a root helper for the host tools.
	host HostOptions
	// answerText is the form of answers' text.
	answerText AnswerText
	// logger receives the server's and the journal's logs (discarded
	// when nil); journalDir, when set, is where the journal's files go.
	logger     *slog.Logger
	journalDir string
	// resolver resolves the hosts of downloads (the system's when nil).
	resolver plan.Resolver
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	reg := o.reg
	if reg == nil {
		reg = realRegistry(t)
	}
	var clk sim.Clock = sim.RealClock{}
	var manual *sim.ManualClock
	if o.clock {
		manual = sim.NewManualClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
		clk = manual
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: 3, Clock: clk, TaskDuration: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.EnableHTTP2 = false
	ts.StartTLS()
	t.Cleanup(ts.Close)
	store, err := policy.NewStore(t.TempDir(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := policy.NewEngine(context.Background(), store, engineOptions(t, o.engine))
	if err != nil {
		t.Fatal(err)
	}
	sw := Switches{AllowMutations: true}
	if o.switches != nil {
		sw = *o.switches
	}
	key := make([]byte, 32)
	rand.Read(key) //nolint:errcheck // crypto/rand does not fail
	audit := newRecorder()
	var auditor Auditor = audit
	var ledger Ledger
	var jrnl *journal.Journal
	var reconciler Reconciler
	tiers := &simTiers{t: t, sim: s, url: ts.URL + sim.APIPrefix, fp: pve.Fingerprint(ts.Certificate().Raw), clients: map[Tier]*pve.Client{}}
	if o.journal {
		dir, jlog := o.journalDir, o.logger
		if dir == "" {
			dir = t.TempDir()
		}
		if jlog == nil {
			jlog = slog.New(slog.DiscardHandler)
		}
		j, err := journal.Open(context.Background(), filepath.Join(dir, "journal.db"), journal.Options{Logger: jlog})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		auditor, ledger, jrnl = journalAuditor{j}, j, j
		reader, err := tiers.Client(TierReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := changes.NewReconciler(changes.ReconcilerOptions{Ledger: j, PVE: reader, Schema: staticRegistry{reg},
			Tokens: []string{"mcp@pve!read-only", "mcp@pve!operator", "mcp@pve!admin", "mcp@pve!root"}})
		if err != nil {
			t.Fatal(err)
		}
		reconciler = rc
	}
	srv, err := New(Options{
		Name: "proxmox-mcp", Version: "test", Mode: o.mode,
		Registry: staticRegistry{reg}, Policy: engine, Audit: auditor, Ledger: ledger, Reconciler: reconciler, Guard: openGuard{},
		PVE:      tiers,
		Switches: sw, Limits: o.limits, AnswerText: o.answerText, ConfirmKey: key, Extra: o.extra, Protected: o.protected, Host: o.host,
		Logger: o.logger, Resolver: o.resolver,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, sim: s, clock: manual, audit: audit, engine: engine, store: store, journal: jrnl}
}

// journalAuditor records into a real journal, as the daemon's auditor does.
type journalAuditor struct{ j *journal.Journal }

func (a journalAuditor) Intent(ctx context.Context, c AuditCall) (string, error) {
	ev, err := a.j.Intent(ctx, c.Journal())
	return ev.CallID, err
}

func (a journalAuditor) Receipt(ctx context.Context, id string, o AuditOutcome) error {
	_, err := a.j.Receipt(ctx, id, o.Journal())
	return err
}

func (a journalAuditor) Record(ctx context.Context, c AuditCall, o AuditOutcome) error {
	_, err := a.j.Record(ctx, c.Journal(), o.Journal())
	return err
}

// as returns an in-process MCP client and a context carrying the caller of
// a key bound to a profile (or a custom policy id when policyID is set).
func (h *harness) as(profile string, policyID ...string) (*client.Client, context.Context) {
	h.t.Helper()
	return h.asWith(profile, nil, policyID...)
}

// asWith is as with a client that answers elicitations with person (nil:
// a client without elicitation).
func (h *harness) asWith(profile string, person client.ElicitationHandler, policyID ...string) (*client.Client, context.Context) {
	h.t.Helper()
	b := policy.Binding{Profile: profile}
	tier := Tier(profile)
	if len(policyID) > 0 {
		b = policy.Binding{Policy: policyID[0]}
		tier = TierAdmin
	}
	caller := Caller{
		Principal: policy.Principal{KeyID: "k" + strings.ReplaceAll(profile, "-", ""), Name: profile + "-key", Profile: b.Profile, Policy: b.Policy, Transport: "loopback", Source: "127.0.0.1"},
		Binding:   b,
		Tier:      tier,
	}
	return h.session(caller, person)
}

// session is an initialized in-process client whose requests carry the
// caller, answering elicitations with person (nil: none).
func (h *harness) session(caller Caller, person client.ElicitationHandler) (*client.Client, context.Context) {
	h.t.Helper()
	ctx := WithCaller(context.Background(), caller)
	var opts []client.ClientOption
	if person != nil {
		opts = append(opts, client.WithElicitationHandler(person))
	}
	c, err := client.NewInProcessClientWithOptions(h.srv.MCP(), opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "tools-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c, ctx
}

// call invokes a tool and returns the result and its structured content.
func call(t testing.TB, c *client.Client, ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var content map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &content) //nolint:errcheck // our own content
	}
	return res, content
}

func toolNames(t *testing.T, c *client.Client, ctx context.Context) []string {
	t.Helper()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}
