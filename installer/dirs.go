package installer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dirSpec is a directory install owns, with its owner and mode.
type dirSpec struct {
	path  string
	mode  fs.FileMode
	owner Owner
	why   string
}

// dirs are the directories install makes: the configuration readable by
// the daemon's group and writable by root only; the state directory the
// daemon's own.
func (r *run) dirs() []dirSpec {
	return []dirSpec{
		{ConfigDir, 0o750, confOwner, "the configuration; root writes it, the daemon's group reads it"},
		{TokensDir, 0o750, confOwner, "the PVE token secrets, each 0600 for the daemon"},
		{r.plan.stateDir, 0o750, svcOwner, "the daemon's keys, policies and journal"},
	}
}

func applyDirs(_ context.Context, r *run) error {
	for _, d := range r.dirs() {
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
	// keys.json is the daemon's, whoever last wrote it.
	for _, name := range []string{"keys.json", "keys.lock"} {
		path := filepath.Join(r.plan.stateDir, name)
		if !r.sys.exists(path) {
			continue
		}
		c, err := r.sys.ensureAttrs(path, 0o600, svcOwner)
		if err != nil {
			return err
		}
		r.report(c, path)
	}
	return nil
}

func checkDirs(_ context.Context, r *run) []Problem {
	var probs []Problem
	for _, d := range r.dirs() {
		probs = append(probs, r.sys.checkAttrs(d.path, true, d.mode, d.owner, "proxmox-mcp install")...)
	}
	// The install state: root's alone.
	if r.sys.exists(InstallStateFile) {
		probs = append(probs, r.sys.checkAttrs(InstallStateDir, true, 0o700, rootOwner, "proxmox-mcp install")...)
		probs = append(probs, r.sys.checkAttrs(InstallStateFile, false, 0o600, rootOwner, "proxmox-mcp install")...)
	}
	return probs
}

// binaryPath is the proxmox-mcp the units run: the Debian package's when
// that is what runs install, else the copy install keeps in
// /usr/local/bin; for uninstall and doctor, what install.json says.
func (r *run) binaryPath() string {
	switch {
	case r.binary != "":
		return r.binary
	case r.opts.Executable != "" && r.opts.Executable == r.sys.path(PackagedBinary):
		return PackagedBinary
	case r.opts.Executable != "":
		return LocalBinary
	case r.state != nil && r.state.Binary != "":
		return r.state.Binary
	case r.plan != nil && r.plan.state != nil && r.plan.state.Binary != "":
		return r.plan.state.Binary
	}
	return PackagedBinary
}

// applyBinary puts the running binary where the units run it: nothing to
// do for the Debian package's /usr/bin/proxmox-mcp; any other binary is
// copied to /usr/local/bin/proxmox-mcp (0755 root), replacing an older
// copy, which is how running a newer binary's install upgrades.
func applyBinary(_ context.Context, r *run) error {
	if r.opts.Executable == "" {
		return errors.New("installer: the running binary (Options.Executable) is unknown")
	}
	target := r.binaryPath()
	r.binary = target
	if r.opts.Executable == r.sys.path(target) {
		r.say("  %s runs the daemon", target)
	} else {
		data, err := os.ReadFile(r.opts.Executable)
		if err != nil {
			return fmt.Errorf("read the running binary: %w", err)
		}
		c, err := r.sys.writeFile(target, data, 0o755, rootOwner)
		if err != nil {
			return err
		}
		if c == unchanged {
			r.say("  %s is this binary already", target)
		}
		r.report(c, fmt.Sprintf("%s (root:root 0755) from %s", target, r.opts.Executable))
		if c == created {
			if err := r.created(func(cr *Created) { cr.Binary = target }); err != nil {
				return err
			}
		}
	}
	// A copy an earlier install made, now replaced by the package's.
	if old := r.state.Created.Binary; old != "" && old != target {
		if _, err := r.remove(old); err != nil {
			return err
		}
		r.say("  removed %s, the copy an earlier install made: the units now run %s", old, target)
		if err := r.created(func(cr *Created) { cr.Binary = "" }); err != nil {
			return err
		}
	}
	r.state.Binary = target
	return nil
}

func checkBinary(_ context.Context, r *run) []Problem {
	b := r.binaryPath()
	st, err := r.sys.stat(b)
	if err != nil || !st.exists {
		return []Problem{{What: b + " (the binary the units run) is missing", Fix: "re-run install with the proxmox-mcp binary you want (./proxmox-mcp install), or reinstall the package"}}
	}
	if st.mode&0o111 == 0 || st.mode&0o022 != 0 {
		return []Problem{{What: fmt.Sprintf("%s has mode %04o: it must be executable and writable by root alone", b, st.mode), Fix: "chmod 0755 " + b}}
	}
	return r.sys.checkAttrs(b, false, st.mode, rootOwner, "chown root:root "+b)
}
