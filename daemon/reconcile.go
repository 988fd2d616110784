package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// Reconciliation at start: the writes a crash left open (an intent with
// no receipt, recorded before this run began) are judged from PVE's
// evidence in the background once the daemon serves, and each is closed
// with a receipt and a resolution (docs/changes.md). The status line says
// how far it is while it runs and what it found when it is done.

// newReconciler builds the reconciler of proxmox_reconcile and of the
// start-up pass; nil when no PVE token is configured. It reads with the
// least privileged token there is, and knows every tier's token id, the
// users of the tasks the daemon's writes start.
func (d *Daemon) newReconciler() (*changes.Reconciler, error) {
	var reader changes.Reader
	for _, t := range []tools.Tier{tools.TierReadOnly, tools.TierOperator, tools.TierAdmin, tools.TierRoot} {
		if c := d.pve.clients[t]; c != nil && reader == nil {
			reader = c
		}
	}
	if reader == nil {
		return nil, nil
	}
	var ids []string
	for _, tok := range d.cfg.PVE.Tokens {
		ids = append(ids, tok.ID)
	}
	rc, err := changes.NewReconciler(changes.ReconcilerOptions{Ledger: d.jrnl, PVE: reader, Schema: d.schema, Tokens: ids,
		SettleAfter: d.cfg.SettleTime(), Logger: d.log})
	if err != nil {
		return nil, fmt.Errorf("reconciler: %w", err)
	}
	return rc, nil
}

// reconciliation is the start-up pass's progress, for the status line.
type reconciliation struct {
	mu      sync.Mutex
	running bool
	done    int
	total   int
	sum     *changes.Summary
	err     error
}

// String is the pass in the status line's words; "" when there was
// nothing to do.
func (r *reconciliation) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.running:
		return fmt.Sprintf("reconciling %d writes the last run left open: %d done", r.total, r.done)
	case r.sum == nil || r.sum.Open == 0:
		return ""
	}
	s := fmt.Sprintf("reconciled %d writes the last run left open: %d applied, %d not applied, %d unknown", r.sum.Open, r.sum.Applied, r.sum.NotApplied, r.sum.Unknown)
	if r.sum.Running > 0 {
		s += fmt.Sprintf(", %d with their task still running", r.sum.Running)
	}
	if r.sum.Failed > 0 {
		s += fmt.Sprintf(", %d not judged (%v)", r.sum.Failed, r.err)
	}
	return s
}

// reconcileOpen runs the start-up pass over the intents recorded before
// this run started: no call of this run is among them, so none is in
// flight, and each is judged and closed whatever its age.
func (d *Daemon) reconcileOpen(ctx context.Context, started time.Time) {
	if d.reconciler == nil {
		return
	}
	open, err := d.jrnl.OpenIntents(ctx, started)
	if err != nil {
		d.log.Error("daemon: cannot list the writes the last run left open", "err", err)
		return
	}
	if len(open) == 0 {
		return
	}
	d.log.Info("daemon: reconciling the writes the last run left open", "open", len(open))
	d.recon.mu.Lock()
	d.recon.running, d.recon.total = true, len(open)
	d.recon.mu.Unlock()
	d.lifecycle().Status(d.StatusLine())
	last := time.Now()
	sum, err := d.reconciler.ReconcileOpen(ctx, started, changes.Request{Close: true}, func(done, total int) {
		d.recon.mu.Lock()
		d.recon.done, d.recon.total = done, total
		d.recon.mu.Unlock()
		if time.Since(last) >= time.Second {
			last = time.Now()
			d.lifecycle().Status(d.StatusLine())
		}
	})
	d.recon.mu.Lock()
	d.recon.running, d.recon.sum, d.recon.err = false, &sum, err
	d.recon.mu.Unlock()
	if err != nil {
		d.log.Warn("daemon: reconciliation at start left some writes open", "open", sum.Open, "failed", sum.Failed, "err", err)
	}
	d.log.Info("daemon: reconciled the writes the last run left open", "open", sum.Open, "applied", sum.Applied,
		"not_applied", sum.NotApplied, "unknown", sum.Unknown, "running", sum.Running, "failed", sum.Failed)
	d.lifecycle().Status(d.StatusLine())
}
