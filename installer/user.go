package installer

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// svcOwner owns what the daemon writes; confOwner what it only reads.
var (
	svcOwner  = Owner{ServiceUser, ServiceUser}
	confOwner = Owner{"root", ServiceUser}
)

// sysusersPath is the sysusers.d entry of the service user.
var sysusersPath = filepath.Join(systemd.SysusersDir, systemd.SysusersFile)

// unitOptions are the options the plan's units are rendered with.
func (r *run) unitOptions() systemd.UnitOptions {
	o := systemd.UnitOptions{
		Mode: string(r.plan.mode), Binary: r.binaryPath(), ConfigFile: r.plan.configFile,
		StateDir: r.plan.stateDir, PKIDir: r.plan.pkiDir, User: ServiceUser, Group: ServiceUser,
		Cluster: r.plan.existing != nil && r.plan.existing.Cluster.Enabled,
	}
	// The helper's socket and write roots are the configuration's, and so
	// is the protected repository the break-glass runner alone may write:
	// its paths, and the volumes that are LVs (vg/lv; an entry with ':'
	// is a PVE volume id, which the runner does not remove with lvremove).
	if cfg := r.plan.existing; cfg != nil {
		o.HelperSocket = cfg.Host.HelperSocket()
		for _, root := range cfg.Host.HostRoots() {
			if root.Write {
				o.HostWriteRoots = append(o.HostWriteRoots, root.Path)
			}
		}
		o.ProtectedPaths = append(o.ProtectedPaths, cfg.Protected.Paths...)
		for _, v := range cfg.Protected.Volumes {
			if !strings.Contains(v, ":") {
				o.ProtectedVolumes = append(o.ProtectedVolumes, v)
			}
		}
	}
	return o
}

// rendered renders the units of the plan's mode.
func (r *run) rendered() ([]systemd.Unit, error) { return systemd.Render(r.unitOptions()) }

// sysusersEntry is the rendered sysusers.d file.
func (r *run) sysusersEntry() ([]byte, error) {
	units, err := r.rendered()
	if err != nil {
		return nil, err
	}
	for _, u := range units {
		if u.Name == systemd.SysusersFile {
			return u.Data, nil
		}
	}
	return nil, fmt.Errorf("units: no %s rendered", systemd.SysusersFile)
}

// applyUser creates the system user and group with systemd-sysusers from
// the same sysusers.d entry the Debian package ships: one declaration, so
// both ways of installing make the same user (a system uid, no login
// shell, a locked password, the state directory as home), and running it
// again changes nothing.
func applyUser(ctx context.Context, r *run) error {
	s := r.sys
	entry, err := r.sysusersEntry()
	if err != nil {
		return err
	}
	c, err := s.writeFile(sysusersPath, entry, 0o644, rootOwner)
	if err != nil {
		return err
	}
	r.report(c, sysusersPath)
	if c == created {
		if err := r.created(func(cr *Created) { cr.Units = addUnique(cr.Units, sysusersPath) }); err != nil {
			return err
		}
	}
	_, hadUser, err := s.lookup("/etc/passwd", ServiceUser)
	if err != nil {
		return err
	}
	_, hadGroup, err := s.lookup("/etc/group", ServiceUser)
	if err != nil {
		return err
	}
	if !hadUser || !hadGroup {
		if _, err := s.run(ctx, Cmd{Name: "systemd-sysusers", Args: []string{sysusersPath}}); err != nil {
			return fmt.Errorf("create the system user %s: %w", ServiceUser, err)
		}
	}
	u, okU, err := s.lookup("/etc/passwd", ServiceUser)
	if err != nil {
		return err
	}
	g, okG, err := s.lookup("/etc/group", ServiceUser)
	if err != nil {
		return err
	}
	if !okU || !okG {
		return fmt.Errorf("systemd-sysusers ran but there is still no user or group %s in /etc/passwd and /etc/group: check %s", ServiceUser, sysusersPath)
	}
	if u.gid != g.id {
		return fmt.Errorf("the user %s exists with primary group %d, not the group %s (%d): fix it with usermod -g %s %s, then re-run",
			ServiceUser, u.gid, ServiceUser, g.id, ServiceUser, ServiceUser)
	}
	if err := r.created(func(cr *Created) {
		if !hadUser {
			cr.User = ServiceUser
		}
		if !hadGroup {
			cr.Group = ServiceUser
		}
	}); err != nil {
		return err
	}
	switch {
	case !hadUser:
		r.say("  created the system user %s (uid %d, group %d)", ServiceUser, u.id, g.id)
	default:
		r.say("  the system user %s exists (uid %d, group %d)", ServiceUser, u.id, g.id)
	}
	return nil
}

func checkUser(_ context.Context, r *run) []Problem {
	s := r.sys
	var probs []Problem
	const fix = "proxmox-mcp install (it runs systemd-sysusers " + "/usr/lib/sysusers.d/proxmox-mcp.conf)"
	if _, ok, _ := s.lookup("/etc/passwd", ServiceUser); !ok {
		probs = append(probs, Problem{What: "there is no user " + ServiceUser, Fix: fix})
	}
	if _, ok, _ := s.lookup("/etc/group", ServiceUser); !ok {
		probs = append(probs, Problem{What: "there is no group " + ServiceUser, Fix: fix})
	}
	want, err := r.sysusersEntry()
	if err != nil {
		return append(probs, Problem{What: err.Error(), Fix: "report a bug"})
	}
	have, err := s.readFile(sysusersPath)
	if err != nil {
		return append(probs, Problem{What: sysusersPath + " is missing", Fix: "proxmox-mcp install"})
	}
	if !bytes.Equal(have, want) {
		probs = append(probs, Problem{What: sysusersPath + " differs from what this binary renders", Fix: "proxmox-mcp install"})
	}
	return append(probs, s.checkAttrs(sysusersPath, false, 0o644, rootOwner, "proxmox-mcp install")...)
}

// serviceIDs looks up the service user's uid and group id.
func (r *run) serviceIDs() (uid, gid int, err error) {
	return r.sys.ids(svcOwner)
}
