package installer

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// startTimeout bounds systemctl start and restart: longer than the unit's
// TimeoutStartSec (90 s), so that systemd, not us, decides a start failed.
const startTimeout = 150 * time.Second

// unitPath is where a rendered unit is installed.
func unitPath(u systemd.Unit) string { return filepath.Join(u.Dir, u.Name) }

// renewUnits are the LAN certificate renewal units, installed only with a
// LAN listener.
var renewUnits = []string{
	filepath.Join(systemd.UnitDir, systemd.RenewTimer),
	filepath.Join(systemd.UnitDir, systemd.RenewService),
}

func (r *run) systemctl(ctx context.Context, args ...string) error {
	_, err := r.sys.run(ctx, Cmd{Name: "systemctl", Args: args})
	return err
}

// signingKeyName is the break-glass signing key's file name in
// host.BreakglassDir (breakglass.KeyFile, which this package may not
// import: the layers forbid it).
const signingKeyName = "signing.key"

// signingKeyPath is the break-glass signing key of a state directory.
func signingKeyPath(stateDir string) string {
	return filepath.Join(host.BreakglassDir(stateDir), signingKeyName)
}

// breakglassDirs are the root helper's directory and the break-glass
// directory in it (docs/breakglass.md): root's alone, as the helper's
// StateDirectory= and the signing key want them.
func (r *run) breakglassDirs() []dirSpec {
	return []dirSpec{
		{host.HelperDir(r.plan.stateDir), 0o700, rootOwner, "the root helper's journal and the break-glass directory"},
		{host.BreakglassDir(r.plan.stateDir), 0o700, rootOwner, "the break-glass requests, their queue and the signing key"},
	}
}

// applyBreakglass makes the break-glass directories and, once, the
// signing key the root helper signs approved requests with and the runner
// verifies them by (pki.CreateSigningKey keeps a key that is there: a
// new one would void every request signed and not yet run).
func (r *run) applyBreakglass() error {
	for _, d := range r.breakglassDirs() {
		c, err := r.sys.ensureDir(d.path, d.mode, d.owner)
		if err != nil {
			return err
		}
		r.report(c, fmt.Sprintf("%s (%s %04o: %s)", d.path, d.owner, d.mode, d.why))
		if c == created {
			if err := r.created(func(cr *Created) { cr.Dirs = addUnique(cr.Dirs, d.path) }); err != nil {
				return err
			}
		}
	}
	key := signingKeyPath(r.plan.stateDir)
	made, err := pki.CreateSigningKey(r.sys.path(key))
	if err != nil {
		// Kept as it is: a key others could read may be known to them, and
		// replacing it voids every request signed and not yet run.
		return fmt.Errorf("the break-glass signing key %s: %w (make a new one with proxmox-mcp breakglass rotate-key, then re-run install)", key, err)
	}
	if !made {
		r.say("  kept the break-glass signing key %s", key)
		return nil
	}
	r.say("  created the break-glass signing key %s (root:root 0600, Ed25519): the root helper signs approved requests with it, the runner runs nothing else", key)
	return r.createdFile(key)
}

// checkBreakglass checks the break-glass directories and signing key.
func (r *run) checkBreakglass() []Problem {
	var probs []Problem
	for _, d := range r.breakglassDirs() {
		probs = append(probs, r.sys.checkAttrs(d.path, true, d.mode, d.owner, "proxmox-mcp install")...)
	}
	key := signingKeyPath(r.plan.stateDir)
	if !r.sys.exists(key) {
		return append(probs, Problem{What: "there is no break-glass signing key " + key + ", so no break-glass request can be signed or run", Fix: "proxmox-mcp install (makes it)"})
	}
	if p := r.sys.checkAttrs(key, false, 0o600, rootOwner, "proxmox-mcp install"); len(p) > 0 {
		return append(probs, p...)
	}
	if _, err := pki.ReadSigningKey(r.sys.path(key)); err != nil {
		probs = append(probs, Problem{
			What: err.Error(),
			Fix:  "proxmox-mcp breakglass rotate-key (requests signed and not yet run are then refused)",
		})
	}
	return probs
}

func applyUnits(ctx context.Context, r *run) error {
	// Before the units: the helper and the runner they start sign and
	// verify with the key.
	if err := r.applyBreakglass(); err != nil {
		return err
	}
	units, err := r.rendered()
	if err != nil {
		return err
	}
	for _, u := range units {
		path := unitPath(u)
		c, err := r.sys.writeFile(path, u.Data, 0o644, rootOwner)
		if err != nil {
			return err
		}
		r.report(c, path)
		if c == created {
			if err := r.created(func(cr *Created) { cr.Units = addUnique(cr.Units, path) }); err != nil {
				return err
			}
		}
	}
	if !r.plan.mode.LAN() {
		if r.sys.exists(renewUnits[0]) {
			if err := r.systemctl(ctx, "disable", "--now", systemd.RenewTimer); err != nil {
				return err
			}
		}
		for _, path := range renewUnits {
			removed, err := r.remove(path)
			if err != nil {
				return err
			}
			if removed {
				r.say("  removed %s: mode %s has no LAN listener", path, r.plan.mode)
			}
			if err := r.created(func(cr *Created) { cr.Units = removeValue(cr.Units, path) }); err != nil {
				return err
			}
		}
	}
	// Always: a run that wrote the files and failed before this line must
	// not leave systemd with the old ones.
	if err := r.systemctl(ctx, "daemon-reload"); err != nil {
		return err
	}
	if r.plan.mode.LAN() {
		if err := r.systemctl(ctx, "enable", "--now", systemd.RenewTimer); err != nil {
			return err
		}
		r.say("  %s checks the LAN certificate daily", systemd.RenewTimer)
	}
	// The root helper (docs/host.md) starts on its socket's first
	// connection, in every mode (in cluster mode it reads root's copy the
	// cluster sync writes).
	cluster := r.plan.existing != nil && r.plan.existing.Cluster.Enabled
	if err := r.systemctl(ctx, "enable", "--now", systemd.HelperSocket); err != nil {
		return err
	}
	r.say("  %s: the root helper starts on the daemon's first host operation", systemd.HelperSocket)
	// The break-glass runner (docs/breakglass.md) starts whenever the
	// helper queues an approved request, in every mode.
	if err := r.systemctl(ctx, "enable", "--now", systemd.BreakglassPath); err != nil {
		return err
	}
	r.say("  %s: the break-glass runner starts when an approved request is queued in %s", systemd.BreakglassPath, r.unitOptions().BreakglassQueue())
	// Cluster mode (`proxmox-mcp cluster enable`) adds the root-run sync
	// that mirrors the shared keys and policies (docs/cluster.md).
	if cluster {
		if err := r.systemctl(ctx, "enable", "--now", systemd.ClusterUnit); err != nil {
			return err
		}
		r.say("  %s mirrors the cluster's shared keys and policies", systemd.ClusterUnit)
	}
	return nil
}

func checkUnits(ctx context.Context, r *run) []Problem {
	units, err := r.rendered()
	if err != nil {
		return []Problem{{What: err.Error(), Fix: "report a bug"}}
	}
	probs := r.checkBreakglass()
	for _, u := range units {
		path := unitPath(u)
		have, err := r.sys.readFile(path)
		switch {
		case err != nil:
			probs = append(probs, Problem{What: path + " is missing", Fix: "proxmox-mcp install"})
			continue
		case !bytes.Equal(have, u.Data):
			probs = append(probs, Problem{
				What: path + " differs from what this binary renders (stale after an upgrade, or edited: use `systemctl edit` drop-ins instead)",
				Fix:  "proxmox-mcp install (renders the units again and restarts the daemon)",
			})
		}
		probs = append(probs, r.sys.checkAttrs(path, false, 0o644, rootOwner, "proxmox-mcp install")...)
	}
	if st := r.unitState(ctx, "is-enabled", systemd.HelperSocket); st != "enabled" {
		probs = append(probs, Problem{
			What: fmt.Sprintf("%s is %s, so no host operation can be made", systemd.HelperSocket, orUnknown(st)),
			Fix:  "systemctl enable --now " + systemd.HelperSocket,
		})
	}
	// A path unit whose service failed too often in a row stops watching
	// (it is failed, though still enabled).
	switch st := r.unitState(ctx, "is-enabled", systemd.BreakglassPath); {
	case st != "enabled":
		probs = append(probs, Problem{
			What: fmt.Sprintf("%s is %s, so no approved break-glass request is run", systemd.BreakglassPath, orUnknown(st)),
			Fix:  "systemctl enable --now " + systemd.BreakglassPath,
		})
	default:
		if st := r.unitState(ctx, "is-active", systemd.BreakglassPath); st != "active" {
			probs = append(probs, Problem{
				What: fmt.Sprintf("%s is %s: it no longer watches the break-glass queue, so no approved request is run", systemd.BreakglassPath, orUnknown(st)),
				Fix:  "journalctl -u " + systemd.BreakglassService + " -n 50 --no-pager shows why the runner failed; then systemctl restart " + systemd.BreakglassPath,
			})
		}
	}
	if !r.plan.mode.LAN() {
		for _, path := range renewUnits {
			if r.sys.exists(path) {
				probs = append(probs, Problem{What: fmt.Sprintf("%s is installed but mode %s has no LAN listener", path, r.plan.mode), Fix: "proxmox-mcp install"})
			}
		}
		return probs
	}
	if st := r.unitState(ctx, "is-enabled", systemd.RenewTimer); st != "enabled" {
		probs = append(probs, Problem{
			What: fmt.Sprintf("%s is %s, so the LAN certificate is not renewed", systemd.RenewTimer, orUnknown(st)),
			Fix:  "systemctl enable --now " + systemd.RenewTimer,
		})
	}
	return probs
}

// unitState is what systemctl is-active or is-enabled prints.
func (r *run) unitState(ctx context.Context, verb, unit string) string {
	out, _ := r.sys.run(ctx, Cmd{Name: "systemctl", Args: []string{verb, unit}})
	return strings.TrimSpace(string(out))
}

func orUnknown(s string) string {
	if s == "" {
		return "in an unknown state"
	}
	return s
}

// journalTail is the daemon's last log lines, for an error.
func (r *run) journalTail(ctx context.Context) string {
	out, err := r.sys.run(ctx, Cmd{Name: "journalctl", Args: []string{"-u", systemd.ServiceUnit, "-n", "50", "--no-pager"}})
	if err != nil && len(out) == 0 {
		return "(journalctl failed: " + err.Error() + ")"
	}
	return strings.TrimRight(string(out), "\n")
}

// startFailed shows the daemon's log and says how to go on.
func (r *run) startFailed(ctx context.Context, err error) error {
	r.say("  the daemon's last log lines (journalctl -u %s -n 50 --no-pager):", systemd.ServiceUnit)
	for _, line := range strings.Split(r.journalTail(ctx), "\n") {
		r.say("    %s", line)
	}
	return fmt.Errorf("%w: the daemon did not start (its log is above; systemctl status %s)", err, systemd.ServiceUnit)
}

// applyService starts the daemon: enable --now on a first install,
// restart on an upgrade. The unit is Type=notify, so systemctl returns
// once the daemon has sent READY=1, or fails.
func applyService(ctx context.Context, r *run) error {
	var err error
	if r.plan.upgrade {
		if err = r.systemctl(ctx, "enable", systemd.ServiceUnit); err == nil {
			_, err = r.sys.run(ctx, Cmd{Name: "systemctl", Args: []string{"restart", systemd.ServiceUnit}, Timeout: startTimeout})
		}
	} else {
		_, err = r.sys.run(ctx, Cmd{Name: "systemctl", Args: []string{"enable", "--now", systemd.ServiceUnit}, Timeout: startTimeout})
	}
	if err != nil {
		return r.startFailed(ctx, err)
	}
	if st := r.unitState(ctx, "is-active", systemd.ServiceUnit); st != "active" {
		return r.startFailed(ctx, fmt.Errorf("%s is %s after it started", systemd.ServiceUnit, orUnknown(st)))
	}
	verb := "started"
	if r.plan.upgrade {
		verb = "restarted"
	}
	r.say("  %s %s: it sent READY=1", verb, systemd.ServiceUnit)
	if r.plan.mode.Tailnet() {
		r.waitLogin(ctx)
	}
	return nil
}

// readLoginURL reads the Tailnet login URL the daemon keeps while its node
// waits for a login: a file only root and the daemon's user can read
// (config.TailnetLoginURLFile), never the status line, which every local
// user can read.
func (r *run) readLoginURL() string {
	file := (&config.Config{StateDir: r.plan.stateDir}).TailnetLoginURLFile()
	if raw, err := r.sys.readFile(r.plan.configFile); err == nil {
		if c, err := config.Parse(r.plan.configFile, raw); err == nil {
			file = c.TailnetLoginURLFile()
		}
	}
	data, err := r.sys.readFile(file)
	if err != nil {
		return ""
	}
	u := strings.TrimSpace(string(data))
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") || strings.ContainsAny(u, " \t\r\n") {
		return ""
	}
	return u
}

// waitLogin looks for the Tailnet login URL a node without an auth key
// needs, for up to LoginWait.
func (r *run) waitLogin(ctx context.Context) {
	if cfg := r.plan.existing; cfg != nil && cfg.Listen.Tailnet != nil && cfg.Listen.Tailnet.AuthKeyFile != "" {
		return
	}
	deadline := r.sys.Now().Add(r.sys.LoginWait)
	for {
		if u := r.readLoginURL(); u != "" {
			r.loginURL = u
			return
		}
		if !r.sys.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func checkService(ctx context.Context, r *run) []Problem {
	var probs []Problem
	if st := r.unitState(ctx, "is-enabled", systemd.ServiceUnit); st != "enabled" {
		probs = append(probs, Problem{What: fmt.Sprintf("%s is %s: it will not start at boot", systemd.ServiceUnit, orUnknown(st)), Fix: "systemctl enable " + systemd.ServiceUnit})
	}
	if st := r.unitState(ctx, "is-active", systemd.ServiceUnit); st != "active" {
		probs = append(probs, Problem{
			What: fmt.Sprintf("%s is %s", systemd.ServiceUnit, orUnknown(st)),
			Fix:  "journalctl -u " + systemd.ServiceUnit + " -n 50 --no-pager shows why; then systemctl restart " + systemd.ServiceUnit,
		})
		return probs
	}
	if u := r.readLoginURL(); u != "" {
		probs = append(probs, Problem{What: "the Tailnet node waits for a login", Fix: "open " + u + " and add the node to your tailnet (or re-run install with --tailscale-authkey-file)"})
	}
	return probs
}
