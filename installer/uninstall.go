package installer

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// UninstallOptions say how much to remove.
type UninstallOptions struct {
	// Purge also removes the configuration, the state (keys, policies, the
	// journal), the PVE user with its tokens and role, and the system user.
	Purge bool
	Out   io.Writer
}

// Uninstall removes what install made, as the install state records it,
// and nothing else (and never anything outside install's own files and
// directories, whatever the record says): the units are stopped, disabled and removed, with the
// sysusers entry and the copied binary. The configuration, the state, the
// PVE identity and the system user stay unless Purge is set. It can be run
// again: what is gone is skipped, and a failure is resumed by re-running.
func Uninstall(ctx context.Context, s *System, o UninstallOptions) error {
	if err := s.check(); err != nil {
		return err
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	p, err := readInstalled(s, false)
	if err != nil {
		return err
	}
	r := &run{sys: s, plan: p, state: p.state, out: o.Out, stateReady: true}
	if p.state == nil {
		r.say("nothing to uninstall: there is no install state (%s), so nothing here was made by `proxmox-mcp install` (or it was purged)", InstallStateFile)
		return nil
	}
	r.sayIgnored()
	if s.Euid != 0 {
		return fmt.Errorf("uninstall runs as uid %d, not root: run it as root", s.Euid)
	}
	c := &r.state.Created
	r.say("==> stopping and removing the units")
	for _, name := range []string{systemd.RenewTimer, systemd.ServiceUnit, systemd.HelperSocket, systemd.HelperService, systemd.BreakglassPath, systemd.BreakglassService} {
		path := filepath.Join(systemd.UnitDir, name)
		if slices.Contains(c.Units, path) && s.exists(path) {
			// The helper's and the break-glass runner's services have no
			// [Install]: their socket and path unit start them.
			verb, done := []string{"disable", "--now", name}, "stopped and disabled"
			if name == systemd.HelperService || name == systemd.BreakglassService {
				verb, done = []string{"stop", name}, "stopped"
			}
			if err := r.systemctl(ctx, verb...); err != nil {
				return fmt.Errorf("%w: re-run `proxmox-mcp uninstall` once it is fixed", err)
			}
			r.say("  %s %s", done, name)
		}
	}
	removedUnits := false
	for _, path := range slices.Clone(c.Units) {
		var removed bool
		if s.dpkgOwns(ctx, path) {
			// Installed from a copied binary first, then the Debian
			// package: the file is the package's now.
			r.say("  kept %s: the Debian package %s owns it", path, debPackage)
		} else if removed, err = r.remove(path); err != nil {
			return err
		}
		if removed {
			r.say("  removed %s", path)
			removedUnits = removedUnits || strings.HasPrefix(path, systemd.UnitDir+"/")
		}
		c.Units = removeValue(c.Units, path)
		if err := r.persist(); err != nil {
			return err
		}
	}
	if removedUnits {
		if err := r.systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
	}
	if c.Binary != "" && s.dpkgOwns(ctx, c.Binary) {
		r.say("  kept %s: the Debian package %s owns it", c.Binary, debPackage)
		c.Binary = ""
	}
	if c.Binary != "" {
		if removed, err := r.remove(c.Binary); err != nil {
			return err
		} else if removed {
			r.say("  removed %s", c.Binary)
		}
		c.Binary = ""
	}
	if !o.Purge {
		r.state.Uninstalled = s.Now().UTC()
		if err := r.persist(); err != nil {
			return err
		}
		r.say("kept the configuration (%s), the state (keys, policies, journal in %s; the root helper's journal and the break-glass signing key in %s), the PVE user %s with its tokens, and the system user %s.",
			ConfigDir, p.stateDir, host.HelperDir(p.stateDir), PVEUser, ServiceUser)
		r.say("`proxmox-mcp install` brings the daemon back as it was; `proxmox-mcp uninstall --purge` removes those too.")
		return nil
	}
	return r.purge(ctx)
}

// purge removes the PVE identity, the files and directories, and the
// system user install made. The install state goes last, so that a
// failure midway can be resumed. Every removal is refused outside
// install's own files and directories (plan.owns), and none follows a
// symbolic link: the state directory is the service user's.
func (r *run) purge(ctx context.Context) error {
	s, p, c := r.sys, r.plan, &r.state.Created
	r.say("==> removing the PVE identity")
	if err := r.removeIdentity(ctx, c); err != nil {
		return fmt.Errorf("%w: re-run `proxmox-mcp uninstall --purge` once it is fixed", err)
	}
	r.say("==> removing the configuration and the state")
	for _, f := range slices.Clone(c.Files) {
		if removed, err := r.remove(f); err != nil {
			return err
		} else if removed {
			r.say("  removed %s", f)
		}
		c.Files = removeValue(c.Files, f)
		if err := r.persist(); err != nil {
			return err
		}
	}
	if !slices.Contains(c.Dirs, p.stateDir) {
		r.say("  kept %s: install did not create it", p.stateDir)
	}
	// Deepest first.
	dirs := slices.Clone(c.Dirs)
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range dirs {
		if removed, err := r.removeAll(d); err != nil {
			return err
		} else if removed && d == p.stateDir {
			r.say("  removed %s: the keys, policies and journal", d)
			// Root's copy of the keys and policies goes with them, and the
			// root helper's journal.
			for _, x := range []struct{ dir, what string }{
				{authority.DirFor(d), "root's copy of the keys and policies"},
				{host.HelperDir(d), "the root helper's journal and the break-glass requests and signing key"},
			} {
				if gone, err := r.removeAll(x.dir); err != nil {
					return err
				} else if gone {
					r.say("  removed %s: %s", x.dir, x.what)
				}
			}
		} else if removed && d == host.BreakglassDir(p.stateDir) {
			r.say("  removed %s: the break-glass requests, their results and the signing key", d)
		} else if removed && d == host.HelperDir(p.stateDir) {
			r.say("  removed %s: the root helper's journal", d)
		} else if removed {
			r.say("  removed %s", d)
		}
		c.Dirs = removeValue(c.Dirs, d)
		if err := r.persist(); err != nil {
			return err
		}
	}
	if c.User != "" {
		if _, ok, _ := s.lookup("/etc/passwd", c.User); ok {
			if _, err := s.run(ctx, Cmd{Name: "userdel", Args: []string{c.User}}); err != nil {
				return fmt.Errorf("%w: re-run `proxmox-mcp uninstall --purge` once it is fixed", err)
			}
			r.say("  removed the system user %s", c.User)
		}
		c.User = ""
		if err := r.persist(); err != nil {
			return err
		}
	}
	if c.Group != "" {
		if _, ok, _ := s.lookup("/etc/group", c.Group); ok {
			if _, err := s.run(ctx, Cmd{Name: "groupdel", Args: []string{c.Group}}); err != nil {
				return fmt.Errorf("%w: re-run `proxmox-mcp uninstall --purge` once it is fixed", err)
			}
			r.say("  removed the group %s", c.Group)
		}
		c.Group = ""
	}
	if p.legacy {
		if err := s.removeLegacyState(p.stateDir); err != nil {
			return err
		}
	}
	if _, err := r.removeAll(InstallStateDir); err != nil {
		return err
	}
	if s.exists(p.configFile) {
		r.say("  kept %s: it was there before install", p.configFile)
	}
	r.say("proxmox-mcp is removed from this host.")
	return nil
}

// debPackage is the Debian package of proxmox-mcp.
const debPackage = "proxmox-mcp"

// dpkgOwns reports whether the Debian package lists p among its files
// (`dpkg-query -S`), so that uninstall leaves it to the package. Without
// dpkg, or for a path no package owns, it is false.
func (s *System) dpkgOwns(ctx context.Context, p string) bool {
	out, err := s.run(ctx, Cmd{Name: "dpkg-query", Args: []string{"-S", p}})
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		pkgs, path, ok := strings.Cut(line, ": ")
		if !ok || path != p {
			continue
		}
		for pkg := range strings.SplitSeq(pkgs, ", ") {
			if pkg == debPackage || strings.HasPrefix(pkg, debPackage+":") {
				return true
			}
		}
	}
	return false
}
