package journal

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Which commits are fsynced: with RelaxCalls, a commit of call rows alone
// is not; any commit holding another kind of row is; without RelaxCalls
// every commit is.
func TestRelaxCallsSyncsAllButCallOnlyCommits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		relax   bool
		commits int64
		synced  int64
	}{
		{"default fsyncs every commit", false, 4, 4},
		{"relaxed calls", true, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			j := openTest(t, Options{RelaxCalls: tc.relax})
			if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK, Status: 200}); err != nil {
				t.Fatal(err)
			}
			want := 2 // FULL
			if tc.relax {
				want = 1 // NORMAL
			}
			if got := writerSync(t, j); got != want {
				t.Errorf("after a read's commit the writer's synchronous = %d, want %d", got, want)
			}
			in, err := j.Intent(ctx, writeCall())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK, Status: 200}); err != nil {
				t.Fatal(err)
			}
			if got := writerSync(t, j); got != 2 {
				t.Errorf("after a receipt's commit the writer's synchronous = %d, want 2 (FULL)", got)
			}
			if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeDenied, Status: 403}); err != nil {
				t.Fatal(err)
			}
			st := j.Stats()
			if st.Commits != tc.commits || st.Synced != tc.synced || st.Rows != 4 {
				t.Errorf("stats = %+v, want %d commits, %d fsynced", st, tc.commits, tc.synced)
			}
			if rep, err := j.Verify(ctx); err != nil || rep.Rows != 4 {
				t.Errorf("verify = %+v, %v", rep, err)
			}
		})
	}
}

// writerSync is the writer connection's PRAGMA synchronous.
func writerSync(t *testing.T, j *Journal) int {
	t.Helper()
	var n int
	if err := j.w.QueryRow("PRAGMA synchronous").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A read's row survives a crash of the process that wrote it (SIGKILL
// without Close), with RelaxCalls: the commit is in the WAL, which the
// next open reads. (A power cut may lose it until the next fsynced commit;
// docs/journal.md says so.)
func TestRelaxedCallRowsSurviveProcessCrash(t *testing.T) {
	const rows = 25
	if path := os.Getenv("PMCP_JOURNAL_CRASH_PATH"); path != "" {
		ctx := context.Background()
		j, err := Open(ctx, path, Options{Logger: quietLog(), RelaxCalls: true})
		if err != nil {
			os.Exit(3)
		}
		in, err := j.Intent(ctx, writeCall())
		if err != nil {
			os.Exit(4)
		}
		for range rows {
			if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK, Status: 200}); err != nil {
				os.Exit(5)
			}
		}
		os.Stdout.WriteString("recorded " + in.CallID + " " + strconv.Itoa(int(j.Stats().Synced)) + "\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	path := filepath.Join(t.TempDir(), "journal.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRelaxedCallRowsSurviveProcessCrash$")
	cmd.Env = append(os.Environ(), "PMCP_JOURNAL_CRASH_PATH="+path)
	out, err := cmd.Output()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v, output %q", err, out)
	}
	if len(out) == 0 || string(out[len(out)-3:]) != " 1\n" {
		t.Errorf("child's output %q: want one fsynced commit (the intent)", out)
	}
	ctx := context.Background()
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != rows+1 || rep.OpenIntents != 1 {
		t.Errorf("after the crash: verify = %+v, %v; want %d rows and the open intent", rep, err, rows+1)
	}
}
