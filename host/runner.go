package host

import (
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
