package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
)

func breakglassCommands() map[string]command {
	return map[string]command{
		"breakglass list":       {"list the break-glass requests, the newest first, with their state (as root)", (*cli).breakglassList},
		"breakglass show":       {"show one break-glass request: its preview, digest, confirmations and result (as root)", (*cli).breakglassShow},
		"breakglass approve":    {"approve a break-glass request as root at the host, the second confirmation (as root)", (*cli).breakglassApprove},
		"breakglass deny":       {"deny a break-glass request that has not run (as root)", (*cli).breakglassDeny},
		"breakglass rotate-key": {"replace the break-glass signing key: requests signed and not yet run are refused by the runner (as root)", (*cli).breakglassRotateKey},
		"breakglass run":        {"run every signed break-glass request in the queue once (as root; proxmox-mcp-breakglass.path starts it)", (*cli).breakglassRun},
	}
}

// openBreakglass is this host's break-glass service, as root.
func (c *cli) openBreakglass(st stateFlags) (*config.Config, *breakglass.Service, error) {
	if os.Geteuid() != 0 {
		return nil, nil, errors.New("break-glass is root's: run this as root on the host")
	}
	cfg, err := st.resolve()
	if err != nil {
		return nil, nil, err
	}
	svc, err := host.OpenBreakglass(cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	if svc == nil {
		return nil, nil, errors.New("nothing is protected in the configuration (protected.paths, protected.volumes), so there is no break-glass")
	}
	return cfg, svc, nil
}

// hostPrincipal is root at this host's command line: the login behind
// sudo or su when there is one, for the record.
func hostPrincipal() breakglass.Principal {
	name := "root"
	for _, v := range []string{"SUDO_USER", "LOGNAME", "USER"} {
		if u := os.Getenv(v); u != "" && u != "root" {
			name = "root (login " + u + ")"
			break
		}
	}
	return breakglass.Principal{Name: name, Host: true}
}

func (c *cli) breakglassList(args []string) error {
	fset := flag.NewFlagSet("breakglass list", flag.ContinueOnError)
	st := addStateFlags(fset)
	asJSON := fset.Bool("json", false, "print a JSON array")
	if _, err := parse(fset, args, 0, "proxmox-mcp breakglass list [--config FILE] [--state-dir DIR] [--json]"); err != nil {
		return err
	}
	_, svc, err := c.openBreakglass(st)
	if err != nil {
		return err
	}
	defer svc.Close()
	recs, err := svc.List()
	if err != nil {
		return err
	}
	now := svc.Now()
	if *asJSON {
		out := []any{}
		for _, r := range recs {
			out = append(out, host.AnswerOf(r, now, false))
		}
		return writeJSON(c, out)
	}
	if len(recs) == 0 {
		fmt.Fprintln(c.stdout, "no break-glass requests")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tREQUESTER\tOPERATION\tCREATED\tEXPIRES")
	for _, r := range recs {
		p := r.Preview
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%s\n", p.ID, r.State(now), p.Requester.Name, p.Operation.Kind, opTarget(p.Operation),
			p.Created.Local().Format(time.DateTime), p.Expires.Local().Format(time.TimeOnly))
	}
	return tw.Flush()
}

func opTarget(op breakglass.Operation) string {
	switch {
	case op.Volume != "":
		return op.Volume
	case op.To != "":
		return op.Path + " -> " + op.To
	}
	return op.Path
}

func (c *cli) breakglassShow(args []string) error {
	fset := flag.NewFlagSet("breakglass show", flag.ContinueOnError)
	st := addStateFlags(fset)
	asJSON := fset.Bool("json", false, "print one JSON object")
	pos, err := parse(fset, args, 1, "proxmox-mcp breakglass show ID [--config FILE] [--state-dir DIR] [--json]")
	if err != nil {
		return err
	}
	_, svc, err := c.openBreakglass(st)
	if err != nil {
		return err
	}
	defer svc.Close()
	rec, err := svc.Get(pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, host.AnswerOf(rec, svc.Now(), false))
	}
	c.printRecord(rec, svc.Now())
	return nil
}

// printRecord writes a request as a person reads it before approving.
func (c *cli) printRecord(rec breakglass.Record, now time.Time) {
	p := rec.Preview
	w := c.stdout
	fmt.Fprintf(w, "request    %s\nstate      %s\nrequester  %s\ncreated    %s\nexpires    %s (in %s)\ndigest     %s\n",
		p.ID, rec.State(now), p.Requester, p.Created.Local().Format(time.RFC3339), p.Expires.Local().Format(time.RFC3339),
		max(p.Expires.Sub(now), 0).Round(time.Second), rec.Digest)
	fmt.Fprintf(w, "operation  %s %s\n", p.Operation.Kind, opTarget(p.Operation))
	for _, ch := range p.Changes {
		fmt.Fprintf(w, "change     %s\n", ch)
	}
	for _, t := range p.Targets {
		id := fmt.Sprintf("device %d inode %d", t.Dev, t.Ino)
		if t.LVUUID != "" {
			id = "uuid " + t.LVUUID
		}
		if !t.Exists {
			id = "absent"
		}
		fmt.Fprintf(w, "target     %s %s%s (%s)\n", t.Role, t.Path, t.Volume, id)
	}
	if !rec.Confirmed.IsZero() {
		fmt.Fprintf(w, "confirmed  by the requester at %s\n", rec.Confirmed.Local().Format(time.RFC3339))
	}
	if rec.Approver != nil {
		fmt.Fprintf(w, "approved   by %s at %s\n", rec.Approver, rec.Approved.Local().Format(time.RFC3339))
	}
	if rec.Denied != nil {
		fmt.Fprintf(w, "denied     by %s at %s: %s\n", rec.Denied.By, rec.Denied.At.Local().Format(time.RFC3339), rec.Denied.Reason)
	}
	if r := rec.Result; r != nil {
		fmt.Fprintf(w, "result     %s at %s", r.Outcome, r.Finished.Local().Format(time.RFC3339))
		if r.Message != "" {
			fmt.Fprintf(w, ": %s", r.Message)
		}
		fmt.Fprintln(w)
	}
}

func (c *cli) breakglassApprove(args []string) error {
	fset := flag.NewFlagSet("breakglass approve", flag.ContinueOnError)
	st := addStateFlags(fset)
	digest := fset.String("digest", "", "the digest of the preview you read (breakglass show ID prints it): you approve exactly that")
	asJSON := fset.Bool("json", false, "print one JSON object")
	pos, err := parse(fset, args, 1, "proxmox-mcp breakglass approve ID --digest DIGEST [--config FILE] [--state-dir DIR] [--json]")
	if err != nil {
		return err
	}
	cfg, svc, err := c.openBreakglass(st)
	if err != nil {
		return err
	}
	defer svc.Close()
	if *digest == "" {
		rec, err := svc.Get(pos[0])
		if err != nil {
			return err
		}
		c.printRecord(rec, svc.Now())
		return fmt.Errorf("--digest: read the request above, then approve exactly it: proxmox-mcp breakglass approve %s --digest %s", rec.Preview.ID, rec.Digest)
	}
	who := hostPrincipal()
	rec, err := svc.Approve(c.ctx, who, pos[0], *digest)
	c.journalHostStep(cfg, "breakglass approve", who, pos[0], *digest, err)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, host.AnswerOf(rec, svc.Now(), false))
	}
	fmt.Fprintf(c.stdout, "approved %s (%s %s): signed and queued; the runner executes it once (proxmox-mcp breakglass show %s)\n",
		rec.Preview.ID, rec.Preview.Operation.Kind, opTarget(rec.Preview.Operation), rec.Preview.ID)
	return nil
}

func (c *cli) breakglassDeny(args []string) error {
	fset := flag.NewFlagSet("breakglass deny", flag.ContinueOnError)
	st := addStateFlags(fset)
	reason := fset.String("reason", "", "why, for the requester and the journal")
	pos, err := parse(fset, args, 1, "proxmox-mcp breakglass deny ID [--reason TEXT] [--config FILE] [--state-dir DIR]")
	if err != nil {
		return err
	}
	cfg, svc, err := c.openBreakglass(st)
	if err != nil {
		return err
	}
	defer svc.Close()
	who := hostPrincipal()
	rec, err := svc.Deny(c.ctx, who, pos[0], *reason)
	c.journalHostStep(cfg, "breakglass deny", who, pos[0], rec.Digest, err)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "denied %s: nothing will be done\n", rec.Preview.ID)
	return nil
}

// journalHostStep records a step taken at the host's command line in the
// helper's journal, beside the steps keys took.
func (c *cli) journalHostStep(cfg *config.Config, tool string, who breakglass.Principal, id, digest string, stepErr error) {
	j, err := journal.Open(c.ctx, host.HelperJournal(cfg.StateDir), journal.Options{Logger: c.logger(cfg.Log.Level)})
	if err != nil {
		fmt.Fprintf(c.stderr, "warning: the helper's journal: %s\n", oneLine(err.Error()))
		return
	}
	defer j.Close()
	res := journal.Result{Outcome: journal.OutcomeOK, JobID: id, Detail: &journal.Detail{Digest: digest}}
	if stepErr != nil {
		res = journal.Result{Outcome: journal.OutcomeDenied, Error: stepErr.Error()}
	}
	call := journal.Call{Principal: journal.Principal{KeyID: "host", KeyName: who.Name, Transport: "host-cli"}, Tool: tool, Risk: "destructive",
		Args: map[string]any{"id": id, "digest": digest}, Decision: journal.Decision{Effect: "allow", Reasons: []string{"root at the host's command line"}}}
	if _, err := j.Record(c.ctx, call, res); err != nil {
		fmt.Fprintf(c.stderr, "warning: the helper's journal did not take the step: %s\n", oneLine(err.Error()))
	}
}

func (c *cli) breakglassRotateKey(args []string) error {
	fset := flag.NewFlagSet("breakglass rotate-key", flag.ContinueOnError)
	st := addStateFlags(fset)
	if _, err := parse(fset, args, 0, "proxmox-mcp breakglass rotate-key [--config FILE] [--state-dir DIR]"); err != nil {
		return err
	}
	_, svc, err := c.openBreakglass(st)
	if err != nil {
		return err
	}
	defer svc.Close()
	if err := pki.RotateSigningKey(filepath.Join(svc.Dir(), breakglass.KeyFile)); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "a new break-glass signing key is in %s; requests signed with the old one and not yet run will be refused\n", filepath.Join(svc.Dir(), breakglass.KeyFile))
	return nil
}

// breakglassRun is the runner: every file of the queue once, each
// journaled in the helper's journal.
func (c *cli) breakglassRun(args []string) error {
	fset := flag.NewFlagSet("breakglass run", flag.ContinueOnError)
	st := addStateFlags(fset)
	if _, err := parse(fset, args, 0, "proxmox-mcp breakglass run [--config FILE] [--state-dir DIR]"); err != nil {
		return err
	}
	cfg, svc, err := c.openBreakglass(st)
	if err != nil {
		return err
	}
	defer svc.Close()
	log := c.logger(cfg.Log.Level)
	j, err := journal.Open(c.ctx, host.HelperJournal(cfg.StateDir), journal.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("the runner journals every request it takes, and the helper's journal did not open: %w", err)
	}
	defer j.Close()
	failed := 0
	err = host.RunBreakglass(c.ctx, svc, j, log, func(ev breakglass.RunEvent) {
		fmt.Fprintf(c.stdout, "%s %s %s\n", ev.Result.ID, ev.Result.Outcome, strings.Join(append(ev.Result.Changes, ev.Result.Message), "; "))
		if ev.Result.Outcome != breakglass.OutcomeDone {
			failed++
		}
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		// The unit stays successful: a refused request is the runner
		// doing its job, and each is journaled with its reason.
		log.Warn("breakglass: requests not done", "count", failed)
	}
	return nil
}
