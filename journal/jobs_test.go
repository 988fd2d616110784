package journal

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const jobUPID = "UPID:pve1:00001234:00005678:6740A1B2:qmstart:100:mcp@pve!operator:"

// startJob writes the intent and receipt of a write that started a task.
func startJob(t testing.TB, j *Journal, p Principal, upid string, outcome Outcome) string {
	t.Helper()
	ctx := context.Background()
	c := writeCall()
	c.Principal = p
	c.Method, c.PathTemplate, c.Path = "POST", "/nodes/{node}/qemu/{vmid}/status/start", "/nodes/pve1/qemu/100/status/start"
	c.Detail = &Detail{RetryOf: "earlier-op"}
	in, err := j.Intent(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: outcome, UPID: upid, JobID: in.CallID}); err != nil {
		t.Fatal(err)
	}
	return in.CallID
}

// A job is its operation's rows: started from the receipt, then each job
// row's state; it reads back by id and by UPID, lists per key newest first,
// counts as running until a row ends it, and verifies in the chain.
func TestJobsReadBackFromTheirRows(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	bob := alice()
	bob.KeyID, bob.KeyName = "bcdefghijklmnopq", "bob"
	first := startJob(t, j, alice(), jobUPID, OutcomeOK)
	second := startJob(t, j, alice(), strings.Replace(jobUPID, "00001234", "00001235", 1), OutcomeTaskRunning)
	startJob(t, j, bob, strings.Replace(jobUPID, "00001234", "00001236", 1), OutcomeOK)

	jb, err := j.Job(ctx, first)
	if err != nil || jb.State != JobStarted || jb.UPID != jobUPID || jb.Node() != "pve1" || jb.RetryOf != "earlier-op" ||
		jb.Principal.KeyID != alice().KeyID || jb.Method != "POST" || len(jb.Rows) != 2 {
		t.Fatalf("job %s: %+v, %v", first, jb, err)
	}
	if byUPID, err := j.Job(ctx, jobUPID); err != nil || byUPID.ID != first {
		t.Fatalf("job by UPID: %+v, %v", byUPID, err)
	}
	if p, _ := j.Pending(ctx); p.RunningJobs != 1 {
		t.Fatalf("running jobs %d, want 1 (the task_running receipt)", p.RunningJobs)
	}
	if _, err := j.RecordJob(ctx, JobUpdate{Job: second, UPID: jb.UPID, State: JobFailed, ExitStatus: "start failed: no disk", Tool: "proxmox_job_wait"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := j.Pending(ctx); p.RunningJobs != 0 {
		t.Fatalf("running jobs %d after the failure, want 0", p.RunningJobs)
	}
	if _, err := j.RecordJob(ctx, JobUpdate{Job: first, UPID: jobUPID, State: JobRunning}); err != nil {
		t.Fatal(err)
	}
	if p, _ := j.Pending(ctx); p.RunningJobs != 1 {
		t.Fatalf("running jobs %d after a job seen running, want 1", p.RunningJobs)
	}
	list, err := j.Jobs(ctx, alice().KeyID, 10)
	if err != nil || len(list) != 2 || list[0].ID != second || list[1].ID != first {
		t.Fatalf("alice's jobs: %+v, %v", list, err)
	}
	if list[0].State != JobFailed || list[0].ExitStatus != "start failed: no disk" || list[1].State != JobRunning {
		t.Errorf("states: %q %q, %q", list[0].State, list[0].ExitStatus, list[1].State)
	}
	if bobs, err := j.Jobs(ctx, bob.KeyID, 10); err != nil || len(bobs) != 1 || bobs[0].Principal.KeyName != "bob" {
		t.Errorf("bob's jobs: %+v, %v", bobs, err)
	}
	rows, err := j.CallEvents(ctx, second)
	if err != nil || len(rows) != 3 || rows[2].Kind != KindJob || rows[2].Principal.KeyID != alice().KeyID ||
		rows[2].Outcome != OutcomeTaskFailed || rows[2].Error != "start failed: no disk" || rows[2].Tool != "proxmox_job_wait" || rows[2].JobID != second {
		t.Fatalf("the job row: %+v, %v", rows, err)
	}
	if rep, err := j.Verify(ctx); err != nil || rep.Rows != 8 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// A job row names the field and the rule it breaks, and needs an
// operation; an id that is no job is ErrNoJob.
func TestRecordJobRefusesWhatIsNoJob(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	id := startJob(t, j, alice(), jobUPID, OutcomeOK)
	for _, tc := range []struct {
		name string
		u    JobUpdate
		want string
	}{
		{"started is not learnt", JobUpdate{Job: id, UPID: jobUPID, State: JobStarted}, "state"},
		{"unknown state", JobUpdate{Job: id, UPID: jobUPID, State: "done"}, "state"},
		{"no UPID", JobUpdate{Job: id, State: JobOK}, "upid"},
		{"bad cancel", JobUpdate{Job: id, UPID: jobUPID, State: JobCancelled, Cancel: "a b"}, "cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := j.RecordJob(ctx, tc.u)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalid naming %s", err, tc.want)
			}
		})
	}
	if _, err := j.RecordJob(ctx, JobUpdate{Job: "no-such-op", UPID: jobUPID, State: JobOK}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("job row of no operation: %v", err)
	}
	in, err := j.Intent(ctx, writeCall())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Job(ctx, in.CallID); !errors.Is(err, ErrNoJob) {
		t.Errorf("an operation without a task: %v, want ErrNoJob", err)
	}
	if _, err := j.Job(ctx, "UPID:pve1:0:0:0:qmstart:101:x:"); !errors.Is(err, ErrNoJob) {
		t.Errorf("an unknown UPID: %v, want ErrNoJob", err)
	}
}

// Jobs survive a restart: the journal closed and opened again has them,
// with their states.
func TestJobsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	id := startJob(t, j, alice(), jobUPID, OutcomeTaskRunning)
	if _, err := j.RecordJob(ctx, JobUpdate{Job: id, UPID: jobUPID, State: JobCancelled, ExitStatus: "unexpected status", Cancel: "cancel-op"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	list, err := j.Jobs(ctx, alice().KeyID, 5)
	if err != nil || len(list) != 1 || list[0].State != JobCancelled || list[0].Cancel != "cancel-op" || list[0].ExitStatus != "unexpected status" {
		t.Fatalf("after reopening: %+v, %v", list, err)
	}
}

// v2Journal writes a journal as schema version 2 made it, with format 2
// rows of each kind version 2 knew.
func v2Journal(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if err := m.apply(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(`PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
	prev := genesis
	for i, kind := range []string{"call", "intent", "receipt", "observation"} {
		r := row{id: int64(i + 1), format: 2, time: "2026-11-30T10:00:0" + string(rune('0'+i)) + ".000000Z", kind: kind, callID: []string{"c1", "c2", "c2", "c3"}[i],
			keyID: "abcdefghijklmnop", keyName: "alice", profile: "admin", transport: "loopback", tool: "proxmox_api_call",
			method: "POST", pathTemplate: "/nodes/{node}/qemu/{vmid}/status/start", path: "/nodes/pve1/qemu/100/status/start", risk: "write",
			args: "{}", effect: "allow", reasons: "[]", priorConfig: "null", outcome: map[string]string{"intent": "pending"}[kind], prevHash: prev}
		if r.outcome == "" {
			r.outcome = "ok"
		}
		if kind == "receipt" {
			r.upid, r.jobID = jobUPID, jobUPID
		}
		r.hash = r.computeHash()
		if _, err := tx.Exec(`INSERT INTO events (`+columns+`) VALUES (`+strings.Repeat("?, ", 34)+`?)`, r.values()...); err != nil {
			t.Fatal(err)
		}
		prev = r.hash
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A journal of schema version 2 is migrated in place: its rows and hashes
// verify, its indexes and append-only triggers are there again, the job
// started before the upgrade reads back, and job rows can be written.
func TestMigrationFromVersion2AddsJobs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	v2Journal(t, path)
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if rep, err := j.Verify(ctx); err != nil || rep.Rows != 4 {
		t.Fatalf("after migration: %+v, %v", rep, err)
	}
	var names []string
	rows, err := j.r.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE tbl_name = 'events' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n) //nolint:errcheck // checked by the comparison
		names = append(names, n)
	}
	rows.Close()
	want := "events_append_only_delete events_append_only_update events_call events_call_all events_change events_jobs events_path events_upid"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("indexes and triggers %s, want %s", got, want)
	}
	if _, err := j.w.ExecContext(ctx, `UPDATE events SET outcome = 'error' WHERE id = 3`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("update after migration: %v, want the append-only trigger's refusal", err)
	}
	jb, err := j.Job(ctx, "c2")
	if err != nil || jb.State != JobStarted || jb.UPID != jobUPID {
		t.Fatalf("the job of before: %+v, %v", jb, err)
	}
	ev, err := j.RecordJob(ctx, JobUpdate{Time: time.Now(), Job: "c2", UPID: jobUPID, State: JobOK, ExitStatus: "OK"})
	if err != nil || ev.ID != 5 {
		t.Fatalf("a job row after migration: %+v, %v", ev, err)
	}
	if list, err := j.Jobs(ctx, "abcdefghijklmnop", 5); err != nil || len(list) != 1 || list[0].State != JobOK {
		t.Errorf("jobs after migration: %+v, %v", list, err)
	}
}

// A write whose answer was lost (a receipt without a UPID) becomes a job
// when its task is found later: the job row names the task.
func TestJobOfALostAnswerFoundLater(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	id := startJob(t, j, alice(), "", OutcomeUncertain)
	if _, err := j.Job(ctx, id); !errors.Is(err, ErrNoJob) {
		t.Fatalf("before the task is found: %v, want ErrNoJob", err)
	}
	if list, _ := j.Jobs(ctx, alice().KeyID, 5); len(list) != 0 {
		t.Fatalf("jobs before the task is found: %+v", list)
	}
	if _, err := j.RecordJob(ctx, JobUpdate{Job: id, UPID: jobUPID, State: JobOK, Tool: "reconcile"}); err != nil {
		t.Fatal(err)
	}
	jb, err := j.Job(ctx, jobUPID)
	if err != nil || jb.ID != id || jb.State != JobOK || jb.UPID != jobUPID {
		t.Fatalf("found by its UPID: %+v, %v", jb, err)
	}
	if list, err := j.Jobs(ctx, alice().KeyID, 5); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("jobs: %+v, %v", list, err)
	}
}
