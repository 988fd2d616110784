package changes

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var (
	rcRegOnce sync.Once
	rcReg     *schema.Registry
	rcRegErr  error
)

// rcRegistry is the real PVE 9.1 schema, parsed once per test binary.
func rcRegistry(tb testing.TB) *schema.Registry {
	tb.Helper()
	const path = "../../shared/fixtures/pve-9.1/apidoc.js"
	if _, err := os.Stat(path); os.IsNotExist(err) {
		tb.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", path)
	}
	rcRegOnce.Do(func() { rcReg, rcRegErr = schema.ParseFile(path) })
	if rcRegErr != nil {
		tb.Fatal(rcRegErr)
	}
	return rcReg
}

type rcSchema struct{ r *schema.Registry }

func (s rcSchema) Current() *schema.Registry { return s.r }

// rcEnv is the simulator on a manual clock, a real journal on the same
// clock, a client per tier token and a reconciler reading with the
// read-only one.
type rcEnv struct {
	t       testing.TB
	sim     *sim.Sim
	clock   *sim.ManualClock
	srv     *httptest.Server
	j       *journal.Journal
	reg     *schema.Registry
	clients map[string]*pve.Client
	rc      *Reconciler
}

var rcEpoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

var rcTokens = []string{"mcp@pve!read-only", "mcp@pve!operator", "mcp@pve!admin", "mcp@pve!root"}

func newRCEnv(t testing.TB) *rcEnv {
	t.Helper()
	reg := rcRegistry(t)
	clock := sim.NewManualClock(rcEpoch)
	s, err := sim.New(sim.Options{Registry: reg, Clock: clock, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.EnableHTTP2 = false
	srv.StartTLS()
	t.Cleanup(srv.Close)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), journal.Options{Now: clock.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	e := &rcEnv{t: t, sim: s, clock: clock, srv: srv, j: j, reg: reg, clients: map[string]*pve.Client{}}
	for _, id := range rcTokens {
		tok, ok := s.Token(id)
		if !ok {
			t.Fatalf("the simulator has no token %s", id)
		}
		c, err := pve.New(pve.Config{BaseURL: srv.URL + sim.APIPrefix, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)},
			TLS:   pve.TLSTrust{Fingerprints: []string{pve.Fingerprint(srv.Certificate().Raw)}},
			Retry: pve.RetryPolicy{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		e.clients[id] = c
	}
	e.rc = e.reconciler(ReconcilerOptions{})
	return e
}

func (e *rcEnv) reconciler(o ReconcilerOptions) *Reconciler {
	e.t.Helper()
	o.Ledger, o.PVE, o.Now = e.j, e.clients["mcp@pve!read-only"], e.clock.Now
	if o.Schema == nil {
		o.Schema = rcSchema{e.reg}
	}
	if o.Tokens == nil {
		o.Tokens = rcTokens
	}
	rc, err := NewReconciler(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return rc
}

var rcAlice = journal.Principal{KeyID: "aliceaaaaaaaaaaa", KeyName: "rcAlice", Profile: "operator", Transport: "loopback", Source: "127.0.0.1:4000"}

// rcWrite is a write as the tools make it: the intent (for a config edit,
// with the configuration read just before and its digest sent), then,
// unless the daemon "crashes" (send false), the request to PVE. It returns
// the operation id and PVE's error, if any.
type rcWrite struct {
	token, method, template, path string
	args                          map[string]any
	send                          bool
}

func (e *rcEnv) intend(w rcWrite) (string, error) {
	e.t.Helper()
	c := e.clients[w.token]
	call := journal.Call{Principal: rcAlice, Tool: "proxmox_api_call", Method: w.method, PathTemplate: w.template, Path: w.path,
		Risk: "write", Args: w.args, Decision: journal.Decision{Effect: "allow", Policy: "operator"}, Detail: &journal.Detail{Token: w.token}}
	form := url.Values{}
	for k, v := range w.args {
		if strings.HasPrefix(w.template, "/nodes/{node}") && (k == "node" || (k == "vmid" && strings.Contains(w.template, "{vmid}"))) {
			continue
		}
		t, _ := configText(v)
		form.Set(k, t)
	}
	if ep := e.reg.Lookup(w.method, w.template); ep != nil && ep.Facts.ConfigEdit {
		var conf map[string]any
		if err := c.Get(context.Background(), w.path, nil, &conf); err != nil {
			e.t.Fatal(err)
		}
		call.PriorDigest, call.PriorConfig = conf["digest"].(string), conf
		form.Set("digest", call.PriorDigest)
	}
	in, err := e.j.Intent(context.Background(), call)
	if err != nil {
		e.t.Fatal(err)
	}
	if !w.send {
		return in.CallID, nil
	}
	resp, err := c.Do(context.Background(), w.method, w.path, form)
	if err == nil {
		var upid string
		_ = json.Unmarshal(resp.Data, &upid)
		if _, rerr := e.j.Receipt(context.Background(), in.CallID, journal.Result{Outcome: journal.OutcomeOK, UPID: upid}); rerr != nil {
			e.t.Fatal(rerr)
		}
	} else if errors.Is(err, pve.ErrOutcomeUnknown) {
		if _, rerr := e.j.Receipt(context.Background(), in.CallID, journal.Result{Outcome: journal.OutcomeUncertain, Error: err.Error()}); rerr != nil {
			e.t.Fatal(rerr)
		}
	}
	return in.CallID, err
}

// crash is a write sent with the answer lost and no receipt written: the
// daemon died between sending and recording.
func (e *rcEnv) crash(w rcWrite) string {
	e.t.Helper()
	e.sim.InjectFault(sim.Fault{Method: w.method, Path: w.path, DropAfterApply: true, Times: 1})
	w.send = false
	id, _ := e.intend(w)
	c := e.clients[w.token]
	form := url.Values{}
	for k, v := range w.args {
		if k == "node" || (k == "vmid" && strings.Contains(w.template, "{vmid}")) {
			continue
		}
		t, _ := configText(v)
		form.Set(k, t)
	}
	evs, _ := e.j.CallEvents(context.Background(), id)
	if d := evs[0].PriorDigest; d != "" {
		form.Set("digest", d)
	}
	if _, err := c.Do(context.Background(), w.method, w.path, form); !errors.Is(err, pve.ErrOutcomeUnknown) {
		e.t.Fatalf("the dropped %s %s answered: %v", w.method, w.path, err)
	}
	return id
}

func (e *rcEnv) reconcile(id string, req Request) Verdict {
	e.t.Helper()
	v, err := e.rc.Reconcile(context.Background(), id, req)
	if err != nil {
		e.t.Fatalf("reconcile %s: %v", id, err)
	}
	return v
}

func (e *rcEnv) op(id string) *Operation {
	e.t.Helper()
	evs, err := e.j.CallEvents(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	op, err := ReadOperation(evs)
	if err != nil {
		e.t.Fatal(err)
	}
	return op
}

var (
	rcStart101 = rcWrite{token: "mcp@pve!operator", method: "POST", template: "/nodes/{node}/qemu/{vmid}/status/start",
		path: "/nodes/pve1/qemu/101/status/start", args: map[string]any{"node": "pve1", "vmid": 101}}
	rcMemory100 = rcWrite{token: "mcp@pve!admin", method: "PUT", template: "/nodes/{node}/qemu/{vmid}/config",
		path: "/nodes/pve1/qemu/100/config", args: map[string]any{"node": "pve1", "vmid": 100, "memory": 3072}}
)

func rcHasEvidence(v Verdict, kind, says string) bool {
	for _, e := range v.Evidence {
		if e.Kind == kind && strings.Contains(e.Says, says) {
			return true
		}
	}
	return false
}

// Each kind of evidence settles what it shows and no more: a task found
// in the index, the receipt's task, a failed task, a running one, the
// configuration's digest and values, the guest's existence; nothing shown
// is unknown, never applied.
func TestReconcileEvidence(t *testing.T) {
	ctx := context.Background()
	close := Request{Close: true}

	t.Run("open intent, the write took effect: its task in the index", func(t *testing.T) {
		e := newRCEnv(t)
		id := e.crash(rcStart101)
		e.clock.Advance(time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateApplied || !v.Judged || v.Closed != journal.OutcomeOK || v.UPID == "" || len(v.Rows) != 2 {
			t.Fatalf("verdict %+v", v)
		}
		if !rcHasEvidence(v, EvidenceTask, "the only qmstart or hastart task of 101") {
			t.Errorf("evidence %+v", v.Evidence)
		}
		op := e.op(id)
		if op.Receipt == nil || op.Receipt.UPID != v.UPID || op.Receipt.Outcome != journal.OutcomeOK || op.State() != journal.StateApplied {
			t.Errorf("journal: receipt %+v, state %s", op.Receipt, op.State())
		}
	})

	t.Run("open intent, never sent: nothing shows, unknown", func(t *testing.T) {
		e := newRCEnv(t)
		w := rcStart101
		id, _ := e.intend(w)
		e.clock.Advance(time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateUnknown || v.Closed != journal.OutcomeUncertain || v.UPID != "" {
			t.Fatalf("verdict %+v", v)
		}
		if !rcHasEvidence(v, EvidenceTask, "shows no qmstart or hastart task of 101 by mcp@pve!operator") {
			t.Errorf("evidence %+v", v.Evidence)
		}
		if op := e.op(id); op.Receipt.Error == "" || op.State() != journal.StateUnknown {
			t.Errorf("receipt %+v", op.Receipt)
		}
	})

	t.Run("uncertain receipt: the task in the index", func(t *testing.T) {
		e := newRCEnv(t)
		e.sim.InjectFault(sim.Fault{Method: "POST", Path: rcStart101.path, DropAfterApply: true, Times: 1})
		w := rcStart101
		w.send = true
		id, err := e.intend(w)
		if !errors.Is(err, pve.ErrOutcomeUnknown) {
			t.Fatalf("answer %v", err)
		}
		e.clock.Advance(time.Minute)
		v := e.reconcile(id, Request{})
		if v.State != journal.StateApplied || v.Closed != "" || len(v.Rows) != 1 {
			t.Fatalf("verdict %+v", v)
		}
		// Settled: asked again, it is not re-judged.
		again := e.reconcile(id, Request{})
		if again.Judged || again.State != journal.StateApplied || !strings.Contains(again.Reason, "settled by resolution") || len(again.Rows) != 0 {
			t.Errorf("second verdict %+v", again)
		}
		// Unless asked to.
		if re := e.reconcile(id, Request{Again: true}); !re.Judged || re.State != journal.StateApplied {
			t.Errorf("re-judged %+v", re)
		}
	})

	t.Run("a failed task: not applied", func(t *testing.T) {
		e := newRCEnv(t)
		e.sim.InjectTaskFault(sim.TaskFault{Type: "qmstart", Fail: "simulated: could not start"})
		id := e.crash(rcStart101)
		e.clock.Advance(time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateNotApplied || v.Closed != journal.OutcomeTaskFailed || !rcHasEvidence(v, EvidenceTask, "failed: simulated: could not start") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("a running task: closed as running, judged when it ends", func(t *testing.T) {
		e := newRCEnv(t)
		id := e.crash(rcStart101)
		v := e.reconcile(id, close)
		if v.Judged || v.Closed != journal.OutcomeTaskRunning || v.UPID == "" || len(v.Rows) != 1 || e.op(id).State() != string(journal.OutcomeTaskRunning) {
			t.Fatalf("verdict %+v", v)
		}
		e.clock.Advance(time.Minute)
		later := e.reconcile(id, Request{})
		if later.State != journal.StateApplied || !later.Judged || later.UPID != v.UPID || !rcHasEvidence(later, EvidenceTask, "ended OK") {
			t.Fatalf("later %+v", later)
		}
	})

	t.Run("an answered rcWrite is not judged", func(t *testing.T) {
		e := newRCEnv(t)
		w := rcStart101
		w.send = true
		id, err := e.intend(w)
		if err != nil {
			t.Fatal(err)
		}
		v := e.reconcile(id, Request{})
		if v.Judged || v.State != string(journal.OutcomeOK) || len(v.Rows) != 0 {
			t.Errorf("verdict %+v", v)
		}
	})

	t.Run("a young open intent is left alone unless nothing is in flight", func(t *testing.T) {
		e := newRCEnv(t)
		id, _ := e.intend(rcStart101)
		if v := e.reconcile(id, Request{}); v.Judged || len(v.Rows) != 0 || !strings.Contains(v.Reason, "in flight") {
			t.Errorf("verdict %+v", v)
		}
		if e.op(id).Receipt != nil {
			t.Error("a young open intent was closed")
		}
	})

	t.Run("config edit applied: digest changed, every value present", func(t *testing.T) {
		e := newRCEnv(t)
		id := e.crash(rcMemory100)
		e.clock.Advance(time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateApplied || v.Closed != journal.OutcomeOK || !rcHasEvidence(v, EvidenceConfig, "every requested value") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("config edit never sent: the same digest, once it cannot be in flight", func(t *testing.T) {
		e := newRCEnv(t)
		id, _ := e.intend(rcMemory100)
		early := e.reconcile(id, close)
		if early.State != journal.StateUnknown || !rcHasEvidence(early, EvidenceConfig, "may still be in flight") {
			t.Fatalf("early verdict %+v", early)
		}
		e.clock.Advance(2 * time.Minute)
		v := e.reconcile(id, Request{})
		if v.State != journal.StateNotApplied || !rcHasEvidence(v, EvidenceConfig, "the one the edit was planned against") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("config edit refused by PVE (500), receipt lost: not applied", func(t *testing.T) {
		e := newRCEnv(t)
		e.sim.InjectFault(sim.Fault{Method: "PUT", Path: rcMemory100.path, Status: 500, Message: "simulated failure", Times: 1})
		w := rcMemory100
		w.send = true
		id, err := e.intend(w) // a 500 is an answer: the test records no receipt, as a crash before it would
		var apiErr *pve.APIError
		if !errors.As(err, &apiErr) || e.op(id).Receipt != nil {
			t.Fatalf("answer %v", err)
		}
		e.clock.Advance(2 * time.Minute)
		if v := e.reconcile(id, close); v.State != journal.StateNotApplied || v.Closed != journal.OutcomeUncertain {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("config changed by someone else, not as requested: unknown", func(t *testing.T) {
		e := newRCEnv(t)
		id, _ := e.intend(rcMemory100)
		if _, err := e.clients["mcp@pve!admin"].Do(ctx, "PUT", rcMemory100.path, url.Values{"cores": {"3"}}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateUnknown || !rcHasEvidence(v, EvidenceConfig, "memory is \"") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("config edit applied, then changed back: the journal saw it", func(t *testing.T) {
		e := newRCEnv(t)
		id := e.crash(rcMemory100)
		// A later read recorded the configuration as it was after the edit.
		var conf map[string]any
		if err := e.clients["mcp@pve!read-only"].Get(ctx, rcMemory100.path, nil, &conf); err != nil {
			t.Fatal(err)
		}
		if _, err := e.j.Observe(ctx, journal.Observation{Principal: rcAlice, Tool: "proxmox_api_call", PathTemplate: rcMemory100.template, Path: rcMemory100.path,
			Digest: conf["digest"].(string), Config: conf}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.clients["mcp@pve!admin"].Do(ctx, "PUT", rcMemory100.path, url.Values{"memory": {"2048"}}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateApplied || !rcHasEvidence(v, EvidenceConfig, "journal row") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("a task another operation's receipt claims is not this one's", func(t *testing.T) {
		e := newRCEnv(t)
		first := rcStart101
		first.send = true
		if _, err := e.intend(first); err != nil {
			t.Fatal(err)
		}
		id, _ := e.intend(rcStart101) // the retry: never sent
		e.clock.Advance(time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateUnknown || v.UPID != "" || !rcHasEvidence(v, EvidenceTask, "is operation") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("two open operations and one task: neither is judged applied", func(t *testing.T) {
		e := newRCEnv(t)
		a, _ := e.intend(rcStart101) // never sent
		b := e.crash(rcStart101)     // sent, answer lost
		e.clock.Advance(time.Minute)
		for _, id := range []string{a, b} {
			if v := e.reconcile(id, close); v.State != journal.StateUnknown || !rcHasEvidence(v, EvidenceTask, "the same request, its outcome unknown too") {
				t.Errorf("verdict of %s: %+v", id, v)
			}
		}
	})

	t.Run("a destroy: its task, or else the guest's absence", func(t *testing.T) {
		e := newRCEnv(t)
		w := rcWrite{token: "mcp@pve!admin", method: "DELETE", template: "/nodes/{node}/qemu/{vmid}", path: "/nodes/pve1/qemu/101",
			args: map[string]any{"node": "pve1", "vmid": 101}}
		// 101 is protected: PVE refuses, the refusal is lost, the guest
		// is still there.
		id := e.crash(w)
		e.clock.Advance(2 * time.Minute)
		if v := e.reconcile(id, close); v.State != journal.StateNotApplied || !rcHasEvidence(v, EvidenceGuest, "guest 101 still exists (on pve1)") {
			t.Fatalf("verdict %+v", v)
		}
		w.path, w.args = "/nodes/pve1/qemu/9000", map[string]any{"node": "pve1", "vmid": 9000}
		id = e.crash(w)
		e.clock.Advance(2 * time.Minute)
		if v := e.reconcile(id, close); v.State != journal.StateApplied || !rcHasEvidence(v, EvidenceTask, "qmdestroy") {
			t.Fatalf("verdict %+v", v)
		}
		// Another token destroyed the guest the intent named: no task of
		// the intent's token, and the guest is gone.
		w = rcWrite{token: "mcp@pve!operator", method: "DELETE", template: "/nodes/{node}/lxc/{vmid}", path: "/nodes/pve2/lxc/201",
			args: map[string]any{"node": "pve2", "vmid": 201}}
		other, _ := e.intend(w)
		if _, err := e.clients["mcp@pve!admin"].Do(ctx, "DELETE", w.path, nil); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		if v := e.reconcile(other, close); v.State != journal.StateApplied || !rcHasEvidence(v, EvidenceGuest, "no guest has VMID 201 any more") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("a create never sent: no task, no guest", func(t *testing.T) {
		e := newRCEnv(t)
		create := rcWrite{token: "mcp@pve!admin", method: "POST", template: "/nodes/{node}/qemu", path: "/nodes/pve1/qemu",
			args: map[string]any{"node": "pve1", "vmid": 150, "memory": 512}}
		id, _ := e.intend(create)
		e.clock.Advance(2 * time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateNotApplied || !rcHasEvidence(v, EvidenceGuest, "no guest has VMID 150") {
			t.Fatalf("verdict %+v", v)
		}
	})

	t.Run("config edit of a guest that moved: read where it is now", func(t *testing.T) {
		e := newRCEnv(t)
		w := rcMemory100
		w.path, w.args = "/nodes/pve1/qemu/101/config", map[string]any{"node": "pve1", "vmid": 101, "memory": 1536}
		id := e.crash(w)
		if _, err := e.clients["mcp@pve!admin"].Do(ctx, "POST", "/nodes/pve1/qemu/101/migrate", url.Values{"target": {"pve2"}}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(5 * time.Minute)
		v := e.reconcile(id, close)
		if v.State != journal.StateApplied || v.Node != "pve2" || !rcHasEvidence(v, EvidenceConfig, "/nodes/pve2/qemu/101/config has digest") {
			t.Fatalf("verdict %+v", v)
		}
	})
}

// ReconcileOpen closes every open intent, judging each, and counts what
// it found.
func TestReconcileOpen(t *testing.T) {
	e := newRCEnv(t)
	applied := e.crash(rcStart101)
	lost, _ := e.intend(rcMemory100)
	answered := rcWrite{token: "mcp@pve!operator", method: "POST", template: "/nodes/{node}/lxc/{vmid}/status/start",
		path: "/nodes/pve2/lxc/201/status/start", args: map[string]any{"node": "pve2", "vmid": 201}, send: true}
	if _, err := e.intend(answered); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	var calls []int
	sum, err := e.rc.ReconcileOpen(context.Background(), time.Time{}, Request{Close: true}, func(done, total int) {
		if total != 2 {
			t.Errorf("progress total %d", total)
		}
		calls = append(calls, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Open != 2 || sum.Applied != 1 || sum.NotApplied != 1 || sum.Unknown != 0 || sum.Failed != 0 || len(calls) != 2 {
		t.Fatalf("summary %+v, progress %v", sum, calls)
	}
	for id, want := range map[string]string{applied: journal.StateApplied, lost: journal.StateNotApplied} {
		if got := e.op(id).State(); got != want {
			t.Errorf("%s: state %s, want %s", id, got, want)
		}
	}
	if open, _ := e.j.OpenIntents(context.Background(), time.Time{}); len(open) != 0 {
		t.Errorf("open intents left: %d", len(open))
	}
	if _, err := e.j.Verify(context.Background()); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// An open intent a person settled is closed by the next pass as it was
// settled: a receipt, no new verdict.
func TestReconcileClosesAPersonsVerdict(t *testing.T) {
	e := newRCEnv(t)
	id, _ := e.intend(rcStart101)
	if _, err := e.j.Resolve(context.Background(), journal.Resolution{CallID: id, State: journal.StateNotApplied,
		By: journal.Principal{KeyID: "local-root", KeyName: "root", Transport: "stdio"}, Tool: "audit resolve", Reason: "checked by hand",
		Evidence: []journal.Evidence{{Kind: EvidencePerson, Says: "checked by hand"}}}); err != nil {
		t.Fatal(err)
	}
	sum, err := e.rc.ReconcileOpen(context.Background(), time.Time{}, Request{Close: true}, nil)
	if err != nil || sum.Open != 1 || sum.NotApplied != 1 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	op := e.op(id)
	if op.Receipt == nil || op.Receipt.Outcome != journal.OutcomeUncertain || len(op.Resolutions) != 1 || op.State() != journal.StateNotApplied {
		t.Errorf("receipt %+v, resolutions %d, state %s", op.Receipt, len(op.Resolutions), op.State())
	}
}

// An id that is not an operation is refused, saying so.
func TestReconcileNotAnOperation(t *testing.T) {
	e := newRCEnv(t)
	ev, err := e.j.Record(context.Background(), journal.Call{Principal: rcAlice, Tool: "proxmox_api_search"}, journal.Result{Outcome: journal.OutcomeOK})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rc.Reconcile(context.Background(), ev.CallID, Request{}); !errors.Is(err, ErrNotOperation) {
		t.Errorf("a read reconciled: %v", err)
	}
}

// Every endpoint the task table names exists in PVE 9.1's schema, and
// starts a task there (its answer is a UPID string; the LXC template's
// worker is the one whose UPID PVE does not return).
func TestTaskKindsAreEndpoints(t *testing.T) {
	reg := rcRegistry(t)
	for key := range taskKinds {
		method, path, _ := strings.Cut(key, " ")
		ep := reg.Lookup(method, path)
		if ep == nil {
			t.Errorf("%s: not in the PVE 9.1 schema", key)
			continue
		}
		var ret struct {
			Type string `json:"type"`
		}
		if len(ep.Returns) > 0 {
			_ = json.Unmarshal(ep.Returns, &ret)
		}
		if ret.Type != "string" && ret.Type != "" && key != "POST /nodes/{node}/lxc/{vmid}/template" {
			t.Errorf("%s returns %s, not a UPID string", key, ret.Type)
		}
	}
	for key, eff := range guestEffects {
		method, path, _ := strings.Cut(key, " ")
		ep := reg.Lookup(method, path)
		if ep == nil || ep.Param(eff.arg) == nil {
			t.Errorf("%s: no such endpoint, or no parameter %s", key, eff.arg)
		}
	}
}
