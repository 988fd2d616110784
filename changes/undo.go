package changes

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// Undo (docs/changes.md#undo) works out, for one operation, what taking it
// back would do, from the journal's rows of the operation (the intent's
// prior configuration, the receipt's configuration after it and the fields
// it changed), the journal's later rows of the same configuration (reads,
// observations, other writes), PVE's task index for the guest, and the
// configuration as it is now. A field is restored (or deleted, when the
// operation added it) only if its value now is the one the operation left
// and nothing seen since shows anyone changed it; otherwise it is a
// conflict, explained by the evidence. A conflict changes nothing: the
// undo of an operation runs whole or not at all, and there is no force.

// UndoStatus says whether an undo can run.
type UndoStatus string

// Undo statuses.
const (
	// UndoReady: every field can be restored (or the snapshot the
	// operation made deleted); Request is what undo sends.
	UndoReady UndoStatus = "ready"
	// UndoConflict: a field (or the guest as a whole) changed since, or
	// cannot be set back; nothing is sent.
	UndoConflict UndoStatus = "conflict"
	// UndoNotInvertible: the operation has no inverse undo can be sure of
	// (a delete, a migration, a disk resize, a create, a power action).
	UndoNotInvertible UndoStatus = "not_invertible"
	// UndoNothing: the operation changed nothing (PVE refused it, or it set
	// the values that were there), or what it made is gone already.
	UndoNothing UndoStatus = "nothing_to_undo"
	// UndoDone: an undo of the operation succeeded already (UndoneBy).
	UndoDone UndoStatus = "undone"
	// UndoUnsettled: the operation's outcome (or an undo of it) is not
	// known yet: reconcile it first.
	UndoUnsettled UndoStatus = "unsettled"
)

// FieldAction is what undo does to one field.
type FieldAction string

// Field actions.
const (
	FieldRestore  FieldAction = "restore"  // set back to its value before the operation
	FieldDelete   FieldAction = "delete"   // remove: the operation added it
	FieldConflict FieldAction = "conflict" // left as it is, with the reason
)

// Seen is one piece of evidence undo read.
type Seen struct {
	// Kind is journal (a row of the journal), task (a task of PVE's
	// index) or config (the configuration as PVE returns it now).
	Kind string `json:"kind"`
	// Row is the journal row, Operation the operation it belongs to and
	// By the key that made it.
	Row       int64  `json:"row,omitempty"`
	Operation string `json:"operation,omitempty"`
	By        string `json:"by,omitempty"`
	// UPID is the task, for kind task.
	UPID string `json:"upid,omitempty"`
	// Says is what it shows, in words.
	Says string `json:"says"`
}

// FieldUndo is the plan for one field the operation changed. Values are
// decoded JSON as PVE returns them (and as the journal keeps them, secret
// values redacted); nil is absent.
type FieldUndo struct {
	Field  string      `json:"field"`
	Action FieldAction `json:"action"`
	// Before is the value before the operation, Left the value it left,
	// Current the value now.
	Before  any `json:"before"`
	Left    any `json:"left"`
	Current any `json:"current"`
	// Secret: the journal keeps only a marker of the values.
	Secret bool `json:"secret,omitempty"`
	// Why explains a conflict.
	Why      string `json:"why,omitempty"`
	Evidence []Seen `json:"evidence,omitempty"`
}

// UndoRequest is what undo sends: a config edit that sets the fields back
// (params: field → value, delete, digest), or the deletion of the snapshot
// the operation made.
type UndoRequest struct {
	Method string         `json:"method"`
	Path   string         `json:"path"`
	Params map[string]any `json:"params"`
	// Digest is the configuration's digest now, which the edit carries:
	// a change in between makes PVE refuse it.
	Digest string `json:"digest,omitempty"`
}

// RollbackOffer is a snapshot of the guest that the operation's change
// made before it: rolling back to it takes the whole guest back (disks
// too) and discards every change since, anyone's. Undo never does it; the
// caller may, knowingly.
type RollbackOffer struct {
	Snapshot string `json:"snapshot"`
	MadeBy   string `json:"made_by"`
	Path     string `json:"path"`
	Note     string `json:"note"`
}

// UndoPlan is what undoing one operation would do.
type UndoPlan struct {
	Operation string `json:"operation"`
	// Method, Path and Template are the operation's request.
	Method   string `json:"method"`
	Path     string `json:"path"`
	Template string `json:"template"`
	// KeyID is the key that made the operation; Change its change group.
	KeyID  string     `json:"key_id"`
	Change string     `json:"change,omitempty"`
	Status UndoStatus `json:"status"`
	// Reason says why, when the status is not ready.
	Reason string      `json:"reason,omitempty"`
	Fields []FieldUndo `json:"fields,omitempty"`
	// Evidence is about the operation as a whole: tasks that changed the
	// guest since, the snapshot it made, fields its answer showed that it
	// did not ask for.
	Evidence []Seen `json:"evidence,omitempty"`
	// Request is the undo to send, when ready.
	Request *UndoRequest `json:"request,omitempty"`
	// UndoneBy is the operation that undid it, when undone.
	UndoneBy string `json:"undone_by,omitempty"`
	// Attempts counts the undos of it the journal has (whatever their
	// outcome), so that each new attempt can be named apart.
	Attempts int `json:"attempts,omitempty"`
	// Rollback is offered when the operation's change made a snapshot of
	// the guest before it.
	Rollback *RollbackOffer `json:"rollback,omitempty"`
	// Config is the configuration as PVE returned it for this plan (nil
	// when none was read): an observation the caller may journal, so that
	// what undo saw is evidence for the next one.
	Config map[string]any `json:"-"`
}

// Runnable reports whether the undo can be sent.
func (p *UndoPlan) Runnable() bool { return p.Status == UndoReady && p.Request != nil }

// GuestTask is a task of PVE's index on a guest.
type GuestTask struct {
	UPID   pve.UPID
	Ended  bool
	End    time.Time
	Status string
}

// Snapshot is a snapshot of a guest as PVE lists it.
type Snapshot struct {
	Name string
	// Time is its snaptime (when PVE began making it).
	Time time.Time
}

// opRows are one operation's rows, read back.
type opRows struct {
	id          string
	intent      *journal.Event
	in          journal.Detail
	prior       map[string]any // the intent's prior configuration
	args        map[string]any
	receipt     *journal.Event
	out         journal.Detail
	resolutions []journal.Detail
}

func parseOp(evs []journal.Event) (*opRows, error) {
	var op *opRows
	for i := range evs {
		ev := &evs[i]
		if op == nil {
			op = &opRows{id: ev.CallID}
		}
		if ev.CallID != op.id {
			return nil, fmt.Errorf("changes: rows of two operations (%s, %s)", op.id, ev.CallID)
		}
		d, err := ev.DetailOf()
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case journal.KindIntent:
			op.intent, op.in = ev, d
			if op.prior, err = decodeObject(ev.PriorConfig); err != nil {
				return nil, fmt.Errorf("changes: row %d: prior config: %w", ev.ID, err)
			}
			if op.args, err = decodeObject(ev.Args); err != nil {
				return nil, fmt.Errorf("changes: row %d: args: %w", ev.ID, err)
			}
		case journal.KindReceipt:
			op.receipt, op.out = ev, d
		case journal.KindResolution:
			op.resolutions = append(op.resolutions, d)
		}
	}
	if op == nil {
		return nil, ErrNotOperation
	}
	return op, nil
}

func decodeObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// state is the operation's outcome: the last resolution's verdict, else
// the receipt's outcome, else pending.
func (op *opRows) state() string {
	for i := len(op.resolutions) - 1; i >= 0; i-- {
		if s := op.resolutions[i].State; s != "" {
			return s
		}
	}
	if op.receipt == nil {
		return "pending"
	}
	return string(op.receipt.Outcome)
}

// landed: the operation took effect as far as the journal knows.
func (op *opRows) landed() bool {
	s := op.state()
	return s == string(journal.OutcomeOK) || s == journal.StateApplied
}

// changedNothing: PVE refused it (or a person settled that it did not
// happen).
func (op *opRows) changedNothing() bool {
	switch op.state() {
	case string(journal.OutcomeError), string(journal.OutcomeDenied), string(journal.OutcomeInvalid), journal.StateNotApplied:
		return true
	}
	return false
}

func (op *opRows) who() string {
	if op.intent == nil {
		if op.receipt != nil {
			return keyName(op.receipt.Principal)
		}
		return ""
	}
	return keyName(op.intent.Principal)
}

func keyName(p journal.Principal) string {
	if p.KeyName != "" {
		return p.KeyName
	}
	return p.KeyID
}

// configControl are the parameters of a config edit that are not fields
// of the configuration.
var configControl = map[string]bool{
	"node": true, "vmid": true, "digest": true, "delete": true, "revert": true, "skiplock": true,
	"force": true, "background_delay": true, "skip_cloud_init": true, "import-working-storage": true,
}

// named are the fields a config edit's request sets, deletes or reverts
// (cdrom is ide2).
func named(args map[string]any) map[string]bool {
	out := map[string]bool{}
	add := func(k string) {
		out[k] = true
		if k == "cdrom" {
			out["ide2"] = true
		}
	}
	for k, v := range args {
		if !configControl[k] {
			add(k)
			continue
		}
		if k == "delete" || k == "revert" {
			s, _ := scalarText(v)
			for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' }) {
				add(f)
			}
		}
	}
	return out
}

// guestOf parses /nodes/{node}/qemu|lxc/{vmid}/… .
func guestOf(path string) (node, kind string, vmid int, ok bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) < 4 || segs[0] != "nodes" || (segs[2] != "qemu" && segs[2] != "lxc") {
		return "", "", 0, false
	}
	id, err := strconv.Atoi(segs[3])
	if err != nil || id <= 0 {
		return "", "", 0, false
	}
	return segs[1], segs[2], id, true
}

// guestBase is /nodes/N/qemu|lxc/ID of a guest path.
func guestBase(path string) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if _, _, _, ok := guestOf(path); !ok {
		return "", false
	}
	return "/" + strings.Join(segs[:4], "/"), true
}

// isSnapshotCreate: POST /nodes/{node}/qemu|lxc/{vmid}/snapshot.
func isSnapshotCreate(method, template string) bool {
	return method == "POST" && (template == "/nodes/{node}/qemu/{vmid}/snapshot" || template == "/nodes/{node}/lxc/{vmid}/snapshot")
}

// noInverse says why an operation that is neither a config edit nor a
// snapshot has no inverse undo can be sure of.
func noInverse(method, template string) string {
	last := template[strings.LastIndex(template, "/")+1:]
	switch {
	case method == "DELETE":
		return "a delete cannot be undone: what it removed is gone, and making something like it again would be a new decision, not an undo"
	case last == "migrate" || last == "remote_migrate":
		return "a migration is not undone: the guest is where it was moved; migrate it back yourself if you mean to"
	case last == "resize":
		return "a disk resize cannot be undone: PVE cannot shrink a disk"
	case last == "move_disk" || last == "move_volume":
		return "moving a disk is not undone: move it back yourself if you mean to"
	case last == "rollback":
		return "a rollback cannot be undone: the state it replaced is gone"
	case template == "/nodes/{node}/qemu" || template == "/nodes/{node}/lxc" || last == "clone":
		return "undoing a create would destroy the guest and everything written to it since; destroy it yourself if you mean to"
	case strings.Contains(template, "/status/"):
		return "a power action has no undo: its opposite (start, stop) is a decision of its own; make it yourself if you mean to"
	case last == "template":
		return "a guest made a template cannot be made a guest again"
	}
	return method + " " + template + " has no inverse undo can be sure of: only configuration edits, and snapshots the operation made, are undone"
}

// neutralTasks are the kinds of task that do not change a guest's
// configured values (power, consoles, backups, snapshots); every other
// task on the guest (qmconfig, rollback, resize, move, migrate, restore,
// …) may have, and PVE does not say which fields.
func neutralTask(typ string) bool {
	t := strings.TrimPrefix(strings.TrimPrefix(typ, "qm"), "vz")
	switch t {
	case "start", "stop", "shutdown", "reboot", "reset", "suspend", "resume", "pause",
		"dump", "snapshot", "delsnapshot", "vncproxy", "vncshell", "spiceproxy", "termproxy", "vncterm":
		return true
	}
	return typ == "vzdump" || typ == "vncproxy" || typ == "termproxy" || typ == "spiceproxy"
}

// scalarText is a scalar's text as PVE writes it: 1 and "1" are one value.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), true
		}
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

// same compares two configuration values; nil is absent.
func same(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	as, aok := scalarText(a)
	bs, bok := scalarText(b)
	if aok && bok {
		return as == bs
	}
	return reflect.DeepEqual(a, b)
}

// redactedMark is how the journal's markers begin.
const redactedMark = "[redacted hmac:"

// holdsMarker: a value the journal kept only as a marker (a secret, or a
// string with a secret inside it), which undo cannot write back.
func holdsMarker(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, redactedMark)
	case map[string]any:
		for _, e := range x {
			if holdsMarker(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsMarker(e) {
				return true
			}
		}
	}
	return false
}

// show renders a value for an explanation.
func show(v any) string {
	if v == nil {
		return "(not set)"
	}
	if s, ok := scalarText(v); ok {
		return strconv.Quote(s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func when(t time.Time) string { return t.UTC().Format(time.RFC3339) }
