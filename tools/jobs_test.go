package tools

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// asKey is a client of another key bound to the same profile (h.as gives
// one key per profile).
func (h *harness) asKey(profile, keyID string) (*client.Client, context.Context) {
	h.t.Helper()
	caller := Caller{
		Principal: policy.Principal{KeyID: keyID, Name: keyID, Profile: profile, Transport: "loopback", Source: "127.0.0.1"},
		Binding:   policy.Binding{Profile: profile}, Tier: Tier(profile),
	}
	return h.session(caller, nil)
}

// restart replaces the server by a new one on the journal closed and
// opened again, as a daemon restart does.
func (h *harness) restart() {
	h.t.Helper()
	path := h.journal.Path()
	if err := h.journal.Close(); err != nil {
		h.t.Fatal(err)
	}
	j, err := journal.Open(context.Background(), path, journal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { j.Close() })
	opts := h.srv.opts
	opts.Audit, opts.Ledger = journalAuditor{j}, j
	srv, err := New(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.srv, h.journal = srv, j
}

// startVM starts VM 101 through the curated power tool and returns the
// answer's job id.
func startVM(t *testing.T, c *client.Client, ctx context.Context, wait int) (string, map[string]any) {
	t.Helper()
	res, content := call(t, c, ctx, ToolGuestPower, map[string]any{"vmid": 101, "action": "start", "wait": wait})
	id, _ := content["job"].(string)
	if id == "" || content["upid"] == nil {
		t.Fatalf("start: no job in the answer: %s", text(res))
	}
	return id, content
}

func jobRows(t *testing.T, h *harness, id string) []journal.Event {
	t.Helper()
	evs, err := h.journal.CallEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var rows []journal.Event
	for _, ev := range evs {
		if ev.Kind == journal.KindJob {
			rows = append(rows, ev)
		}
	}
	return rows
}

// A start is a job: listed, read, waited for with progress notifications
// until PVE says it ended, each state learnt a job row in the journal.
func TestJobOfAStartIsListedReadAndWaitedFor(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	progress := make(chan mcp.JSONRPCNotification, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress <- n
		}
	})
	id, started := startVM(t, c, ctx, 0)

	_, list := call(t, c, ctx, ToolJobs, map[string]any{})
	jobs, _ := list["jobs"].([]any)
	if len(jobs) != 1 || jobs[0].(map[string]any)["id"] != id || jobs[0].(map[string]any)["node"] != "pve1" {
		t.Fatalf("jobs: %v", list)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolJobWait
	req.Params.Arguments = map[string]any{"id": id, "timeout_seconds": 30}
	req.Params.Meta = &mcp.Meta{ProgressToken: "job-1"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("wait: %v %s", err, text(res))
	}
	select {
	case <-progress:
	case <-time.After(5 * time.Second):
		t.Error("the wait sent no progress notification")
	}
	_, got := call(t, c, ctx, ToolJob, map[string]any{"id": started["upid"]})
	task, _ := got["task"].(map[string]any)
	if got["id"] != id || got["state"] != journal.JobOK || got["exitstatus"] != "OK" || !strings.Contains(strings.Join(toStrings(task["log_tail"]), "\n"), "TASK OK") {
		t.Fatalf("the job after its end: %v", got)
	}
	if got["what"].(map[string]any)["path"] != "/nodes/pve1/qemu/101/status/start" || got["by"].(map[string]any)["key_id"] != "kadmin" {
		t.Errorf("what and who: %v %v", got["what"], got["by"])
	}
	rows := jobRows(t, h, id)
	if len(rows) == 0 || rows[len(rows)-1].Outcome != journal.OutcomeOK || rows[len(rows)-1].UPID != started["upid"] {
		t.Errorf("job rows: %+v", rows)
	}
	_, ended := call(t, c, ctx, ToolJobs, map[string]any{"state": "ended"})
	_, active := call(t, c, ctx, ToolJobs, map[string]any{"state": "active"})
	if len(ended["jobs"].([]any)) != 1 || len(active["jobs"].([]any)) != 0 {
		t.Errorf("filters: ended %v, active %v", ended, active)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// A failed task's job says so, with PVE's exit status and log, from the
// wait of the call that started it; a retry is a new operation from the
// recorded request, journaled as a retry of it.
func TestFailedJobAndItsRetry(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	h.sim.InjectTaskFault(sim.TaskFault{Type: "qmstart", Fail: "start failed: QEMU exited with code 1"})
	id, _ := startVM(t, c, ctx, 30)
	_, got := call(t, c, ctx, ToolJob, map[string]any{"id": id})
	if got["state"] != journal.JobFailed || !strings.Contains(got["exitstatus"].(string), "QEMU exited") {
		t.Fatalf("failed job: %v", got)
	}
	_, failed := call(t, c, ctx, ToolJobs, map[string]any{"state": "failed"})
	if len(failed["jobs"].([]any)) != 1 {
		t.Fatalf("failed jobs: %v", failed)
	}
	h.sim.ClearFaults()
	res, again := call(t, c, ctx, ToolJobRetry, map[string]any{"id": id, "wait": 30})
	retry, _ := again["job"].(string)
	if res.IsError || retry == "" || retry == id {
		t.Fatalf("retry: %s", text(res))
	}
	_, rj := call(t, c, ctx, ToolJob, map[string]any{"id": retry})
	if rj["state"] != journal.JobOK || rj["retry_of"] != id || rj["what"].(map[string]any)["tool"] != ToolJobRetry {
		t.Fatalf("the retry's job: %v", rj)
	}
	evs, err := h.journal.CallEvents(context.Background(), retry)
	if err != nil || evs[0].Kind != journal.KindIntent || !strings.Contains(string(evs[0].Detail), `"retry_of":"`+id+`"`) {
		t.Fatalf("the retry's intent: %+v, %v", evs, err)
	}
	if _, list := call(t, c, ctx, ToolJobs, map[string]any{}); len(list["jobs"].([]any)) != 2 {
		t.Errorf("jobs after the retry: %v", list)
	}
}

// A running job is cancelled by its task's DELETE, journaled as a write
// (intent with cancel_of, receipt); the job then reads cancelled. A
// running job is not retried, an ended one not cancelled.
func TestCancelARunningJob(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, clock: true})
	c, ctx := h.as("admin")
	id, started := startVM(t, c, ctx, 0)
	if res, _ := call(t, c, ctx, ToolJobRetry, map[string]any{"id": id}); !res.IsError || !strings.Contains(text(res), "running") {
		t.Errorf("retry of a running job: %s", text(res))
	}
	res, content := call(t, c, ctx, ToolJobCancel, map[string]any{"id": id})
	if res.IsError {
		t.Fatalf("cancel: %s", text(res))
	}
	cj, _ := content["cancelled_job"].(map[string]any)
	if cj["state"] != journal.JobCancelled || cj["cancel"] == nil {
		t.Fatalf("cancelled job: %v (%s)", content, text(res))
	}
	cancelOp := cj["cancel"].(string)
	evs, err := h.journal.CallEvents(context.Background(), cancelOp)
	if err != nil || len(evs) != 2 || evs[0].Method != "DELETE" || evs[0].Path != pve.Path("nodes", "pve1", "tasks", started["upid"].(string)) ||
		!strings.Contains(string(evs[0].Detail), `"cancel_of":"`+id+`"`) || evs[1].Kind != journal.KindReceipt {
		t.Fatalf("the cancel's rows: %+v, %v", evs, err)
	}
	_, got := call(t, c, ctx, ToolJob, map[string]any{"id": id})
	if got["state"] != journal.JobCancelled {
		t.Errorf("the job after its cancel: %v", got)
	}
	if res, _ := call(t, c, ctx, ToolJobCancel, map[string]any{"id": id}); !res.IsError || !strings.Contains(text(res), "has ended") {
		t.Errorf("second cancel: %s", text(res))
	}
}

// Jobs are per key: another key neither lists, reads, waits for, cancels
// nor retries them, and is told no such job exists; a root key reads one
// by id but lists only its own.
func TestJobsArePerKey(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, clock: true})
	c, ctx := h.as("admin")
	id, _ := startVM(t, c, ctx, 0)
	other, octx := h.asKey("admin", "kadmin2")
	if _, list := call(t, other, octx, ToolJobs, map[string]any{}); len(list["jobs"].([]any)) != 0 {
		t.Errorf("another key's list: %v", list)
	}
	for _, tool := range []string{ToolJob, ToolJobWait, ToolJobCancel, ToolJobRetry} {
		res, _ := call(t, other, octx, tool, map[string]any{"id": id})
		if !res.IsError || !strings.Contains(text(res), "no job of your key") {
			t.Errorf("%s by another key: %s", tool, text(res))
		}
	}
	if _, got := call(t, c, ctx, ToolJob, map[string]any{"id": id}); got["state"] != journal.JobRunning {
		t.Errorf("the owner's job after the other key's tries: %v", got)
	}
	root, rctx := h.as("root")
	if _, got := call(t, root, rctx, ToolJob, map[string]any{"id": id}); got["id"] != id {
		t.Errorf("root reads the job by id: %v", got)
	}
	if _, list := call(t, root, rctx, ToolJobs, map[string]any{}); len(list["jobs"].([]any)) != 0 {
		t.Errorf("root's own list: %v", list)
	}
	if res, _ := call(t, root, rctx, ToolJobCancel, map[string]any{"id": id}); !res.IsError {
		t.Errorf("root cancels another key's job: %s", text(res))
	}
}

// Jobs survive a restart: a new server on the journal opened again lists
// them, and a job whose task ended while it was down gets its end from PVE
// when asked.
func TestJobsSurviveARestart(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, clock: true})
	c, ctx := h.as("admin")
	id, _ := startVM(t, c, ctx, 0)
	h.restart()
	h.clock.Advance(time.Minute) // the task ends while nobody looks
	c, ctx = h.as("admin")
	rows := len(jobRows(t, h, id))
	_, got := call(t, c, ctx, ToolJob, map[string]any{"id": id})
	if got["state"] != journal.JobOK || got["exitstatus"] != "OK" {
		t.Fatalf("the job after the restart: %v", got)
	}
	if n := len(jobRows(t, h, id)); n != rows+1 {
		t.Errorf("job rows %d after asking, want %d", n, rows+1)
	}
	h.restart()
	c, ctx = h.as("admin")
	_, list := call(t, c, ctx, ToolJobs, map[string]any{"state": "ok"})
	if jobs := list["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["id"] != id {
		t.Errorf("jobs after a second restart: %v", list)
	}
}

// The jobs are resources too: the list of the caller's and one by id.
func TestJobResources(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	id, _ := startVM(t, c, ctx, 30)
	for _, uri := range []string{ResourceJobs, "proxmox://jobs/" + id} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(ctx, req)
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].(mcp.TextResourceContents).Text, id) {
			t.Errorf("%s: %+v, %v", uri, res, err)
		}
	}
}

// A write whose answer was lost is no job until reconciliation finds its
// task in PVE's index; then it is one, with the task's state.
func TestLostAnswerBecomesAJobWhenReconciled(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	h.sim.InjectFault(sim.Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", DropAfterApply: true, Times: 1})
	if res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"}); !res.IsError {
		t.Fatalf("the lost answer: %s", text(res))
	}
	if _, list := call(t, c, ctx, ToolJobs, map[string]any{}); len(list["jobs"].([]any)) != 0 {
		t.Fatalf("a job before its task is known: %v", list)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, out := call(t, c, ctx, ToolReconcile, map[string]any{})
		list, _ := out["reconciled"].([]any)
		if len(list) == 1 && list[0].(map[string]any)["judged"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reconciled: %v", out)
		}
	}
	_, list := call(t, c, ctx, ToolJobs, map[string]any{})
	jobs := list["jobs"].([]any)
	if len(jobs) != 1 || jobs[0].(map[string]any)["state"] != journal.JobOK || !strings.Contains(jobs[0].(map[string]any)["upid"].(string), ":qmstart:101:") {
		t.Fatalf("the job after reconciliation: %v", list)
	}
}

// The job template's id completes to the caller's own jobs, by prefix,
// and to none of another key's.
func TestJobIDCompletion(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true, clock: true})
	c, ctx := h.as("admin")
	id, _ := startVM(t, c, ctx, 0)
	complete := func(c *client.Client, ctx context.Context, prefix string) []string {
		t.Helper()
		req := mcp.CompleteRequest{}
		req.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: TemplateJob}
		req.Params.Argument.Name, req.Params.Argument.Value = "id", prefix
		res, err := c.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	if got := complete(c, ctx, id[:4]); len(got) != 1 || got[0] != id {
		t.Errorf("completion of %q: %v, want [%s]", id[:4], got, id)
	}
	if got := complete(c, ctx, "zz-no-such"); len(got) != 0 {
		t.Errorf("completion of a prefix no job has: %v", got)
	}
	other, octx := h.asKey("admin", "kadmin2")
	if got := complete(other, octx, ""); len(got) != 0 {
		t.Errorf("another key is offered %v", got)
	}
}
