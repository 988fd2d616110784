package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Pending counts each operation by its state: an open intent, an uncertain
// receipt, a running task, and what a resolution settled since (applied
// settles an uncertain one; unknown keeps it unknown; a later verdict
// wins). LastProblems lists the rows that ended badly, newest first.
func TestPendingFollowsResolutions(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	write := func(out Outcome) string {
		t.Helper()
		ev, err := j.Intent(ctx, intentWithKey("", "", "/nodes/pve1/qemu/100/config"))
		if err != nil {
			t.Fatal(err)
		}
		if out != OutcomePending {
			if _, err := j.Receipt(ctx, ev.CallID, Result{Outcome: out}); err != nil {
				t.Fatal(err)
			}
		}
		return ev.CallID
	}
	resolve := func(id, state string) {
		t.Helper()
		if _, err := j.Resolve(ctx, Resolution{CallID: id, State: state, By: Principal{KeyID: "local-root", Transport: "cli"}, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want Pending) {
		t.Helper()
		got, err := j.Pending(ctx)
		if err != nil || got != want {
			t.Fatalf("pending %+v, %v; want %+v", got, err, want)
		}
	}
	check(Pending{})
	write(OutcomePending)
	lost := write(OutcomeUncertain)
	running := write(OutcomeTaskRunning)
	write(OutcomeOK)
	check(Pending{OpenIntents: 1, Unknown: 1, RunningJobs: 1})

	resolve(lost, StateApplied)
	check(Pending{OpenIntents: 1, RunningJobs: 1})
	resolve(lost, StateUnknown) // a later verdict wins
	check(Pending{OpenIntents: 1, Unknown: 1, RunningJobs: 1})
	resolve(running, StateNotApplied)
	settled := write(OutcomeOK)
	resolve(settled, StateUnknown)
	check(Pending{OpenIntents: 1, Unknown: 2})

	if _, err := j.Record(ctx, Call{Tool: "proxmox_api_call", Principal: Principal{KeyID: "abcdefghijklmnop", Transport: "loopback"},
		Decision: Decision{Effect: "deny", Reasons: []string{"no"}}}, Result{Outcome: OutcomeDenied, Error: "refused"}); err != nil {
		t.Fatal(err)
	}
	probs, err := j.LastProblems(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 2 || probs[0].Outcome != OutcomeDenied || probs[1].Outcome != OutcomeUncertain || probs[1].CallID != lost {
		t.Errorf("last problems %+v", probs)
	}
	if _, err := j.LastProblems(ctx, 0); err == nil {
		t.Error("LastProblems(0) was accepted")
	}
}

// BenchmarkPending is the cost of the pending counts (every scrape of the
// metrics, at most once per cache period, and proxmox-mcp status) on a
// journal of 100 000 rows with 1% uncertain writes.
func BenchmarkPending(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(b.TempDir(), "journal.db"), Options{Logger: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	const rows = 100000
	errs := make(chan error, 64)
	sem := make(chan struct{}, 64)
	for i := range rows / 2 {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			ev, err := j.Intent(ctx, intentWithKey("", "", fmt.Sprintf("/nodes/pve1/qemu/%d/config", 100+i%50)))
			if err == nil {
				out := OutcomeOK
				if i%100 == 0 {
					out = OutcomeUncertain
				}
				_, err = j.Receipt(ctx, ev.CallID, Result{Outcome: out})
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ResetTimer()
	for b.Loop() {
		p, err := j.Pending(ctx)
		if err != nil || p.Unknown != rows/200 {
			b.Fatalf("%+v, %v", p, err)
		}
	}
}

// ObserveCommit hears of each committed transaction with its rows, and of
// none that failed.
func TestObserveCommit(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var seen []int
	j := openTest(t, Options{ObserveCommit: func(rows int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 {
			t.Errorf("commit of %d rows took %v", rows, d)
		}
		seen = append(seen, rows)
	}})
	if _, err := j.Record(ctx, Call{Tool: "t", Principal: Principal{KeyID: "abcdefghijklmnop", Transport: "stdio"}}, Result{Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, "c-no-such-intent", Result{Outcome: OutcomeOK}); err == nil {
		t.Fatal("a receipt without an intent was written")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("observed commits %v, want [1]", seen)
	}
}
