package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/cluster"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

func clusterCommands() map[string]command {
	return map[string]command{
		"cluster enable":  {"move this node's keys and policies onto pmxcfs and turn cluster mode on (as root)", (*cli).clusterEnable},
		"cluster disable": {"turn cluster mode off: this node keeps a copy of the shared keys and policies (as root)", (*cli).clusterDisable},
		"cluster status":  {"show the shared generation and which nodes' syncs have applied it (as root)", (*cli).clusterStatus},
		"cluster sync":    {"mirror the shared keys and policies into the state directory, polling pmxcfs (as root; the unit runs it)", (*cli).clusterSync},
	}
}

// openCluster is this node's cluster mode as the configuration says.
func (c *cli) openCluster(cfg *config.Config) (*cluster.Node, error) {
	return cluster.Open(cluster.Options{Cluster: cfg.Cluster, StateDir: cfg.StateDir, Version: version, Logger: c.logger(cfg.Log.Level)})
}

// clusterShared is what the key and policy commands make their changes
// through in cluster mode: this node's cluster.Node as root; for anyone
// else a refusal, since only root writes pmxcfs's priv/ (a local write
// would be undone by the next mirror and reach no other node). Root's
// mirror is refreshed first, so that what the command reads is the
// cluster's current state. Outside cluster mode it is this node's
// authority (package authority): the root-owned copy the helper trusts.
func (c *cli) clusterShared(cfg *config.Config) (sharedStore, error) {
	if !cfg.Cluster.Enabled {
		return authority.New(cfg.StateDir, c.logger(cfg.Log.Level), nil), nil
	}
	if os.Geteuid() != 0 {
		return refuseShared{}, nil
	}
	n, err := c.openCluster(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := n.Refresh(c.ctx); err != nil {
		fmt.Fprintf(c.stderr, "warning: the shared keys and policies could not be read (%s); showing this node's last mirror\n", oneLine(err.Error()))
	}
	return n, nil
}

// sharedStore is keys.Shared and policy.Shared.
type sharedStore interface {
	Change(ctx context.Context, fn func(stateDir string) error) error
}

// refuseShared refuses every change: cluster mode without root.
type refuseShared struct{}

func (refuseShared) Change(context.Context, func(string) error) error {
	return fmt.Errorf("cluster mode: key and policy changes are made on pmxcfs (%s), which only root can write; run this as root", cluster.SharedDir)
}

// configFile is the configuration file cluster enable and disable edit.
func configFile(flagValue string) (string, error) {
	p := flagValue
	if p == "" {
		p = config.DefaultFile
	}
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("cluster mode is a setting of the configuration file, and there is none at %s (proxmox-mcp install writes one)", p)
		}
		return "", err
	}
	return filepath.Abs(p)
}

// setClusterEnabled edits cluster.enabled in the configuration file,
// keeping its comments, owner and mode.
func setClusterEnabled(path string, on bool) error {
	d, name, err := atomicfile.Resolve(path)
	if err != nil {
		return err
	}
	defer d.Close()
	f, fi, err := d.OpenEntry(name)
	if err != nil {
		return err
	}
	raw, err := readAllFile(f)
	f.Close()
	if err != nil {
		return err
	}
	out, err := config.SetClusterEnabled(raw, on)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	uid, gid := ownerOf(fi)
	return d.WriteFileFunc(name, out, fi.Mode().Perm(), func(nf *os.File) error { return nf.Chown(uid, gid) })
}

func (c *cli) clusterEnable(args []string) error {
	fset := flag.NewFlagSet("cluster enable", flag.ContinueOnError)
	st := addStateFlags(fset)
	asJSON := fset.Bool("json", false, "print one JSON object")
	if _, err := parse(fset, args, 0, "proxmox-mcp cluster enable [--config FILE] [--state-dir DIR] [--json]"); err != nil {
		return err
	}
	path, err := configFile(*st.config)
	if err != nil {
		return err
	}
	cfg, err := config.Resolve(path, *st.stateDir)
	if err != nil {
		return err
	}
	n, err := c.openCluster(cfg)
	if err != nil {
		return err
	}
	rep, err := n.Enable(c.ctx)
	if err != nil {
		return err
	}
	if !cfg.Cluster.Enabled {
		if err := setClusterEnabled(path, true); err != nil {
			return fmt.Errorf("the keys and policies are on pmxcfs, but cluster mode could not be set in the configuration: %w", err)
		}
	}
	// pmxcfs is root's copy now; a local one left behind would be stale
	// when cluster mode is turned off.
	if err := authority.New(cfg.StateDir, c.logger(cfg.Log.Level), nil).Remove(); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, rep)
	}
	fmt.Fprintf(c.stdout, "cluster mode is on: keys and policies are shared in %s (generation %d)\n", rep.Shared, rep.Generation)
	fmt.Fprintf(c.stdout, "  keys moved: %d, already there: %d; custom policies shared: %d\n", len(rep.Added), len(rep.Present), len(rep.Policies))
	fmt.Fprintf(c.stdout, "hint: run `proxmox-mcp install` again: in cluster mode it installs and starts %s, this node's sync\n", systemd.ClusterUnit)
	fmt.Fprintln(c.stdout, "hint: then restart the daemon so that /readyz reports the cluster: systemctl restart proxmox-mcp")
	fmt.Fprintln(c.stdout, "hint: and run `proxmox-mcp cluster enable` on every other node")
	return nil
}

func (c *cli) clusterDisable(args []string) error {
	fset := flag.NewFlagSet("cluster disable", flag.ContinueOnError)
	st := addStateFlags(fset)
	asJSON := fset.Bool("json", false, "print one JSON object")
	if _, err := parse(fset, args, 0, "proxmox-mcp cluster disable [--config FILE] [--state-dir DIR] [--json]"); err != nil {
		return err
	}
	path, err := configFile(*st.config)
	if err != nil {
		return err
	}
	cfg, err := config.Resolve(path, *st.stateDir)
	if err != nil {
		return err
	}
	if !cfg.Cluster.Enabled {
		return fmt.Errorf("cluster mode is not on in %s", path)
	}
	n, err := c.openCluster(cfg)
	if err != nil {
		return err
	}
	ls, err := n.Disable(c.ctx)
	if err != nil {
		return err
	}
	if err := setClusterEnabled(path, false); err != nil {
		return err
	}
	// Root's copy is local again: the one the sync, as root, wrote from
	// pmxcfs's last good state, with the state directory made its mirror
	// (undoing any edit there); a node whose sync never wrote one adopts
	// the state directory as a first change does.
	auth := authority.New(cfg.StateDir, c.logger(cfg.Log.Level), nil)
	exists, err := auth.Exists()
	if err != nil {
		return err
	}
	if exists {
		err = auth.Mirror(c.ctx)
	} else {
		err = auth.Change(c.ctx, func(string) error { return nil })
	}
	if err != nil {
		return fmt.Errorf("cluster mode is off, but this node's authority could not be made: %w", err)
	}
	if *asJSON {
		return writeJSON(c, ls)
	}
	fmt.Fprintf(c.stdout, "cluster mode is off: this node's keys and policies are its own again, a copy of generation %d (%d keys, %d custom policies)\n", ls.Generation, ls.Keys, ls.Policies)
	fmt.Fprintf(c.stdout, "hint: stop this node's sync: systemctl disable --now %s\n", systemd.ClusterUnit)
	return nil
}

func (c *cli) clusterStatus(args []string) error {
	fset := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	st := addStateFlags(fset)
	asJSON := fset.Bool("json", false, "print one JSON object")
	if _, err := parse(fset, args, 0, "proxmox-mcp cluster status [--config FILE] [--state-dir DIR] [--json]"); err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	n, err := c.openCluster(cfg)
	if err != nil {
		return err
	}
	cs, err := n.Status(c.ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, cs)
	}
	quorum := "quorate"
	if !cs.Quorate {
		quorum = "NO QUORUM: read-only, key and policy changes are refused"
	}
	mode := "on"
	if !cfg.Cluster.Enabled {
		mode = "off on this node"
	}
	fmt.Fprintf(c.stdout, "cluster %s, seen from %s (%s); cluster mode %s\n", cs.Cluster, cs.Node, quorum, mode)
	fmt.Fprintf(c.stdout, "shared: %s, generation %d (%d keys, %d custom policies)", cs.Shared, cs.Generation, cs.Keys, cs.Policies)
	if !cs.Changed.IsZero() {
		fmt.Fprintf(c.stdout, ", changed %s on %s", cs.Changed.Format(time.RFC3339), cs.ChangedBy)
	}
	fmt.Fprintln(c.stdout)
	for _, p := range cs.Problems {
		fmt.Fprintf(c.stdout, "problem: %s\n", p)
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tONLINE\tSYNC\tGENERATION\tAPPLIED\tHEARTBEAT")
	for _, ns := range cs.Nodes {
		online := "no"
		if ns.Online {
			online = "yes"
		}
		if ns.Report == nil {
			fmt.Fprintf(tw, "%s\t%s\tno report\t-\t-\t-\n", ns.Name, online)
			continue
		}
		sync := "current"
		switch {
		case ns.Stale:
			sync = "stale"
		case !ns.Current:
			sync = "behind"
		}
		if len(ns.Report.Problems) > 0 {
			sync += fmt.Sprintf(", %d problems", len(ns.Report.Problems))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", ns.Name, online, sync, ns.Report.Generation,
			timeOrDash(ns.Report.Applied), timeOrDash(ns.Report.Heartbeat))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cs.Local != nil {
		fmt.Fprintf(c.stdout, "this node's daemon serves generation %d (checked %s): %s\n", cs.Local.Generation, timeOrDash(cs.Local.Checked),
			cs.Local.Readiness(time.Now(), 3*cfg.Cluster.Rescan()+5*time.Second))
	}
	return nil
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func (c *cli) clusterSync(args []string) error {
	fset := flag.NewFlagSet("cluster sync", flag.ContinueOnError)
	st := addStateFlags(fset)
	once := fset.Bool("once", false, "refresh once and exit")
	asJSON := fset.Bool("json", false, "with --once: print the status as one JSON object")
	if _, err := parse(fset, args, 0, "proxmox-mcp cluster sync [--config FILE] [--state-dir DIR] [--once [--json]]"); err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	if !cfg.Cluster.Enabled {
		fmt.Fprintln(c.stderr, "proxmox-mcp cluster sync: cluster mode is off in the configuration; nothing to do")
		return nil
	}
	n, err := c.openCluster(cfg)
	if err != nil {
		return err
	}
	if *once {
		ls, err := n.Rescan(c.ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c, ls)
		}
		fmt.Fprintf(c.stdout, "generation %d mirrored into %s: %s\n", ls.Generation, cfg.StateDir, ls.Readiness(time.Now(), time.Minute))
		return nil
	}
	log := c.logger(cfg.Log.Level)
	notifier := systemd.NewNotifier(log)
	enabled := func() bool {
		now, err := config.Resolve(*st.config, *st.stateDir)
		if err != nil {
			log.Warn("cluster sync: the configuration cannot be read; going on", "err", err)
			return true
		}
		return now.Cluster.Enabled
	}
	ready := func(ls cluster.LocalStatus) {
		notifier.Ready(fmt.Sprintf("mirroring generation %d from %s every %s", ls.Generation, cfg.Cluster.Pmxcfs(), cfg.Cluster.Poll()))
		if *asJSON {
			writeJSON(c, ls) //nolint:errcheck // the ready line of tests; the sync goes on regardless
		}
	}
	err = n.Run(c.ctx, enabled, ready)
	notifier.Stopping("stopping")
	return err
}

// readAllFile reads an open configuration file, up to its size limit.
func readAllFile(f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return data, nil
}

func ownerOf(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return 0, 0
}
