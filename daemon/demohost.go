package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// The demo's simulated host lies in its state directory: a few log files
// to read, directories to write, and a protected model repository that
// only break-glass changes.
const (
	demoHostDir = "host"
	// demoRepository is the protected repository beneath the host.
	demoRepository = "mnt/model-repo"
	demoSocket     = "helper.sock"
	// demoRunnerEvery is how often the demo's runner looks at the queue
	// when no file's arrival woke it.
	demoRunnerEvery = 500 * time.Millisecond
	// maxSocketPath is the longest path a Unix socket may have (sun_path
	// holds 108 bytes with its NUL).
	maxSocketPath = 107
)

// demoHostFiles are the simulated host's files, by path beneath it.
func demoHostFiles() map[string][]byte {
	// A few KiB of weights that are the same in every demo.
	var weights []byte
	block := sha256.Sum256([]byte("proxmox-mcp demo weights"))
	for len(weights) < 6<<10 {
		weights = append(weights, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return map[string][]byte{
		"var/log/syslog": []byte(`2026-01-12T09:00:01.114+01:00 pve1 systemd[1]: Starting pve-daily-update.service - Daily PVE download activities...
2026-01-12T09:00:03.492+01:00 pve1 pveupdate[41022]: <root@pam> starting task UPID:pve1:0000A03E:0001E2C1:6964AB43:aptupdate::root@pam:
2026-01-12T09:00:09.870+01:00 pve1 pveupdate[41022]: <root@pam> end task UPID:pve1:0000A03E:0001E2C1:6964AB43:aptupdate::root@pam: OK
2026-01-12T09:00:09.881+01:00 pve1 systemd[1]: pve-daily-update.service: Deactivated successfully.
2026-01-12T09:14:27.305+01:00 pve1 pvedaemon[1502]: <root@pam> successful auth for user 'root@pam'
2026-01-12T09:15:02.640+01:00 pve1 pvestatd[1478]: storage 'backup' is not online
2026-01-12T09:17:01.003+01:00 pve1 CRON[41377]: (root) CMD (cd / && run-parts --report /etc/cron.hourly)
`),
		"var/log/pveproxy/access.log": []byte(`::ffff:192.168.1.20 - root@pam [12/01/2026:09:14:27 +0100] "POST /api2/json/access/ticket HTTP/1.1" 200 1241
::ffff:192.168.1.20 - root@pam [12/01/2026:09:14:28 +0100] "GET /api2/json/cluster/resources HTTP/1.1" 200 3308
::ffff:192.168.1.20 - root@pam [12/01/2026:09:14:31 +0100] "GET /api2/json/nodes/pve1/qemu/100/status/current HTTP/1.1" 200 712
::ffff:192.168.1.20 - root@pam [12/01/2026:09:15:40 +0100] "POST /api2/json/nodes/pve1/qemu/101/status/start HTTP/1.1" 200 79
`),
		"srv/notes.txt": []byte("Scratch space of the demo host: proxmox_host_file_write may write here.\n"),
		demoRepository + "/README.md": []byte(`# model-repo

The models this host serves. The repository is protected: nothing changes it
but a break-glass request that its requester confirmed and a second person
approved, which the root runner then executes once.
`),
		demoRepository + "/llama/config.json": []byte(`{
  "architectures": ["LlamaForCausalLM"],
  "hidden_size": 256,
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "vocab_size": 512,
  "torch_dtype": "float16"
}
`),
		demoRepository + "/llama/weights.bin": weights[:6<<10],
	}
}

// demoHost makes the simulated host beneath dir the first time (a kept
// state directory keeps it as the last demo left it) and returns its
// directory.
func demoHost(dir string) (string, error) {
	hostDir := filepath.Join(dir, demoHostDir)
	if _, err := os.Lstat(hostDir); err == nil {
		return hostDir, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	// Made aside and renamed into place: a demo stopped half-way leaves
	// no half-made host.
	tmp := hostDir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	for name, data := range demoHostFiles() {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, hostDir); err != nil {
		return "", err
	}
	return hostDir, nil
}

// demoHostConfig sets the configuration's host (its roots: the logs read
// only, srv and mnt writable; the demo's helper socket) and protected
// repository, and returns the helper's copy of it. The repository lies in
// a writable root, as a real one may: the guard, not the root, is what
// keeps every ordinary write out of it.
//
// The two name the repository in two views. The helper, the runner and
// the host tools work on the demo's directories, so the helper's copy
// protects the repository where it lies, beneath the state directory.
// The daemon's guard of API calls resolves its protected paths in PVE's
// view, and refuses every call that touches storage when one lies where
// the daemon's sandbox on a real host would hide it (/tmp, /home, where
// a demo's state directory is): for the simulated cluster the repository
// is where the simulated host has it, /mnt/model-repo. The daemon's host
// tools check a write there before the helper, which checks it again
// with the helper's copy and refuses it as a break-glass change.
func demoHostConfig(cfg *config.Config, dir, hostDir string) *config.Config {
	cfg.Host = config.Host{
		Roots: []config.HostRoot{
			{Path: filepath.Join(hostDir, "var", "log")},
			{Path: filepath.Join(hostDir, "srv"), Write: true},
			{Path: filepath.Join(hostDir, "mnt"), Write: true},
		},
		Socket: filepath.Join(dir, demoSocket),
	}
	helper := *cfg
	helper.Protected = config.Protected{Paths: []string{filepath.Join(hostDir, filepath.FromSlash(demoRepository))}}
	cfg.Protected = config.Protected{Paths: []string{"/" + demoRepository}}
	return &helper
}

// listenDemoHelper listens on the demo's helper socket. It must exist
// before the daemon is built: the daemon serves the host tools only when
// its helper's socket is there.
func listenDemoHelper(socket string) (*net.UnixListener, error) {
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("the helper's socket %s is longer than a Unix socket may be (%d bytes): use a shorter --state-dir", socket, maxSocketPath)
	}
	// A demo that did not stop cleanly may have left its socket.
	if fi, err := os.Lstat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := os.Remove(socket); err != nil {
			return nil, err
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(socket, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// demoHelper is the demo's root helper and break-glass runner, in the
// demo's own process.
type demoHelper struct {
	helper *host.Helper
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// startDemoHelper serves the demo's helper on l with the demo's key
// store and runs its break-glass runner, until close.
func startDemoHelper(ctx context.Context, cfg *config.Config, ks *keys.Store, l *net.UnixListener, log *slog.Logger) (*demoHelper, error) {
	h, err := host.OpenDemoHelper(ctx, host.DemoHelperOptions{Config: cfg, Keys: ks, Logger: log})
	if err != nil {
		return nil, err
	}
	// Its own context: calls the daemon drains at its end still reach it.
	hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	dh := &demoHelper{helper: h, stop: stop}
	dh.wg.Go(func() {
		if err := h.Server.Serve(hctx, l, 0); err != nil {
			log.Error("demo: the helper stopped", "err", err)
		}
	})
	if h.Breakglass != nil {
		dh.wg.Go(func() { runDemoRunner(hctx, h, log) })
	}
	return dh, nil
}

// close stops the helper and the runner and closes what they opened.
func (dh *demoHelper) close() error {
	dh.stop()
	dh.wg.Wait()
	return dh.helper.Close()
}

// runDemoRunner is the demo's break-glass runner, what the path unit and
// proxmox-mcp breakglass run are on a host: it runs every signed request
// of the queue once, when a file arrives in the queue and every
// demoRunnerEvery, journaling each in the helper's journal as the CLI's
// runner does, until ctx ends.
func runDemoRunner(ctx context.Context, h *host.Helper, log *slog.Logger) {
	var arrived <-chan fsnotify.Event
	var watchErrs <-chan error
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if err := w.Add(filepath.Join(h.Breakglass.Dir(), breakglass.QueueDir)); err == nil {
			arrived, watchErrs = w.Events, w.Errors
		}
	}
	tick := time.NewTicker(demoRunnerEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-arrived:
		case <-watchErrs:
		}
		err := host.RunBreakglass(ctx, h.Breakglass, h.Journal, log, nil)
		if err != nil && ctx.Err() == nil {
			log.Warn("demo: the break-glass runner", "err", err)
		}
	}
}
