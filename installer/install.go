package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// Problem is something wrong with an installation, and how to fix it.
type Problem struct {
	What string `json:"what"`
	Fix  string `json:"fix"`
}

// step is one named, idempotent part of an installation.
type step struct {
	name  string
	about string // what install does, as it does it
	// checks is what doctor checks of it.
	checks string
	// apply makes the step's part of the host right.
	apply func(ctx context.Context, r *run) error
	// check reports what is wrong with it, changing nothing.
	check func(ctx context.Context, r *run) []Problem
}

// steps are the steps of install, in order.
func steps() []step {
	return []step{
		{"preflight", "preflight: root, Proxmox VE 9, apidoc.js, free ports and disk",
			"root, Proxmox VE 9, apidoc.js, /etc/pve, free disk", applyPreflight, checkPreflight},
		{"user", "the system user and group " + ServiceUser,
			"the system user and group " + ServiceUser + " and their sysusers.d entry", applyUser, checkUser},
		{"directories", "directories, owners and modes",
			"the directories' owners and modes, keys.json's owner, the install state's", applyDirs, checkDirs},
		{"binary", "the proxmox-mcp binary", "the binary the units run", applyBinary, checkBinary},
		{"pve-trust", "trusting pveproxy's certificate",
			"the copy of PVE's CA, the pin of a custom pveproxy certificate", applyTrust, checkTrust},
		{"pve-identity", "the PVE user " + PVEUser + ", its role and one API token per tier",
			"the PVE user, role, tokens, their roles on / and their secret files", applyIdentity, checkIdentity},
		{"config", "the configuration " + ConfigFile,
			"the configuration: owner, mode, install's tokens, listeners matching the mode", applyConfig, checkConfigFile},
		{"exposure", "exposure: listeners, the LAN CA, the Tailnet auth key",
			"the LAN CA and certificate, the Tailnet auth key file", applyExposure, checkExposure},
		{"validate", "validating the configuration as the daemon will read it",
			"the configuration as the daemon reads it, and every file it names", applyValidate, checkValidate},
		{"units", "systemd units", "the unit files are this binary's, the renewal timer", applyUnits, checkUnits},
		{"service", "starting the service and waiting for READY=1",
			"proxmox-mcp.service enabled and active, the Tailnet login", applyService, checkService},
		{"initial-key", "the first root key", "the initial key file's owner and mode", applyInitialKey, checkInitialKey},
	}
}

// StepNames lists the steps of install, in order.
func StepNames() []string {
	var out []string
	for _, s := range steps() {
		out = append(out, s.name)
	}
	return out
}

// StepError is a step of install that failed. The steps before it are
// done; nothing after it ran.
type StepError struct {
	Step string
	Done []string
	Err  error
}

func (e *StepError) Error() string {
	done := "none"
	if len(e.Done) > 0 {
		done = strings.Join(e.Done, ", ")
	}
	return fmt.Sprintf("step %s failed: %v (steps done: %s; nothing after %s ran): fix the cause and re-run `proxmox-mcp install` to resume",
		e.Step, e.Err, done, e.Step)
}

func (e *StepError) Unwrap() error { return e.Err }

// run is one invocation of install, uninstall or doctor.
type run struct {
	sys   *System
	opts  Options
	plan  *plan
	state *State
	out   io.Writer
	// stateReady is set once the state directory exists and install.json
	// may be written.
	stateReady bool

	// Facts the steps find for the steps after them.
	binary         string // the proxmox-mcp the units run
	caFile         string // pve.ca_file
	fingerprint    string // pve.fingerprint ("" without a custom certificate)
	caFingerprint  string // the LAN CA's
	loginURL       string // the Tailnet login URL, when the node needs one
	initialCreated bool   // this run wrote the initial key file
}

// say tells the operator something.
func (r *run) say(format string, args ...any) {
	fmt.Fprintf(r.out, format+"\n", args...)
}

// report tells what a write did, when it did something.
func (r *run) report(c change, what string) {
	if c != unchanged {
		r.say("  %s %s", c, what)
	}
}

// Install installs proxmox-mcp, or upgrades or resumes an installation.
// On failure the error is a *StepError naming the step, and install.json
// records it.
func Install(ctx context.Context, s *System, o Options) error {
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
	p, err := newPlan(s, o)
	if err != nil {
		return err
	}
	r := &run{sys: s, opts: o, plan: p, out: o.Out}
	r.sayIgnored()
	verb := "installing"
	switch {
	case p.upgrade:
		verb = "upgrading"
	case p.state != nil:
		verb = "resuming the installation of"
	}
	mode := string(p.mode)
	if p.state != nil && p.state.Mode != "" && p.state.Mode != p.mode {
		mode += ", was " + string(p.state.Mode)
	}
	r.say("%s proxmox-mcp %s on %s (mode %s)", verb, versionOr(o.Version), p.hostname, mode)
	var done []string
	for _, st := range steps() {
		r.say("==> %s", st.about)
		if err := ctx.Err(); err != nil {
			return r.failed(st.name, done, err)
		}
		if err := st.apply(ctx, r); err != nil {
			return r.failed(st.name, done, err)
		}
		done = append(done, st.name)
		if st.name == "preflight" {
			if err := r.beginState(); err != nil {
				return r.failed(st.name, done, err)
			}
		}
		r.state.Steps = done
		if err := r.persist(); err != nil {
			return r.failed(st.name, done, err)
		}
	}
	now := s.Now().UTC()
	r.state.Completed = now
	if r.state.FirstCompleted.IsZero() {
		r.state.FirstCompleted = now
	}
	if err := r.persist(); err != nil {
		return err
	}
	r.summary()
	return nil
}

// failed records a failed step and builds its error.
func (r *run) failed(name string, done []string, err error) error {
	se := &StepError{Step: name, Done: done, Err: err}
	if r.state != nil {
		r.state.Failed = &Failure{Step: name, Error: err.Error(), At: r.sys.Now().UTC()}
		if perr := r.persist(); perr != nil {
			se.Err = errors.Join(err, fmt.Errorf("and the failure could not be recorded: %w", perr))
		}
	}
	r.say("step %s failed (the error follows); the steps before it are done: fix the cause and re-run `proxmox-mcp install` to resume", name)
	return se
}

// beginState starts this run's record in the install state.
func (r *run) beginState() error {
	p := r.plan
	if p.state != nil {
		r.state = p.state
	} else {
		r.state = &State{Version: stateVersion}
	}
	r.state.Mode = p.mode
	r.state.ConfigFile = p.configFile
	r.state.InstalledBy = versionOr(r.opts.Version)
	r.state.Started = r.sys.Now().UTC()
	r.state.Completed = time.Time{}
	r.state.Failed = nil
	r.state.Uninstalled = time.Time{}
	r.state.Steps = nil
	r.stateReady = true
	return r.persist()
}

// persist writes the install state once preflight passed. The first
// write moves an install.json an older install left in the state
// directory to InstallStateFile.
func (r *run) persist() error {
	if !r.stateReady || r.state == nil {
		return nil
	}
	if err := r.sys.saveState(r.state); err != nil {
		return err
	}
	if r.plan.legacy {
		if err := r.sys.removeLegacyState(r.plan.stateDir); err != nil {
			return err
		}
		r.plan.legacy = false
		r.say("  moved the install state from %s to %s (root's alone: the daemon's user can write the state directory)",
			legacyStatePath(r.plan.stateDir), InstallStateFile)
	}
	return nil
}

// sayIgnored tells what the install state named that install could not
// have made, and was therefore dropped.
func (r *run) sayIgnored() {
	if len(r.plan.ignored) == 0 {
		return
	}
	r.say("warning: the install state (%s) names what install never makes, so it is ignored: %s",
		r.plan.stateFile(), strings.Join(r.plan.ignored, ", "))
}

// remove removes a path install owns (see plan.owns), refusing any other.
func (r *run) remove(p string) (bool, error) {
	if err := r.plan.owns(p); err != nil {
		return false, err
	}
	return r.sys.remove(p)
}

// removeAll removes a tree install owns, refusing any other.
func (r *run) removeAll(p string) (bool, error) {
	if err := r.plan.owns(p); err != nil {
		return false, err
	}
	return r.sys.removeAll(p)
}

// created records something install made, at once: a failure later must
// not lose it.
func (r *run) created(fn func(c *Created)) error {
	if r.state == nil {
		return nil
	}
	fn(&r.state.Created)
	return r.persist()
}

func versionOr(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

// lockPath serializes install and uninstall on a host.
const lockPath = "/run/proxmox-mcp-install.lock"

// lock takes the install lock, or says who holds it. The lock is an flock,
// so it goes with the process that held it, however that ended.
func (s *System) lock() (unlock func(), err error) {
	if err := os.MkdirAll(s.path("/run"), 0o755); err != nil {
		return nil, fmt.Errorf("install lock: %w", err)
	}
	f, err := os.OpenFile(s.path(lockPath), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("install lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another proxmox-mcp install or uninstall is running (it holds %s): wait for it to end", lockPath)
		}
		return nil, fmt.Errorf("install lock %s: %w", lockPath, err)
	}
	return func() { f.Close() }, nil
}
