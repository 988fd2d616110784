package changes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Kinds of evidence (journal.Evidence.Kind).
const (
	// EvidenceTask is a task in PVE's task index: the one a receipt
	// names, or one that matches the operation.
	EvidenceTask = "task"
	// EvidenceConfig is a configuration's digest and values: as PVE
	// serves it now, or as the journal saw it after the write.
	EvidenceConfig = "config"
	// EvidenceGuest is whether a guest exists.
	EvidenceGuest = "guest"
	// EvidencePerson is a person's word at the host (audit resolve).
	EvidencePerson = "person"
)

// Ledger is the journal as reconciliation reads it and adds to it
// (journal.Journal).
type Ledger interface {
	CallEvents(ctx context.Context, callID string) ([]journal.Event, error)
	PathSince(ctx context.Context, path string, since time.Time, limit int) ([]journal.Event, error)
	OpenIntents(ctx context.Context, before time.Time) ([]journal.Event, error)
	Receipt(ctx context.Context, callID string, r journal.Result) (journal.Event, error)
	Resolve(ctx context.Context, r journal.Resolution) (journal.Event, error)
}

// Reader reads PVE (a *pve.Client): the task index, task status, guests'
// configurations and the cluster's resources. Reconciliation only reads,
// so it should have the least privileged token that can: Sys.Audit on
// the nodes (every token's tasks) and VM.Audit on the guests.
type Reader interface {
	Get(ctx context.Context, path string, params url.Values, out any) error
}

// Schema is the live schema (schema.Source): what an endpoint is.
type Schema interface {
	Current() *schema.Registry
}

// ReconcilerOptions configure a Reconciler.
type ReconcilerOptions struct {
	Ledger Ledger
	PVE    Reader
	// Schema says which endpoints edit a configuration and which of
	// their parameters are its fields; without it, only the rows say (a
	// prior configuration on the intent).
	Schema Schema
	// Tokens are the PVE token ids (user@realm!name) the daemon's writes
	// go out with: a task one of them started may be an operation's when
	// its intent does not say which token it used.
	Tokens []string
	// SettleAfter is how long after its intent a write may still be in
	// flight at PVE (60 s when zero): before that, an open intent is not
	// judged unless Request.Close says nothing is in flight, and the
	// absence of an effect is not taken as evidence that it did not happen.
	SettleAfter time.Duration
	// Skew is how far PVE's clock may be behind the daemon's (2 s when
	// zero): a task may show a start time that much before the intent.
	Skew time.Duration
	// Workers bounds how many operations ReconcileOpen judges at once (8
	// when zero).
	Workers int
	Now     func() time.Time
	Logger  *slog.Logger
}

// Reconciler settles operations whose outcome the journal does not know,
// from PVE's evidence.
type Reconciler struct {
	o ReconcilerOptions
}

// DefaultSettleAfter is how long a write may be in flight at PVE: twice
// the PVE client's timeout.
const DefaultSettleAfter = 60 * time.Second

// NewReconciler checks the options.
func NewReconciler(o ReconcilerOptions) (*Reconciler, error) {
	if o.Ledger == nil || o.PVE == nil {
		return nil, errors.New("changes: a reconciler needs a ledger and a PVE reader")
	}
	if o.SettleAfter <= 0 {
		o.SettleAfter = DefaultSettleAfter
	}
	if o.Skew <= 0 {
		o.Skew = 2 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Reconciler{o: o}, nil
}

// SettleAfter is how long after its intent a write may be in flight.
func (r *Reconciler) SettleAfter() time.Duration { return r.o.SettleAfter }

// Request says who asks for a reconciliation and how.
type Request struct {
	// By is who asks; the resolution is recorded under this principal.
	// Zero: the daemon itself.
	By journal.Principal
	// Tool is what asked (proxmox_reconcile, audit); "reconcile" when empty.
	Tool string
	// Again re-judges an operation a resolution already settled (applied
	// or not_applied). Without it, such an operation is left as it is.
	Again bool
	// Close says no write is in flight (the daemon at start): an open
	// intent is judged and closed with a receipt whatever its age.
	// Without it, an open intent younger than SettleAfter is left alone.
	Close bool
}

// Daemon is the principal of the daemon's own reconciliation (at start):
// the host itself, as the journal names it (transport stdio).
var Daemon = journal.Principal{KeyID: "daemon", KeyName: "daemon", Transport: "stdio"}

// Verdict is what a reconciliation found and did.
type Verdict struct {
	Operation string `json:"operation"`
	// State is the operation's state afterwards: applied, not_applied or
	// unknown when it was judged; otherwise what it was (the receipt's
	// outcome, an earlier resolution's verdict, pending, task_running).
	State string `json:"state"`
	// Judged is false when nothing was judged (settled already, still in
	// flight, its task still running); Reason says why.
	Judged   bool               `json:"judged"`
	Reason   string             `json:"reason"`
	Evidence []journal.Evidence `json:"evidence,omitempty"`
	// UPID is the operation's task, when one is known.
	UPID string `json:"upid,omitempty"`
	// Node is where the guest was found, when not on the path's node.
	Node string `json:"node,omitempty"`
	// Closed is the outcome of the receipt that closed an open intent.
	Closed journal.Outcome `json:"closed,omitempty"`
	// Rows are the journal rows written (receipt, resolution).
	Rows []int64 `json:"rows,omitempty"`
}

// Reconcile looks for evidence of one operation's outcome and records
// what it shows: a resolution (applied, not_applied or unknown, with the
// evidence), and, for an open intent, the receipt that closes it (ok or
// task_failed when a task settles it, task_running while it runs,
// uncertain otherwise). An operation PVE's own answer settled, or a
// resolution settled (unless Again), is left as it is.
func (r *Reconciler) Reconcile(ctx context.Context, callID string, req Request) (Verdict, error) {
	evs, err := r.o.Ledger.CallEvents(ctx, callID)
	if err != nil {
		return Verdict{}, fmt.Errorf("reconcile %s: %w", callID, err)
	}
	op, err := ReadOperation(evs)
	if err != nil {
		return Verdict{}, fmt.Errorf("reconcile %s: %w", callID, err)
	}
	v, err := r.reconcile(ctx, op, req)
	if err != nil {
		return v, fmt.Errorf("reconcile %s: %w", callID, err)
	}
	return v, nil
}

func (r *Reconciler) reconcile(ctx context.Context, op *Operation, req Request) (Verdict, error) {
	v := Verdict{Operation: op.ID(), State: op.State()}
	if op.Receipt != nil {
		v.UPID = op.Receipt.UPID
	}
	now := r.o.Now()
	if res, d, ok := op.Resolution(); ok && d.State != journal.StateUnknown && !req.Again {
		v.Reason = fmt.Sprintf("settled by resolution #%d of %s (%s): %s", res.ID, or(res.Principal.KeyName, res.Principal.KeyID), d.State, d.Reason)
		if op.Receipt == nil && (req.Close || now.Sub(op.Intent.Time) >= r.o.SettleAfter) {
			// Settled (by a person) while its intent was open: the intent
			// is closed as what the daemon knew, the verdict stands.
			ev, err := r.o.Ledger.Receipt(ctx, op.ID(), journal.Result{Outcome: journal.OutcomeUncertain,
				Error: "the daemon stopped before PVE's answer was recorded; " + v.Reason, Detail: &journal.Detail{Reason: v.Reason}})
			if err != nil && !errors.Is(err, journal.ErrReceiptExists) {
				return v, fmt.Errorf("receipt: %w", err)
			}
			if err == nil {
				v.Rows, v.Closed = append(v.Rows, ev.ID), journal.OutcomeUncertain
			}
		}
		return v, nil
	}
	if op.Receipt != nil {
		switch op.Receipt.Outcome {
		case journal.OutcomeUncertain, journal.OutcomeTaskRunning:
		default:
			if _, _, resolved := op.Resolution(); !resolved {
				v.Reason = "PVE's answer settles it: the receipt says " + string(op.Receipt.Outcome)
				return v, nil
			}
		}
	}
	if op.Receipt == nil && !req.Close {
		if age := now.Sub(op.Intent.Time); age < r.o.SettleAfter {
			v.Reason = fmt.Sprintf("the write may still be in flight (its intent is %s old; it is judged from %s on)",
				age.Round(time.Second), r.o.SettleAfter)
			return v, nil
		}
	}
	f, err := r.gather(ctx, op, now)
	if err != nil {
		return v, err
	}
	v.Evidence, v.UPID, v.Node = f.evidence, or(f.upid, v.UPID), f.node
	v.Reason = f.reason()
	by, tool := req.By, or(req.Tool, "reconcile")
	if by == (journal.Principal{}) {
		by = Daemon
	}
	if op.Receipt == nil {
		res := f.receipt(v.Reason)
		if res.UPID != "" {
			res.JobID = op.ID() // the task's job is the operation (journal.Job)
		}
		ev, err := r.o.Ledger.Receipt(ctx, op.ID(), res)
		if errors.Is(err, journal.ErrReceiptExists) {
			v.Reason = "its receipt was written meanwhile; nothing was judged"
			return v, nil
		}
		if err != nil {
			return v, fmt.Errorf("receipt: %w", err)
		}
		v.Rows, v.Closed, v.State = append(v.Rows, ev.ID), res.Outcome, string(res.Outcome)
	}
	r.noteJob(ctx, op, f, tool, now)
	if f.running {
		// A running task is PVE's own answer to come: no verdict yet.
		v.Reason = "its task " + f.upid + " is still running; " + v.Reason
		if op.Receipt != nil {
			v.State = op.State()
		}
		return v, nil
	}
	ev, err := r.o.Ledger.Resolve(ctx, journal.Resolution{Time: now, CallID: op.ID(), State: f.state, By: by, Tool: tool,
		Reason: v.Reason, Evidence: f.evidence})
	if err != nil {
		return v, fmt.Errorf("resolution: %w", err)
	}
	v.Rows, v.State, v.Judged = append(v.Rows, ev.ID), f.state, true
	r.o.Logger.Info("changes: operation reconciled", "operation", op.ID(), "state", f.state, "upid", f.upid, "reason", v.Reason)
	return v, nil
}

// jobRecorder is a Ledger that keeps jobs (journal.Journal).
type jobRecorder interface {
	RecordJob(ctx context.Context, u journal.JobUpdate) (journal.Event, error)
}

// noteJob makes a write whose receipt names no task (its answer was lost)
// the job of the task reconciliation found for it: a job row with the
// task's UPID and state (journal.Job), unless one says so already.
func (r *Reconciler) noteJob(ctx context.Context, op *Operation, f *finding, tool string, now time.Time) {
	jr, ok := r.o.Ledger.(jobRecorder)
	if !ok || f.upid == "" || op.Receipt == nil || op.Receipt.UPID != "" {
		return
	}
	state := journal.JobOK
	switch {
	case f.running:
		state = journal.JobRunning
	case f.failed:
		state = journal.JobFailed
	}
	evs, err := r.o.Ledger.CallEvents(ctx, op.ID())
	if err != nil {
		r.o.Logger.Warn("changes: the job of a reconciled operation", "operation", op.ID(), "err", err)
		return
	}
	for _, ev := range evs {
		if d, _ := ev.DetailOf(); ev.Kind == journal.KindJob && ev.UPID == f.upid && d.Job != nil && d.Job.State == state {
			return
		}
	}
	if _, err := jr.RecordJob(ctx, journal.JobUpdate{Time: now, Job: op.ID(), UPID: f.upid, State: state, Tool: tool}); err != nil {
		r.o.Logger.Warn("changes: the job of a reconciled operation", "operation", op.ID(), "upid", f.upid, "err", err)
	}
}

// Summary is what ReconcileOpen did.
type Summary struct {
	Open       int       `json:"open"`
	Applied    int       `json:"applied"`
	NotApplied int       `json:"not_applied"`
	Unknown    int       `json:"unknown"`
	Running    int       `json:"running"`
	Failed     int       `json:"failed"`
	Verdicts   []Verdict `json:"verdicts"`
}

// ReconcileOpen reconciles every intent without a receipt recorded before
// before (zero: all), a few at once, and closes each one: what the daemon
// does at start for the writes a crash left open (req.Close). progress,
// when set, is told after each one. An operation that could not be
// judged (PVE unreachable) is counted in Failed and left open; the first
// such error is returned with the summary.
func (r *Reconciler) ReconcileOpen(ctx context.Context, before time.Time, req Request, progress func(done, total int)) (Summary, error) {
	evs, err := r.o.Ledger.OpenIntents(ctx, before)
	if err != nil {
		return Summary{}, fmt.Errorf("reconcile open intents: %w", err)
	}
	s := Summary{Open: len(evs), Verdicts: make([]Verdict, len(evs))}
	errs := make([]error, len(evs))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	work := make(chan int)
	for range min(r.o.Workers, len(evs)) {
		wg.Go(func() {
			for i := range work {
				s.Verdicts[i], errs[i] = r.Reconcile(ctx, evs[i].CallID, req)
				mu.Lock()
				done++
				if progress != nil {
					progress(done, len(evs))
				}
				mu.Unlock()
			}
		})
	}
	for i := range evs {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	var first error
	for i, v := range s.Verdicts {
		switch {
		case errs[i] != nil:
			s.Failed++
			if first == nil {
				first = errs[i]
			}
		case v.State == journal.StateApplied:
			s.Applied++
		case v.State == journal.StateNotApplied:
			s.NotApplied++
		case v.State == string(journal.OutcomeTaskRunning):
			s.Running++
		default:
			s.Unknown++
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return s, first
}

// finding is the evidence gathered for one operation.
type finding struct {
	state    string // applied, not_applied, unknown
	says     []string
	evidence []journal.Evidence
	upid     string
	running  bool   // its task is still running
	failed   bool   // its task failed
	node     string // where the guest was found, if elsewhere
}

func (f *finding) add(e journal.Evidence) {
	f.evidence = append(f.evidence, e)
}

func (f *finding) reason() string {
	if len(f.says) == 0 {
		switch f.state {
		case journal.StateUnknown:
			return "nothing PVE shows settles it"
		}
	}
	return strings.Join(f.says, "; ")
}

// receipt is the receipt that closes an open intent.
func (f *finding) receipt(reason string) journal.Result {
	res := journal.Result{Outcome: journal.OutcomeUncertain, UPID: f.upid,
		Detail: &journal.Detail{Reason: reason, Evidence: f.evidence}}
	switch {
	case f.upid != "" && f.running:
		res.Outcome = journal.OutcomeTaskRunning
	case f.upid != "" && f.failed:
		res.Outcome = journal.OutcomeTaskFailed
	case f.state == journal.StateApplied:
		res.Outcome = journal.OutcomeOK
	}
	if res.Outcome != journal.OutcomeOK {
		res.Error = "the daemon stopped before PVE's answer was recorded; reconciliation: " + reason
	}
	return res
}

// subject is what an operation acted on, from its rows.
type subject struct {
	op       *Operation
	key      string // "METHOD /template"
	vars     map[string]string
	args     map[string]any
	node     string
	endpoint *schema.Endpoint // the write, if the schema has it
	get      *schema.Endpoint // the GET of the same path, if any
}

func (r *Reconciler) subjectOf(op *Operation) (*subject, error) {
	in := op.Intent
	s := &subject{op: op, key: in.Method + " " + in.PathTemplate, args: map[string]any{}}
	vars, err := pathVars(in.PathTemplate, in.Path)
	if err != nil {
		return nil, err
	}
	s.vars, s.node = vars, vars["node"]
	if len(in.Args) > 0 && string(in.Args) != "null" {
		if err := json.Unmarshal(in.Args, &s.args); err != nil {
			return nil, fmt.Errorf("the intent's arguments: %w", err)
		}
	}
	if r.o.Schema != nil {
		if reg := r.o.Schema.Current(); reg != nil {
			s.endpoint = reg.Lookup(in.Method, in.PathTemplate)
			s.get = reg.Lookup("GET", in.PathTemplate)
		}
	}
	return s, nil
}

// value is an argument or path variable as text ("" when absent).
func (s *subject) value(name string) string {
	if v, ok := s.vars[name]; ok {
		return v
	}
	t, _ := configText(s.args[name])
	return t
}

// configEdit: the operation changed a configuration guarded by a digest.
func (s *subject) configEdit() bool {
	if s.endpoint != nil {
		return s.endpoint.Facts.ConfigEdit
	}
	return s.op.Intent.PriorDigest != "" && len(s.op.Intent.PriorConfig) > 0 && string(s.op.Intent.PriorConfig) != "null"
}

func (r *Reconciler) gather(ctx context.Context, op *Operation, now time.Time) (*finding, error) {
	s, err := r.subjectOf(op)
	if err != nil {
		return nil, err
	}
	f := &finding{state: journal.StateUnknown}
	settled := now.Sub(op.Intent.Time) >= r.o.SettleAfter
	if op.Receipt != nil && op.Receipt.UPID != "" {
		if err := r.taskStatus(ctx, s, op.Receipt.UPID, f); err != nil {
			return nil, err
		}
	} else if kind, ok := taskKinds[s.key]; ok {
		if err := r.searchTasks(ctx, s, kind, f); err != nil {
			return nil, err
		}
	}
	if f.state != journal.StateUnknown || f.running || f.upid != "" {
		return f, nil
	}
	if s.configEdit() {
		if err := r.configEvidence(ctx, s, settled, f); err != nil {
			return nil, err
		}
		if f.state != journal.StateUnknown {
			return f, nil
		}
	}
	if eff, ok := guestEffects[s.key]; ok {
		if err := r.guestEvidence(ctx, s, eff, settled, f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// taskStatus reads the status of the operation's task.
func (r *Reconciler) taskStatus(ctx context.Context, s *subject, upid string, f *finding) error {
	u, err := pve.ParseUPID(upid)
	if err != nil {
		f.add(journal.Evidence{Kind: EvidenceTask, UPID: upid, Says: "the receipt's UPID cannot be parsed: " + err.Error()})
		return nil
	}
	var st pve.TaskStatus
	if err := r.o.PVE.Get(ctx, pve.Path("nodes", u.Node, "tasks", upid, "status"), nil, &st); err != nil {
		var apiErr *pve.APIError
		if errors.As(err, &apiErr) {
			f.add(journal.Evidence{Kind: EvidenceTask, UPID: upid, Says: "PVE does not show the task: " + apiErr.Message})
			f.says = append(f.says, "the task the receipt names is not in PVE's task index")
			return nil
		}
		return fmt.Errorf("task status of %s: %w", upid, err)
	}
	r.judgeTask(u, st.Status == "running", st.ExitStatus, f)
	return nil
}

// judgeTask settles an operation from its task.
func (r *Reconciler) judgeTask(u pve.UPID, running bool, exit string, f *finding) {
	upid := u.String()
	f.upid = upid
	switch ok, _ := pve.ExitOutcome(exit); {
	case running:
		f.running = true
		f.add(journal.Evidence{Kind: EvidenceTask, UPID: upid, Says: fmt.Sprintf("task %s (%s of %s) is still running", upid, u.Type, or(u.ID, u.Node))})
	case ok:
		f.state = journal.StateApplied
		f.add(journal.Evidence{Kind: EvidenceTask, UPID: upid, Says: fmt.Sprintf("task %s (%s of %s) ended %s", upid, u.Type, or(u.ID, u.Node), exit)})
		f.says = append(f.says, "its task ended "+exit)
	default:
		f.state, f.failed = journal.StateNotApplied, true
		f.add(journal.Evidence{Kind: EvidenceTask, UPID: upid, Says: fmt.Sprintf("task %s (%s of %s) failed: %s", upid, u.Type, or(u.ID, u.Node), exit)})
		f.says = append(f.says, "its task failed: "+exit+" (a failed task may leave part of its work done)")
	}
}

// taskEntry is an entry of a node's task index.
type taskEntry struct {
	UPID   string `json:"upid"`
	Status string `json:"status"`
}

// searchTasks looks for the operation's task in the node's task index:
// a task of the endpoint's type, of the guest (or object) the operation
// names, started by its token between its intent and SettleAfter later
// (or its receipt), that no other operation's receipt claims and no other
// operation still open could own.
func (r *Reconciler) searchTasks(ctx context.Context, s *subject, kind taskKind, f *finding) error {
	in := s.op.Intent
	if s.node == "" {
		return nil
	}
	tokens := r.o.Tokens
	if t := s.op.IntentDetail.Token; t != "" {
		tokens = []string{t}
	}
	if len(tokens) == 0 {
		f.add(journal.Evidence{Kind: EvidenceTask, Says: "the intent does not say which PVE token the write went out with, and none is configured: its task cannot be told from others"})
		return nil
	}
	since := in.Time.Truncate(time.Second).Add(-r.o.Skew)
	until := in.Time.Add(r.o.SettleAfter)
	if rc := s.op.Receipt; rc != nil && rc.Time.Before(until) {
		until = rc.Time.Add(r.o.Skew) // the task started before its answer was lost
	}
	q := url.Values{"source": {"all"}, "limit": {"500"},
		"since": {strconv.FormatInt(since.Unix(), 10)}, "until": {strconv.FormatInt(until.Unix()+1, 10)}}
	if len(kind.types) == 1 {
		q.Set("typefilter", kind.types[0])
	}
	wantID := ""
	if kind.id != "" {
		wantID = s.value(kind.id)
		if strings.ContainsAny(wantID, ",; ") {
			wantID = "" // several guests: the task has no single id
		}
		if kind.id == "vmid" && wantID != "" {
			q.Set("vmid", wantID)
		}
	}
	if user := commonUser(tokens); user != "" {
		q.Set("userfilter", user)
	}
	var list []taskEntry
	if err := r.o.PVE.Get(ctx, pve.Path("nodes", s.node, "tasks"), q, &list); err != nil {
		return fmt.Errorf("task index of %s: %w", s.node, err)
	}
	var cands []pve.UPID
	status := map[string]string{}
	for _, e := range list {
		u, err := pve.ParseUPID(e.UPID)
		if err != nil || !slices.Contains(kind.types, u.Type) || !slices.Contains(tokens, u.User) {
			continue
		}
		if wantID != "" && u.ID != wantID {
			continue
		}
		if u.StartTime < since.Unix() || u.StartTime > until.Unix()+1 {
			continue
		}
		cands = append(cands, u)
		status[e.UPID] = e.Status
	}
	what := fmt.Sprintf("%s task", strings.Join(kind.types, " or "))
	if wantID != "" {
		what += " of " + wantID
	}
	window := fmt.Sprintf("by %s between %s and %s", strings.Join(tokens, " or "), since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	if len(cands) == 0 {
		f.add(journal.Evidence{Kind: EvidenceTask, Says: fmt.Sprintf("%s's task index shows no %s %s", s.node, what, window)})
		return nil
	}
	claimed, rivals, err := r.neighbours(ctx, s, since, until)
	if err != nil {
		return err
	}
	var free []pve.UPID
	for _, u := range cands {
		if c, ok := claimed[u.String()]; ok {
			f.add(journal.Evidence{Kind: EvidenceTask, Says: fmt.Sprintf("task %s is operation %s's", u, c)})
			continue
		}
		free = append(free, u)
	}
	if len(free) == 0 {
		f.add(journal.Evidence{Kind: EvidenceTask, Says: fmt.Sprintf("%s's task index shows no other %s %s", s.node, what, window)})
		return nil
	}
	if len(free) > 1 {
		var names []string
		for _, u := range free {
			names = append(names, u.String())
		}
		f.says = append(f.says, fmt.Sprintf("%d tasks could be this operation's", len(free)))
		f.add(journal.Evidence{Kind: EvidenceTask, Says: fmt.Sprintf("%d tasks match (%s): %s", len(free), window, strings.Join(names, ", "))})
		return nil
	}
	u := free[0]
	for _, rv := range rivals {
		if u.StartTime >= rv.Time.Truncate(time.Second).Add(-r.o.Skew).Unix() {
			f.says = append(f.says, fmt.Sprintf("task %s could be this operation's or operation %s's (also unsettled)", u, rv.CallID))
			f.add(journal.Evidence{Kind: EvidenceTask, Says: fmt.Sprintf("task %s matches, and so does operation %s (the same request, its outcome unknown too)", u, rv.CallID)})
			return nil
		}
	}
	st := status[u.String()]
	r.judgeTask(u, st == "" || st == "RUNNING", st, f)
	f.evidence[len(f.evidence)-1].Says += fmt.Sprintf(" (found in %s's task index: the only %s %s)", s.node, what, window)
	return nil
}

// neighbours reads the journal around an operation: the tasks other
// operations of the same path claim (their receipts, their resolutions),
// and the other operations of the same request (method and path) whose
// outcome is not settled and that came before until (rivals for a task).
func (r *Reconciler) neighbours(ctx context.Context, s *subject, since, until time.Time) (map[string]string, []journal.Event, error) {
	in := s.op.Intent
	rows, err := r.o.Ledger.PathSince(ctx, in.Path, since.Add(-r.o.SettleAfter), 10000)
	if err != nil {
		return nil, nil, fmt.Errorf("the journal around %s: %w", in.Path, err)
	}
	claimed := map[string]string{}
	var rivals []journal.Event
	for _, ev := range rows {
		if ev.CallID == in.CallID {
			continue
		}
		switch ev.Kind {
		case journal.KindReceipt:
			if ev.UPID != "" {
				claimed[ev.UPID] = ev.CallID
			}
		case journal.KindIntent:
			if ev.Method != in.Method || ev.Time.After(until) {
				continue
			}
			evs, err := r.o.Ledger.CallEvents(ctx, ev.CallID)
			if err != nil {
				return nil, nil, fmt.Errorf("operation %s: %w", ev.CallID, err)
			}
			other, err := ReadOperation(evs)
			if err != nil {
				continue
			}
			upids := other.UPIDs()
			for _, u := range upids {
				claimed[u] = other.ID()
			}
			if len(upids) == 0 && !other.Settled() {
				rivals = append(rivals, ev)
			}
		}
	}
	return claimed, rivals, nil
}

// commonUser is the user all tokens belong to ("" if they differ): the
// task index's userfilter compares the user part of a task's user.
func commonUser(tokens []string) string {
	user := ""
	for i, t := range tokens {
		u, _, _ := strings.Cut(t, "!")
		if i > 0 && u != user {
			return ""
		}
		user = u
	}
	return user
}

// configEvidence settles a config edit from the configuration: the
// journal's later views of it, then PVE's current one. All requested
// values present and a digest other than the one planned against:
// applied. The digest planned against, once the write can no longer be in
// flight: not applied. Anything else: unknown.
func (r *Reconciler) configEvidence(ctx context.Context, s *subject, settled bool, f *finding) error {
	in := s.op.Intent
	prior := in.PriorDigest
	var priorConf map[string]any
	if len(in.PriorConfig) > 0 && string(in.PriorConfig) != "null" {
		if err := json.Unmarshal(in.PriorConfig, &priorConf); err != nil {
			return fmt.Errorf("the intent's prior configuration: %w", err)
		}
	}
	req := s.requested()
	effective := req.effective(priorConf)
	switch {
	case priorConf == nil:
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: prior, Says: "the edit was planned against a digest the caller gave, without the configuration: its values cannot be compared"})
	case effective == 0:
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: prior, Says: "the request asks for no value the configuration did not already have (or only for secret ones, which the journal does not keep)"})
	}
	// What the journal saw of the configuration after the intent.
	if priorConf != nil && effective > 0 {
		rows, err := r.o.Ledger.PathSince(ctx, in.Path, in.Time, 10000)
		if err != nil {
			return fmt.Errorf("the journal of %s: %w", in.Path, err)
		}
		for _, ev := range rows {
			if ev.ID <= in.ID || ev.Kind == journal.KindIntent && (ev.PriorDigest == "" || ev.PriorDigest == prior) {
				// Another edit planned against the same configuration
				// tells nothing new (and is not decoded).
				continue
			}
			digest, conf := seenConfig(ev)
			if conf == nil || digest == "" || digest == prior {
				continue
			}
			if ok, _ := req.presentIn(conf); ok {
				f.state = journal.StateApplied
				f.add(journal.Evidence{Kind: EvidenceConfig, Digest: digest, Says: fmt.Sprintf(
					"journal row %d (%s, %s) saw the configuration with digest %s and every requested value", ev.ID, ev.Kind, ev.Time.UTC().Format(time.RFC3339), digest)})
				f.says = append(f.says, fmt.Sprintf("the journal saw the configuration with every requested value after the write (row %d)", ev.ID))
				return nil
			}
		}
	}
	// PVE's configuration now.
	conf, node, err := r.readConfig(ctx, s)
	if err != nil {
		return err
	}
	if conf == nil {
		f.add(journal.Evidence{Kind: EvidenceGuest, Says: "the configuration cannot be read: the guest no longer exists"})
		f.says = append(f.says, "the guest no longer exists, so its configuration shows nothing")
		return nil
	}
	f.node = node
	digest, _ := conf["digest"].(string)
	where := in.Path
	if node != "" {
		where = strings.Replace(in.Path, "/nodes/"+s.node+"/", "/nodes/"+node+"/", 1)
	}
	switch ok, missing := req.presentIn(conf); {
	case digest == prior && !settled:
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: digest, Says: "the configuration's digest is still the one the edit was planned against, but the write may still be in flight"})
	case digest == prior:
		f.state = journal.StateNotApplied
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: digest, Says: fmt.Sprintf("%s's digest is still %s, the one the edit was planned against", where, digest)})
		f.says = append(f.says, "the configuration is unchanged since the edit was planned (same digest)")
	case priorConf != nil && effective > 0 && ok:
		f.state = journal.StateApplied
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: digest, Says: fmt.Sprintf("%s has digest %s (planned against %s) and every requested value", where, digest, prior)})
		f.says = append(f.says, "the configuration changed and holds every requested value")
	case !ok:
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: digest, Says: fmt.Sprintf("%s changed (digest %s, planned against %s), but not as requested: %s", where, digest, prior, strings.Join(missing, ", "))})
		f.says = append(f.says, "the configuration changed since, but not as requested: someone else may have changed it")
	default:
		f.add(journal.Evidence{Kind: EvidenceConfig, Digest: digest, Says: fmt.Sprintf("%s changed (digest %s, planned against %s)", where, digest, prior)})
	}
	return nil
}

// seenConfig is a configuration a journal row holds: an observation's, a
// read's, a receipt's after its write, an intent's planned-against one.
func seenConfig(ev journal.Event) (string, map[string]any) {
	if ev.Kind == journal.KindIntent {
		var conf map[string]any
		if len(ev.PriorConfig) == 0 || json.Unmarshal(ev.PriorConfig, &conf) != nil {
			return "", nil
		}
		return ev.PriorDigest, conf
	}
	d, err := ev.DetailOf()
	if err != nil || d.Config == nil {
		return "", nil
	}
	return d.Digest, d.Config
}

// readConfig reads the operation's configuration now, from the node the
// guest is on (the path's, or the one it moved to: node is set then); a
// nil configuration when the guest no longer exists.
func (r *Reconciler) readConfig(ctx context.Context, s *subject) (map[string]any, string, error) {
	in := s.op.Intent
	var conf map[string]any
	err := r.o.PVE.Get(ctx, in.Path, nil, &conf)
	var apiErr *pve.APIError
	if err == nil {
		return conf, "", nil
	}
	if !errors.As(err, &apiErr) || s.vars["vmid"] == "" {
		return nil, "", fmt.Errorf("read %s: %w", in.Path, err)
	}
	// The guest may have moved: where is it now?
	node, _, exists, gerr := r.findGuest(ctx, s.vars["vmid"])
	if gerr != nil {
		return nil, "", gerr
	}
	if !exists {
		return nil, "", nil
	}
	if node == s.node {
		return nil, "", fmt.Errorf("read %s: %w", in.Path, err)
	}
	moved := strings.Replace(in.Path, "/nodes/"+s.node+"/", "/nodes/"+node+"/", 1)
	if err := r.o.PVE.Get(ctx, moved, nil, &conf); err != nil {
		return nil, "", fmt.Errorf("read %s: %w", moved, err)
	}
	return conf, node, nil
}

// findGuest looks a guest up in the cluster's resources.
func (r *Reconciler) findGuest(ctx context.Context, vmid string) (node, typ string, exists bool, err error) {
	var res []struct {
		VMID any    `json:"vmid"`
		Node string `json:"node"`
		Type string `json:"type"`
	}
	if err := r.o.PVE.Get(ctx, "/cluster/resources", url.Values{"type": {"vm"}}, &res); err != nil {
		return "", "", false, fmt.Errorf("cluster resources: %w", err)
	}
	for _, g := range res {
		if t, _ := configText(g.VMID); t == vmid {
			return g.Node, g.Type, true, nil
		}
	}
	return "", "", false, nil
}

// guestEvidence settles a create or a destroy from the guest's existence:
// a destroyed guest that is gone, applied; a created guest that is not
// there, or a destroyed one that still is, once the write can no longer
// be in flight, not applied. A created guest that exists shows nothing
// (another may have made it).
func (r *Reconciler) guestEvidence(ctx context.Context, s *subject, eff guestEffect, settled bool, f *finding) error {
	vmid := s.value(eff.arg)
	if vmid == "" {
		return nil
	}
	node, _, exists, err := r.findGuest(ctx, vmid)
	if err != nil {
		return err
	}
	switch {
	case exists && eff.creates:
		f.add(journal.Evidence{Kind: EvidenceGuest, Says: fmt.Sprintf("guest %s exists (on %s), but nothing shows that this operation made it", vmid, node)})
	case !exists && !eff.creates:
		f.state = journal.StateApplied
		f.add(journal.Evidence{Kind: EvidenceGuest, Says: fmt.Sprintf("no guest has VMID %s any more", vmid)})
		f.says = append(f.says, "the guest is gone")
	case !settled:
		f.add(journal.Evidence{Kind: EvidenceGuest, Says: fmt.Sprintf("guest %s exists: %t, but the write may still be in flight", vmid, exists)})
	case exists:
		f.state = journal.StateNotApplied
		f.add(journal.Evidence{Kind: EvidenceGuest, Says: fmt.Sprintf("guest %s still exists (on %s)", vmid, node)})
		f.says = append(f.says, "the guest it would have destroyed still exists")
	default:
		f.state = journal.StateNotApplied
		f.add(journal.Evidence{Kind: EvidenceGuest, Says: fmt.Sprintf("no guest has VMID %s", vmid)})
		f.says = append(f.says, "the guest it would have made does not exist")
	}
	return nil
}

// request is what a config edit asked for: fields set (by their wire
// names, as text) and fields deleted. Secret fields are left out: the
// journal keeps markers, not values.
type request struct {
	set    map[string]string
	delete []string
}

// nonFields are parameters of config edits that are not fields of the
// configuration.
var nonFields = map[string]bool{"digest": true, "delete": true, "revert": true, "skiplock": true, "force": true,
	"background_delay": true, "import-working-storage": true}

func (s *subject) requested() request {
	req := request{set: map[string]string{}}
	for k, v := range s.args {
		if _, isVar := s.vars[k]; isVar || nonFields[k] || !s.isField(k) {
			continue
		}
		if s.endpoint != nil && s.endpoint.Secret(k) {
			continue
		}
		t, ok := configText(v)
		if !ok || strings.HasPrefix(t, "[redacted ") {
			continue
		}
		req.set[k] = t
	}
	if d, ok := s.args["delete"]; ok {
		var names []string
		switch x := d.(type) {
		case string:
			names = strings.FieldsFunc(x, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
		case []any:
			for _, e := range x {
				if t, ok := configText(e); ok {
					names = append(names, t)
				}
			}
		}
		req.delete = names
	}
	return req
}

// isField: the GET of the same path returns a property of this name (or
// of its indexed form, net[n] for net0). Without the schema, every
// parameter is taken as a field.
func (s *subject) isField(name string) bool {
	if s.get == nil || len(s.get.Returns) == 0 {
		return true
	}
	var ret struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(s.get.Returns, &ret) != nil || len(ret.Properties) == 0 {
		return true
	}
	if _, ok := ret.Properties[name]; ok {
		return true
	}
	prefix := strings.TrimRight(name, "0123456789")
	if prefix != name {
		if _, ok := ret.Properties[prefix+"[n]"]; ok {
			return true
		}
	}
	return false
}

// effective counts the requested changes the prior configuration did not
// already have.
func (q request) effective(prior map[string]any) int {
	if prior == nil {
		return 0
	}
	n := 0
	for k, want := range q.set {
		have, ok := configText(prior[k])
		if _, present := prior[k]; !present || !ok || !valuePresent(want, have) {
			n++
		}
	}
	for _, k := range q.delete {
		if _, ok := prior[k]; ok {
			n++
		}
	}
	return n
}

// presentIn reports whether a configuration holds every requested value
// and none of the deleted fields; missing says which do not.
func (q request) presentIn(conf map[string]any) (bool, []string) {
	var missing []string
	for k, want := range q.set {
		v, present := conf[k]
		have, ok := configText(v)
		switch {
		case !present:
			missing = append(missing, fmt.Sprintf("%s is not set (wanted %q)", k, want))
		case !ok || !valuePresent(want, have):
			missing = append(missing, fmt.Sprintf("%s is %q (wanted %q)", k, have, want))
		}
	}
	for _, k := range q.delete {
		if _, present := conf[k]; present {
			missing = append(missing, k+" is still set (its deletion was requested)")
		}
	}
	slices.Sort(missing)
	return len(missing) == 0, missing
}

// valuePresent: the value as PVE holds it is the requested one, or, for a
// property string, holds every requested part (PVE adds its defaults: a
// requested "virtio,bridge=vmbr0" is held as "virtio=BC:24:…,bridge=vmbr0").
func valuePresent(want, have string) bool {
	if want == have {
		return true
	}
	if !strings.ContainsAny(want, ",=") {
		return false
	}
	parts := strings.Split(have, ",")
	for _, w := range strings.Split(want, ",") {
		found := false
		for _, h := range parts {
			if h == w || (!strings.Contains(w, "=") && strings.HasPrefix(h, w+"=")) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// configText is a configuration value as PVE writes it: numbers in
// decimal, booleans as 1 and 0; ok is false for objects and lists.
func configText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case json.Number:
		return x.String(), true
	case bool:
		if x {
			return "1", true
		}
		return "0", true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
