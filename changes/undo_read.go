package changes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// UndoJournal is what undo reads of the journal (journal.Journal).
type UndoJournal interface {
	CallEvents(ctx context.Context, callID string) ([]journal.Event, error)
	PathEvents(ctx context.Context, path string, afterID int64, limit int) ([]journal.Event, error)
	ChangeEvents(ctx context.Context, keyID, change string) ([]journal.Event, error)
}

// UndoPVE is what undo reads of PVE: a configuration, the task index of a
// guest, and a guest's snapshots. PVEReader reads them with a client.
type UndoPVE interface {
	// Config reads a configuration (GET of a config edit's path).
	Config(ctx context.Context, path string) (map[string]any, error)
	// GuestTasks lists the tasks of guest vmid on a node that started at
	// or after since, or are still running.
	GuestTasks(ctx context.Context, node string, vmid int, since time.Time) ([]GuestTask, error)
	// Snapshots lists the snapshots of the guest at base
	// (/nodes/{node}/qemu|lxc/{vmid}).
	Snapshots(ctx context.Context, base string) ([]Snapshot, error)
}

// UndoOptions are an Undoer's dependencies.
type UndoOptions struct {
	Journal UndoJournal
	PVE     UndoPVE
	// Redact redacts a value read from PVE as the journal redacts what it
	// keeps (journal.Redactor.Value), so the two compare.
	Redact func(pathTemplate string, v any) any
	// Restorable says why a field of a configuration cannot be set back
	// through the edit of that configuration ("" when it can): not a
	// parameter of the edit, a disk (a volume is not a value), a secret.
	// Nil: every field can.
	Restorable func(pathTemplate, field string) string
	// MaxHistory bounds the journal rows of a configuration read since an
	// operation (20000 when zero): past it, undo refuses rather than judge
	// on part of the history.
	MaxHistory int
}

// Undoer works out what undoing an operation would do.
type Undoer struct {
	o UndoOptions
}

// NewUndoer returns an undo engine over a journal and PVE.
func NewUndoer(o UndoOptions) (*Undoer, error) {
	if o.Journal == nil || o.PVE == nil || o.Redact == nil {
		return nil, errors.New("changes: an undoer needs a journal, a PVE reader and the journal's redaction")
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 20000
	}
	return &Undoer{o: o}, nil
}

// errTooMuchHistory: the history since the operation is longer than undo
// reads.
var errTooMuchHistory = errors.New("too much history to check")

// taskLookback is how far before an operation the task index is read, for
// tasks that began before it and were still running.
const taskLookback = 24 * time.Hour

// pathPage is how many rows of a path are read at a time.
const pathPage = 1000

// operation reads an operation's rows: ErrNotOperation when callID names
// no write.
func (u *Undoer) operation(ctx context.Context, callID string) (*opRows, error) {
	evs, err := u.o.Journal.CallEvents(ctx, callID)
	if err != nil {
		return nil, fmt.Errorf("changes: read operation %s: %w", callID, err)
	}
	op, err := parseOp(evs)
	if err != nil {
		return nil, err
	}
	if op.intent == nil {
		return nil, ErrNotOperation
	}
	return op, nil
}

// Owner returns the key that made an operation (ErrNotOperation when there
// is none), so a caller can be refused another key's operation before
// anything else is read.
func (u *Undoer) Owner(ctx context.Context, callID string) (keyID string, err error) {
	op, err := u.operation(ctx, callID)
	if err != nil {
		return "", err
	}
	return op.intent.Principal.KeyID, nil
}

// Preview works out what undoing operation callID would do now. assumed
// are operations made after it (the later operations of its change) that
// are taken to be undone first: their fields count as set back, and the
// values they set as seen legitimately.
func (u *Undoer) Preview(ctx context.Context, callID string, assumed ...string) (*UndoPlan, error) {
	op, err := u.operation(ctx, callID)
	if err != nil {
		return nil, err
	}
	f := &undoFacts{op: op, ops: map[string]*opRows{}}
	in := op.intent
	paths := []string{in.Path}
	snapName, _ := op.args["snapname"].(string)
	snapshotOp := isSnapshotCreate(in.Method, in.PathTemplate) && snapName != ""
	if snapshotOp {
		paths = append(paths, in.Path+"/"+snapName)
	}
	after := in.ID
	if op.receipt != nil {
		after = op.receipt.ID
	}
	for _, p := range paths {
		rows, err := u.pathRows(ctx, p, after)
		if errors.Is(err, errTooMuchHistory) {
			return &UndoPlan{Operation: op.id, Method: in.Method, Path: in.Path, Template: in.PathTemplate, KeyID: in.Principal.KeyID, Change: op.in.Change,
				Status: UndoConflict, Reason: err.Error() + ": undo does not judge on part of it, so it refuses"}, nil
		}
		if err != nil {
			return nil, err
		}
		f.later = append(f.later, rows...)
	}
	slices.SortFunc(f.later, func(a, b journal.Event) int { return compareInt(a.ID, b.ID) })
	for _, r := range f.later {
		if r.Kind != journal.KindIntent && r.Kind != journal.KindReceipt || f.ops[r.CallID] != nil || r.CallID == op.id {
			continue
		}
		evs, err := u.o.Journal.CallEvents(ctx, r.CallID)
		if err != nil {
			return nil, fmt.Errorf("changes: read operation %s: %w", r.CallID, err)
		}
		x, err := parseOp(evs)
		if err != nil {
			return nil, err
		}
		f.ops[r.CallID] = x
	}
	for _, id := range assumed {
		x, err := u.operation(ctx, id)
		if err != nil {
			return nil, err
		}
		if x.intent.Path == in.Path {
			f.assumed = append(f.assumed, x)
		}
	}
	tmpl := in.PathTemplate
	f.restorable = func(field string) string {
		if u.o.Restorable == nil {
			return ""
		}
		return u.o.Restorable(tmpl, field)
	}
	if node, _, vmid, ok := guestOf(in.Path); ok {
		if f.tasks, err = u.o.PVE.GuestTasks(ctx, node, vmid, in.Time.Add(-taskLookback)); err != nil {
			return nil, fmt.Errorf("changes: read the task index of guest %d on %s: %w", vmid, node, err)
		}
	}
	var conf map[string]any
	switch {
	case op.prior != nil && op.landed():
		if conf, err = u.o.PVE.Config(ctx, in.Path); err != nil {
			f.currentErr = err
		} else if m, ok := u.o.Redact(tmpl, conf).(map[string]any); ok {
			f.current = m
		} else {
			f.currentErr = errors.New("the configuration is not an object")
		}
		if f.rollback, err = u.rollbackOffer(ctx, op); err != nil {
			return nil, err
		}
	case snapshotOp && op.landed():
		base, _ := guestBase(in.Path)
		f.snapshots, f.snapErr = u.o.PVE.Snapshots(ctx, base)
	}
	p := analyze(f)
	if f.current != nil {
		p.Config = conf
	}
	return p, nil
}

func (u *Undoer) pathRows(ctx context.Context, path string, after int64) ([]journal.Event, error) {
	page := min(pathPage, u.o.MaxHistory+1)
	var out []journal.Event
	for {
		rows, err := u.o.Journal.PathEvents(ctx, path, after, page)
		if err != nil {
			return nil, fmt.Errorf("changes: read the journal's rows of %s: %w", path, err)
		}
		out = append(out, rows...)
		if len(out) > u.o.MaxHistory {
			return nil, fmt.Errorf("%w: the journal has more than %d rows of %s since the operation", errTooMuchHistory, u.o.MaxHistory, path)
		}
		if len(rows) < page {
			return out, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// rollbackOffer finds a snapshot of the guest that the operation's change
// made before it and that is still there.
func (u *Undoer) rollbackOffer(ctx context.Context, op *opRows) (*RollbackOffer, error) {
	base, ok := guestBase(op.intent.Path)
	if op.in.Change == "" || !ok {
		return nil, nil
	}
	intents, err := u.o.Journal.ChangeEvents(ctx, op.intent.Principal.KeyID, op.in.Change)
	if err != nil {
		return nil, fmt.Errorf("changes: read change %s: %w", op.in.Change, err)
	}
	var found *RollbackOffer
	var snaps []Snapshot
	read := false
	for _, ev := range intents {
		if ev.ID >= op.intent.ID || !isSnapshotCreate(ev.Method, ev.PathTemplate) || ev.Path != base+"/snapshot" {
			continue
		}
		s, err := u.operation(ctx, ev.CallID)
		if err != nil || !s.landed() {
			continue
		}
		name, _ := s.args["snapname"].(string)
		if !read {
			if snaps, err = u.o.PVE.Snapshots(ctx, base); err != nil {
				return nil, nil // no offer without seeing the snapshot
			}
			read = true
		}
		for _, sn := range snaps {
			if sn.Name == name && !sn.Time.Before(s.intent.Time.Truncate(time.Second)) {
				found = &RollbackOffer{Snapshot: name, MadeBy: s.id, Path: base + "/snapshot/" + name + "/rollback",
					Note: "operation " + s.id + " of the same change made snapshot " + name + " before this one. Rolling back to it (POST " + base + "/snapshot/" + name + "/rollback) " +
						"takes the whole guest back, disks too, and discards every change since, anyone's; undo never does it, you may, knowingly."}
			}
		}
	}
	return found, nil
}
