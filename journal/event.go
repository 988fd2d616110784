package journal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is what a row records.
type Kind string

// Kinds of rows.
const (
	// KindCall is a whole call in one row: a read, a refusal, or any call
	// that sent nothing to PVE. It is written once the call has ended,
	// before the reply.
	KindCall Kind = "call"
	// KindIntent is a write about to be sent to PVE, recorded before it is
	// sent. Its outcome is always "pending".
	KindIntent Kind = "intent"
	// KindReceipt closes an intent: how the write ended. It carries the
	// intent's call id, principal, tool and paths again so that every row
	// reads on its own.
	KindReceipt Kind = "receipt"
	// KindObservation records a configuration as the daemon saw it (its
	// digest and values, redacted): before and after its own edits, and
	// on every read of a configuration. Undo reads them as evidence of
	// what else changed.
	KindObservation Kind = "observation"
	// KindResolution settles the outcome of an operation after the fact:
	// reconciliation from PVE's evidence, or a person (audit resolve).
	KindResolution Kind = "resolution"
	// KindPlan records a preview kept as a plan: the request and the
	// configuration digest it was planned against, and its expiry.
	KindPlan Kind = "plan"
	// KindJob records a job's state as the daemon learnt it from PVE:
	// the task an operation started was seen running, ended (ok, with
	// warnings, failed) or was cancelled. It carries the operation's call
	// id, principal and paths again, and the UPID.
	KindJob Kind = "job"
)

// Outcome is how a call ended.
type Outcome string

// Outcomes. An intent row is always OutcomePending; call and receipt rows
// have one of the others.
const (
	OutcomePending Outcome = "pending"
	// OutcomeOK: PVE (or the daemon, for calls that send nothing) answered
	// with success.
	OutcomeOK Outcome = "ok"
	// OutcomeError: PVE or the daemon refused or failed; nothing changed
	// that the caller was told about.
	OutcomeError Outcome = "error"
	// OutcomeDenied: the policy or a daemon-wide switch refused the call.
	OutcomeDenied Outcome = "denied"
	// OutcomeUncertain: a write was sent and its answer was lost; only
	// reconciliation against PVE's task index can tell what happened.
	OutcomeUncertain Outcome = "uncertain"
	// OutcomeDryRun: validated and decided, not sent.
	OutcomeDryRun Outcome = "dry_run"
	// OutcomeConfirm: held until a confirmation bound to this call is given.
	OutcomeConfirm Outcome = "confirm"
	// OutcomeInvalid: the arguments were refused before any decision.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeTaskFailed: PVE accepted the call and its task failed.
	OutcomeTaskFailed Outcome = "task_failed"
	// OutcomeTaskRunning: PVE accepted the call and its task was still
	// running when the reply was sent.
	OutcomeTaskRunning Outcome = "task_running"
)

// outcomes lists the outcomes a call or receipt row may have.
var outcomes = [...]Outcome{OutcomeOK, OutcomeError, OutcomeDenied, OutcomeUncertain,
	OutcomeDryRun, OutcomeConfirm, OutcomeInvalid, OutcomeTaskFailed, OutcomeTaskRunning}

func (o Outcome) final() bool {
	for _, x := range outcomes {
		if o == x {
			return true
		}
	}
	return false
}

// Effects a decision can have; they are the policy engine's.
var effects = [...]string{"allow", "deny", "confirm", "dry_run", "breakglass"}

// Principal is who made a call.
type Principal struct {
	// KeyID is the key's id (the public part of pmcp_<id>_<secret>), or a
	// fixed name for principals without a key, such as "local-root".
	KeyID string `json:"key_id"`
	// KeyName is the key's name at the time of the call.
	KeyName string `json:"key_name"`
	// Profile is the built-in profile the key is bound to, if any.
	Profile string `json:"profile"`
	// Policy is the custom policy the key is bound to, if any.
	Policy string `json:"policy"`
	// Transport is stdio, loopback, lan or tailnet.
	Transport string `json:"transport"`
	// Source is the client's address; empty on stdio.
	Source string `json:"source"`
	// TailnetUser and TailnetNode are what tsnet's WhoIs said, for calls
	// that arrived over the Tailnet.
	TailnetUser string `json:"tailnet_user"`
	TailnetNode string `json:"tailnet_node"`
}

// Decision is what the policy decided about a call.
type Decision struct {
	// Effect is allow, deny, confirm, dry_run or breakglass; empty when no
	// decision was made (arguments refused before it, or a tool that needs
	// none). An intent always has one, and it is not deny.
	Effect string `json:"effect"`
	// Reasons say why, in the policy's words.
	Reasons []string `json:"reasons"`
	// Policy names what decided: a profile, or a custom policy id@version.
	Policy string `json:"policy"`
	// PolicyDigest is the sha256 of the deciding policy's source.
	PolicyDigest string `json:"policy_digest"`
}

// Call describes a tool call, as [Journal.Record] and [Journal.Intent]
// take it.
type Call struct {
	// ID is the call id that links an intent to its receipt. Empty: the
	// journal makes one (32 hex digits). A caller that has its own request
	// id may pass it: 1 to 64 characters of [A-Za-z0-9._:-], unique in the
	// journal.
	ID string
	// Time is when the call arrived. Zero: the time of recording.
	Time      time.Time
	Principal Principal
	// Tool is the MCP tool the caller used, such as proxmox_api_call.
	Tool string
	// Endpoint is the endpoint's tool name, when the call resolved to one.
	Endpoint string
	// Method is GET, POST, PUT or DELETE; empty for tools that call no
	// endpoint (search, describe, schema status).
	Method string
	// PathTemplate is the endpoint's path as the schema spells it, such as
	// /nodes/{node}/qemu/{vmid}/config.
	PathTemplate string
	// Path is the concrete path, such as /nodes/pve1/qemu/100/config.
	Path string
	// Risk is read, write or destructive.
	Risk string
	// Args are the caller's arguments: any value that encodes to JSON (a
	// map[string]any, a struct, a json.RawMessage). Secrets are redacted
	// before anything is stored; the caller's value is not modified.
	Args any
	// Decision is the policy's decision.
	Decision Decision
	// PriorDigest and PriorConfig, for an intent to edit a configuration,
	// are the configuration (and PVE's digest of it) the edit was planned
	// against: what an undo restores. PriorConfig is redacted like Args.
	PriorDigest string
	PriorConfig any
	// Detail is what the change contract adds (operation key and request
	// digest of an intent, its change group, what it undoes); redacted
	// like Args.
	Detail *Detail
}

// Result is how a call ended, as [Journal.Record] and [Journal.Receipt]
// take it.
type Result struct {
	Outcome Outcome
	// Error is the error the caller was told, if any; values that look like
	// secrets are redacted from it.
	Error string
	// Status is PVE's HTTP status, when PVE answered.
	Status int
	// Duration is how long the call took, measured by the caller.
	Duration time.Duration
	// UPID is the task the call started, if any.
	UPID string
	// JobID is the daemon's job id for that task, if any.
	JobID string
	// Detail, on a receipt, is the evidence of the write: the digest and
	// configuration after it, and the fields it changed; redacted.
	Detail *Detail
}

// Event is one row of the journal, as read back. Its JSON form is the one
// `proxmox-mcp audit tail --json` and [Journal.Export] write; the field
// names are stable (docs/journal.md).
type Event struct {
	ID           int64           `json:"id"`
	Time         time.Time       `json:"time"`
	Kind         Kind            `json:"kind"`
	CallID       string          `json:"call_id"`
	Principal    Principal       `json:"principal"`
	Tool         string          `json:"tool"`
	Endpoint     string          `json:"endpoint"`
	Method       string          `json:"method"`
	PathTemplate string          `json:"path_template"`
	Path         string          `json:"path"`
	Risk         string          `json:"risk"`
	Args         json.RawMessage `json:"args"`
	Decision     Decision        `json:"decision"`
	PriorDigest  string          `json:"prior_digest"`
	PriorConfig  json.RawMessage `json:"prior_config"`
	Outcome      Outcome         `json:"outcome"`
	Error        string          `json:"error"`
	Status       int             `json:"status"`
	// DurationUS is the duration in microseconds.
	DurationUS int64  `json:"duration_us"`
	UPID       string `json:"upid"`
	JobID      string `json:"job_id"`
	// Detail is the change contract's part of the row (docs/changes.md),
	// or absent.
	Detail   json.RawMessage `json:"detail,omitempty"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// Duration returns the call's duration.
func (e Event) Duration() time.Duration { return time.Duration(e.DurationUS) * time.Microsecond }

// Limits on what one row holds. Longer text is cut to them, with a note
// of how much was cut (see fitText): the call is still recorded.
const (
	maxName  = 256      // tool, endpoint, method, principal fields, policy names, UPIDs
	maxPath  = 4096     // paths, each decision reason
	maxError = 16 << 10 // error text
	maxJSON  = 1 << 20  // the redacted arguments or prior configuration
)

func checkCallID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("call id %q: want 1 to 64 characters of [A-Za-z0-9._:-]", truncate(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("call id %q: character %q at %d is not in [A-Za-z0-9._:-]", truncate(id), c, i)
		}
	}
	return nil
}

// check validates the structure of a call; the messages name the field
// and the rule. Text is not refused for what it holds (callRow escapes
// and fits it); the method and paths are held to their forms, except on a
// call row with outcome invalid, which records what the caller asked for
// whatever it was.
func (c *Call) check(kind Kind, outcome Outcome) error {
	if c.ID != "" {
		if err := checkCallID(c.ID); err != nil {
			return err
		}
	}
	if c.Tool == "" {
		return fmt.Errorf("tool: required")
	}
	if c.Principal.KeyID == "" && c.Principal.KeyName == "" {
		return fmt.Errorf("principal: a key id or key name is required")
	}
	if c.Principal.Transport == "" {
		return fmt.Errorf("principal.transport: required (stdio, loopback, lan or tailnet)")
	}
	if kind != KindCall || outcome != OutcomeInvalid {
		switch c.Method {
		case "", "GET", "POST", "PUT", "DELETE":
		default:
			return fmt.Errorf("method %q: want GET, POST, PUT, DELETE or empty", truncate(c.Method))
		}
		for _, f := range []struct{ name, value string }{{"path_template", c.PathTemplate}, {"path", c.Path}} {
			if f.value != "" && !strings.HasPrefix(f.value, "/") {
				return fmt.Errorf("%s %q: must start with /", f.name, truncate(f.value))
			}
		}
		if c.Method != "" && c.Path == "" {
			return fmt.Errorf("path: required with method %s", c.Method)
		}
	}
	if c.Decision.Effect != "" && !knownEffect(c.Decision.Effect) {
		return fmt.Errorf("decision.effect %q: want one of %s, or empty when no decision was made", truncate(c.Decision.Effect), strings.Join(effects[:], ", "))
	}
	return nil
}

func knownEffect(e string) bool {
	for _, x := range effects {
		if e == x {
			return true
		}
	}
	return false
}

// check validates a result; kind is the row it goes into.
func (r *Result) check(kind Kind, effect string) error {
	if !r.Outcome.final() {
		return fmt.Errorf("outcome %q: want one of %s", truncate(string(r.Outcome)), outcomeList())
	}
	if r.Duration < 0 {
		return fmt.Errorf("duration %v: must not be negative", r.Duration)
	}
	if r.Status < 0 || r.Status > 999 {
		return fmt.Errorf("status %d: want an HTTP status or 0", r.Status)
	}
	if r.UPID != "" && !strings.HasPrefix(r.UPID, "UPID:") {
		return fmt.Errorf(`upid %q: must start with "UPID:"`, truncate(r.UPID))
	}
	if kind == KindCall && effect == "deny" && r.Outcome != OutcomeDenied {
		return fmt.Errorf("outcome %q: a call the policy denied has outcome denied", r.Outcome)
	}
	if kind == KindReceipt && (r.Outcome == OutcomeDenied || r.Outcome == OutcomeInvalid) {
		return fmt.Errorf("outcome %q: a receipt follows a write that was sent; a refused call is recorded with Record", r.Outcome)
	}
	return nil
}

func outcomeList() string {
	s := make([]string, len(outcomes))
	for i, o := range outcomes {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// truncate is the start of a value, for an error message (which %q
// quotes).
func truncate(s string) string {
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}
