package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// The writes the last run left open are reconciled in the background once
// the daemon serves: each is closed with a receipt and a resolution, and
// the status line says what was found. One took effect (its task is in
// the index), one never reached PVE (nothing shows: unknown, never
// applied).
func TestStartReconcilesOpenIntents(t *testing.T) {
	t.Parallel()
	lc := &recordedLifecycle{}
	r := newRigWith(t, nil, func(o *Options) { o.Lifecycle = lc })
	ctx := context.Background()
	op, err := r.d.pve.Client("operator")
	if err != nil {
		t.Fatal(err)
	}
	intent := func(path string) string {
		t.Helper()
		ev, err := r.d.jrnl.Intent(ctx, journal.Call{
			Principal: journal.Principal{KeyID: "kop", KeyName: "agent", Profile: "operator", Transport: "loopback"},
			Tool:      "proxmox_api_call", Method: "POST", PathTemplate: "/nodes/{node}/qemu/{vmid}/status/start", Path: path, Risk: "write",
			Args: map[string]any{}, Decision: journal.Decision{Effect: "allow", Policy: "operator"}, Detail: &journal.Detail{Token: op.TokenID()}})
		if err != nil {
			t.Fatal(err)
		}
		return ev.CallID
	}
	// The last run recorded both intents, sent the first, and died.
	applied := intent("/nodes/pve1/qemu/101/status/start")
	resp, err := op.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil)
	if err != nil {
		t.Fatal(err)
	}
	upid, _ := resp.String()
	if _, err := op.WaitTask(ctx, upid, pve.WaitOptions{MinInterval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	lost := intent("/nodes/pve1/qemu/9000/status/start")

	r.start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		open, err := r.d.jrnl.OpenIntents(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(open) == 0 && strings.Contains(r.d.StatusLine(), "reconciled 2 writes") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still open: %d; status %q", len(open), r.d.StatusLine())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for id, want := range map[string]struct {
		state   string
		outcome journal.Outcome
	}{applied: {journal.StateApplied, journal.OutcomeOK}, lost: {journal.StateUnknown, journal.OutcomeUncertain}} {
		evs, err := r.d.jrnl.CallEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		o, err := changes.ReadOperation(evs)
		if err != nil {
			t.Fatal(err)
		}
		if o.State() != want.state || o.Receipt == nil || o.Receipt.Outcome != want.outcome {
			t.Errorf("%s: state %s, receipt %+v; want %s, %s", id, o.State(), o.Receipt, want.state, want.outcome)
		}
		if res, _, _ := o.Resolution(); res.Principal.KeyID != "daemon" || res.Tool != "reconcile" {
			t.Errorf("%s: resolution by %+v with %s", id, res.Principal, res.Tool)
		}
	}
	if o := mustOp(t, r, applied); o.Receipt.UPID != upid {
		t.Errorf("the applied write's receipt names %s, want %s", o.Receipt.UPID, upid)
	}
	want := "reconciled 2 writes the last run left open: 1 applied, 0 not applied, 1 unknown"
	found := false
	for _, ev := range lc.take() {
		found = found || strings.HasSuffix(ev, want)
	}
	if !found {
		t.Errorf("the status line never said %q: %q", want, r.d.StatusLine())
	}
}

func mustOp(t *testing.T, r *rig, id string) *changes.Operation {
	t.Helper()
	evs, err := r.d.jrnl.CallEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := changes.ReadOperation(evs)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
