package installer

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

// configProblems reads the configuration as the daemon will (config.Parse)
// and checks every file it names as the daemon's user would open it
// (config.CheckFiles, with permissions worked out for that user).
func (r *run) configProblems() []Problem {
	file := r.plan.configFile
	data, err := r.sys.readFile(file)
	if err != nil {
		return []Problem{{What: fmt.Sprintf("%s cannot be read: %v", file, err), Fix: "proxmox-mcp install"}}
	}
	cfg, err := config.Parse(file, bytes.Clone(data))
	if err != nil {
		return []Problem{{What: err.Error(), Fix: "fix the field it names, then re-run install (proxmox-mcp config validate " + file + ")"}}
	}
	uid, gid, err := r.serviceIDs()
	if err != nil {
		return []Problem{{What: err.Error(), Fix: "proxmox-mcp install"}}
	}
	var probs []Problem
	if err := r.sys.readableBy(file, uid, gid); err != nil {
		probs = append(probs, Problem{What: "the daemon cannot read its configuration: " + err.Error(), Fix: "chown root:" + ServiceUser + " " + file + " && chmod 0640 " + file})
	}
	errs := cfg.CheckFiles(
		func(p string) bool { return r.sys.exists(p) },
		func(p string) error { return r.sys.readableBy(p, uid, gid) },
	)
	for _, e := range errs {
		probs = append(probs, Problem{
			What: fmt.Sprintf("as %s, the daemon cannot use what %s names: %v", ServiceUser, file, e),
			Fix:  fileFix(cfg, e),
		})
	}
	return probs
}

// fileFix is the fix of a file the configuration names that the daemon
// cannot use. Install puts back the files it manages; PVE's API schema is
// not one of them (install refuses to run without it), so its fix is the
// package that ships it.
func fileFix(cfg *config.Config, err error) string {
	var fe *config.FileError
	if errors.As(err, &fe) && fe.Field == "schema.path" {
		if cfg.SchemaPath() == APIDoc {
			return "apt install --reinstall pve-docs (it ships " + APIDoc + ", PVE's API schema)"
		}
		return "put PVE's API schema back at " + cfg.SchemaPath() + ", or point schema.path at it"
	}
	return "proxmox-mcp install (puts the files it manages back), or fix the field"
}

func applyValidate(_ context.Context, r *run) error {
	probs := r.configProblems()
	for _, p := range probs {
		r.say("  problem: %s\n    fix: %s", p.What, p.Fix)
	}
	if len(probs) > 0 {
		return fmt.Errorf("the configuration would not start the daemon, so nothing is started: %w", problemsError(probs))
	}
	r.say("  %s is valid and every file it names is readable by %s", r.plan.configFile, ServiceUser)
	return nil
}

func checkValidate(_ context.Context, r *run) []Problem { return r.configProblems() }
