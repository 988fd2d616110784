package installer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// MinFreeBytes is the space the state directory's file system must have
// free: the journal, the schema cache and the Tailnet node's state.
const MinFreeBytes = 256 << 20

// pveVersion matches `pveversion`: pve-manager/9.1.1/42db4a6c (running kernel: ...).
var pveVersion = regexp.MustCompile(`pve-manager/(\d+)\.(\d+)(?:\.(\d+))?`)

// problemsError joins problems into one error, each with its fix.
type problemsError []Problem

func (pe problemsError) Error() string {
	var b strings.Builder
	for i, p := range pe {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (fix: %s)", p.What, p.Fix)
	}
	return b.String()
}

// Problems returns the problems an error carries, if it carries any.
func Problems(err error) []Problem {
	var pe problemsError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

func applyPreflight(ctx context.Context, r *run) error {
	probs := r.hostProblems(ctx)
	probs = append(probs, r.portProblems(ctx)...)
	probs = append(probs, r.diskProblems()...)
	for _, p := range probs {
		r.say("  problem: %s\n    fix: %s", p.What, p.Fix)
	}
	if len(probs) > 0 {
		return fmt.Errorf("%d preflight problem(s), nothing was changed: %w", len(probs), problemsError(probs))
	}
	r.say("  ok: root, Proxmox VE 9, %s, free ports and disk", APIDoc)
	return nil
}

// checkPreflight is what doctor checks of the host: root, PVE 9, apidoc.js
// and PVE's CA (the ports are the daemon's own once it runs).
func checkPreflight(ctx context.Context, r *run) []Problem {
	return append(r.hostProblems(ctx), r.diskProblems()...)
}

// hostProblems checks that this is a PVE 9 host and that we are root.
func (r *run) hostProblems(ctx context.Context) []Problem {
	var probs []Problem
	s := r.sys
	if s.Euid != 0 {
		probs = append(probs, Problem{
			What: fmt.Sprintf("this runs as uid %d, not root: install and doctor manage and read a system user, PVE tokens, systemd units and /etc/pve", s.Euid),
			Fix:  "run it as root (sudo proxmox-mcp ...)",
		})
	}
	out, err := s.run(ctx, Cmd{Name: "pveversion", Timeout: 30 * time.Second})
	switch {
	case errors.Is(err, ErrNotFound):
		probs = append(probs, Problem{
			What: "pveversion is not installed: this is not a Proxmox VE host",
			Fix:  "install proxmox-mcp on a Proxmox VE 9 node",
		})
	case err != nil:
		probs = append(probs, Problem{What: fmt.Sprintf("pveversion failed: %v", err), Fix: "check that pve-manager is installed and working (pveversion -v)"})
	default:
		m := pveVersion.FindStringSubmatch(string(out))
		if m == nil {
			probs = append(probs, Problem{
				What: fmt.Sprintf("pveversion printed %q, which names no pve-manager version", strings.TrimSpace(string(out))),
				Fix:  "check that pve-manager is installed (pveversion -v)",
			})
			break
		}
		if major, _ := strconv.Atoi(m[1]); major != 9 {
			probs = append(probs, Problem{
				What: fmt.Sprintf("this is Proxmox VE %s.%s; proxmox-mcp needs Proxmox VE 9", m[1], m[2]),
				Fix:  "upgrade the node to PVE 9 first (https://pve.proxmox.com/wiki/Upgrade_from_8_to_9)",
			})
		}
	}
	if st, err := s.stat(APIDoc); err != nil || !st.exists || st.size == 0 {
		probs = append(probs, Problem{
			What: APIDoc + " (PVE's API schema) is missing or empty",
			Fix:  "apt install --reinstall pve-docs",
		})
	}
	if !s.exists(pveRootCA) {
		probs = append(probs, Problem{
			What: pveRootCA + " is missing: the cluster file system (/etc/pve) is not mounted",
			Fix:  "start it (systemctl start pve-cluster) and check `systemctl status pve-cluster`",
		})
	}
	return probs
}

// portProblems checks that the ports the daemon will bind are free, unless
// the daemon already runs and holds them (an upgrade).
func (r *run) portProblems(ctx context.Context) []Problem {
	if r.serviceActive(ctx) {
		return nil
	}
	addrs := []struct{ field, addr string }{{"listen.loopback.address", r.plan.loopback}}
	if r.plan.mode.LAN() {
		addrs = append(addrs, struct{ field, addr string }{"--lan-address", r.plan.lanAddress})
	}
	var probs []Problem
	for _, a := range addrs {
		err := r.sys.PortFree(ctx, a.addr)
		if err == nil {
			continue
		}
		_, port, _ := net.SplitHostPort(a.addr)
		fix := fmt.Sprintf("stop what listens there (ss -ltnp 'sport = :%s' shows it), or choose another address (%s)", port, a.field)
		if strings.Contains(err.Error(), "assign requested address") {
			fix = fmt.Sprintf("this host has no address %s: give one of its private addresses (%s; `ip -br addr` lists them)", a.addr, a.field)
		}
		probs = append(probs, Problem{What: fmt.Sprintf("cannot listen on %s: %v", a.addr, err), Fix: fix})
	}
	return probs
}

// diskProblems checks the free space where the state directory lives.
func (r *run) diskProblems() []Problem {
	dir := r.plan.stateDir
	for !r.sys.exists(dir) && dir != "/" {
		dir = filepath.Dir(dir)
	}
	free, err := r.sys.FreeBytes(r.sys.path(dir))
	if err != nil {
		return []Problem{{What: fmt.Sprintf("the free space on %s is unknown: %v", dir, err), Fix: "check the file system (df -h " + dir + ")"}}
	}
	if free < MinFreeBytes {
		return []Problem{{
			What: fmt.Sprintf("only %d MiB are free on the file system of %s; the journal and caches need at least %d MiB", free>>20, r.plan.stateDir, MinFreeBytes>>20),
			Fix:  "free space there (df -h " + dir + ")",
		}}
	}
	return nil
}

// serviceActive asks systemd whether the daemon runs.
func (r *run) serviceActive(ctx context.Context) bool {
	out, _ := r.sys.run(ctx, Cmd{Name: "systemctl", Args: []string{"is-active", systemd.ServiceUnit}})
	return strings.TrimSpace(string(out)) == "active"
}
