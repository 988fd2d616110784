package changes

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// undoFacts are what undo has read about one operation.
type undoFacts struct {
	op *opRows
	// later are the rows of the operation's paths after its receipt,
	// oldest first; ops are the writes among them (every row of each,
	// earlier ones and resolutions too), by call id.
	later []journal.Event
	ops   map[string]*opRows
	// tasks are PVE's tasks on the guest around and after the operation.
	tasks []GuestTask
	// current is the configuration now (redacted like the journal's),
	// or currentErr why it could not be read.
	current    map[string]any
	currentErr error
	// snapshots are the guest's snapshots now, or snapErr.
	snapshots []Snapshot
	snapErr   error
	// assumed are later operations taken to be undone before this one
	// (the later operations of its change), newest first.
	assumed []*opRows
	// restorable says why a field cannot be set back ("" when it can).
	restorable func(field string) string
	rollback   *RollbackOffer
}

// maxEvidence bounds the evidence listed for one field.
const maxEvidence = 8

// analyze is the undo engine: what undoing f.op would do.
func analyze(f *undoFacts) *UndoPlan {
	op := f.op
	p := &UndoPlan{Operation: op.id, Rollback: f.rollback}
	if op.intent == nil {
		p.Status, p.Reason = UndoNotInvertible, "the journal has no intent of this operation"
		return p
	}
	in := op.intent
	p.Method, p.Path, p.Template, p.KeyID, p.Change = in.Method, in.Path, in.PathTemplate, in.Principal.KeyID, op.in.Change
	for _, x := range sortedOps(f.ops) {
		if x.in.UndoOf != op.id || x.id == op.id {
			continue
		}
		p.Attempts++
		switch {
		case x.landed():
			p.Status, p.UndoneBy = UndoDone, x.id
			p.Reason = fmt.Sprintf("operation %s undid it already (at %s)", x.id, when(x.intent.Time))
			return p
		case !x.changedNothing():
			p.Status = UndoUnsettled
			p.Reason = fmt.Sprintf("an undo of it, operation %s, is %s: settle it first (proxmox_reconcile), then undo again", x.id, x.state())
			return p
		}
	}
	switch st := op.state(); {
	case op.changedNothing():
		p.Status, p.Reason = UndoNothing, fmt.Sprintf("it changed nothing: its outcome is %s", st)
		return p
	case st == string(journal.OutcomeTaskFailed):
		p.Status, p.Reason = UndoNotInvertible, "its task failed: what it changed before failing is not known, and undo does not guess"
		return p
	case !op.landed():
		p.Status, p.Reason = UndoUnsettled, fmt.Sprintf("its outcome is %s: settle it first (proxmox_reconcile, or audit resolve on the host), then undo", st)
		return p
	}
	switch {
	case op.prior != nil:
		analyzeConfig(f, p)
	case isSnapshotCreate(in.Method, in.PathTemplate):
		analyzeSnapshot(f, p)
	case in.PriorDigest != "":
		p.Status, p.Reason = UndoNotInvertible, "the journal holds no configuration from before it (it was sent with a digest the caller gave, not the one read), so there are no previous values to restore"
	default:
		p.Status, p.Reason = UndoNotInvertible, noInverse(in.Method, in.PathTemplate)
	}
	return p
}

// fieldsOf are the fields an operation changed that its request named,
// with before and after; extra are those its answer showed changed but it
// did not ask for.
func fieldsOf(op *opRows) (fields []string, extra []string) {
	asked := named(op.args)
	for k := range op.out.Changes {
		if asked[k] {
			fields = append(fields, k)
		} else {
			extra = append(extra, k)
		}
	}
	slices.Sort(fields)
	slices.Sort(extra)
	return fields, extra
}

// window is a part of the journal's history in which a field may also hold
// the value an operation set, because that operation was undone (or is
// about to be, for the later operations of a change) after it.
type window struct {
	from, to int64 // rows strictly between
	field    string
	value    any
}

func analyzeConfig(f *undoFacts, p *UndoPlan) {
	op := f.op
	// A receipt with the configuration after the edit and no changes
	// says the edit changed nothing (an empty set of changes is not
	// stored).
	if op.receipt == nil || op.out.Changes == nil && op.out.Config == nil {
		p.Status, p.Reason = UndoNotInvertible, "the journal has no record of the fields it changed (no configuration was read after it: its answer was lost, or the configuration could not be read)"
		return
	}
	if u := op.receipt.UPID; u != "" {
		t := findTask(f.tasks, u)
		if t == nil || !t.Ended {
			p.Status, p.Reason = UndoUnsettled, "the edit ran as task "+u+", which PVE's task index does not show ended: what it changed is not known yet"
			return
		}
		if k := staleAfter(op); k != "" {
			p.Status = UndoNotInvertible
			p.Reason = "the configuration recorded after it was read before its task applied it (" + k + " is not as the request set it; the call did not wait for task " + u + "), so the journal does not know what it changed"
			return
		}
	}
	fields, extra := fieldsOf(op)
	for _, k := range extra {
		p.Evidence = append(p.Evidence, Seen{Kind: "journal", Row: op.receipt.ID, Operation: op.id,
			Says: fmt.Sprintf("field %s changed between the edit and the read after it, but the edit did not ask for it: it is not this operation's change, and undo leaves it alone", k)})
	}
	if len(fields) == 0 {
		p.Status, p.Reason = UndoNothing, "it changed no field (the values it set were the values there)"
		return
	}
	plans := make(map[string]*FieldUndo, len(fields))
	for _, k := range fields {
		c := op.out.Changes[k]
		plans[k] = &FieldUndo{Field: k, Before: c.Before, Left: c.After, Secret: c.Redacted}
	}
	conflict := func(k, why string, ev ...Seen) {
		fu := plans[k]
		if fu.Action != FieldConflict {
			fu.Action, fu.Why = FieldConflict, why
		}
		for _, e := range ev {
			if len(fu.Evidence) < maxEvidence {
				fu.Evidence = append(fu.Evidence, e)
			}
		}
	}

	// The values the configuration may hold in each part of the history:
	// what the operation left, and inside the window of an operation that
	// was undone since (or is to be undone first), what that one set.
	var windows []window
	members := map[string]bool{}
	for _, x := range sortedOps(f.ops) {
		if x.id == op.id || x.in.UndoOf != "" || !x.landed() || x.intent == nil {
			continue
		}
		u := undoOfOp(f.ops, x)
		if u == nil {
			continue
		}
		xf, _ := fieldsOf(x)
		for _, k := range xf {
			windows = append(windows, window{from: x.intent.ID, to: u.receipt.ID, field: k, value: x.out.Changes[k].After})
		}
		members[x.id], members[u.id] = true, true
	}
	for _, x := range f.assumed {
		if x.intent == nil {
			continue
		}
		xf, _ := fieldsOf(x)
		for _, k := range xf {
			windows = append(windows, window{from: x.intent.ID, to: math.MaxInt64, field: k, value: x.out.Changes[k].After})
		}
		members[x.id] = true
	}
	allowed := func(k string, row int64, v any) bool {
		if same(v, plans[k].Left) {
			return true
		}
		for _, w := range windows {
			if w.field == k && w.from < row && row < w.to && same(v, w.value) {
				return true
			}
		}
		return false
	}

	// What the journal saw of the configuration since.
	for i := range f.later {
		r := &f.later[i]
		if r.CallID == op.id {
			continue
		}
		conf, what := configSeen(r, f.ops)
		if conf == nil {
			continue
		}
		for _, k := range fields {
			v := conf[k]
			if allowed(k, r.ID, v) {
				continue
			}
			conflict(k, fmt.Sprintf("the journal saw %s = %s since the operation, not %s as it left it: someone changed it", k, show(v), show(plans[k].Left)),
				Seen{Kind: "journal", Row: r.ID, Operation: r.CallID, By: keyName(r.Principal),
					Says: fmt.Sprintf("%s at %s saw %s = %s", what, when(r.Time), k, show(v))})
		}
	}
	// Other writes of the configuration since.
	for _, x := range sortedOps(f.ops) {
		if x.id == op.id || members[x.id] || x.changedNothing() {
			continue
		}
		touched, all, sure := touchedBy(x)
		for _, k := range fields {
			if !all && !touched[k] {
				continue
			}
			verb := "changed"
			if !sure {
				verb = "may have changed (its outcome: " + x.state() + ")"
			}
			row := int64(0)
			if x.receipt != nil {
				row = x.receipt.ID
			} else if x.intent != nil {
				row = x.intent.ID
			}
			conflict(k, fmt.Sprintf("operation %s by %s %s %s since", x.id, x.who(), verb, k),
				Seen{Kind: "journal", Row: row, Operation: x.id, By: x.who(), Says: fmt.Sprintf("operation %s (%s) %s %s", x.id, requestOf(x), verb, k)})
		}
	}
	// PVE's task index: a task that changed the guest since, that the
	// journal does not account for, may have changed any field.
	for _, t := range tasksSince(f, op) {
		e := Seen{Kind: "task", UPID: t.UPID.String(), By: t.UPID.User,
			Says: fmt.Sprintf("task %s (%s) by %s started at %s changed the guest since the operation; PVE does not say which fields", t.UPID.Type, t.Status, t.UPID.User, when(t.UPID.Started()))}
		p.Evidence = append(p.Evidence, e)
		for _, k := range fields {
			conflict(k, "a task changed the guest since the operation, and PVE's task index does not say which fields: undo cannot tell that this one was left alone", e)
		}
	}
	if f.currentErr != nil {
		p.Status, p.Reason = UndoConflict, fmt.Sprintf("the configuration at %s cannot be read now (the guest may have moved or gone): %v", p.Path, f.currentErr)
		p.Fields = fieldList(plans, fields)
		p.finishConflict()
		return
	}
	// The configuration now, with the later operations of the change
	// taken back first.
	cur := maps.Clone(f.current)
	for _, x := range f.assumed {
		xf, _ := fieldsOf(x)
		for _, k := range xf {
			if b := x.out.Changes[k].Before; b == nil {
				delete(cur, k)
			} else {
				cur[k] = b
			}
		}
	}
	for _, k := range fields {
		fu := plans[k]
		fu.Current = cur[k]
		if !same(cur[k], fu.Left) {
			conflict(k, fmt.Sprintf("its value now is %s, not %s as the operation left it: someone changed it", show(cur[k]), show(fu.Left)),
				Seen{Kind: "config", Says: fmt.Sprintf("the configuration now (digest %s) has %s = %s", digestOf(f.current), k, show(cur[k]))})
		}
		switch {
		case fu.Secret || holdsMarker(fu.Before):
			conflict(k, "its value before was a secret, which the journal keeps only as a marker: undo cannot write it back")
		case f.restorable != nil:
			if why := f.restorable(k); why != "" {
				conflict(k, why)
			}
		}
		if fu.Action == "" {
			if fu.Before == nil {
				fu.Action = FieldDelete
			} else {
				fu.Action = FieldRestore
			}
		}
	}
	p.Fields = fieldList(plans, fields)
	for _, fu := range p.Fields {
		if fu.Action == FieldConflict {
			p.finishConflict()
			return
		}
	}
	params := map[string]any{}
	var dels []string
	for _, fu := range p.Fields {
		if fu.Action == FieldDelete {
			dels = append(dels, fu.Field)
		} else {
			params[fu.Field] = fu.Before
		}
	}
	if len(dels) > 0 {
		params["delete"] = joinComma(dels)
	}
	d := digestOf(f.current)
	params["digest"] = d
	p.Status = UndoReady
	p.Request = &UndoRequest{Method: "PUT", Path: p.Path, Params: params, Digest: d}
	if op.intent.Method == "POST" {
		// The asynchronous form (POST …/qemu/{vmid}/config) has a
		// synchronous twin, PUT, that takes the same parameters.
		p.Request.Method = "PUT"
	}
}

// staleAfter names a field that an asynchronous edit's request set (or
// deleted) to something other than its value before, and that the
// configuration read after it still shows as before: that read came
// before the task.
func staleAfter(op *opRows) string {
	if op.out.Config == nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(op.args)) {
		v := op.args[k]
		if configControl[k] {
			continue
		}
		if !same(v, op.prior[k]) && same(op.out.Config[k], op.prior[k]) {
			return k
		}
	}
	if d, ok := op.args["delete"]; ok {
		for k := range named(map[string]any{"delete": d}) {
			if op.prior[k] != nil && same(op.out.Config[k], op.prior[k]) {
				return k
			}
		}
	}
	return ""
}

func (p *UndoPlan) finishConflict() {
	p.Status = UndoConflict
	if p.Reason == "" {
		var names []string
		for _, fu := range p.Fields {
			if fu.Action == FieldConflict {
				names = append(names, fu.Field)
			}
		}
		p.Reason = "nothing is undone: " + joinComma(names) + " cannot be set back safely (each field says why); there is no force"
	}
	p.Request = nil
}

func fieldList(plans map[string]*FieldUndo, fields []string) []FieldUndo {
	out := make([]FieldUndo, 0, len(fields))
	for _, k := range fields {
		out = append(out, *plans[k])
	}
	return out
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

func digestOf(conf map[string]any) string {
	d, _ := conf["digest"].(string)
	return d
}

// configSeen is the configuration a row shows: a read's or an
// observation's, the one an intent was planned against, the one after a
// write.
func configSeen(r *journal.Event, ops map[string]*opRows) (map[string]any, string) {
	switch r.Kind {
	case journal.KindCall, journal.KindObservation:
		d, err := r.DetailOf()
		if err != nil || d.Config == nil {
			return nil, ""
		}
		return d.Config, fmt.Sprintf("a read of the configuration by %s", keyName(r.Principal))
	case journal.KindIntent:
		if x := ops[r.CallID]; x != nil && x.prior != nil {
			return x.prior, fmt.Sprintf("the configuration operation %s by %s was planned against", r.CallID, keyName(r.Principal))
		}
	case journal.KindReceipt:
		if x := ops[r.CallID]; x != nil && x.out.Config != nil {
			return x.out.Config, fmt.Sprintf("the configuration after operation %s by %s", r.CallID, keyName(r.Principal))
		}
	}
	return nil, ""
}

// undoOfOp finds the undo that took x back whole: an operation that undid
// x, landed, and set every field x changed back to its value before x.
func undoOfOp(ops map[string]*opRows, x *opRows) *opRows {
	xf, _ := fieldsOf(x)
	for _, u := range sortedOps(ops) {
		if u.in.UndoOf != x.id || !u.landed() || u.receipt == nil || u.out.Changes == nil && u.out.Config == nil {
			continue
		}
		whole := true
		for _, k := range xf {
			c, ok := u.out.Changes[k]
			if !ok || !same(c.After, x.out.Changes[k].Before) {
				whole = false
				break
			}
		}
		if whole {
			return u
		}
	}
	return nil
}

// touchedBy are the fields another write changed (sure) or may have
// changed: the fields its answer showed changed, and, when its outcome or
// its answer is not certain (a task, a lost answer), every field its
// request named; all is set when nothing says what it set.
func touchedBy(x *opRows) (fields map[string]bool, all, sure bool) {
	fields = map[string]bool{}
	for k := range x.out.Changes {
		fields[k] = true
	}
	// An empty set of changes is not stored: a receipt with the
	// configuration after the write and no changes changed nothing.
	sure = x.landed() && x.receipt != nil && (x.out.Changes != nil || x.out.Config != nil) && x.receipt.UPID == ""
	if !sure {
		if x.args == nil {
			return fields, true, false
		}
		for k := range named(x.args) {
			fields[k] = true
		}
	}
	return fields, false, sure
}

func requestOf(x *opRows) string {
	if x.intent != nil {
		return x.intent.Method + " " + x.intent.Path + " at " + when(x.intent.Time)
	}
	if x.receipt != nil {
		return x.receipt.Method + " " + x.receipt.Path + " at " + when(x.receipt.Time)
	}
	return "a write"
}

func sortedOps(ops map[string]*opRows) []*opRows {
	out := make([]*opRows, 0, len(ops))
	for _, x := range ops {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b *opRows) int { return compareInt(firstRow(a), firstRow(b)) })
	return out
}

func firstRow(x *opRows) int64 {
	if x.intent != nil {
		return x.intent.ID
	}
	if x.receipt != nil {
		return x.receipt.ID
	}
	return 0
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func findTask(tasks []GuestTask, upid string) *GuestTask {
	for i := range tasks {
		if tasks[i].UPID.String() == upid {
			return &tasks[i]
		}
	}
	return nil
}

// tasksSince are the tasks on the guest that may have changed it since the
// operation and that the journal does not account for: not the
// operation's own, not a write the journal recorded on this
// configuration, not a kind of task that leaves configured values alone;
// started at or after the second the operation was planned in, or still
// running (or ended) in it.
func tasksSince(f *undoFacts, op *opRows) []GuestTask {
	known := map[string]bool{}
	if op.receipt != nil && op.receipt.UPID != "" {
		known[op.receipt.UPID] = true
	}
	for _, x := range f.ops {
		if x.receipt != nil && x.receipt.UPID != "" {
			known[x.receipt.UPID] = true
		}
	}
	since := op.intent.Time.Truncate(time.Second)
	var out []GuestTask
	for _, t := range f.tasks {
		if known[t.UPID.String()] || neutralTask(t.UPID.Type) {
			continue
		}
		if t.UPID.Started().Before(since) && t.Ended && t.End.Before(since) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func analyzeSnapshot(f *undoFacts, p *UndoPlan) {
	op := f.op
	name, _ := op.args["snapname"].(string)
	base, ok := guestBase(p.Path)
	if name == "" || !ok {
		p.Status, p.Reason = UndoNotInvertible, "the journal does not say which snapshot it made"
		return
	}
	if f.snapErr != nil {
		p.Status, p.Reason = UndoConflict, fmt.Sprintf("the guest's snapshots cannot be read now (the guest may have moved or gone): %v", f.snapErr)
		return
	}
	var snap *Snapshot
	for i := range f.snapshots {
		if f.snapshots[i].Name == name {
			snap = &f.snapshots[i]
		}
	}
	if snap == nil {
		p.Status, p.Reason = UndoNothing, fmt.Sprintf("snapshot %s no longer exists: someone deleted it since", name)
		return
	}
	// The snapshot must be the one the operation made: PVE sets its
	// snaptime when it begins making it, so it falls within the
	// operation's task.
	lower, upper := op.intent.Time.Truncate(time.Second), op.intent.Time.Add(op.receipt.Duration()+time.Second)
	if u, err := pve.ParseUPID(op.receipt.UPID); err == nil {
		lower = u.Started()
		if t := findTask(f.tasks, op.receipt.UPID); t != nil && t.Ended {
			upper = t.End.Add(time.Second)
		}
	}
	if snap.Time.Before(lower) || snap.Time.After(upper) {
		p.Status = UndoConflict
		p.Reason = fmt.Sprintf("the snapshot named %s now was made at %s, not by this operation (it ran from %s to %s): it is someone else's, and undo does not delete it", name, when(snap.Time), when(lower), when(upper))
		p.Evidence = append(p.Evidence, Seen{Kind: "config", Says: fmt.Sprintf("snapshot %s has snaptime %s", name, when(snap.Time))})
		return
	}
	for _, t := range tasksSince(f, op) {
		if typ := t.UPID.Type; typ == "qmrollback" || typ == "vzrollback" {
			e := Seen{Kind: "task", UPID: t.UPID.String(), By: t.UPID.User,
				Says: fmt.Sprintf("task %s by %s at %s rolled the guest back since the snapshot was made", typ, t.UPID.User, when(t.UPID.Started()))}
			p.Evidence = append(p.Evidence, e)
		}
	}
	if len(p.Evidence) > 0 {
		p.Status, p.Reason = UndoConflict, "the guest was rolled back since the snapshot was made: the state someone returned to may rest on it, so undo does not delete it"
		return
	}
	p.Status = UndoReady
	p.Request = &UndoRequest{Method: "DELETE", Path: base + "/snapshot/" + name, Params: map[string]any{}}
}
