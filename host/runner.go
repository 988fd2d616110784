package host

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// RunnerRow is the journal row of what the break-glass runner did with
// one file of the queue, in the helper's journal: by the requester it ran
// for, approved by the approver. proxmox-mcp breakglass run and the
// demo's runner journal each file with it.
func RunnerRow(ev breakglass.RunEvent) (journal.Call, journal.Result) {
	call := journal.Call{Principal: journal.Principal{KeyID: "unverified", Transport: "runner"}, Tool: "breakglass run", Risk: "destructive",
		Args: map[string]any{"file": ev.File, "id": ev.Result.ID}, Decision: journal.Decision{Effect: "breakglass"}}
	if s := ev.Signed; s != nil {
		call.Principal = journal.Principal{KeyID: s.Requester.KeyID, KeyName: s.Requester.Name, Profile: s.Requester.Profile, Policy: s.Requester.Policy, Transport: "runner"}
		if s.Requester.Host {
			call.Principal.KeyID = "host"
		}
		call.Args = map[string]any{"file": ev.File, "id": s.ID, "operation": s.Operation, "approver": s.Approver.Name}
		call.Decision.Reasons = []string{"confirmed by " + s.Requester.String() + ", approved by " + s.Approver.String()}
	}
	res := journal.Result{Outcome: journal.OutcomeOK, JobID: ev.Result.ID, Duration: ev.Result.Finished.Sub(ev.Result.Started)}
	if ev.Result.Digest != "" {
		res.Detail = &journal.Detail{Digest: ev.Result.Digest}
	}
	switch ev.Result.Outcome {
	case breakglass.OutcomeRefused:
		res.Outcome, res.Error = journal.OutcomeDenied, ev.Result.Message
	case breakglass.OutcomeFailed:
		res.Outcome, res.Error = journal.OutcomeError, ev.Result.Message
	}
	return call, res
}

// HelperJournal is the helper's journal for a state directory, which the
// runner and the host's command line write too.
func HelperJournal(stateDir string) string { return filepath.Join(HelperDir(stateDir), "journal.db") }

// RunBreakglass runs the break-glass queue once, journaling each file in
// j (even when ctx ends meanwhile: a request taken out of the queue is
// always recorded) and logging it; then, when not nil, calls after.
func RunBreakglass(ctx context.Context, svc *breakglass.Service, j *journal.Journal, log *slog.Logger, after func(breakglass.RunEvent)) error {
	return svc.RunQueue(ctx, func(ctx context.Context, ev breakglass.RunEvent) {
		call, res := RunnerRow(ev)
		if _, err := j.Record(context.WithoutCancel(ctx), call, res); err != nil {
			log.Error("breakglass: journal the runner's result", "id", ev.Result.ID, "err", err)
		}
		log.Info("breakglass: ran", "id", ev.Result.ID, "outcome", ev.Result.Outcome,
			"changes", strings.Join(ev.Result.Changes, "; "), "message", ev.Result.Message)
		if after != nil {
			after(ev)
		}
	})
}
