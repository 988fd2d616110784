package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// Record writes a whole call in one row (kind "call"): a read, a refusal
// (outcome denied or invalid), or any call that sends nothing to PVE. Call
// it when the call has ended and before the reply is sent; it returns once
// the row is durable (fsynced). The returned event is the row as stored.
func (j *Journal) Record(ctx context.Context, c Call, res Result) (Event, error) {
	if err := res.check(KindCall, c.Decision.Effect); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r, err := j.callRow(KindCall, &c, res.Outcome)
	if err != nil {
		return Event{}, err
	}
	j.setResult(&r, &res)
	return j.write(ctx, &r)
}

// Intent writes the intent of a write before it is sent to PVE (kind
// "intent", outcome "pending"). For a configuration edit, c.PriorDigest
// and c.PriorConfig hold the configuration the edit was planned against.
// It returns once the row is durable; if it fails, the write must not be
// sent. The event's CallID links the intent to its receipt; a crash before
// the receipt leaves an open intent ([Journal.OpenIntents]).
func (j *Journal) Intent(ctx context.Context, c Call) (Event, error) {
	if c.Decision.Effect == "" || c.Decision.Effect == "deny" {
		return Event{}, fmt.Errorf("%w: decision.effect %q: an intent needs a decision that lets the call go ahead", ErrInvalid, c.Decision.Effect)
	}
	r, err := j.callRow(KindIntent, &c, OutcomePending)
	if err != nil {
		return Event{}, err
	}
	r.outcome = string(OutcomePending)
	if d := c.Detail; d != nil && d.OperationKey != "" {
		if err := checkOperationKey(d.OperationKey); err != nil {
			return Event{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if d.RequestDigest == "" {
			return Event{}, fmt.Errorf("%w: detail.request_digest: required with an operation key", ErrInvalid)
		}
		r.opKey, r.opDigest = d.OperationKey, d.RequestDigest
	}
	return j.write(ctx, &r)
}

// Receipt closes the intent of callID with how the write ended (kind
// "receipt"): ok, error, uncertain (sent, answer lost), task_running or
// task_failed, with the UPID and job id when a task started. The receipt
// repeats the intent's principal, tool, paths and decision, so it reads on
// its own; its arguments are on the intent. Errors: ErrNoIntent,
// ErrReceiptExists.
func (j *Journal) Receipt(ctx context.Context, callID string, res Result) (Event, error) {
	if err := checkCallID(callID); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := res.check(KindReceipt, ""); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r := row{kind: string(KindReceipt), callID: callID, time: j.now().UTC().Format(timeLayout)}
	j.setResult(&r, &res)
	if res.Detail != nil {
		d, err := j.redactedDetail(res.Detail.Scope, res.Detail)
		if err != nil {
			return Event{}, err
		}
		r.detail = d
	}
	return j.write(ctx, &r)
}

// callRow builds the row of a call or intent: validated, with a call id
// and a time, arguments and prior configuration redacted, every text
// escaped and fitted to its limit (fitText).
func (j *Journal) callRow(kind Kind, c *Call, outcome Outcome) (row, error) {
	if err := c.check(kind, outcome); err != nil {
		return row{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	id := c.ID
	if id == "" {
		var err error
		if id, err = newCallID(); err != nil {
			return row{}, err
		}
	}
	t := c.Time
	if t.IsZero() {
		t = j.now()
	}
	scope := c.PathTemplate
	if scope == "" {
		scope = c.Path
	}
	args, err := j.redactedJSON("args", scope, c.Args)
	if err != nil {
		return row{}, err
	}
	prior, err := j.redactedJSON("prior_config", scope, c.PriorConfig)
	if err != nil {
		return row{}, err
	}
	detail := ""
	if c.Detail != nil {
		if detail, err = j.redactedDetail(scope, c.Detail); err != nil {
			return row{}, err
		}
	}
	reasons := make([]string, len(c.Decision.Reasons))
	for i, r := range c.Decision.Reasons {
		reasons[i] = fitText(r, maxPath, true)
	}
	rs, err := json.Marshal(reasons)
	if err != nil {
		return row{}, fmt.Errorf("%w: decision.reasons: %w", ErrInvalid, err)
	}
	p := c.Principal
	name := func(s string) string { return fitText(s, maxName, false) }
	return row{
		time: t.UTC().Format(timeLayout), kind: string(kind), callID: id,
		keyID: name(p.KeyID), keyName: name(p.KeyName), profile: name(p.Profile), policy: name(p.Policy),
		transport: name(p.Transport), source: name(p.Source), tailnetUser: name(p.TailnetUser), tailnetNode: name(p.TailnetNode),
		tool: name(c.Tool), endpoint: name(c.Endpoint), method: name(c.Method), pathTemplate: fitText(c.PathTemplate, maxPath, false),
		path: fitText(j.red.Text(c.Path), maxPath, false), risk: name(c.Risk), args: string(args),
		effect: c.Decision.Effect, reasons: j.red.Text(string(rs)), decisionPol: name(c.Decision.Policy),
		policyDigest: name(c.Decision.PolicyDigest), priorDigest: name(c.PriorDigest), priorConfig: string(prior),
		detail: detail,
	}, nil
}

// redactedJSON redacts v; a document larger than maxJSON is replaced by a
// note of its size and SHA-256, so an oversized call is still recorded.
func (j *Journal) redactedJSON(field, scope string, v any) (json.RawMessage, error) {
	b, err := j.red.JSON(scope, v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, field, err)
	}
	if len(b) > maxJSON {
		sum := sha256.Sum256(b)
		b, err = json.Marshal(map[string]any{"_omitted": "too large for the journal", "bytes": len(b), "sha256": hex.EncodeToString(sum[:])})
		if err != nil {
			return nil, fmt.Errorf("journal: %s: %w", field, err)
		}
	}
	return b, nil
}

// setResult fills the result columns.
func (j *Journal) setResult(r *row, res *Result) {
	r.outcome = string(res.Outcome)
	r.errorText = fitText(j.red.Text(res.Error), maxError, true)
	r.status = int64(res.Status)
	r.durationUS = res.Duration.Microseconds()
	r.upid = fitText(res.UPID, maxName, false)
	r.jobID = fitText(res.JobID, maxName, false)
}

// Write requests pass from the callers to the writer goroutine.
const (
	reqQueued int32 = iota
	reqTaken
	reqCancelled
)

type writeReq struct {
	r     *row
	state atomic.Int32
	done  chan error
}

// write hands a row to the writer goroutine and waits until it is durable.
// A caller whose context ends while the row is still queued withdraws it;
// once the writer has taken it, write waits for the commit, so an error
// always means the row was not written.
func (j *Journal) write(ctx context.Context, r *row) (Event, error) {
	if j.readOnly {
		return Event{}, ErrReadOnly
	}
	req := &writeReq{r: r, done: make(chan error, 1)}
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		return Event{}, ErrClosed
	}
	select {
	case j.reqs <- req:
	case <-ctx.Done():
		j.mu.RUnlock()
		return Event{}, fmt.Errorf("journal: nothing written: %w", ctx.Err())
	}
	j.mu.RUnlock()
	var err error
	select {
	case err = <-req.done:
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqQueued, reqCancelled) {
			return Event{}, fmt.Errorf("journal: nothing written: %w", ctx.Err())
		}
		err = <-req.done
	}
	if err != nil {
		return Event{}, err
	}
	return r.event()
}

// writer commits queued rows in batches: one transaction and one fsync for
// as many rows as are waiting (up to MaxBatch), so many concurrent callers
// share the cost of durability.
func (j *Journal) writer() {
	defer close(j.stopped)
	batch := make([]*writeReq, 0, j.maxBatch)
	for req := range j.reqs {
		// Let the callers the last commit released queue their next rows,
		// so that they join this batch instead of waiting for the next.
		runtime.Gosched()
		batch = append(batch[:0], req)
	fill:
		for len(batch) < j.maxBatch {
			select {
			case r, ok := <-j.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		j.commit(batch)
	}
}

// writeStmts are the writer's statements, prepared once on its one
// connection (the driver would parse each statement again on every call).
type writeStmts struct {
	head, intentOf, isOpen, callRows, insert, addOpen, delOpen, opOf, addOp *sql.Stmt
}

var writeSQL = [...]string{
	`SELECT id, hash FROM events ORDER BY id DESC LIMIT 1`,
	`SELECT ` + columns + ` FROM events WHERE call_id = ? AND kind = 'intent'`,
	`SELECT count(*) FROM open_intents WHERE call_id = ?`,
	`SELECT count(*) FROM events WHERE call_id = ?`,
	`INSERT INTO events (` + columns + `) VALUES (` + strings.Repeat("?, ", 34) + `?)`,
	`INSERT INTO open_intents (call_id, event_id) VALUES (?, ?)`,
	`DELETE FROM open_intents WHERE call_id = ?`,
	`SELECT call_id, request_digest FROM operations WHERE key_id = ? AND operation_key = ?`,
	`INSERT INTO operations (key_id, operation_key, call_id, request_digest) VALUES (?, ?, ?, ?)`,
}

func (j *Journal) prepareWrites(ctx context.Context) (*writeStmts, error) {
	var st writeStmts
	dst := []**sql.Stmt{&st.head, &st.intentOf, &st.isOpen, &st.callRows, &st.insert, &st.addOpen, &st.delOpen, &st.opOf, &st.addOp}
	for i, q := range writeSQL {
		s, err := j.w.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("journal: open %s: prepare: %w", j.path, err)
		}
		*dst[i] = s
	}
	return &st, nil
}

// commitTimeout bounds one batch (a stuck disk must not hang callers
// forever; the busy timeout bounds lock waits separately).
const commitTimeout = 30 * time.Second

// commit writes one batch. A request that breaks a rule (ErrNoIntent,
// ErrReceiptExists, ErrDuplicateCall) fails alone; any other error fails
// the whole batch and writes nothing.
func (j *Journal) commit(batch []*writeReq) {
	live := make([]*writeReq, 0, len(batch))
	for _, req := range batch {
		if req.state.CompareAndSwap(reqQueued, reqTaken) {
			live = append(live, req)
		}
	}
	if len(live) == 0 {
		return
	}
	errs := make([]error, len(live))
	respond := func() {
		for i, req := range live {
			if errs[i] != nil {
				j.stats.failures.Add(1)
			} else {
				j.stats.rows.Add(1)
			}
			req.done <- errs[i]
		}
	}
	failAll := func(err error) {
		for i := range errs {
			errs[i] = err
		}
		respond()
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	begun := time.Now()
	synced := !j.relaxCalls || !callsOnly(live)
	if err := j.setSync(ctx, synced); err != nil {
		failAll(err)
		return
	}
	tx, err := j.w.BeginTx(ctx, nil)
	if err != nil {
		failAll(fmt.Errorf("journal: begin: %w", err))
		return
	}
	headID, headHash := int64(0), genesis
	err = tx.StmtContext(ctx, j.stmts.head).QueryRowContext(ctx).Scan(&headID, &headHash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		tx.Rollback()
		failAll(fmt.Errorf("journal: read the chain head: %w", err))
		return
	}
	written := 0
	for i, req := range live {
		ruleErr, err := j.append(ctx, tx, req.r, headID, headHash)
		if err != nil {
			tx.Rollback()
			failAll(fmt.Errorf("journal: append: %w", err))
			return
		}
		if ruleErr != nil {
			errs[i] = ruleErr
			continue
		}
		headID, headHash = req.r.id, req.r.hash
		written++
	}
	if written == 0 {
		tx.Rollback()
		respond()
		return
	}
	if err := tx.Commit(); err != nil {
		failAll(fmt.Errorf("journal: commit: %w", err))
		return
	}
	j.stats.commits.Add(1)
	if synced {
		j.stats.synced.Add(1)
	}
	if j.observe != nil {
		j.observe(written, time.Since(begun))
	}
	respond()
	j.notify()
}

// callsOnly reports whether a batch holds only call rows: reads and
// refusals, whose commit need not wait for an fsync (Options.RelaxCalls).
func callsOnly(batch []*writeReq) bool {
	for _, req := range batch {
		if Kind(req.r.kind) != KindCall {
			return false
		}
	}
	return true
}

// setSync sets the writer connection's synchronous mode for the next
// transaction: FULL (the commit is fsynced before it returns) or NORMAL
// (written to the WAL; fsynced by the next FULL commit or checkpoint).
// SQLite refuses the change inside a transaction, so it is made before
// BEGIN, and only when it differs from the last one set. The pool has one
// connection; should it ever be opened again, it opens with FULL (the
// DSN's), which errs on the durable side until the next change.
func (j *Journal) setSync(ctx context.Context, full bool) error {
	if j.relaxed == !full {
		return nil
	}
	mode := "FULL"
	if !full {
		mode = "NORMAL"
	}
	if _, err := j.w.ExecContext(ctx, "PRAGMA synchronous = "+mode); err != nil {
		return fmt.Errorf("journal: set synchronous=%s: %w", mode, err)
	}
	j.relaxed = !full
	return nil
}

// append inserts one row at the head of the chain. ruleErr reports a
// request that breaks a rule (nothing was written for it); err is a
// database failure that dooms the batch.
func (j *Journal) append(ctx context.Context, tx *sql.Tx, r *row, headID int64, headHash string) (ruleErr, err error) {
	st := j.stmts
	switch Kind(r.kind) {
	case KindReceipt:
		var in row
		err := tx.StmtContext(ctx, st.intentOf).QueryRowContext(ctx, r.callID).Scan(in.fields()...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrNoIntent, r.callID), nil
		}
		if err != nil {
			return nil, err
		}
		var open int
		if err := tx.StmtContext(ctx, st.isOpen).QueryRowContext(ctx, r.callID).Scan(&open); err != nil {
			return nil, err
		}
		if open == 0 {
			return fmt.Errorf("%w: %s", ErrReceiptExists, r.callID), nil
		}
		r.keyID, r.keyName, r.profile, r.policy = in.keyID, in.keyName, in.profile, in.policy
		r.transport, r.source, r.tailnetUser, r.tailnetNode = in.transport, in.source, in.tailnetUser, in.tailnetNode
		r.tool, r.endpoint, r.method, r.pathTemplate, r.path, r.risk = in.tool, in.endpoint, in.method, in.pathTemplate, in.path, in.risk
		r.effect, r.reasons, r.decisionPol, r.policyDigest = in.effect, in.reasons, in.decisionPol, in.policyDigest
		r.args, r.priorConfig, r.priorDigest = "null", "null", ""
	case KindJob:
		// A job row is about an operation that exists, and reads on its
		// own: it repeats the operation's principal and paths.
		var in row
		err := tx.StmtContext(ctx, st.intentOf).QueryRowContext(ctx, r.callID).Scan(in.fields()...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrNoIntent, r.callID), nil
		}
		if err != nil {
			return nil, err
		}
		r.keyID, r.keyName, r.profile, r.policy = in.keyID, in.keyName, in.profile, in.policy
		r.transport, r.source, r.tailnetUser, r.tailnetNode = in.transport, in.source, in.tailnetUser, in.tailnetNode
		r.endpoint, r.method, r.pathTemplate, r.path, r.risk = in.endpoint, in.method, in.pathTemplate, in.path, in.risk
	case KindResolution:
		// A resolution settles an operation that exists.
		var in row
		err := tx.StmtContext(ctx, st.intentOf).QueryRowContext(ctx, r.callID).Scan(in.fields()...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrNoIntent, r.callID), nil
		}
		if err != nil {
			return nil, err
		}
	case KindObservation, KindPlan:
		// Observations and plans may share the call id of the operation
		// they belong to, and be many.
	default:
		var n int
		if err := tx.StmtContext(ctx, st.callRows).QueryRowContext(ctx, r.callID).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			return fmt.Errorf("%w: %s", ErrDuplicateCall, r.callID), nil
		}
		if r.opKey != "" {
			var callID, digest string
			err := tx.StmtContext(ctx, st.opOf).QueryRowContext(ctx, r.keyID, r.opKey).Scan(&callID, &digest)
			if err == nil {
				return &OperationKeyError{Key: r.opKey, CallID: callID, RequestDigest: digest, Same: digest == r.opDigest}, nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
		}
	}
	r.id, r.format, r.prevHash = headID+1, rowFormat, headHash
	r.hash = r.computeHash()
	if _, err := tx.StmtContext(ctx, st.insert).ExecContext(ctx, r.values()...); err != nil {
		return nil, err
	}
	switch Kind(r.kind) {
	case KindIntent:
		if _, err = tx.StmtContext(ctx, st.addOpen).ExecContext(ctx, r.callID, r.id); err == nil && r.opKey != "" {
			_, err = tx.StmtContext(ctx, st.addOp).ExecContext(ctx, r.keyID, r.opKey, r.callID, r.opDigest)
		}
	case KindReceipt:
		_, err = tx.StmtContext(ctx, st.delOpen).ExecContext(ctx, r.callID)
	}
	return nil, err
}

// CheckIntent and CheckRecord are the checks Intent and Record make of a
// call before writing anything, for the fakes of a journal that tests use:
// a fake that takes what the journal refuses hides the bug.
func CheckIntent(c Call) error {
	if c.Decision.Effect == "" || c.Decision.Effect == "deny" {
		return fmt.Errorf("%w: decision.effect %q: an intent needs a decision that lets the call go ahead", ErrInvalid, c.Decision.Effect)
	}
	if err := c.check(KindIntent, OutcomePending); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// CheckRecord: see CheckIntent.
func CheckRecord(c Call, res Result) error {
	if err := res.check(KindCall, c.Decision.Effect); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := c.check(KindCall, res.Outcome); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}
