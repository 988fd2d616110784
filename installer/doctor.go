package installer

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// Report is what doctor found.
type Report struct {
	// OK is true when no check found a problem.
	OK bool `json:"ok"`
	// Mode is the installed exposure mode ("" when nothing is installed).
	Mode Mode `json:"mode,omitempty"`
	// Checks are the steps of install, each with its problems.
	Checks []CheckResult `json:"checks"`
}

// CheckResult is one step's check.
type CheckResult struct {
	Step     string    `json:"step"`
	About    string    `json:"about"`
	Problems []Problem `json:"problems"`
}

// Doctor runs the Check of every step of install and reports each problem
// with its fix. It changes nothing.
func Doctor(ctx context.Context, s *System) (*Report, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	p, err := readInstalled(s, false)
	if err != nil {
		return nil, err
	}
	rep := &Report{Mode: p.mode, Checks: []CheckResult{}}
	if p.state == nil && p.existing == nil && !s.exists(p.configFile) {
		rep.Checks = append(rep.Checks, CheckResult{Step: "install", About: "an installation", Problems: []Problem{{
			What: "proxmox-mcp is not installed here (no " + p.configFile + ", no " + InstallStateFile + ")",
			Fix:  "proxmox-mcp install",
		}}})
		return rep, nil
	}
	if p.mode == "" {
		p.mode = ModeLocal
	}
	r := &run{sys: s, plan: p, state: p.state, out: io.Discard}
	var stateProbs []Problem
	if p.legacy {
		stateProbs = append(stateProbs, Problem{
			What: "the install state is still in " + legacyStatePath(p.stateDir) + ", a directory the daemon's user can write",
			Fix:  "proxmox-mcp install (moves it to " + InstallStateFile + ", taking from it only what install could have made)",
		})
	}
	if len(p.ignored) > 0 {
		stateProbs = append(stateProbs, Problem{
			What: "the install state (" + p.stateFile() + ") names what install never makes, which is ignored: " + strings.Join(p.ignored, ", "),
			Fix:  "find out who wrote it; proxmox-mcp install writes it again without them",
		})
	}
	if len(stateProbs) > 0 {
		rep.Checks = append(rep.Checks, CheckResult{Step: "install", About: "the install state", Problems: stateProbs})
	}
	if p.state == nil {
		rep.Checks = append(rep.Checks, CheckResult{Step: "install", About: "the install state", Problems: []Problem{{
			What: "there is no install state (" + InstallStateFile + "): this host was set up by hand, or by an older version",
			Fix:  "proxmox-mcp install --mode " + string(p.mode) + " (takes the installation over, keeping the configuration)",
		}}})
	} else if f := p.state.Failed; f != nil {
		rep.Checks = append(rep.Checks, CheckResult{Step: "install", About: "the last install run", Problems: []Problem{{
			What: fmt.Sprintf("the last install failed at step %s: %s", f.Step, f.Error),
			Fix:  "fix the cause, then re-run proxmox-mcp install to resume",
		}}})
	} else if !p.state.Uninstalled.IsZero() {
		rep.Checks = append(rep.Checks, CheckResult{Step: "install", About: "the install state", Problems: []Problem{{
			What: "proxmox-mcp was uninstalled (its configuration and state were kept)",
			Fix:  "proxmox-mcp install (brings it back as it was)",
		}}})
		rep.OK = false
		return rep, nil
	}
	for _, st := range steps() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		probs := st.check(ctx, r)
		if st.name == "directories" {
			probs = append(probs, r.keyFileProblems()...)
		}
		rep.Checks = append(rep.Checks, CheckResult{Step: st.name, About: st.checks, Problems: nonNil(probs)})
	}
	rep.OK = true
	for _, c := range rep.Checks {
		if len(c.Problems) > 0 {
			rep.OK = false
		}
	}
	return rep, nil
}

func nonNil(p []Problem) []Problem {
	if p == nil {
		return []Problem{}
	}
	return p
}

// keyFileProblems checks that keys.json belongs to the daemon's user, as
// `proxmox-mcp key` keeps it: root writing it without giving it back
// would lock the daemon out.
func (r *run) keyFileProblems() []Problem {
	path := filepath.Join(r.plan.stateDir, keys.FileName)
	if !r.sys.exists(path) {
		return nil
	}
	return r.sys.checkAttrs(path, false, 0o600, svcOwner, "proxmox-mcp install")
}

// Problems counts the report's problems.
func (rep *Report) Problems() int {
	n := 0
	for _, c := range rep.Checks {
		n += len(c.Problems)
	}
	return n
}

// WriteText prints the report for a person: one line per check, each
// problem with its fix.
func (rep *Report) WriteText(w io.Writer) {
	for _, c := range rep.Checks {
		if len(c.Problems) == 0 {
			fmt.Fprintf(w, "ok       %-13s %s\n", c.Step, c.About)
			continue
		}
		fmt.Fprintf(w, "PROBLEM  %-13s %s\n", c.Step, c.About)
		for _, p := range c.Problems {
			fmt.Fprintf(w, "         - %s\n", p.What)
			fmt.Fprintf(w, "           fix: %s\n", p.Fix)
		}
	}
	if rep.OK {
		fmt.Fprintln(w, "\nno problems found")
		return
	}
	n := rep.Problems()
	fmt.Fprintf(w, "\n%d problem%s found\n", n, strings.Repeat("s", min(1, n-1)))
}
