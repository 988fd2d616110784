package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
	"golang.org/x/sys/unix"
)

func helperCommands() map[string]command {
	return map[string]command{
		"helper": {"the root helper: host file operations for verified keys, under their policies (as root; socket-activated by proxmox-mcp-helper.socket)", (*cli).helper},
	}
}

// helper serves host operations on the socket systemd passed, or on
// --socket (made here, for tests and by hand), until it has been idle.
func (c *cli) helper(args []string) error {
	fset := flag.NewFlagSet("helper", flag.ContinueOnError)
	st := addStateFlags(fset)
	socket := fset.String("socket", "", "listen on this Unix socket instead of the one systemd passes (made 0660, group of the state directory)")
	idle := fset.Duration("idle", time.Minute, "exit after this long without a request (0: never)")
	if _, err := parse(fset, args, 0, "proxmox-mcp helper [--config FILE] [--state-dir DIR] [--socket PATH] [--idle 1m]"); err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	cfgFile := *st.config
	if cfgFile == "" {
		cfgFile = config.DefaultFile
	}
	log := c.logger(cfg.Log.Level)
	srv, closeSrv, err := host.OpenHelper(c.ctx, host.HelperOptions{Config: cfg, ConfigDir: filepath.Dir(cfgFile), Logger: log})
	if err != nil {
		return err
	}
	defer closeSrv()
	l, err := systemd.ActivatedUnix()
	if err != nil {
		return err
	}
	if l == nil {
		if *socket == "" {
			return errors.New("no socket: systemd passed none (start proxmox-mcp-helper.socket) and --socket is not given")
		}
		if l, err = listenHelper(*socket, cfg.StateDir); err != nil {
			return err
		}
	}
	defer l.Close()
	log.Info("helper: serving", "socket", l.Addr().String(), "idle", idle.String())
	return srv.Serve(c.ctx, l, *idle)
}

// listenHelper makes the socket at path, root's, 0660, in the group of the
// state directory (the daemon's): only root and the daemon connect.
func listenHelper(path, stateDir string) (*net.UnixListener, error) {
	var st unix.Stat_t
	if err := unix.Stat(stateDir, &st); err != nil {
		return nil, fmt.Errorf("the state directory %s: %w", stateDir, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	old := unix.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chown(path, 0, int(st.Gid)); err != nil {
		l.Close()
		return nil, fmt.Errorf("give %s to group %s: %w", path, strconv.Itoa(int(st.Gid)), err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
