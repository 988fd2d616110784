package booted

import (
	"context"
	"strings"
	"testing"
	"time"
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
	c := Boot(t, rootfs(t), Options{})
	if v := c.Must("systemctl", "--version"); !strings.HasPrefix(v, "systemd 257 ") {
		t.Errorf("systemctl --version: %q, want systemd 257", strings.SplitN(v, "\n", 2)[0])
	}
	if out := c.Must("busctl", "--system", "--no-pager", "list"); !strings.Contains(out, "org.freedesktop.systemd1") {
		t.Errorf("busctl list has no systemd on the system bus:\n%s", out)
	}
	c.Must("logger", "-t", "pmcp-booted", "hello from the test")
	if out := c.Must("journalctl", "--no-pager", "-t", "pmcp-booted", "-o", "cat"); !strings.Contains(out, "hello from the test") {
		t.Errorf("journald did not keep the line: %q", out)
	}
	if h := strings.TrimSpace(c.Must("hostname")); h != "pve1" {
		t.Errorf("hostname %q", h)
	}
	if out := c.Must("cat", "/proc/net/fib_trie"); !strings.Contains(out, c.IP) {
		t.Errorf("the container does not have its address %s", c.IP)
	}
}
