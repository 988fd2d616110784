package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

func unitsCommands() map[string]command {
	return map[string]command{
		"units render": {"write the systemd unit files exactly as the installer would", (*cli).unitsRender},
	}
}

func (c *cli) unitsRender(args []string) error {
	fs := flag.NewFlagSet("units render", flag.ContinueOnError)
	mode := fs.String("mode", "local", "exposure mode: "+strings.Join(systemd.Modes, ", "))
	bin := fs.String("binary", systemd.DefaultBinary, "absolute path of the proxmox-mcp binary in ExecStart=")
	cfgFile := fs.String("config", config.DefaultFile, "configuration file the daemon reads")
	stateDir := fs.String("state-dir", config.DefaultStateDir, "the daemon's state directory")
	pkiDir := fs.String("pki-dir", config.DefaultPKIDir, "the LAN CA's directory")
	user := fs.String("user", systemd.DefaultUser, "system user (and group) the daemon runs as")
	clusterSync := fs.Bool("cluster", false, "add the cluster sync's unit (cluster mode, docs/cluster.md)")
	const synopsis = "proxmox-mcp units render DIR [--mode local|lan|tailscale|both] [--binary PATH] [--config FILE] [--state-dir DIR] [--pki-dir DIR] [--user NAME] [--cluster]"
	pos, err := parse(fs, args, 1, synopsis)
	if err != nil {
		return err
	}
	units, err := systemd.Render(systemd.UnitOptions{
		Mode: *mode, Binary: *bin, ConfigFile: *cfgFile, StateDir: *stateDir, PKIDir: *pkiDir, User: *user, Group: *user,
		Cluster: *clusterSync,
	})
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(pos[0])
	if err != nil {
		return fmt.Errorf("units render: %w", err)
	}
	// Often run as root into a scratch directory: each file is written
	// atomically relative to the directory's descriptor, replacing (never
	// writing through) a link someone else planted there.
	d, err := atomicfile.MkdirAll(dir, 0o755)
	if err != nil {
		return fmt.Errorf("units render: %w", err)
	}
	defer d.Close()
	for _, u := range units {
		if err := d.WriteFile(u.Name, u.Data, 0o644); err != nil {
			return fmt.Errorf("units render: %w", err)
		}
		fmt.Fprintf(c.stdout, "%s (installed in %s)\n", filepath.Join(pos[0], u.Name), u.Dir)
	}
	return nil
}
