package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// rowFormat is the canonical encoding rows are hashed with. A row stores
// it, so a later encoding can be introduced without rewriting old rows:
// format 1 rows (before the detail column) are hashed without detail,
// format 2 rows with it.
const rowFormat = 2

// genesis is the prev_hash of the first row.
const genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// timeLayout is how times are stored: UTC, fixed width, microseconds.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// row is one events row exactly as stored: the columns, in order.
type row struct {
	id           int64
	format       int64
	time         string
	kind         string
	callID       string
	keyID        string
	keyName      string
	profile      string
	policy       string
	transport    string
	source       string
	tailnetUser  string
	tailnetNode  string
	tool         string
	endpoint     string
	method       string
	pathTemplate string
	path         string
	risk         string
	args         string
	effect       string
	reasons      string
	decisionPol  string
	policyDigest string
	priorDigest  string
	priorConfig  string
	outcome      string
	errorText    string
	status       int64
	durationUS   int64
	upid         string
	jobID        string
	detail       string // JSON of the change contract's Detail, or "" (format 1 rows: always "")
	prevHash     string
	hash         string

	// Not columns: an intent's operation key and request digest, for the
	// operations index (they are in detail too).
	opKey, opDigest string
}

// columns lists the events columns in the order of row's fields and of
// the canonical encoding (hash last, not hashed).
const columns = `id, format, time, kind, call_id, key_id, key_name, profile, policy, transport, source,
	tailnet_user, tailnet_node, tool, endpoint, method, path_template, path, risk, args, effect, reasons,
	decision_policy, policy_digest, prior_digest, prior_config, outcome, error, status, duration_us,
	upid, job_id, detail, prev_hash, hash`

// fields returns pointers to the stored fields in column order.
func (r *row) fields() []any {
	return []any{&r.id, &r.format, &r.time, &r.kind, &r.callID, &r.keyID, &r.keyName, &r.profile,
		&r.policy, &r.transport, &r.source, &r.tailnetUser, &r.tailnetNode, &r.tool, &r.endpoint,
		&r.method, &r.pathTemplate, &r.path, &r.risk, &r.args, &r.effect, &r.reasons, &r.decisionPol,
		&r.policyDigest, &r.priorDigest, &r.priorConfig, &r.outcome, &r.errorText, &r.status,
		&r.durationUS, &r.upid, &r.jobID, &r.detail, &r.prevHash, &r.hash}
}

// values returns the stored values in column order.
func (r *row) values() []any {
	f := r.fields()
	v := make([]any, len(f))
	for i, p := range f {
		switch x := p.(type) {
		case *int64:
			v[i] = *x
		case *string:
			v[i] = *x
		}
	}
	return v
}

// canonical is the byte string a row's hash covers: the tag
// "proxmox-mcp journal row\x00", then every column from id to prev_hash in
// column order, each as a 4-byte big-endian length followed by the value
// as text (integers in decimal); a format 1 row leaves detail out (it had
// no such column). hash = hex(SHA-256(canonical)). The encoding is
// unambiguous (every value is length-prefixed), and it hashes the stored
// text itself, so verifying needs no JSON re-encoding.
func (r *row) canonical() []byte { return appendCanonical(nil, r.fields()) }

// appendCanonical appends the canonical encoding of a row, given as its
// fields (row.fields: pointers in column order, hash last), to b.
func appendCanonical(b []byte, fields []any) []byte {
	b = append(b, canonicalTag...)
	var num [20]byte
	format := *fields[1].(*int64)
	detail := len(fields) - 3                  // detail, prev_hash, hash
	for i, p := range fields[:len(fields)-1] { // every column but hash
		if i == detail && format < 2 {
			continue
		}
		switch x := p.(type) {
		case *int64:
			v := strconv.AppendInt(num[:0], *x, 10)
			b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		case *string:
			b = binary.BigEndian.AppendUint32(b, uint32(len(*x)))
			b = append(b, *x...)
		}
	}
	return b
}

const canonicalTag = "proxmox-mcp journal row\x00"

// computeHash returns the hash the row should carry.
func (r *row) computeHash() string {
	var buf []byte
	var h [2 * sha256.Size]byte
	return string(hashFields(&buf, r.fields(), &h))
}

// hashFields hashes the row whose fields are given into h, as hex, in a
// buffer that a loop can reuse, and returns h's slice.
func hashFields(buf *[]byte, fields []any, h *[2 * sha256.Size]byte) []byte {
	*buf = appendCanonical((*buf)[:0], fields)
	sum := sha256.Sum256(*buf)
	hex.Encode(h[:], sum[:])
	return h[:]
}

// event converts a stored row to an Event.
func (r *row) event() (Event, error) {
	t, err := time.Parse(timeLayout, r.time)
	if err != nil {
		return Event{}, fmt.Errorf("row %d: time %q: %w", r.id, r.time, err)
	}
	var reasons []string
	if err := json.Unmarshal([]byte(r.reasons), &reasons); err != nil {
		return Event{}, fmt.Errorf("row %d: reasons: %w", r.id, err)
	}
	if reasons == nil {
		reasons = []string{}
	}
	return Event{
		ID: r.id, Time: t, Kind: Kind(r.kind), CallID: r.callID,
		Principal: Principal{KeyID: r.keyID, KeyName: r.keyName, Profile: r.profile, Policy: r.policy,
			Transport: r.transport, Source: r.source, TailnetUser: r.tailnetUser, TailnetNode: r.tailnetNode},
		Tool: r.tool, Endpoint: r.endpoint, Method: r.method, PathTemplate: r.pathTemplate, Path: r.path,
		Risk: r.risk, Args: json.RawMessage(r.args),
		Decision:    Decision{Effect: r.effect, Reasons: reasons, Policy: r.decisionPol, PolicyDigest: r.policyDigest},
		PriorDigest: r.priorDigest, PriorConfig: json.RawMessage(r.priorConfig),
		Outcome: Outcome(r.outcome), Error: r.errorText, Status: int(r.status), DurationUS: r.durationUS,
		UPID: r.upid, JobID: r.jobID, Detail: rawOrNil(r.detail), PrevHash: r.prevHash, Hash: r.hash,
	}, nil
}

// rawOrNil is stored JSON as a raw message; "" (no detail) is nil.
func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// ErrTampered marks a journal whose hash chain does not hold.
var ErrTampered = errors.New("journal: hash chain broken")

// ChainError says where the chain first breaks. It wraps ErrTampered.
type ChainError struct {
	// ID is the first row that does not verify (for a missing row, the id
	// that should have been there).
	ID int64
	// Reason says what is wrong with it.
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("journal: hash chain broken at row %d: %s", e.ID, e.Reason)
}

func (e *ChainError) Unwrap() error { return ErrTampered }

// VerifyReport sums up a verification.
type VerifyReport struct {
	// Rows is how many rows verified (before the break, if any).
	Rows int64 `json:"rows"`
	// HeadID and Head are the last verified row's id and hash. Keep Head
	// somewhere else (a ticket, the system journal) to detect a later
	// truncation of the journal, which a chain alone cannot show.
	HeadID int64  `json:"head_id"`
	Head   string `json:"head"`
	// OpenIntents is how many intents have no receipt.
	OpenIntents int `json:"open_intents"`
}

func chainErr(id int64, format string, args ...any) error {
	return &ChainError{ID: id, Reason: fmt.Sprintf(format, args...)}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return strings.ToValidUTF8(h, "?")
}
