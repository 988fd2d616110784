package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// Jobs (docs/tools.md, "Jobs"): every write that starts a PVE task is a
// job, kept in the journal (journal.Job: the operation's intent and
// receipt, then a job row for each state the daemon learns from PVE), so
// jobs survive restarts. A key sees its own jobs; a root key may read
// another key's job by its id, as it may read any operation, but lists,
// cancels and retries only its own. Every look at a task is a read
// planned, decided by the caller's policy and journaled; a cancel is the
// task's DELETE on its node through the normal call path (intent,
// receipt, never retried); a retry is a new operation made from the job's
// recorded request, journaled as a retry of it, and only when asked.

// Names of the jobs' tools and resources.
const (
	ToolJobs      = "proxmox_jobs"
	ToolJob       = "proxmox_job"
	ToolJobWait   = "proxmox_job_wait"
	ToolJobCancel = "proxmox_job_cancel"
	ToolJobRetry  = "proxmox_job_retry"

	ResourceJobs = "proxmox://jobs"
	TemplateJob  = "proxmox://jobs/{id}"
)

// Bounds of the jobs' tools.
const (
	// jobsDefault and jobsMax: how many jobs a list shows.
	jobsDefault = 20
	jobsMax     = 100
	// jobsLookback is how many of the key's newest jobs a filtered list
	// looks through.
	jobsLookback = 500
	// jobsRefresh is how many jobs not known to have ended a list asks
	// PVE about.
	jobsRefresh = 10
)

// JobLedger is the journal as the jobs read and add to it
// (journal.Journal); the jobs' tools are served when the Ledger is one.
type JobLedger interface {
	Job(ctx context.Context, id string) (journal.Job, error)
	Jobs(ctx context.Context, keyID string, n int) ([]journal.Job, error)
	RecordJob(ctx context.Context, u journal.JobUpdate) (journal.Event, error)
}

func (s *Server) jobLedger() JobLedger {
	jl, _ := s.opts.Ledger.(JobLedger)
	return jl
}

// jobTools are the jobs: the PVE tasks the caller's calls started.
func (s *Server) jobTools() []server.ServerTool {
	if s.jobLedger() == nil {
		return nil
	}
	return []server.ServerTool{
		{Tool: jobsTool(), Handler: s.handleJobs},
		{Tool: jobTool(), Handler: s.handleJob},
		{Tool: jobWaitTool(), Handler: s.handleJobWait},
		{Tool: jobCancelTool(), Handler: s.handleJobCancel},
		{Tool: jobRetryTool(), Handler: s.handleJobRetry},
	}
}

// jobVisible says whether a caller with the visibility v sees the tool
// name; known is false for a tool not of this family. Reading one's jobs
// is always shown (each look at PVE is decided by the policy); a cancel
// needs the task DELETE among the visible endpoints, a retry some write.
func (s *Server) jobVisible(name string, v visibility) (show, known bool) {
	switch name {
	case ToolJobs, ToolJob, ToolJobWait:
		return true, true
	case ToolJobCancel:
		ep := s.registry().Lookup("DELETE", "/nodes/{node}/tasks/{upid}")
		return ep != nil && v[ep.Tool] != nil && s.switchRefusal("DELETE") == "", true
	case ToolJobRetry:
		return v.writes() && s.switchRefusal("POST") == "", true
	}
	return false, false
}

// jobResources are the jobs as MCP resources: the caller's jobs, and one
// job by id.
func (s *Server) jobResources() ([]server.ServerResource, []server.ServerResourceTemplate) {
	if s.jobLedger() == nil {
		return nil, nil
	}
	res := []server.ServerResource{{
		Resource: mcp.NewResource(ResourceJobs, "my jobs",
			mcp.WithResourceDescription(fmt.Sprintf("Your key's last %d jobs, newest first (as %s): id, upid, node, what, state, exit status, started, seen.", jobsDefault, ToolJobs)),
			mcp.WithMIMEType("application/json")),
		Handler: s.readJobs,
	}}
	tpl := []server.ServerResourceTemplate{{
		Template: mcp.NewResourceTemplate(TemplateJob, "one job",
			mcp.WithTemplateDescription("One of your jobs by its id or UPID (as "+ToolJob+"): its state asked of PVE, the end of its task log, its request."),
			mcp.WithTemplateMIMEType("application/json")),
		Handler: s.readJob,
	}}
	return res, tpl
}

func (s *Server) readJobs(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	res, err := s.handleJobs(ctx, mcp.CallToolRequest{})
	return fromTool(req.Params.URI, res, err)
}

func (s *Server) readJob(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id, err := url.PathUnescape(argument(req, "id"))
	if err != nil {
		return nil, &toolError{outcome: journal.OutcomeInvalid, text: "argument id: " + err.Error()}
	}
	call := mcp.CallToolRequest{}
	call.Params.Arguments = map[string]any{"id": id}
	res, err := s.handleJob(ctx, call)
	return fromTool(req.Params.URI, res, err)
}

var jobIDProp = map[string]any{"type": "string", "minLength": 1, "description": "The job's id (job in the answer of the call that started the task) or its task's UPID."}

func jobsTool() mcp.Tool {
	states := append([]string{"active", "ended"}, journal.JobStates...)
	return mcp.NewTool(ToolJobs,
		mcp.WithDescription("Your key's jobs (the PVE tasks your writes started), newest first: id, upid, node, what (tool, method, path), state "+
			"(started, running, ok, warnings, failed, cancelled), exitstatus, started, seen, retry_of. Jobs not known to have ended are asked of PVE first (up to "+strconv.Itoa(jobsRefresh)+")."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"state": map[string]any{"type": "string", "enum": states, "description": "Only jobs in this state; active is started or running, ended any end."},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": jobsMax, "description": fmt.Sprintf("Most jobs (default %d).", jobsDefault)},
			},
			"additionalProperties": false,
		}),
		annotate("Your jobs", hints{readOnly: true, idempotent: true}),
	)
}

func jobTool() mcp.Tool {
	return mcp.NewTool(ToolJob,
		mcp.WithDescription("One of your jobs: its state as PVE tells it now (status, exitstatus), the end of its task log, what started it and by whom, retry_of, cancel, journal rows."),
		rawSchema(map[string]any{"type": "object", "properties": map[string]any{"id": jobIDProp}, "required": []string{"id"}, "additionalProperties": false}),
		annotate("One job", hints{readOnly: true, idempotent: true}),
	)
}

func jobWaitTool() mcp.Tool {
	return mcp.NewTool(ToolJobWait,
		mcp.WithDescription("Wait for one of your jobs to end, with progress notifications, up to timeout_seconds; returns its state, exit status and the end of its log."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":              jobIDProp,
				"timeout_seconds": map[string]any{"type": "integer", "minimum": 1, "maximum": 600, "description": "How long to wait (default 60)."},
			},
			"required": []string{"id"}, "additionalProperties": false,
		}),
		annotate("Wait for a job", hints{readOnly: true, idempotent: true}),
	)
}

func jobCancelTool() mcp.Tool {
	return mcp.NewTool(ToolJobCancel,
		mcp.WithDescription("Cancel one of your running jobs: stops its task (DELETE /nodes/{node}/tasks/{upid}), checked by your policy and journaled as a write; never retried. Returns the cancel's operation and the task's state after it."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":      jobIDProp,
				"confirm": shapeProperties("")["confirm"],
			},
			"required": []string{"id"}, "additionalProperties": false,
		}),
		annotate("Cancel a job", hints{destructive: true}),
	)
}

func jobRetryTool() mcp.Tool {
	return mcp.NewTool(ToolJobRetry,
		mcp.WithDescription("Make one of your ended jobs' request again as a new operation (a new job, journaled as a retry of it), checked by your policy as any call; nothing is ever retried without this. "+
			"A request with secret values cannot be retried (the journal keeps only markers of them)."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":            jobIDProp,
				"wait":          shapeProperties("")["wait"],
				"confirm":       shapeProperties("")["confirm"],
				"operation_key": shapeProperties("")["operation_key"],
			},
			"required": []string{"id"}, "additionalProperties": false,
		}),
		annotate("Retry a job", hints{destructive: true}),
	)
}

// errNoJob is the answer for an id that names no job the caller may see:
// another key's job is answered as none at all.
func errNoJob(id string) error {
	return argError("id", fmt.Sprintf("no job of your key has the id %q (a job's id is the job of the answer that started its task, or its UPID)", id))
}

// jobFor finds a job of the caller: its own, or with read any key's job
// a root key may read.
func (s *Server) jobFor(ctx context.Context, c Caller, a map[string]any, read bool) (journal.Job, error) {
	id, err := optString(a, "id")
	if err != nil {
		return journal.Job{}, err
	}
	if id == "" {
		return journal.Job{}, argError("id", "required: a job's id or its task's UPID")
	}
	jb, err := s.jobLedger().Job(ctx, id)
	switch {
	case errors.Is(err, journal.ErrNoJob), errors.Is(err, journal.ErrInvalid):
		return journal.Job{}, errNoJob(id)
	case err != nil:
		return journal.Job{}, &toolError{outcome: journal.OutcomeError, text: "the journal could not be read: " + err.Error()}
	}
	owner := jb.Principal.KeyID
	if owner != c.Principal.KeyID && !(read && mayReadOperation(c, owner)) {
		return journal.Job{}, errNoJob(id)
	}
	return jb, nil
}

// handleJobs is proxmox_jobs.
func (s *Server) handleJobs(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "state", "limit")
	if err != nil {
		return nil, err
	}
	state, err := optString(a, "state")
	if err != nil {
		return nil, err
	}
	if state != "" && state != "active" && state != "ended" && !slices.Contains(journal.JobStates, state) {
		return nil, argError("state", "want active, ended or one of "+strings.Join(journal.JobStates, ", "))
	}
	limit, set, err := optInt(a, "limit", 1, jobsMax)
	if err != nil {
		return nil, err
	}
	if !set {
		limit = jobsDefault
	}
	n := limit
	if state != "" {
		n = jobsLookback
	}
	jobs, err := s.jobLedger().Jobs(ctx, c.Principal.KeyID, n)
	if err != nil {
		return errorResult("the journal could not be read: " + err.Error()), nil
	}
	asked := 0
	out := []any{}
	for i := range jobs {
		jb := &jobs[i]
		if !journal.JobEnded(jb.State) && asked < jobsRefresh {
			asked++
			s.lookAtTask(ctx, c, ToolJobs, jb, false)
		}
		if !stateMatches(state, jb.State) {
			continue
		}
		out = append(out, jobView(*jb, nil))
		if len(out) == limit {
			break
		}
	}
	summary := fmt.Sprintf("%d jobs of your key.", len(out))
	if state != "" {
		summary = fmt.Sprintf("%d jobs of your key in state %s.", len(out), state)
	}
	return structured(summary, map[string]any{"jobs": out}), nil
}

func stateMatches(filter, state string) bool {
	switch filter {
	case "":
		return true
	case "active":
		return !journal.JobEnded(state)
	case "ended":
		return journal.JobEnded(state)
	}
	return filter == state
}

// handleJob is proxmox_job.
func (s *Server) handleJob(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, jb, err := s.jobCall(ctx, req, true, "id")
	if err != nil {
		return nil, err
	}
	task := s.lookAtTask(ctx, c, ToolJob, &jb, true)
	v := jobView(jb, task)
	return structured(jobSummary(jb), v), nil
}

// jobCall is the caller, the job its arguments name, after checking that
// they are among allowed.
func (s *Server) jobCall(ctx context.Context, req mcp.CallToolRequest, read bool, allowed ...string) (Caller, journal.Job, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return Caller{}, journal.Job{}, err
	}
	a, err := argsOf(req)
	if err != nil {
		return Caller{}, journal.Job{}, err
	}
	if err := onlyKeys(a, allowed...); err != nil {
		return Caller{}, journal.Job{}, err
	}
	jb, err := s.jobFor(ctx, c, a, read)
	return c, jb, err
}

// handleJobWait is proxmox_job_wait.
func (s *Server) handleJobWait(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, jb, err := s.jobCall(ctx, req, true, "id", "timeout_seconds")
	if err != nil {
		return nil, err
	}
	a, _ := argsOf(req)
	timeout, set, err := optInt(a, "timeout_seconds", 1, 600)
	if err != nil {
		return nil, err
	}
	if !set {
		timeout = 60
	}
	path := pve.Path("nodes", jb.Node(), "tasks", jb.UPID, "status")
	pr, refusal := s.prepare(ctx, c, callRequest{tool: ToolJobWait, method: "GET", path: path, args: map[string]any{}})
	if refusal != nil {
		return refusal, nil
	}
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return s.refuse(ctx, pr.audit, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error()), nil
	}
	task, werr := s.follow(ctx, client, jb.UPID, time.Duration(timeout)*time.Second, progressToken(req))
	out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(pr.plan.Time), UPID: jb.UPID, JobID: jb.ID}
	if werr != nil && task["status"] == "unknown" {
		return s.callFailed(ctx, pr.audit, "", out, pr.plan.Endpoint, werr), nil
	}
	if err := s.audit.Record(journalContext(ctx), pr.audit, out); err != nil {
		return errorResult("the journal refused the record: " + err.Error()), nil
	}
	s.noteJob(ctx, ToolJobWait, &jb, task, false)
	v := jobView(jb, task)
	if werr != nil && !journal.JobEnded(jb.State) {
		v["notes"] = []string{"The task was still running when the wait ended: " + werr.Error() + ". Wait again, or cancel it with " + ToolJobCancel + "."}
	}
	res := structured(jobSummary(jb), v)
	res.IsError = jb.State == journal.JobFailed
	return res, nil
}

// handleJobCancel is proxmox_job_cancel: the task's DELETE through the
// normal call path, then a look at the task to learn its end.
func (s *Server) handleJobCancel(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, jb, err := s.jobCall(ctx, req, false, "id", "confirm")
	if err != nil {
		return nil, err
	}
	a, _ := argsOf(req)
	confirm, err := optString(a, "confirm")
	if err != nil {
		return nil, err
	}
	if journal.JobEnded(jb.State) {
		return nil, argError("id", fmt.Sprintf("job %s has ended (%s): there is no task to cancel. Nothing was sent.", jb.ID, jb.State))
	}
	path := pve.Path("nodes", jb.Node(), "tasks", jb.UPID)
	res := s.callEndpoint(ctx, c, callRequest{tool: ToolJobCancel, method: "DELETE", path: path, args: map[string]any{},
		confirm: confirm, cancelOf: jb.ID})
	cancelOp := operationOfAnswer(res)
	if res.IsError || cancelOp == "" {
		return res, nil // refused, failed, held for confirmation, or a preview: nothing cancelled
	}
	jb.Cancel = cancelOp
	task := s.lookAtTask(ctx, c, ToolJobCancel, &jb, true)
	s.noteJob(ctx, ToolJobCancel, &jb, task, true)
	content, _ := res.StructuredContent.(map[string]any)
	if content == nil {
		content = map[string]any{}
	}
	content["cancelled_job"] = jobView(jb, task)
	summary := fmt.Sprintf("Cancelled job %s (task %s): it is %s.", jb.ID, jb.UPID, jb.State)
	if !journal.JobEnded(jb.State) {
		summary = fmt.Sprintf("Sent the cancel of job %s (task %s); the task was still %s: wait for it with %s.", jb.ID, jb.UPID, jb.State, ToolJobWait)
	}
	return structured(summary, content), nil
}

// handleJobRetry is proxmox_job_retry: the job's request made again as a
// new operation.
func (s *Server) handleJobRetry(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, jb, err := s.jobCall(ctx, req, false, "id", "wait", "confirm", "operation_key")
	if err != nil {
		return nil, err
	}
	a, _ := argsOf(req)
	// wait, confirm and operation_key, read and checked as every
	// calling tool reads them.
	sh, err := shapingArgs(a, "")
	if err != nil {
		return nil, err
	}
	if !journal.JobEnded(jb.State) {
		s.lookAtTask(ctx, c, ToolJobRetry, &jb, false)
	}
	if !journal.JobEnded(jb.State) {
		return nil, argError("id", fmt.Sprintf("job %s is %s: a retry would run it twice; wait for it (%s) or cancel it (%s) first. Nothing was sent.", jb.ID, jb.State, ToolJobWait, ToolJobCancel))
	}
	args, err := recordedArgs(jb.Args)
	if err != nil {
		return nil, argError("id", fmt.Sprintf("job %s cannot be retried: %v. Make the call again yourself. Nothing was sent.", jb.ID, err))
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ToolJobRetry, method: jb.Method, path: jb.Path, args: args,
		wait: sh.wait, confirm: sh.confirm, operationKey: sh.operationKey, retryOf: jb.ID, progressToken: progressToken(req)}), nil
}

// recordedArgs are a job's arguments as the journal kept them, if they
// can be sent again: a secret kept as a marker, or arguments too large
// to keep, cannot.
func recordedArgs(raw json.RawMessage) (map[string]any, error) {
	var args map[string]any
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("its recorded arguments are not an object: %w", err)
	}
	if _, omitted := args["_omitted"]; omitted {
		return nil, errors.New("its arguments were too large for the journal to keep")
	}
	if strings.Contains(string(raw), "[redacted") {
		return nil, errors.New("its request carried secret values, which the journal keeps only as markers")
	}
	return args, nil
}

// operationOfAnswer is the operation id of a write's answer.
func operationOfAnswer(res *mcp.CallToolResult) string {
	content, _ := res.StructuredContent.(map[string]any)
	ev, _ := content["evidence"].(map[string]any)
	id, _ := ev["operation"].(string)
	return id
}

// lookAtTask asks PVE for the job's task as the caller (each read planned,
// decided by its policy and journaled): its status and, with log, the end
// of its log. A state learnt is a job row. It returns the task as the
// answers show it, with an error text when PVE could not be asked.
func (s *Server) lookAtTask(ctx context.Context, c Caller, tool string, jb *journal.Job, log bool) map[string]any {
	task := map[string]any{"upid": jb.UPID}
	base := pve.Path("nodes", jb.Node(), "tasks", jb.UPID)
	var st pve.TaskStatus
	if err := s.readTask(ctx, c, tool, jb, base+"/status", nil, &st); err != nil {
		task["error"] = err.Error()
		return task
	}
	task["status"] = st.Status
	if st.Status == "stopped" {
		task["exitstatus"] = st.ExitStatus
		ok, _ := pve.ExitOutcome(st.ExitStatus)
		task["ok"] = ok
	}
	if log {
		var lines []pve.LogLine
		q := url.Values{"start": {"0"}, "limit": {"500"}}
		if err := s.readTask(ctx, c, tool, jb, base+"/log", q, &lines); err != nil {
			task["log_error"] = err.Error()
		} else {
			tail := []string{}
			for _, l := range lines[max(0, len(lines)-logTail):] {
				tail = append(tail, l.T)
			}
			task["log_tail"] = tail
		}
	}
	s.noteJob(ctx, tool, jb, task, false)
	return task
}

// readTask is one read of a task's endpoint as the caller: planned,
// decided, sent and journaled.
func (s *Server) readTask(ctx context.Context, c Caller, tool string, jb *journal.Job, path string, q url.Values, into any) error {
	args := map[string]any{}
	for k, v := range q {
		args[k] = v[0]
	}
	pr, refusal := s.prepare(ctx, c, callRequest{tool: tool, method: "GET", path: path, args: args})
	if refusal != nil {
		return errors.New(text(refusal))
	}
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		s.refuse(ctx, pr.audit, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error())
		return err
	}
	resp, err := client.Do(ctx, "GET", pr.plan.Path, pr.plan.Wire())
	out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(pr.plan.Time), UPID: jb.UPID, JobID: jb.ID}
	if err == nil {
		err = resp.Decode(into)
	}
	if err != nil {
		out.Outcome, out.Error = journal.OutcomeError, err.Error()
	}
	if rerr := s.audit.Record(journalContext(ctx), pr.audit, out); rerr != nil {
		return fmt.Errorf("the journal refused the record of the read: %w", rerr)
	}
	return err
}

// learnt is the job state a look at its task shows ("" when it shows
// none): running, or how it ended; a task that failed after the daemon
// cancelled it is cancelled.
func learnt(task map[string]any, cancel string) (string, string) {
	if task == nil {
		return "", ""
	}
	switch task["status"] {
	case "running":
		return journal.JobRunning, ""
	case "stopped":
		exit, _ := task["exitstatus"].(string)
		ok, warnings := pve.ExitOutcome(exit)
		switch {
		case !ok && cancel != "":
			return journal.JobCancelled, exit
		case !ok:
			return journal.JobFailed, exit
		case warnings > 0:
			return journal.JobWarnings, exit
		}
		return journal.JobOK, exit
	}
	return "", ""
}

// noteJob writes a job row when the state a look at the task learnt is new (or, with force,
// always: a cancel is recorded on the job even while its task still
// runs), and updates jb. A row the journal refuses is logged; the job
// then reads as it did, and the next look learns it again.
func (s *Server) noteJob(ctx context.Context, tool string, jb *journal.Job, task map[string]any, force bool) {
	state, exit := learnt(task, jb.Cancel)
	if state == "" || (!force && state == jb.State && exit == jb.ExitStatus) {
		return
	}
	_, err := s.jobLedger().RecordJob(journalContext(ctx), journal.JobUpdate{Time: s.opts.Now(), Job: jb.ID, UPID: jb.UPID,
		State: state, ExitStatus: exit, Cancel: jb.Cancel, Tool: tool})
	if err != nil {
		s.opts.Logger.Warn("tools: the journal refused a job's state", "job", jb.ID, "state", state, "err", err)
		return
	}
	jb.State, jb.ExitStatus, jb.Seen = state, exit, s.opts.Now()
}

// jobFollowed records what the wait of the call that started a job saw of
// its task (dispatch): its end, so that the job reads ended without
// asking PVE again.
func (s *Server) jobFollowed(ctx context.Context, callID string, task map[string]any) {
	if s.jobLedger() == nil || task == nil || task["status"] != "stopped" {
		return
	}
	jb := journal.Job{ID: callID, UPID: fmt.Sprint(task["upid"]), State: journal.JobStarted}
	s.noteJob(ctx, "daemon", &jb, task, false)
}

// upidTask is the task of a call's answer, when it waited for one.
func upidTask(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// jobView is a job as the answers show it.
func jobView(jb journal.Job, task map[string]any) map[string]any {
	v := map[string]any{
		"id": jb.ID, "upid": jb.UPID, "node": jb.Node(), "state": jb.State,
		"what":    map[string]any{"tool": jb.Tool, "method": jb.Method, "path": jb.Path},
		"by":      map[string]any{"key_id": jb.Principal.KeyID, "name": jb.Principal.KeyName},
		"started": jb.Started.UTC().Format(time.RFC3339), "seen": jb.Seen.UTC().Format(time.RFC3339),
	}
	if jb.ExitStatus != "" {
		v["exitstatus"] = jb.ExitStatus
	}
	if jb.RetryOf != "" {
		v["retry_of"] = jb.RetryOf
	}
	if jb.Cancel != "" {
		v["cancel"] = jb.Cancel
	}
	if task != nil {
		v["task"] = task
		v["request"] = map[string]any{"method": jb.Method, "path": jb.Path, "template": jb.PathTemplate, "args": jb.Args}
		v["journal"] = jb.Rows
	}
	return v
}

func jobSummary(jb journal.Job) string {
	s := fmt.Sprintf("Job %s (%s %s, task %s): %s", jb.ID, jb.Method, jb.Path, jb.UPID, jb.State)
	if jb.ExitStatus != "" && jb.State != journal.JobOK {
		s += ": " + jb.ExitStatus
	}
	return s + "."
}
