package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// task is a worker: it runs until endAt, then its finish function changes
// the state and its exit status is set.
type task struct {
	upid     pve.UPID
	endAt    time.Time
	ended    bool
	endTime  int64
	exit     string
	log      []string
	finish   func() error // applied when the task ends; an error fails it
	warnings int
	failWith string
	onCancel func() // undoes locks when the task is stopped
}

func (t *task) running() bool { return !t.ended }

// startTask creates a task on a node for the caller. finish runs when the
// clock reaches the task's end; it may fail the task. Task faults apply.
func (r *request) startTask(nodeName, typ, id string, d time.Duration, log []string, finish func() error) string {
	s, st := r.sim, r.sim.st
	st.nextPID += 1 + uint32(st.rng.IntN(97))
	u := pve.UPID{
		Node: nodeName, PID: st.nextPID, PStart: uint64(3_000_000 + st.rng.IntN(90_000_000)),
		StartTime: r.now.Unix(), Type: typ, ID: id, User: r.who.tokenid,
	}
	dur := time.Duration(float64(d) * s.taskTime)
	t := &task{upid: u, log: log, finish: finish}
	if f, ok := s.taskFault(typ); ok {
		if f.Slow > 0 {
			dur = time.Duration(float64(dur) * f.Slow)
		}
		t.failWith, t.warnings = f.Fail, f.Warnings
	}
	t.endAt = r.now.Add(dur)
	st.tasks = append(st.tasks, t)
	st.logCluster(r.now, nodeName, r.who.tokenid, "pvedaemon", fmt.Sprintf("<%s> starting task %s", r.who.tokenid, u))
	return u.String()
}

// finishTasks ends every task whose time has come, in start order.
func (s *Sim) finishTasks(now time.Time) {
	for _, t := range s.st.tasks {
		if t.ended || now.Before(t.endAt) {
			continue
		}
		s.endTask(t, t.endAt)
	}
}

func (s *Sim) endTask(t *task, at time.Time) {
	t.ended = true
	t.endTime = at.Unix()
	var err error
	if t.failWith != "" {
		err = fmt.Errorf("%s", t.failWith)
		if t.onCancel != nil {
			t.onCancel()
		}
	} else if t.finish != nil {
		err = t.finish()
	}
	switch {
	case err != nil:
		err = taskError(err) // a task's status has no HTTP status
		t.exit = err.Error()
		t.log = append(t.log, "TASK ERROR: "+err.Error())
	case t.warnings > 0:
		for i := range t.warnings {
			t.log = append(t.log, fmt.Sprintf("WARN: simulated warning %d", i+1))
		}
		t.exit = fmt.Sprintf("WARNINGS: %d", t.warnings)
		t.log = append(t.log, "TASK "+t.exit)
	default:
		t.exit = "OK"
		t.log = append(t.log, "TASK OK")
	}
	s.st.logCluster(at, t.upid.Node, t.upid.User, "pvedaemon", fmt.Sprintf("<%s> end task %s %s", t.upid.User, t.upid, t.exit))
}

func (st *state) task(upid string) *task {
	for _, t := range st.tasks {
		if t.upid.String() == upid {
			return t
		}
	}
	return nil
}

// taskEntry is a task as the task lists show it.
func taskEntry(t *task) map[string]any {
	e := map[string]any{
		"upid": t.upid.String(), "node": t.upid.Node, "pid": int64(t.upid.PID), "pstart": int64(t.upid.PStart),
		"starttime": t.upid.StartTime, "type": t.upid.Type, "id": t.upid.ID, "user": t.upid.UserID(),
	}
	if tok := t.upid.TokenID(); tok != "" {
		e["tokenid"] = tok
	}
	if t.ended {
		e["endtime"] = t.endTime
		e["status"] = t.exit
	}
	return e
}

func (s *Sim) taskRoutes(add func(string, handler)) {
	add("GET /nodes/{node}/tasks", s.nodeTasks)
	add("GET /nodes/{node}/tasks/{upid}/status", s.taskStatus)
	add("GET /nodes/{node}/tasks/{upid}/log", s.taskLog)
	add("DELETE /nodes/{node}/tasks/{upid}", s.taskStop)
	add("GET /cluster/tasks", s.clusterTasks)
}

// ownsTask is pve-manager's Tasks.pm check_task_user: a token owns the
// tasks it started; a user (never a caller here) its own and its tokens'.
func (r *request) ownsTask(t *task) bool {
	if r.who.tokenid != "" {
		return t.upid.User == r.who.tokenid
	}
	return t.upid.UserID() == r.who.userid
}

// findTask parses the UPID and finds the task on the path's node; a
// caller that does not own it needs priv on the node: Sys.Audit to read it
// (read_task_status, read_task_log), Sys.Modify to stop it (stop_task).
func (r *request) findTask(priv string) (*task, error) {
	upid := r.str("upid")
	if _, err := pve.ParseUPID(upid); err != nil {
		return nil, fail("unable to parse worker upid '%s'", upid)
	}
	t := r.sim.st.task(upid)
	if t == nil || t.upid.Node != r.str("node") {
		return nil, fail("no such task")
	}
	if !r.ownsTask(t) {
		if err := r.check("/nodes/"+r.str("node"), priv); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (s *Sim) taskStatus(r *request) (any, error) {
	t, err := r.findTask("Sys.Audit")
	if err != nil {
		return nil, err
	}
	e := taskEntry(t)
	delete(e, "endtime")
	if t.ended {
		e["status"] = "stopped"
		e["exitstatus"] = t.exit
	} else {
		e["status"] = "running"
	}
	return e, nil
}

// taskLog pages the log like PVE's dump_logfile: 1-based line numbers,
// "total" counts every line, and an empty log reads as one "no content".
func (s *Sim) taskLog(r *request) (any, error) {
	t, err := r.findTask("Sys.Audit")
	if err != nil {
		return nil, err
	}
	start, limit := r.num("start", 0), r.num("limit", 50)
	lines := []map[string]any{}
	for i, text := range t.log {
		if i < start || (limit > 0 && len(lines) >= limit) {
			continue
		}
		lines = append(lines, map[string]any{"n": i + 1, "t": text})
	}
	total := len(t.log)
	if total == 0 {
		total = 1
		lines = append(lines, map[string]any{"n": 1, "t": "no content"})
	}
	return withTotal(lines, total), nil
}

func (s *Sim) taskStop(r *request) (any, error) {
	t, err := r.findTask("Sys.Modify")
	if err != nil {
		return nil, err
	}
	if t.running() {
		t.failWith = "unexpected status"
		t.log = append(t.log, "received interrupt")
		s.endTask(t, r.now)
	}
	return nil, nil
}

// nodeTasks is pve-manager's Tasks.pm node_tasks: the node's tasks that
// pass every filter, the caller's own or all of them with Sys.Audit on the
// node. source archive (the default) lists finished tasks, most recently
// finished first (the index file read backwards); active lists running
// ones (status RUNNING); all lists the running ones, then the archive.
// start skips that many matches, limit (50; 0 lists none) caps the list,
// and the total counts every match.
func (s *Sim) nodeTasks(r *request) (any, error) {
	nodeName := r.str("node")
	auditor := r.can("/nodes/"+nodeName, "Sys.Audit")
	source := r.str("source")
	if source == "" {
		source = "archive"
	}
	f := r.taskFilter()
	start, limit := r.num("start", 0), r.num("limit", 50)
	count := 0
	list := []map[string]any{}
	consider := func(t *task) {
		if !f.matches(t) || !(auditor || r.ownsTask(t)) {
			return
		}
		count++
		if count <= start || limit <= 0 {
			return
		}
		e := taskEntry(t)
		if !t.ended {
			e["status"] = "RUNNING"
		}
		list = append(list, e)
		limit--
	}
	var running, archived []*task
	for _, t := range s.st.tasks {
		if t.upid.Node != nodeName {
			continue
		}
		if t.ended {
			archived = append(archived, t)
		} else {
			running = append(running, t)
		}
	}
	if source == "active" || source == "all" {
		for i := len(running) - 1; i >= 0; i-- {
			consider(running[i])
		}
	}
	if source != "active" {
		// Tasks are archived as they end: the newest end is read first.
		slices.SortStableFunc(archived, func(a, b *task) int {
			if a.endTime != b.endTime {
				return int(b.endTime - a.endTime)
			}
			return int(b.upid.StartTime - a.upid.StartTime)
		})
		for _, t := range archived {
			consider(t)
		}
	}
	return withTotal(list, count), nil
}

// taskFilter is node_tasks's filter of its parameters.
type taskFilter struct {
	userfilter, typefilter, vmid string
	since, until                 *int64
	status                       map[string]bool // by normalized status type
}

func (r *request) taskFilter() taskFilter {
	f := taskFilter{userfilter: strings.ToLower(r.str("userfilter")), typefilter: r.str("typefilter"), vmid: r.str("vmid"),
		status: map[string]bool{"ok": true, "warning": true, "error": true, "unknown": true}}
	if f.vmid == "0" {
		f.vmid = "" // Perl: a false vmid filters nothing
	}
	for name, dst := range map[string]**int64{"since": &f.since, "until": &f.until} {
		if r.has(name) {
			if v, err := strconv.ParseInt(r.str(name), 10, 64); err == nil {
				*dst = &v
			}
		}
	}
	switch errorsOnly := r.flag("errors"); {
	case r.has("statusfilter") && !errorsOnly:
		f.status = map[string]bool{}
		for _, v := range splitList(r.str("statusfilter")) {
			f.status[strings.ToLower(v)] = true
		}
	case errorsOnly:
		f.status["ok"] = false
	}
	return f
}

// matches: the user part of the task's user (the token name is split
// off) contains userfilter, case-insensitively; the type is typefilter;
// the task's id is the vmid; it started within since and until; and its
// status type (pve-common UPID.pm normalize_status_type; a running task
// has none: unknown) is one statusfilter lists.
func (f taskFilter) matches(t *task) bool {
	if f.userfilter != "" && !strings.Contains(strings.ToLower(t.upid.UserID()), f.userfilter) {
		return false
	}
	if f.typefilter != "" && t.upid.Type != f.typefilter {
		return false
	}
	if f.vmid != "" && t.upid.ID != f.vmid {
		return false
	}
	if f.since != nil && t.upid.StartTime < *f.since {
		return false
	}
	if f.until != nil && t.upid.StartTime > *f.until {
		return false
	}
	return f.status[statusType(t)]
}

// statusType is normalize_status_type of a task's status.
func statusType(t *task) string {
	switch {
	case !t.ended || t.exit == "" || t.exit == "unexpected status":
		return "unknown"
	case t.exit == "OK":
		return "ok"
	}
	if ok, _ := pve.ExitOutcome(t.exit); ok {
		return "warning"
	}
	return "error"
}

// clusterTasks lists the recent tasks of every node, newest first: all
// with Sys.Audit on /, else those whose user is the caller. Cluster.pm
// compares the task's user, with any token name split off, to the caller's
// ID, so a token without Sys.Audit on / sees none, not even its own.
func (s *Sim) clusterTasks(r *request) (any, error) {
	all := r.can("/", "Sys.Audit")
	list := []map[string]any{}
	for i := len(s.st.tasks) - 1; i >= 0; i-- {
		if t := s.st.tasks[i]; all || t.upid.UserID() == r.who.id() {
			list = append(list, taskEntry(t))
		}
	}
	return list, nil
}
