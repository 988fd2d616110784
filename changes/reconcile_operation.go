package changes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// ErrNotOperation is an id that names no write: reads, refusals and
// other rows are not operations.
var ErrNotOperation = errors.New("no operation has this id (a write's operation id; reads and refusals are not operations)")

// Operation is a write's rows in the journal, read back: its intent, its
// receipt if any, the resolutions that settled it since (reconciliation,
// a person), and the observations made for it.
type Operation struct {
	Intent       journal.Event
	IntentDetail journal.Detail
	// Receipt is nil while the intent is open.
	Receipt       *journal.Event
	ReceiptDetail journal.Detail
	Resolutions   []journal.Event
	Observations  []journal.Event
}

// ReadOperation reads an operation from the rows of its call id
// (journal.CallEvents); ErrNotOperation when they hold no intent.
func ReadOperation(evs []journal.Event) (*Operation, error) {
	op := &Operation{}
	found := false
	for _, ev := range evs {
		switch ev.Kind {
		case journal.KindIntent:
			d, err := ev.DetailOf()
			if err != nil {
				return nil, err
			}
			op.Intent, op.IntentDetail, found = ev, d, true
		case journal.KindReceipt:
			d, err := ev.DetailOf()
			if err != nil {
				return nil, err
			}
			e := ev
			op.Receipt, op.ReceiptDetail = &e, d
		case journal.KindResolution:
			op.Resolutions = append(op.Resolutions, ev)
		case journal.KindObservation:
			op.Observations = append(op.Observations, ev)
		}
	}
	if !found {
		return nil, ErrNotOperation
	}
	return op, nil
}

// ID is the operation's id: its intent's call id.
func (op *Operation) ID() string { return op.Intent.CallID }

// Resolution is the last resolution that gave a verdict, if any.
func (op *Operation) Resolution() (journal.Event, journal.Detail, bool) {
	for i := len(op.Resolutions) - 1; i >= 0; i-- {
		if d, err := op.Resolutions[i].DetailOf(); err == nil && d.State != "" {
			return op.Resolutions[i], d, true
		}
	}
	return journal.Event{}, journal.Detail{}, false
}

// State is the operation's outcome as the journal knows it: the last
// resolution's verdict (applied, not_applied, unknown), else the
// receipt's outcome, else pending (an open intent).
func (op *Operation) State() string {
	if _, d, ok := op.Resolution(); ok {
		return d.State
	}
	if op.Receipt == nil {
		return string(journal.OutcomePending)
	}
	return string(op.Receipt.Outcome)
}

// Settled reports whether the operation's outcome is known: a resolution
// said applied or not_applied, or the receipt is PVE's own answer (ok,
// error, task_failed). Pending, uncertain, task_running and unknown are
// not settled.
func (op *Operation) Settled() bool {
	switch op.State() {
	case journal.StateApplied, journal.StateNotApplied,
		string(journal.OutcomeOK), string(journal.OutcomeError), string(journal.OutcomeTaskFailed):
		return true
	}
	return false
}

// UPIDs are the tasks the journal ties to the operation: its receipt's,
// and those its resolutions' evidence adopted.
func (op *Operation) UPIDs() []string {
	var out []string
	if op.Receipt != nil && op.Receipt.UPID != "" {
		out = append(out, op.Receipt.UPID)
	}
	for _, r := range op.Resolutions {
		d, err := r.DetailOf()
		if err != nil || d.State == journal.StateUnknown {
			continue
		}
		for _, e := range d.Evidence {
			if e.Kind == EvidenceTask && e.UPID != "" {
				out = append(out, e.UPID)
			}
		}
	}
	return out
}

// pathVars matches a concrete path to its template: the values of the
// template's {variables}.
func pathVars(template, path string) (map[string]string, error) {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return nil, fmt.Errorf("path %q does not match template %q", path, template)
	}
	vars := map[string]string{}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			vars[t[1:len(t)-1]] = ps[i]
			continue
		}
		if t != ps[i] {
			return nil, fmt.Errorf("path %q does not match template %q", path, template)
		}
	}
	return vars, nil
}
