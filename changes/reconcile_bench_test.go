package changes

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// BenchmarkReconcileOpen is the daemon's start after a crash that left
// 1,000 writes open: ReconcileOpen over the simulator (TLS over loopback)
// and a journal on disk, judging each from PVE's evidence and closing it.
// Half are config edits of three guests (PVE shows none of their values:
// not applied), half are guest starts (PVE's task index is searched for
// each: none ran). Each iteration journals the 1,000 intents afresh,
// outside the timer.
func BenchmarkReconcileOpen(b *testing.B) {
	const open = 1000
	e := newRCEnv(b)
	edits := []rcWrite{
		{token: "mcp@pve!admin", method: "PUT", template: "/nodes/{node}/qemu/{vmid}/config", path: "/nodes/pve1/qemu/100/config"},
		{token: "mcp@pve!admin", method: "PUT", template: "/nodes/{node}/qemu/{vmid}/config", path: "/nodes/pve1/qemu/101/config"},
		{token: "mcp@pve!admin", method: "PUT", template: "/nodes/{node}/lxc/{vmid}/config", path: "/nodes/pve1/lxc/200/config"},
	}
	vmids := []int{100, 101, 200}
	starts := []rcWrite{
		{token: "mcp@pve!operator", method: "POST", template: "/nodes/{node}/qemu/{vmid}/status/start", path: "/nodes/pve1/qemu/101/status/start"},
		{token: "mcp@pve!operator", method: "POST", template: "/nodes/{node}/lxc/{vmid}/status/start", path: "/nodes/pve2/lxc/201/status/start"},
	}
	startIDs := []int{101, 201}
	// The configuration each edit was planned against: read once.
	priors := make([]map[string]any, len(edits))
	for i, w := range edits {
		if err := e.clients[w.token].Get(context.Background(), w.path, nil, &priors[i]); err != nil {
			b.Fatal(err)
		}
	}
	journalOpen := func() {
		for i := range open {
			var call journal.Call
			if i%2 == 0 {
				k := i / 2 % len(edits)
				w := edits[k]
				call = journal.Call{Principal: rcAlice, Tool: "proxmox_api_call", Method: w.method, PathTemplate: w.template, Path: w.path, Risk: "write",
					Args:     map[string]any{"node": "pve1", "vmid": vmids[k], "description": fmt.Sprintf("edit %d", i)},
					Decision: journal.Decision{Effect: "allow", Policy: "admin"}, Detail: &journal.Detail{Token: w.token},
					PriorDigest: priors[k]["digest"].(string), PriorConfig: priors[k]}
			} else {
				k := i / 2 % len(starts)
				w := starts[k]
				call = journal.Call{Principal: rcAlice, Tool: "proxmox_api_call", Method: w.method, PathTemplate: w.template, Path: w.path, Risk: "write",
					Args:     map[string]any{"node": "pve1", "vmid": startIDs[k]},
					Decision: journal.Decision{Effect: "allow", Policy: "operator"}, Detail: &journal.Detail{Token: w.token}}
			}
			if _, err := e.j.Intent(context.Background(), call); err != nil {
				b.Fatal(err)
			}
		}
		e.clock.Advance(2 * time.Minute) // past SettleAfter: none can be in flight
	}
	for b.Loop() {
		b.StopTimer()
		journalOpen()
		b.StartTimer()
		sum, err := e.rc.ReconcileOpen(context.Background(), time.Time{}, Request{Close: true}, nil)
		if err != nil || sum.Open != open || sum.Failed != 0 {
			b.Fatalf("summary %+v: %v", Summary{Open: sum.Open, Applied: sum.Applied, NotApplied: sum.NotApplied, Unknown: sum.Unknown, Failed: sum.Failed}, err)
		}
		b.ReportMetric(float64(sum.NotApplied), "not_applied/op")
		b.ReportMetric(float64(sum.Unknown), "unknown/op")
	}
	if left, _ := e.j.OpenIntents(context.Background(), time.Time{}); len(left) != 0 {
		b.Errorf("open intents left: %d", len(left))
	}
}
