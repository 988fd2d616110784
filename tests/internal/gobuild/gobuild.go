// Package gobuild runs the test packages' `go build` commands one at a
// time across processes. `go test ./...` runs tests and tests/booted side
// by side, and each builds the daemon as the Debian package does (no cgo,
// paths trimmed): on an empty build cache, two builds started together
// both compile every dependency (OPA, SQLite, tailscale) for themselves.
// Behind one lock, the second finds the first's packages in the build
// cache and only links.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockPath is the lock file under the temporary directory, shared by
// every test process of this module that the user runs on the machine.
func lockPath() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("proxmox-mcp-tests-go-build-%d.lock", os.Getuid()))
}

// CombinedOutput runs cmd, a `go build`, while holding the lock, and
// returns its combined output. Another process's build in progress is
// waited for; the lock is released when the process dies.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	f, err := os.OpenFile(lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gobuild: open the build lock: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("gobuild: take the build lock: %w", err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing the file releases it too
	return cmd.CombinedOutput()
}
