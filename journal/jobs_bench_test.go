package journal

import (
	"context"
	"fmt"
	"testing"
)

// jobsJournal is a journal of 100,000 reads of one key with 500 jobs of
// that key among them, each ended by a job row: a key's list of jobs must
// cost the jobs, not the rows.
func jobsJournal(b *testing.B) *Journal {
	j := openTest(b, Options{})
	fill(b, j, 100_000)
	ctx := context.Background()
	for i := range 500 {
		upid := fmt.Sprintf("UPID:pve1:%08X:00005678:6740A1B2:qmstart:100:mcp@pve!operator:", i)
		id := startJob(b, j, alice(), upid, OutcomeOK)
		if _, err := j.RecordJob(ctx, JobUpdate{Job: id, UPID: upid, State: JobOK, ExitStatus: "OK"}); err != nil {
			b.Fatal(err)
		}
	}
	return j
}

// BenchmarkJobs: the 20 newest jobs of a key (proxmox_jobs without a
// filter) in that journal.
func BenchmarkJobs(b *testing.B) {
	j := jobsJournal(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if list, err := j.Jobs(ctx, alice().KeyID, 20); err != nil || len(list) != 20 {
			b.Fatal(len(list), err)
		}
	}
}

// BenchmarkJobByUPID: one job found by its task's UPID (proxmox_job).
func BenchmarkJobByUPID(b *testing.B) {
	j := jobsJournal(b)
	ctx := context.Background()
	upid := fmt.Sprintf("UPID:pve1:%08X:00005678:6740A1B2:qmstart:100:mcp@pve!operator:", 250)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if jb, err := j.Job(ctx, upid); err != nil || jb.State != JobOK {
			b.Fatal(jb, err)
		}
	}
}
