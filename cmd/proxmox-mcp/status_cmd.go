package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/daemon"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

func statusCommands() map[string]command {
	return map[string]command{
		"status": {"what the running daemon says of itself: state, listeners, schema, keys, cluster, pending writes, last problems", (*cli).status},
	}
}

// errNotRunning is exit status 3, as systemctl status says of a unit
// that is not active.
type errNotRunning struct{ err error }

func (e errNotRunning) Error() string { return e.err.Error() }
func (e errNotRunning) Unwrap() error { return e.err }

// statusReport is the status command's JSON.
type statusReport struct {
	Running bool            `json:"running"`
	Error   string          `json:"error,omitempty"`
	Daemon  *daemon.Status  `json:"daemon,omitempty"`
	Last    []journal.Event `json:"last_problems"`
	LastErr string          `json:"last_problems_error,omitempty"`
}

func (c *cli) status(args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "configuration file (default "+config.DefaultFile+")")
	stateDir := fs.String("state-dir", "", "state directory (overrides the configuration's)")
	n := fs.Int("n", 5, "how many of the last errors and denials to show (0: none)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args, 0, "proxmox-mcp status [--config FILE] [--state-dir DIR] [-n N] [--json]"); err != nil {
		return err
	}
	if *n < 0 || *n > 1000 {
		return usagef("-n %d: want 0 to 1000", *n)
	}
	cfg, err := config.Resolve(*cfgPath, *stateDir)
	if err != nil {
		return err
	}
	var rep statusReport
	addr := cfg.MetricsAddress()
	if addr == "" {
		rep.Error = "metrics.disabled is set: the daemon has no listener to ask"
	} else if st, err := daemon.FetchStatus(c.ctx, addr); err != nil {
		rep.Error = err.Error()
	} else {
		rep.Running, rep.Daemon = true, &st
	}
	// The journal, read-only, as its owner: root trusts nothing the
	// daemon's user can write.
	if *n > 0 {
		rep.Last, err = lastProblems(c.ctx, cfg, *n)
		if err != nil {
			rep.LastErr = err.Error()
		}
	}
	if *asJSON {
		if err := writeJSON(c, rep); err != nil {
			return err
		}
	} else {
		c.printStatus(rep)
	}
	if !rep.Running {
		return errNotRunning{errors.New(rep.Error)}
	}
	return nil
}

func lastProblems(ctx context.Context, cfg *config.Config, n int) ([]journal.Event, error) {
	if err := asStateOwner(cfg); err != nil {
		return nil, err
	}
	j, err := journal.Open(ctx, cfg.JournalPath(), journal.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer j.Close()
	return j.LastProblems(ctx, n)
}

func (c *cli) printStatus(rep statusReport) {
	w := c.stdout
	if !rep.Running {
		fmt.Fprintf(w, "proxmox-mcp: not running (%s)\n", rep.Error)
	} else {
		st := rep.Daemon
		fmt.Fprintf(w, "proxmox-mcp %s: %s (pid %d, since %s)\n  %s\n", st.Version, st.State, st.PID, st.Started.UTC().Format("2006-01-02 15:04:05Z"), st.Line)
		fmt.Fprintln(w, "listeners:")
		for _, l := range st.Listeners {
			fmt.Fprintf(w, "  %-10s %-22s %s\n", l.Name, l.Address, l.URL)
		}
		health := "healthy"
		if !st.SchemaHealthy {
			health = "NOT healthy"
			if st.Schema.LastError != "" {
				health += ": " + oneLine(st.Schema.LastError)
			}
		}
		fmt.Fprintf(w, "schema:    %s (%s), %d endpoints, sha256 %.12s, %s\n", st.Schema.Source, st.Schema.Origin, st.Schema.Methods, st.Schema.SHA256, health)
		states := make([]string, 0, len(st.Keys.ByState))
		for s, k := range st.Keys.ByState {
			states = append(states, fmt.Sprintf("%d %s", k, s))
		}
		sort.Strings(states)
		fmt.Fprintf(w, "keys:      %d (%s); custom policies %d; sessions open %d\n", st.Keys.Total, orNone(strings.Join(states, ", ")), st.Policies, st.Sessions)
		if st.Cluster.Enabled {
			fmt.Fprintf(w, "cluster:   %s\n", st.Cluster.Check)
		} else {
			fmt.Fprintln(w, "cluster:   off (single node)")
		}
		if st.PendingError != "" {
			fmt.Fprintf(w, "pending:   cannot tell: %s\n", oneLine(st.PendingError))
		} else {
			fmt.Fprintf(w, "pending:   %d open intents, %d unknown outcomes, %d running jobs\n", st.Pending.OpenIntents, st.Pending.Unknown, st.Pending.RunningJobs)
		}
		k := st.Counts
		fmt.Fprintf(w, "calls:     %d tool calls (%d denied, %d errors); %d HTTP refusals (%d key failures, %d rate limited)\n",
			k.Calls, k.Denied, k.Errors, k.Refusals, k.KeyFailures, k.RateLimited)
		for _, l := range st.Listeners {
			if l.Name == "metrics" {
				fmt.Fprintf(w, "page:      http://%s/status\n", l.Address)
			}
		}
		if st.LastError != "" {
			fmt.Fprintf(w, "last error: %s\n", st.LastError)
		}
	}
	switch {
	case rep.LastErr != "":
		fmt.Fprintf(w, "last problems: cannot read the journal: %s\n", oneLine(rep.LastErr))
	case len(rep.Last) == 0:
		fmt.Fprintln(w, "last problems: none")
	default:
		fmt.Fprintln(w, "last problems (errors, denials, refused arguments, failed tasks, unknown outcomes):")
		for _, ev := range rep.Last {
			fmt.Fprintf(w, "  #%d %s %s %s %s %s %s: %s\n", ev.ID, ev.Time.UTC().Format("2006-01-02 15:04:05Z"), quoted(ev.Principal.KeyName),
				ev.Tool, orNone(ev.Method), orNone(ev.Path), ev.Outcome, firstLineOf(ev.Error))
		}
	}
}
