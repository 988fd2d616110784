package booted

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Suite is the Debian release the container runs: Debian 13, which
// Proxmox VE 9 is built on (systemd 257).
const Suite = "trixie"

// Packages are installed into the root file system on top of debootstrap's
// minbase variant: systemd as init, the system D-Bus, and procps for ps
// and pgrep in failure reports.
func Packages() []string { return []string{"dbus", "procps", "systemd", "systemd-sysv"} }

// recipe changes whenever the way the root file system is built changes,
// so that an old cache is not taken for a new one.
const recipe = "2"

// RequireEnv is the variable that turns a missing test bed into a failure.
const RequireEnv = "PMCP_REQUIRE_E2E"

// Unavailable skips the test, or fails it when RequireEnv is 1: the bed
// cannot be built or booted here.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 and the booted Debian 13 test bed is unavailable: %s", RequireEnv, msg)
	}
	t.Skipf("the booted Debian 13 test bed is unavailable: %s", msg)
}

// Check reports what is missing to build and boot a container here, or
// nil.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("it needs root (uid %d)", os.Geteuid())
	}
	for _, tool := range []struct{ name, pkg string }{
		{"debootstrap", "debootstrap"}, {"systemd-nspawn", "systemd-container"},
		{"nsenter", "util-linux"}, {"ip", "iproute2"}, {"mount", "mount"},
	} {
		if _, err := exec.LookPath(tool.name); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install %s)", tool.name, tool.pkg)
		}
	}
	if data, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(data), "\toverlay\n") {
		return errors.New("the kernel has no overlay file system")
	}
	return nil
}

// cacheKey names a root file system by what it is built from.
func cacheKey(pkgs []string) string {
	sorted := slices.Clone(pkgs)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(recipe + "\n" + Suite + "\nminbase\n" + strings.Join(sorted, ",")))
	return Suite + "-" + hex.EncodeToString(sum[:8])
}

// CacheDir is where root file systems are kept: $PMCP_BOOTED_CACHE, else
// proxmox-mcp/booted under the user's cache directory.
func CacheDir() (string, error) {
	if d := os.Getenv("PMCP_BOOTED_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("booted: no cache directory: %w", err)
	}
	return filepath.Join(base, "proxmox-mcp", "booted"), nil
}

// Mirror is the Debian mirror this machine's apt uses: the first URIs of
// /etc/apt/sources.list.d/debian.sources, else the first deb line of
// /etc/apt/sources.list. It is read, never written down.
func Mirror() (string, error) {
	if f, err := os.Open("/etc/apt/sources.list.d/debian.sources"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "URIs:"); ok {
				if fs := strings.Fields(v); len(fs) > 0 {
					return fs[0], nil
				}
			}
		}
	}
	if f, err := os.Open("/etc/apt/sources.list"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "deb" {
				url := fs[1]
				if strings.HasPrefix(url, "[") && len(fs) >= 3 {
					url = fs[2]
				}
				return url, nil
			}
		}
	}
	return "", errors.New("no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list")
}

// Rootfs returns a Debian 13 root file system with Packages installed,
// building it with debootstrap the first time (about two minutes) into the
// cache directory; concurrent callers, in this process or another, wait
// for one build. The tree is never written to afterwards: containers boot
// it through an overlay.
func Rootfs(ctx context.Context, logf func(string, ...any)) (string, error) {
	if err := Check(); err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	key := cacheKey(Packages())
	dir := filepath.Join(cache, key)
	done := filepath.Join(dir, ".pmcp-rootfs-complete")
	if _, err := os.Stat(done); err == nil {
		return dir, nil
	}
	lock, err := os.OpenFile(filepath.Join(cache, key+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	defer lock.Close()
	if err := flock(ctx, lock); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closed just after
	if _, err := os.Stat(done); err == nil {
		return dir, nil // built while we waited
	}
	mirror, err := Mirror()
	if err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	tmp := dir + ".building"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil { // an incomplete one
		return "", fmt.Errorf("booted: %w", err)
	}
	start := time.Now()
	logf("booted: building the Debian %s root file system (%s) with debootstrap into %s", Suite, strings.Join(Packages(), ","), dir)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(Packages(), ","), Suite, tmp, mirror)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("booted: debootstrap %s: %w\n%s", Suite, err, tail(out, 40))
	}
	// Each boot makes its own machine id; downloaded packages are not
	// kept.
	if err := os.WriteFile(filepath.Join(tmp, "etc/machine-id"), nil, 0o444); err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	archives, _ := filepath.Glob(filepath.Join(tmp, "var/cache/apt/archives/*.deb"))
	for _, a := range archives {
		os.Remove(a)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	if err := os.WriteFile(done, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("booted: %w", err)
	}
	logf("booted: root file system built in %s", time.Since(start).Round(time.Second))
	return dir, nil
}

// flock takes an exclusive lock on f, giving up when ctx ends.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("booted: lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("booted: waiting for the root file system build (%s): %w", f.Name(), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
