package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The change contract (docs/changes.md) in the journal: an intent may
// carry the caller's operation key and the digest of the request as
// validated, which the operations index claims in the same transaction
// (the same key with the same request finds the recorded operation; the
// same key with another request is refused); a receipt carries the
// evidence of the write (the configuration after it and the fields it
// changed); observation rows record configurations as the daemon saw
// them; resolution rows settle an uncertain outcome from evidence or by a
// person; plan rows record a preview kept for later.

// Detail is the change contract's part of a row, stored (redacted, like
// the arguments) in the detail column and covered by the hash. Every
// field is optional; which ones a row has depends on its kind.
type Detail struct {
	// OperationKey is the caller's key for this operation (intent), and
	// RequestDigest the SHA-256 of the request as validated.
	OperationKey  string `json:"operation_key,omitempty"`
	RequestDigest string `json:"request_digest,omitempty"`
	// Change is the group the operation belongs to (a change the agent
	// opened), UndoOf the operation it undoes, Plan the plan it applies.
	Change string `json:"change,omitempty"`
	UndoOf string `json:"undo_of,omitempty"`
	Plan   string `json:"plan,omitempty"`
	// Node is where the guest was found when the call named another node.
	Node string `json:"node,omitempty"`
	// Token is the PVE API token (user@realm!name) an intent's write goes
	// out with: whose tasks in PVE's task index can be the operation's.
	Token string `json:"token,omitempty"`
	// Digest is a configuration's digest: after the write (receipt), as
	// seen (observation), or planned against (plan).
	Digest string `json:"digest,omitempty"`
	// Config is a configuration: after the write (receipt), or as seen
	// (observation).
	Config map[string]any `json:"config,omitempty"`
	// Changes are the fields a write changed, field → before and after
	// (absent: the field was not set); a secret field's change is redacted
	// whole.
	Changes map[string]FieldChange `json:"changes,omitempty"`
	// State is a resolution's verdict: applied, not_applied or unknown.
	State string `json:"state,omitempty"`
	// Reason says why, for a resolution (a person's words, or what the
	// evidence showed).
	Reason string `json:"reason,omitempty"`
	// Evidence is what settled (or failed to settle) an outcome.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Request is a plan's request as validated: method, path and wire
	// parameters.
	Request *PlannedRequest `json:"request,omitempty"`
	// Expires is when a plan stops being applicable.
	Expires *time.Time `json:"expires,omitempty"`
	// RetryOf, on an intent, is the job (its operation) this write
	// retries; CancelOf the job whose task this write cancels.
	RetryOf  string `json:"retry_of,omitempty"`
	CancelOf string `json:"cancel_of,omitempty"`
	// Job, on a job row, is the task's state as learnt.
	Job *JobDetail `json:"job,omitempty"`

	// Scope is the path template whose secret parameters are redacted in
	// a receipt's detail (a receipt row takes its paths from its intent).
	Scope string `json:"-"`
}

// FieldChange is one field before and after a write; nil is absent. A
// secret field's values are markers (see Redactor.Marker) and Redacted is
// set.
type FieldChange struct {
	Before   any  `json:"before"`
	After    any  `json:"after"`
	Redacted bool `json:"redacted,omitempty"`
}

// redactedDetail encodes a detail with its values redacted (configuration,
// changes, planned parameters, reasons); its own fields (keys, digests,
// ids) are the daemon's and kept as they are.
func (j *Journal) redactedDetail(scope string, d *Detail) (string, error) {
	c := *d
	if c.Config != nil {
		if m, ok := j.red.Value(scope, jsonValue(c.Config)).(map[string]any); ok {
			c.Config = m
		}
	}
	if c.Changes != nil {
		ch := make(map[string]FieldChange, len(c.Changes))
		for k, v := range c.Changes {
			if SecretParam(scope, k) {
				v = FieldChange{Before: markOrNil(j.red, v.Before), After: markOrNil(j.red, v.After), Redacted: true}
			} else {
				v = FieldChange{Before: j.red.Value(scope, jsonValue(v.Before)), After: j.red.Value(scope, jsonValue(v.After))}
			}
			ch[k] = v
		}
		c.Changes = ch
	}
	if c.Request != nil {
		req := *c.Request
		params := make(map[string][]string, len(req.Params))
		for k, vals := range req.Params {
			out := make([]string, len(vals))
			for i, v := range vals {
				if SecretParam(scope, k) {
					out[i] = j.red.Marker(v)
				} else {
					out[i] = j.red.Text(v)
				}
			}
			params[k] = out
		}
		req.Params = params
		c.Request = &req
	}
	c.Reason = j.red.Text(c.Reason)
	if c.Evidence != nil {
		ev := make([]Evidence, len(c.Evidence))
		for i, e := range c.Evidence {
			e.Says = j.red.Text(e.Says)
			ev[i] = e
		}
		c.Evidence = ev
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: detail: %w", ErrInvalid, err)
	}
	if len(b) > maxJSON {
		return "", fmt.Errorf("%w: detail: %d bytes, over the %d-byte limit", ErrInvalid, len(b), maxJSON)
	}
	return string(b), nil
}

// jsonValue turns a Go value into decoded-JSON form (maps, slices,
// strings, numbers), which the redactor walks.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func markOrNil(r *Redactor, v any) any {
	if v == nil {
		return nil
	}
	return r.Marker(canonicalText(jsonValue(v)))
}

// Evidence is one piece of what PVE showed about an operation.
type Evidence struct {
	// Kind is task (a task in PVE's index), config (the configuration's
	// digest and values), guest (whether the guest exists), or person.
	Kind string `json:"kind"`
	// Says is what it shows, in words.
	Says string `json:"says"`
	// UPID is the task, for kind task.
	UPID string `json:"upid,omitempty"`
	// Digest is the configuration's digest, for kind config.
	Digest string `json:"digest,omitempty"`
}

// PlannedRequest is a request as validated: what applying a plan sends.
type PlannedRequest struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Params map[string][]string `json:"params"`
}

// Resolution states.
const (
	StateApplied    = "applied"
	StateNotApplied = "not_applied"
	StateUnknown    = "unknown"
)

// ErrOperationKeyUsed marks an intent whose operation key the same key has
// used before; the *OperationKeyError says for which call and whether the
// request was the same.
var ErrOperationKeyUsed = errors.New("operation key already used")

// OperationKeyError is an intent refused because its operation key was
// used before by the same key. Same reports whether the earlier request
// was this one (a retry: the caller is given the recorded operation) or
// another (refused).
type OperationKeyError struct {
	Key           string
	CallID        string
	RequestDigest string
	Same          bool
}

func (e *OperationKeyError) Error() string {
	if e.Same {
		return fmt.Sprintf("operation key %q was used for this same request: operation %s", e.Key, e.CallID)
	}
	return fmt.Sprintf("operation key %q was used for a different request (operation %s)", e.Key, e.CallID)
}

// Unwrap returns ErrOperationKeyUsed.
func (e *OperationKeyError) Unwrap() error { return ErrOperationKeyUsed }

// checkOperationKey: 1 to 128 characters of [A-Za-z0-9._:-].
func checkOperationKey(k string) error {
	if k == "" || len(k) > 128 {
		return fmt.Errorf("operation_key %q: want 1 to 128 characters of [A-Za-z0-9._:-]", truncate(k))
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("operation_key %q: character %q at %d is not in [A-Za-z0-9._:-]", truncate(k), c, i)
		}
	}
	return nil
}

// CheckOperationKey validates an operation key before a call is planned,
// so a bad one is an argument error and not a journal failure.
func CheckOperationKey(k string) error { return checkOperationKey(k) }

type opKey struct{ keyID, key string }

// checkOperations compares the operations index with the intents.
func checkOperations(ctx context.Context, tx *sql.Tx, ops map[opKey]string) error {
	rows, err := tx.QueryContext(ctx, `SELECT key_id, operation_key, call_id FROM operations`)
	if err != nil {
		return fmt.Errorf("journal: verify: %w", err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var k opKey
		var callID string
		if err := rows.Scan(&k.keyID, &k.key, &callID); err != nil {
			return fmt.Errorf("journal: verify: %w", err)
		}
		if ops[k] != callID {
			return chainErr(0, "the operations index says key %s's operation %q is call %s, the intents say %q", k.keyID, k.key, callID, ops[k])
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journal: verify: %w", err)
	}
	if seen != len(ops) {
		return chainErr(0, "the operations index has %d entries, the intents %d", seen, len(ops))
	}
	return nil
}

// Observation is a configuration as the daemon saw it.
type Observation struct {
	Time time.Time
	// CallID links it to the operation it was read for (before or after
	// a write), or is empty for a read of its own (a new id is made).
	CallID    string
	Principal Principal
	// Tool is what read it (the tool of the call, or "daemon").
	Tool         string
	PathTemplate string
	Path         string
	Digest       string
	Config       map[string]any
}

// Observe records a configuration as seen; it returns once durable.
func (j *Journal) Observe(ctx context.Context, o Observation) (Event, error) {
	c := Call{ID: o.CallID, Time: o.Time, Principal: o.Principal, Tool: o.Tool, Method: "GET", PathTemplate: o.PathTemplate, Path: o.Path,
		Detail: &Detail{Digest: o.Digest, Config: o.Config}}
	if c.Tool == "" {
		c.Tool = "daemon"
	}
	r, err := j.callRow(KindObservation, &c, OutcomeOK)
	if err != nil {
		return Event{}, err
	}
	r.outcome = string(OutcomeOK)
	return j.write(ctx, &r)
}

// Resolution settles the outcome of an operation (an intent's call id).
type Resolution struct {
	Time   time.Time
	CallID string
	// State is applied, not_applied or unknown.
	State string
	// By is who settled it: the daemon's reconciliation, or a person at
	// the host (audit resolve), with their reason.
	By       Principal
	Tool     string
	Reason   string
	Evidence []Evidence
}

// Resolve records a resolution; the operation must exist (ErrNoIntent).
func (j *Journal) Resolve(ctx context.Context, res Resolution) (Event, error) {
	switch res.State {
	case StateApplied, StateNotApplied, StateUnknown:
	default:
		return Event{}, fmt.Errorf("%w: state %q: want applied, not_applied or unknown", ErrInvalid, truncate(res.State))
	}
	if err := checkCallID(res.CallID); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	tool := res.Tool
	if tool == "" {
		tool = "reconcile"
	}
	c := Call{ID: res.CallID, Time: res.Time, Principal: res.By, Tool: tool,
		Detail: &Detail{State: res.State, Reason: res.Reason, Evidence: res.Evidence}}
	r, err := j.callRow(KindResolution, &c, OutcomeOK)
	if err != nil {
		return Event{}, err
	}
	r.outcome = string(OutcomeOK)
	r.errorText = fitText(j.red.Text(res.Reason), maxError, true)
	return j.write(ctx, &r)
}

// Plan is a preview kept for later.
type Plan struct {
	ID        string
	Time      time.Time
	Principal Principal
	Tool      string
	Endpoint  string
	// PathTemplate and Path of the planned call, and its risk.
	PathTemplate, Path, Risk string
	Decision                 Decision
	Request                  PlannedRequest
	// Digest is the configuration's digest the plan was made against ("":
	// not a config edit).
	Digest  string
	Expires time.Time
	Change  string
}

// KeepPlan records a plan.
func (j *Journal) KeepPlan(ctx context.Context, p Plan) (Event, error) {
	exp := p.Expires.UTC()
	req := p.Request
	c := Call{ID: p.ID, Time: p.Time, Principal: p.Principal, Tool: p.Tool, Endpoint: p.Endpoint, Method: req.Method,
		PathTemplate: p.PathTemplate, Path: p.Path, Risk: p.Risk, Decision: p.Decision, Args: req.Params,
		Detail: &Detail{Digest: p.Digest, Request: &req, Expires: &exp, Change: p.Change}}
	r, err := j.callRow(KindPlan, &c, OutcomeOK)
	if err != nil {
		return Event{}, err
	}
	r.outcome = string(OutcomeOK)
	return j.write(ctx, &r)
}

// OperationByKey finds the operation a key's operation key names: its call
// id and request digest; ok is false when there is none.
func (j *Journal) OperationByKey(ctx context.Context, keyID, key string) (callID, requestDigest string, ok bool, err error) {
	err = j.r.QueryRowContext(ctx, `SELECT call_id, request_digest FROM operations WHERE key_id = ? AND operation_key = ?`, keyID, key).Scan(&callID, &requestDigest)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("journal: operation by key: %w", err)
	}
	return callID, requestDigest, true, nil
}

// PathEvents returns the rows of one concrete path (reads, observations,
// intents, receipts) with ids above afterID, oldest first (at most limit):
// what the journal saw of a configuration since a write.
func (j *Journal) PathEvents(ctx context.Context, path string, afterID int64, limit int) ([]Event, error) {
	if limit <= 0 || limit > maxPage {
		return nil, fmt.Errorf("journal: path events: limit %d: want 1 to %d", limit, maxPage)
	}
	return j.query(ctx, `SELECT `+columns+` FROM events WHERE path = ? AND kind IN ('call', 'observation', 'intent', 'receipt') AND id > ? ORDER BY id LIMIT ?`,
		path, afterID, limit)
}

// ChangeEvents returns the intents of one key's change (the operations it
// grouped under one name), oldest first; their receipts are read with
// CallEvents.
func (j *Journal) ChangeEvents(ctx context.Context, keyID, change string) ([]Event, error) {
	if err := checkOperationKey(change); err != nil {
		return nil, fmt.Errorf("%w: change: %w", ErrInvalid, err)
	}
	return j.query(ctx, `SELECT `+columns+` FROM events WHERE key_id = ? AND json_extract(detail, '$.change') = ? AND detail <> '' AND kind = 'intent' ORDER BY id LIMIT ?`,
		keyID, change, maxPage)
}

// KeyEvents returns the last n rows of one key (1 to 10000), oldest first:
// what an agent may read of the journal about itself.
func (j *Journal) KeyEvents(ctx context.Context, keyID string, n int) ([]Event, error) {
	if n <= 0 || n > maxPage {
		return nil, fmt.Errorf("journal: key events: %d rows: want 1 to %d", n, maxPage)
	}
	evs, err := j.query(ctx, `SELECT `+columns+` FROM events WHERE key_id = ? ORDER BY id DESC LIMIT ?`, keyID, n)
	if err != nil {
		return nil, err
	}
	for i, k := 0, len(evs)-1; i < k; i, k = i+1, k-1 {
		evs[i], evs[k] = evs[k], evs[i]
	}
	return evs, nil
}

// DetailOf decodes a row's detail; a row without one has an empty Detail.
func (e Event) DetailOf() (Detail, error) {
	var d Detail
	if len(e.Detail) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return d, fmt.Errorf("journal: row %d: detail: %w", e.ID, err)
	}
	return d, nil
}
