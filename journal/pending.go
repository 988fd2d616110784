package journal

import (
	"context"
	"fmt"
	"strings"
)

// Pending counts the writes whose outcome is not settled, as the
// operations' rows tell it (an operation's state is its last resolution
// that gave a verdict, else its receipt's outcome): what the metrics and
// `proxmox-mcp status` show.
type Pending struct {
	// OpenIntents are intents without a receipt (what reconciliation
	// resolves).
	OpenIntents int `json:"open_intents"`
	// Unknown are operations whose state is uncertain (sent, answer lost)
	// or unknown (a resolution could not tell).
	Unknown int `json:"unknown_outcomes"`
	// RunningJobs are operations whose task was still running when last
	// seen (a task_running receipt or job row) and that nothing (a later
	// job row or resolution) has settled since.
	RunningJobs int `json:"running_jobs"`
}

// pendingSQL reads, in one pass over the events, the receipts that are
// uncertain or running and every resolution; the operations' states are
// worked out from them. No index covers the outcome, so this scans the
// table (docs/benchmarks.md has its cost on a large journal).
const pendingSQL = `SELECT call_id, kind, outcome,
		CASE WHEN kind = 'resolution' AND detail <> '' THEN coalesce(json_extract(detail, '$.state'), '') ELSE '' END
	FROM events NOT INDEXED
	WHERE (kind = 'receipt' AND outcome IN ('uncertain', 'task_running')) OR kind IN ('resolution', 'job')
	ORDER BY id`

// Pending counts the open intents, unknown outcomes and running jobs.
func (j *Journal) Pending(ctx context.Context) (Pending, error) {
	var p Pending
	if err := j.r.QueryRowContext(ctx, `SELECT count(*) FROM open_intents`).Scan(&p.OpenIntents); err != nil {
		return Pending{}, fmt.Errorf("journal: pending: open intents: %w", err)
	}
	rows, err := j.r.QueryContext(ctx, pendingSQL)
	if err != nil {
		return Pending{}, fmt.Errorf("journal: pending: %w", err)
	}
	defer rows.Close()
	// The state of each operation seen: its receipt's outcome, replaced by
	// each later resolution that gave a verdict.
	state := map[string]string{}
	for rows.Next() {
		var callID, kind, outcome, verdict string
		if err := rows.Scan(&callID, &kind, &outcome, &verdict); err != nil {
			return Pending{}, fmt.Errorf("journal: pending: %w", err)
		}
		switch {
		case kind == string(KindReceipt):
			if _, resolved := state[callID]; !resolved {
				state[callID] = outcome
			}
		case kind == string(KindJob):
			// What PVE said of the task since: running still, or ended.
			state[callID] = outcome
		case verdict != "":
			state[callID] = verdict
		}
	}
	if err := rows.Err(); err != nil {
		return Pending{}, fmt.Errorf("journal: pending: %w", err)
	}
	for _, s := range state {
		switch s {
		case string(OutcomeUncertain), StateUnknown:
			p.Unknown++
		case string(OutcomeTaskRunning):
			p.RunningJobs++
		}
	}
	return p, nil
}

// problemOutcomes are the outcomes LastProblems returns.
var problemOutcomes = []Outcome{OutcomeError, OutcomeDenied, OutcomeInvalid, OutcomeTaskFailed, OutcomeUncertain}

// LastProblems returns the last n rows (1 to 10000) of calls and receipts
// that ended in an error, a refusal (denied, invalid), a failed task or an
// uncertain outcome, newest first.
func (j *Journal) LastProblems(ctx context.Context, n int) ([]Event, error) {
	if n <= 0 || n > maxPage {
		return nil, fmt.Errorf("journal: last problems: %d rows: want 1 to %d", n, maxPage)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(problemOutcomes)), ", ")
	args := make([]any, 0, len(problemOutcomes)+1)
	for _, o := range problemOutcomes {
		args = append(args, string(o))
	}
	args = append(args, n)
	return j.query(ctx, `SELECT `+columns+` FROM events WHERE kind IN ('call', 'receipt') AND outcome IN (`+marks+`) ORDER BY id DESC LIMIT ?`, args...)
}
