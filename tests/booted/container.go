package booted

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options shape a container.
type Options struct {
	// Hostname is the container's host name; pve1 (the simulator's first
	// node) when empty.
	Hostname string
	// Prepare writes into the container's root (a Root) before it boots.
	Prepare func(r *Root) error
	// BootTimeout bounds the boot up to `systemctl is-system-running
	// --wait`; one minute when zero.
	BootTimeout time.Duration
}

// Container is a booted Debian 13 with systemd as its init, in a network
// namespace of its own.
type Container struct {
	t    testing.TB
	name string
	dir  string
	// Dir is the container's / as the host sees it (an overlay over the
	// cached root file system; writes never reach the cache).
	Dir string
	// Net is the container's network namespace, reachable from the host
	// through a veth pair: the container is IP, the host HostIP (a /30 of
	// 10.213.0.0/16, private, so the daemon's LAN listener may bind it).
	Net        *Netns
	IP, HostIP string

	root     *Root
	cgroups  cgroups
	nspawn   *exec.Cmd
	exited   chan struct{}
	initPID  int
	console  *syncBuffer
	watcher  *exec.Cmd
	ctx      context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once
	// BootTime is from the start of systemd-nspawn to a running system.
	BootTime time.Duration
}

// Boot starts a container on rootfs (see Rootfs) and returns it running
// (`systemctl is-system-running --wait` said running). It is powered off
// when the test ends, or at its deadline less a minute, or by a watcher
// process if the test process dies first.
func Boot(t testing.TB, rootfs string, opts Options) *Container {
	t.Helper()
	if err := Check(); err != nil {
		Unavailable(t, "%v", err)
	}
	if opts.Hostname == "" {
		opts.Hostname = "pve1"
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = time.Minute
	}
	var rnd [4]byte
	rand.Read(rnd[:]) //nolint:errcheck // crypto/rand never fails on Linux
	c := &Container{t: t, name: "pmcp-" + hex.EncodeToString(rnd[:]), exited: make(chan struct{}), console: &syncBuffer{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if d, ok := deadline(t); ok {
		// Powered off before the test binary's own timeout panics, when
		// no cleanup would run.
		at := time.Until(d) - time.Minute
		stop := time.AfterFunc(max(at, time.Second), func() {
			t.Errorf("booted: the test's deadline is near; powering %s off", c.name)
			c.kill()
		})
		t.Cleanup(func() { stop.Stop() })
	}
	t.Cleanup(c.shutdown)

	var err error
	if c.dir, err = os.MkdirTemp("", c.name+"-"); err != nil {
		t.Fatal(err)
	}
	c.Dir = filepath.Join(c.dir, "root")
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.Mkdir(filepath.Join(c.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opt := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", rootfs, filepath.Join(c.dir, "upper"), filepath.Join(c.dir, "work"))
	if err := syscall.Mount("overlay", c.Dir, "overlay", 0, opt); err != nil {
		Unavailable(t, "mount an overlay on %s: %v", rootfs, err)
	}
	if c.Net, err = NewNetns(c.name); err != nil {
		Unavailable(t, "a network namespace: %v", err)
	}
	c.IP, c.HostIP = c.Net.IP, c.Net.HostIP
	if c.root, err = OpenRoot(c.Dir); err != nil {
		t.Fatal(err)
	}
	if err := c.root.WriteFile("/etc/hostname", []byte(opts.Hostname+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf("127.0.0.1\tlocalhost\n%s\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n", c.IP, opts.Hostname)
	if err := c.root.WriteFile("/etc/hosts", []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts.Prepare != nil {
		if err := opts.Prepare(c.root); err != nil {
			t.Fatalf("booted: prepare the root file system: %v", err)
		}
	}

	if c.cgroups, err = newCgroups(c.name); err != nil {
		Unavailable(t, "%v", err)
	}
	start := time.Now()
	c.nspawn = exec.Command("sh", launchArgs(c.cgroups, "systemd-nspawn", "--register=no", "--keep-unit", "--quiet", "--boot",
		"--console=pipe", "--directory="+c.Dir, "--machine="+c.name, "--hostname="+opts.Hostname,
		"--network-namespace-path="+c.Net.Path(), "--resolv-conf=off", "--timezone=off")...)
	// systemd 257 needs the unified cgroup hierarchy, which this host
	// mounts beside v1.
	c.nspawn.Env = append(os.Environ(), "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1")
	c.nspawn.Stdout, c.nspawn.Stderr = c.console, c.console
	// Its own process group (a Ctrl-C of the test does not reach it), and
	// SIGTERM (a clean poweroff) should the test process die.
	c.nspawn.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Unshareflags: syscall.CLONE_NEWNS}
	if err := startTied(c.nspawn, c.exited); err != nil {
		Unavailable(t, "start systemd-nspawn: %v", err)
	}

	ctx, cancel := context.WithTimeout(c.ctx, opts.BootTimeout)
	defer cancel()
	if c.initPID, err = c.findInit(ctx); err != nil {
		t.Fatalf("booted: %v\nconsole:\n%s", err, c.console.tail(60))
	}
	c.startWatcher()
	var state string
	for ctx.Err() == nil {
		// D-Bus may not answer during the first instants of the boot.
		res := c.Run(ctx, "systemctl", "is-system-running", "--wait")
		state = strings.TrimSpace(res.Stdout)
		if state == "running" || state == "degraded" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if state != "running" {
		t.Fatalf("booted: %s is %q, not running, after %s; failed units:\n%s\nconsole:\n%s", c.name, state,
			time.Since(start).Round(time.Millisecond), c.failedUnits(), c.console.tail(60))
	}
	c.BootTime = time.Since(start)
	t.Logf("booted: %s running in %s (init pid %d, %s, host %s)", c.name, c.BootTime.Round(time.Millisecond), c.initPID, c.IP, c.HostIP)
	return c
}

// failedUnits lists the container's failed units, each with its status
// and its journal since the boot: what made the system degraded.
func (c *Container) failedUnits() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failed := c.Run(ctx, "systemctl", "--failed", "--no-legend", "--plain")
	var b strings.Builder
	b.WriteString(failed.Stdout)
	for _, line := range strings.Split(failed.Stdout, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		status := c.Run(ctx, "systemctl", "status", "--no-pager", "--full", "--lines=0", fields[0])
		journal := c.Run(ctx, "journalctl", "--boot", "--no-pager", "--lines=40", "--unit", fields[0])
		fmt.Fprintf(&b, "\n%s:\n%s%s", fields[0], status.Stdout, journal.Stdout)
	}
	return b.String()
}

// launchArgs is the arguments of sh(1) that joins the cgroups, drops
// the FUSE file systems from its mount namespace (a copy of the host's,
// private: SysProcAttr.Unshareflags), then executes argv in the same
// process (so nspawn starts in them and keeps the death signal and process
// group set for it). A container keeps the mounts it started with pinned
// until it stops, where nothing shows them: a FUSE file system mounted on
// the host at the time (the cluster tests' pmxcfs, beside these tests)
// could not be unmounted before the container stopped, since the kernel
// ends a FUSE connection only with its last mount.
func launchArgs(cg cgroups, argv ...string) []string {
	const script = `while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift
findmnt -rn -o FSTYPE,TARGET | while read -r type target; do
	case "$type" in fuse|fuse.*) umount -l "$target" 2>/dev/null;; esac
done
exec "$@"`
	args := append([]string{"-c", script, "pmcp-cgroup"}, cg.procs()...)
	return append(append(args, "--"), argv...)
}

// startTied starts cmd, whose SysProcAttr.Pdeathsig is set, and closes
// exited once it has exited. Linux sends the death signal when the
// *thread* that forked the child ends, not the process, and the Go runtime
// ends a thread whenever a goroutine locked to it returns (Netns.DialContext
// does so on every dial): a container started from an ordinary goroutine
// was powered off in the middle of a test, at the first dial that ran on
// the forking thread. Here the fork happens on a thread locked for as long
// as the child lives, so the signal comes only when the test process dies.
func startTied(cmd *exec.Cmd, exited chan<- struct{}) error {
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread is held until the child has exited,
		// then ends with this goroutine.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait() //nolint:errcheck // the exit is reported by the container's shutdown
		close(exited)
	}()
	return <-started
}

// deadline is the test binary's timeout, when t knows it (a *testing.T).
func deadline(t testing.TB) (time.Time, bool) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return d.Deadline()
	}
	return time.Time{}, false
}

// findInit waits for systemd-nspawn's child, the container's systemd.
func (c *Container) findInit(ctx context.Context) (int, error) {
	pid := c.nspawn.Process.Pid
	for {
		if p := childNamed(pid, "systemd"); p > 0 {
			return p, nil
		}
		select {
		case <-c.exited:
			return 0, fmt.Errorf("systemd-nspawn exited before the container's init started")
		case <-ctx.Done():
			return 0, fmt.Errorf("no init under systemd-nspawn (pid %d): %w", pid, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// childNamed finds a child of pid whose command is comm.
func childNamed(pid int, comm string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) < 2 || s[open+1:close] != comm {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			return p
		}
	}
	return 0
}

// watcherScript powers the container off and removes its mount and
// network namespace once the test process ($1) is gone: a test binary
// killed by its timeout runs no cleanup.
const watcherScript = `test=$1 nspawn=$2 init=$3 root=$4 netns=$5 dir=$6 cgroups=$7
while kill -0 "$test" 2>/dev/null; do sleep 1; done
kill -TERM "$nspawn" 2>/dev/null
i=0; while kill -0 "$nspawn" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.5; i=$((i+1)); done
kill -KILL "$init" "$nspawn" 2>/dev/null
sleep 1
umount "$root" 2>/dev/null || umount -l "$root"
ip netns delete "$netns" 2>/dev/null
case "$dir" in /*pmcp-*) rm -rf "$dir";; esac
for cg in $cgroups; do case "$cg" in */pmcp-*) find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null;; esac; done
`

func (c *Container) startWatcher() {
	c.watcher = exec.Command("sh", "-c", watcherScript, "pmcp-booted-watcher",
		strconv.Itoa(os.Getpid()), strconv.Itoa(c.nspawn.Process.Pid), strconv.Itoa(c.initPID), c.Dir, c.Net.Name, c.dir, strings.Join(c.cgroups, " "))
	c.watcher.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.watcher.Start(); err != nil {
		c.t.Logf("booted: no watcher process (the container depends on this test's cleanup alone): %v", err)
		c.watcher = nil
	}
}

// Result is what a command did.
type Result struct {
	Stdout, Stderr string
	// Code is the exit status; -1 when the command did not run or was
	// killed.
	Code int
	Err  error
	// Took is how long it ran.
	Took time.Duration
}

// OK reports a zero exit status.
func (r Result) OK() bool { return r.Err == nil && r.Code == 0 }

func (r Result) String() string {
	return fmt.Sprintf("exit %d (%v) after %s\nstdout:\n%s\nstderr:\n%s", r.Code, r.Err, r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// cleanEnv is the environment of commands run inside: a clean one, as a
// root shell on the node has.
func cleanEnv() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "HOME=/root", "TERM=dumb", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", "DEBIAN_FRONTEND=noninteractive"}
}

// Command is argv run as root inside the container, in every namespace of
// its init, with a clean environment plus env ("K=V").
func (c *Container) Command(ctx context.Context, env []string, argv ...string) *exec.Cmd {
	args := []string{"-t", strconv.Itoa(c.initPID), "-a", "--", "/usr/bin/env", "-i"}
	args = append(args, cleanEnv()...)
	args = append(args, env...)
	args = append(args, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs argv inside and waits, bounded by ctx and the container's life.
func (c *Container) Run(ctx context.Context, argv ...string) Result {
	return c.RunInput(ctx, nil, nil, argv...)
}

// RunInput is Run with standard input and extra environment.
func (c *Container) RunInput(ctx context.Context, stdin []byte, env []string, argv ...string) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	cmd := c.Command(ctx, env, argv...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start), Err: err}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		res.Code, res.Err = exit.ExitCode(), nil
	default:
		res.Code = -1
	}
	return res
}

// Must runs argv inside and fails the container's test unless it exits
// 0; it returns the standard output. A subtest uses MustIn.
func (c *Container) Must(argv ...string) string {
	c.t.Helper()
	return c.MustIn(c.t, argv...)
}

// MustIn is Must failing t (a subtest of the container's test).
func (c *Container) MustIn(t testing.TB, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := c.Run(ctx, argv...)
	if !res.OK() {
		t.Fatalf("in %s: %s: %s", c.name, strings.Join(argv, " "), res)
	}
	return res.Stdout
}

// Root is the container's file system, written from the host without
// following a link out of it.
func (c *Container) Root() *Root { return c.root }

// WriteFile writes a file inside the container (its parents made 0755).
func (c *Container) WriteFile(path string, data []byte, mode fs.FileMode) {
	c.t.Helper()
	if err := c.root.WriteFile(path, data, mode); err != nil {
		c.t.Fatalf("booted: %v", err)
	}
}

// CopyFile copies a host file into the container.
func (c *Container) CopyFile(host, path string, mode fs.FileMode) {
	c.t.Helper()
	data, err := os.ReadFile(host)
	if err != nil {
		c.t.Fatal(err)
	}
	c.WriteFile(path, data, mode)
}

// ReadFile reads a file inside the container.
func (c *Container) ReadFile(path string) ([]byte, error) { return c.root.ReadFile(path) }

// Exists says whether path exists inside the container (not following a
// final link).
func (c *Container) Exists(path string) bool {
	_, err := c.root.Lstat(path)
	return err == nil
}

// Journal is journalctl's output for args (the whole boot when none).
func (c *Container) Journal(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := c.Run(ctx, append([]string{"journalctl", "--no-pager", "-b"}, args...)...)
	if !res.OK() {
		return "journalctl: " + res.String()
	}
	return res.Stdout
}

// JournalUntil is journalctl's output for args (as Journal's) once has
// finds in it what it looks for, read again for up to 10 s: a line logged
// is handed to journald's socket, and journald stores it a moment later.
// Past the 10 s it returns the last output and false, for the caller to
// report.
func (c *Container) JournalUntil(has func(out string) bool, args ...string) (string, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := c.Journal(args...)
		if has(out) {
			return out, true
		}
		if time.Now().After(deadline) {
			return out, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// saying is a JournalUntil condition: the output holds text.
func saying(text string) func(string) bool {
	return func(out string) bool { return strings.Contains(out, text) }
}

// Name is the machine's name (and its network namespace's).
func (c *Container) Name() string { return c.name }

// InitPID is the host pid of the container's systemd.
func (c *Container) InitPID() int { return c.initPID }

// shutdown is the test's cleanup: the journal when the test failed, then
// poweroff, and the mount and network namespace removed.
func (c *Container) shutdown() {
	c.stopOnce.Do(func() {
		if c.nspawn != nil && c.initPID > 0 && c.t.Failed() && c.ctx.Err() == nil {
			c.t.Logf("booted: the journal of %s (last 400 lines):\n%s", c.name, c.Journal("-n", "400", "-o", "short-monotonic"))
		}
		c.poweroff()
		c.release()
	})
}

// kill is the last resort: the container's init and nspawn killed.
func (c *Container) kill() {
	c.cancel()
	if c.initPID > 0 {
		syscall.Kill(c.initPID, syscall.SIGKILL) //nolint:errcheck // it may be gone
	}
	if c.nspawn != nil && c.nspawn.Process != nil {
		c.nspawn.Process.Kill() //nolint:errcheck // it may be gone
	}
}

func (c *Container) poweroff() {
	if c.nspawn == nil || c.nspawn.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	start := time.Now()
	if c.initPID > 0 && c.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.Run(ctx, "systemctl", "poweroff", "--no-block")
		cancel()
	}
	wait := func(d time.Duration) bool {
		select {
		case <-c.exited:
			return true
		case <-time.After(d):
			return false
		}
	}
	if wait(30 * time.Second) {
		c.t.Logf("booted: %s powered off in %s", c.name, time.Since(start).Round(time.Millisecond))
		return
	}
	c.t.Errorf("booted: %s did not power off within 30 s; SIGTERM to systemd-nspawn", c.name)
	c.nspawn.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	if wait(10 * time.Second) {
		return
	}
	c.t.Errorf("booted: %s still runs; killed", c.name)
	c.kill()
	if !wait(10 * time.Second) {
		c.t.Errorf("booted: systemd-nspawn (pid %d) survived SIGKILL", c.nspawn.Process.Pid)
	}
}

// release unmounts the overlay, removes the network namespace and the
// temporary directory, ends the watcher and removes the cgroups.
func (c *Container) release() {
	c.cancel()
	if c.root != nil {
		c.root.Close()
	}
	mounted := c.Dir != ""
	for i := 0; mounted && i < 50; i++ {
		err := syscall.Unmount(c.Dir, 0)
		if err == nil || errors.Is(err, syscall.EINVAL) {
			mounted = false
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if mounted {
		if err := syscall.Unmount(c.Dir, syscall.MNT_DETACH); err != nil {
			c.t.Errorf("booted: unmount %s: %v", c.Dir, err)
		} else {
			mounted = false
		}
	}
	if c.Net != nil {
		if err := c.Net.Delete(); err != nil {
			c.t.Errorf("booted: %v", err)
		}
	}
	if c.watcher != nil && c.watcher.Process != nil {
		c.watcher.Process.Kill() //nolint:errcheck // it may have exited
		c.watcher.Wait()         //nolint:errcheck // killed
	}
	if c.dir != "" && !mounted {
		if err := os.RemoveAll(c.dir); err != nil {
			c.t.Errorf("booted: %v", err)
		}
	}
	if err := c.cgroups.remove(5 * time.Second); err != nil {
		c.t.Errorf("booted: %s's processes outlived it: %v", c.name, err)
	}
}

// syncBuffer keeps the container's console output for a failure report.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return tail(b.buf.Bytes(), n)
}
