package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	const synopsis = "proxmox-mcp units render DIR [--mode local|lan|tailscale|both] [--binary PATH] [--config FILE] [--state-dir DIR] [--pki-dir DIR] [--user NAME]"
	pos, err := parse(fs, args, 1, synopsis)
	if err != nil {
		return err
	}
	units, err := systemd.Render(systemd.UnitOptions{
		Mode: *mode, Binary: *bin, ConfigFile: *cfgFile, StateDir: *stateDir, PKIDir: *pkiDir, User: *user, Group: *user,
	})
	if err != nil {
		return err
	}
	dir := pos[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("units render: %w", err)
	}
	for _, u := range units {
		path := filepath.Join(dir, u.Name)
		if err := os.WriteFile(path, u.Data, 0o644); err != nil {
			return fmt.Errorf("units render: %w", err)
		}
		fmt.Fprintf(c.stdout, "%s (installed in %s)\n", path, u.Dir)
	}
	return nil
}
