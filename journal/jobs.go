package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Jobs. A job is an operation (a write's intent and receipt) whose receipt
// names the PVE task it started (its UPID), or whose task was found later
// (a job row names it: reconciliation found the task of a lost answer):
// the job's id is the operation's call id. Its later states are job rows, written when the
// daemon learns them from PVE (a wait saw the task end, a look at the task
// found it ended, a cancel stopped it); a job is read back from its rows,
// so it survives restarts, and a job whose task ended while the daemon was
// down reads as started until PVE is asked.

// Job states.
const (
	// JobStarted: PVE accepted the call and gave a UPID; nothing since
	// says whether the task still runs.
	JobStarted = "started"
	// JobRunning: the task was running when last seen.
	JobRunning = "running"
	// JobOK and JobWarnings: the task ended OK, or with warnings (its work
	// done).
	JobOK       = "ok"
	JobWarnings = "warnings"
	// JobFailed: the task ended with an error.
	JobFailed = "failed"
	// JobCancelled: the task ended after a cancel the daemon sent.
	JobCancelled = "cancelled"
)

// JobStates lists the states a job can be in.
var JobStates = []string{JobStarted, JobRunning, JobOK, JobWarnings, JobFailed, JobCancelled}

// JobEnded reports whether a state is an end (the task stopped).
func JobEnded(state string) bool {
	switch state {
	case JobOK, JobWarnings, JobFailed, JobCancelled:
		return true
	}
	return false
}

// JobDetail is a job row's part of the detail column.
type JobDetail struct {
	// State is running, ok, warnings, failed or cancelled.
	State string `json:"state"`
	// ExitStatus is PVE's exit status of an ended task ("OK",
	// "WARNINGS: n", or the error).
	ExitStatus string `json:"exitstatus,omitempty"`
	// Cancel is the operation that cancelled the task.
	Cancel string `json:"cancel,omitempty"`
}

// JobUpdate is a job's state as the daemon learnt it, as RecordJob takes
// it.
type JobUpdate struct {
	Time time.Time
	// Job is the job's id: the call id of the operation that started the
	// task.
	Job  string
	UPID string
	// State is running, ok, warnings, failed or cancelled.
	State      string
	ExitStatus string
	// Cancel is the operation that cancelled the task (state cancelled).
	Cancel string
	// Tool is what learnt it (the tool of the call that asked PVE).
	Tool string
}

// RecordJob writes a job row; the operation must exist (ErrNoIntent). It
// returns once the row is durable.
func (j *Journal) RecordJob(ctx context.Context, u JobUpdate) (Event, error) {
	if u.State == JobStarted || !(u.State == JobRunning || JobEnded(u.State)) {
		return Event{}, fmt.Errorf("%w: state %q: want running, ok, warnings, failed or cancelled", ErrInvalid, truncate(u.State))
	}
	if !strings.HasPrefix(u.UPID, "UPID:") {
		return Event{}, fmt.Errorf(`%w: upid %q: must start with "UPID:"`, ErrInvalid, truncate(u.UPID))
	}
	if u.Cancel != "" {
		if err := checkCallID(u.Cancel); err != nil {
			return Event{}, fmt.Errorf("%w: cancel: %w", ErrInvalid, err)
		}
	}
	tool := u.Tool
	if tool == "" {
		tool = "daemon"
	}
	c := Call{ID: u.Job, Time: u.Time, Principal: Principal{KeyName: "daemon", Transport: "daemon"}, Tool: tool,
		Detail: &Detail{Job: &JobDetail{State: u.State, ExitStatus: u.ExitStatus, Cancel: u.Cancel}}}
	r, err := j.callRow(KindJob, &c, OutcomeOK)
	if err != nil {
		return Event{}, err
	}
	r.outcome = string(jobOutcome(u.State))
	if u.State == JobFailed || u.State == JobCancelled {
		r.errorText = fitText(j.red.Text(u.ExitStatus), maxError, true)
	}
	r.upid = fitText(u.UPID, maxName, false)
	r.jobID = r.callID
	return j.write(ctx, &r)
}

// jobOutcome is the outcome column of a job row in a state.
func jobOutcome(state string) Outcome {
	switch state {
	case JobRunning:
		return OutcomeTaskRunning
	case JobFailed, JobCancelled:
		return OutcomeTaskFailed
	}
	return OutcomeOK
}

// Job is a job as its rows tell it.
type Job struct {
	// ID is the operation's call id.
	ID   string
	UPID string
	// Principal is who made the call; Tool, Endpoint, Method,
	// PathTemplate, Path and Risk are the call's, Args its arguments as
	// journaled (redacted).
	Principal                                        Principal
	Tool, Endpoint, Method, PathTemplate, Path, Risk string
	Args                                             json.RawMessage
	// Started is when the call arrived.
	Started time.Time
	// State is the job's state (JobStates); ExitStatus PVE's exit status
	// once ended.
	State      string
	ExitStatus string
	// Seen is when the state was learnt (the receipt's or the last job
	// row's time).
	Seen time.Time
	// RetryOf is the job this one retries; Cancel the operation that
	// cancelled it.
	RetryOf, Cancel string
	// Rows are the journal rows of the job: intent, receipt, job rows.
	Rows []int64
}

// Node is the node the job's task runs on, from its UPID.
func (jb Job) Node() string {
	parts := strings.SplitN(jb.UPID, ":", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// ErrNoJob: the id or UPID names no operation that started a task.
var ErrNoJob = errors.New("journal: no job with this id")

// jobOf reads a job from its rows (an operation's, oldest first).
func jobOf(evs []Event) (Job, error) {
	var jb Job
	task := false
	for _, ev := range evs {
		switch ev.Kind {
		case KindIntent:
			jb.ID, jb.Principal, jb.Tool, jb.Endpoint = ev.CallID, ev.Principal, ev.Tool, ev.Endpoint
			jb.Method, jb.PathTemplate, jb.Path, jb.Risk, jb.Args, jb.Started = ev.Method, ev.PathTemplate, ev.Path, ev.Risk, ev.Args, ev.Time
			d, err := ev.DetailOf()
			if err != nil {
				return Job{}, err
			}
			jb.RetryOf = d.RetryOf
		case KindReceipt:
			if ev.UPID == "" {
				continue
			}
			task = true
			jb.UPID, jb.Seen = ev.UPID, ev.Time
			switch ev.Outcome {
			case OutcomeTaskFailed:
				jb.State = JobFailed
			case OutcomeTaskRunning:
				jb.State = JobRunning
			default:
				jb.State = JobStarted
			}
		case KindJob:
			d, err := ev.DetailOf()
			if err != nil {
				return Job{}, err
			}
			if d.Job == nil || ev.UPID == "" {
				continue
			}
			task = true
			if jb.UPID == "" {
				jb.UPID = ev.UPID
			}
			jb.State, jb.ExitStatus, jb.Seen = d.Job.State, d.Job.ExitStatus, ev.Time
			if d.Job.Cancel != "" {
				jb.Cancel = d.Job.Cancel
			}
		default:
			continue
		}
		jb.Rows = append(jb.Rows, ev.ID)
	}
	if jb.ID == "" || !task {
		return Job{}, ErrNoJob
	}
	return jb, nil
}

// Job returns the job an id names: its operation's call id, or the UPID
// of its task. ErrNoJob: none. (The UPID query also asks for a non-empty
// upid, so that SQLite may use the partial index events_upid.)
func (j *Journal) Job(ctx context.Context, id string) (Job, error) {
	callID := id
	if strings.HasPrefix(id, "UPID:") {
		err := j.r.QueryRowContext(ctx, `SELECT call_id FROM events WHERE upid = ? AND upid <> '' AND kind IN ('receipt', 'job') ORDER BY id LIMIT 1`, id).Scan(&callID)
		if err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return Job{}, ErrNoJob
			}
			return Job{}, fmt.Errorf("journal: job: %w", err)
		}
	} else if err := checkCallID(id); err != nil {
		return Job{}, fmt.Errorf("%w: job: %w", ErrInvalid, err)
	}
	evs, err := j.CallEvents(ctx, callID)
	if err != nil {
		return Job{}, err
	}
	return jobOf(evs)
}

// maxJobs bounds one Jobs read.
const maxJobs = 1000

// Jobs returns the last jobs of one key (1 to 1000), newest first.
func (j *Journal) Jobs(ctx context.Context, keyID string, n int) ([]Job, error) {
	if n <= 0 || n > maxJobs {
		return nil, fmt.Errorf("journal: jobs: %d jobs: want 1 to %d", n, maxJobs)
	}
	if keyID == "" {
		return nil, fmt.Errorf("%w: jobs: key id: required", ErrInvalid)
	}
	rows, err := j.r.QueryContext(ctx, `SELECT call_id FROM events INDEXED BY events_jobs
		WHERE key_id = ? AND kind IN ('receipt', 'job') AND upid <> '' GROUP BY call_id ORDER BY min(id) DESC LIMIT ?`, keyID, n)
	if err != nil {
		return nil, fmt.Errorf("journal: jobs: %w", err)
	}
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("journal: jobs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: jobs: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	evs, err := j.query(ctx, `SELECT `+columns+` FROM events WHERE call_id IN (`+marks+`) ORDER BY id`, ids...)
	if err != nil {
		return nil, err
	}
	byCall := map[string][]Event{}
	for _, ev := range evs {
		byCall[ev.CallID] = append(byCall[ev.CallID], ev)
	}
	out := make([]Job, 0, len(ids))
	for _, id := range ids {
		jb, err := jobOf(byCall[id.(string)])
		if err != nil {
			return nil, fmt.Errorf("journal: jobs: %s: %w", id, err)
		}
		out = append(out, jb)
	}
	return out, nil
}
