package booted

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/cluster/pmxcfstest"
)

// rootfs builds (or finds in the cache) the root file system, or skips.
func rootfs(t *testing.T) string {
	t.Helper()
	if err := Check(); err != nil {
		Unavailable(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir, err := Rootfs(ctx, t.Logf)
	if err != nil {
		Unavailable(t, "%v", err)
	}
	return dir
}

// TestBootedSystemd: the bed is what PVE 9 runs: systemd 257 as init, the
// system bus, journald, and a network of its own.
func TestBootedSystemd(t *testing.T) {
	t.Parallel()
	c := Boot(t, rootfs(t), Options{})
	if v := c.Must("systemctl", "--version"); !strings.HasPrefix(v, "systemd 257 ") {
		t.Errorf("systemctl --version: %q, want systemd 257", strings.SplitN(v, "\n", 2)[0])
	}
	if out := c.Must("busctl", "--system", "--no-pager", "list"); !strings.Contains(out, "org.freedesktop.systemd1") {
		t.Errorf("busctl list has no systemd on the system bus:\n%s", out)
	}
	c.Must("logger", "-t", "pmcp-booted", "hello from the test")
	if out, ok := c.JournalUntil(saying("hello from the test"), "-t", "pmcp-booted", "-o", "cat"); !ok {
		t.Errorf("journald did not keep the line: %q", out)
	}
	if h := strings.TrimSpace(c.Must("hostname")); h != "pve1" {
		t.Errorf("hostname %q", h)
	}
	if out := c.Must("cat", "/proc/net/fib_trie"); !strings.Contains(out, c.IP) {
		t.Errorf("the container does not have its address %s", c.IP)
	}
}

// TestBootedSideBySide: containers running at once each run in a cgroup of
// their own, and one powering off takes nothing from the other. They
// shared nspawn's "payload" cgroup, and each one's systemd removed, as its
// own, cgroups the other had just made: a unit failed to start ("Failed
// to spawn executor: No such file or directory") and the system came up
// degraded.
func TestBootedSideBySide(t *testing.T) {
	t.Parallel()
	dir := rootfs(t)
	cs := [2]*Container{Boot(t, dir, Options{}), Boot(t, dir, Options{})}
	cgroupOf := func(c *Container) string {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", c.InitPID()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if path, ok := strings.CutPrefix(line, "0::"); ok {
				return path
			}
		}
		t.Fatalf("no unified cgroup in /proc/%d/cgroup:\n%s", c.InitPID(), data)
		return ""
	}
	a, b := cgroupOf(cs[0]), cgroupOf(cs[1])
	if a == b {
		t.Fatalf("both containers' systemd run in the cgroup %s", a)
	}
	t.Logf("cgroups: %s and %s", a, b)

	cs[0].shutdown()
	for _, d := range cs[0].cgroups {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s's cgroup %s is left after its poweroff (%v)", cs[0].Name(), d, err)
		}
	}
	if res := cs[1].Run(t.Context(), "systemd-run", "--wait", "--quiet", "true"); !res.OK() {
		t.Errorf("systemd-run in %s after %s powered off: %s", cs[1].Name(), cs[0].Name(), res)
	}
	if out := cs[1].Run(t.Context(), "systemctl", "--failed", "--no-legend"); strings.TrimSpace(out.Stdout) != "" {
		t.Errorf("failed units in %s:\n%s", cs[1].Name(), out.Stdout)
	}
}

// TestBootedLeavesTheHostsFUSEAlone: a FUSE file system mounted on the
// host when a container boots unmounts while the container runs. A
// container kept the host's mounts of its start pinned, where no process
// showed them, and the kernel ends a FUSE connection only with its last
// mount: the cluster tests' pmxcfs (run beside these tests) waited for
// the container to stop, 50 to 116 s.
func TestBootedLeavesTheHostsFUSEAlone(t *testing.T) {
	t.Parallel()
	if err := pmxcfstest.Available(); err != nil {
		Unavailable(t, "%v", err)
	}
	cl, err := pmxcfstest.New(pmxcfstest.Options{Name: "booted", Nodes: []string{"pve1"}})
	if err != nil {
		t.Fatal(err)
	}
	mnt, err := pmxcfstest.Mountpoint(t.TempDir(), "pve1")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Node("pve1").Mount(mnt); err != nil {
		t.Fatal(err)
	}
	unmounted := make(chan error, 1)
	t.Cleanup(func() {
		cl.Close() //nolint:errcheck // the test's own unmount came first, or failed
	})
	c := Boot(t, rootfs(t), Options{})
	go func() { unmounted <- cl.Node("pve1").Unmount() }()
	select {
	case err := <-unmounted:
		if err != nil {
			t.Errorf("unmount the host's pmxcfs with %s running: %v", c.Name(), err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("the host's pmxcfs still not unmounted 15 s after it was asked, with %s running", c.Name())
		c.shutdown()
		<-unmounted
	}
}
