package pmxcfstest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireFUSE skips without root and /dev/fuse, or fails when end-to-end
// tests are required (CI runs as root with FUSE).
func requireFUSE(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("PMCP_REQUIRE_E2E") == "1" {
			t.Fatalf("PMCP_REQUIRE_E2E=1 and the pmxcfs simulator cannot mount: %v", err)
		}
		t.Skipf("the pmxcfs simulator cannot mount here: %v", err)
	}
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// cluster mounts a simulated cluster of nodes a, b and c.
func cluster(t *testing.T, clock *testClock) (*Cluster, map[string]string) {
	t.Helper()
	requireFUSE(t)
	opts := Options{Nodes: []string{"a", "b", "c"}, LockTimeout: 10 * time.Second}
	if clock != nil {
		opts.Now = clock.Now
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir() // removed after the unmounts below (cleanups run last first)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	dirs := map[string]string{}
	for _, n := range opts.Nodes {
		mp, err := Mountpoint(base, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Node(n).Mount(mp); err != nil {
			t.Fatal(err)
		}
		dirs[n] = mp
	}
	return c, dirs
}

func mode(t *testing.T, p string) (os.FileMode, uint32, uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return os.FileMode(st.Mode & 0o7777), st.Uid, st.Gid
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// Owners and modes are pmxcfs's, fixed by path; chmod, chown, links and
// special files are refused as pmxcfs refuses them; a file holds 1 MiB.
func TestFixedOwnersModesAndLimits(t *testing.T) {
	c, dirs := cluster(t, nil)
	a := dirs["a"]
	for _, d := range []string{"proxmox-mcp", "priv/proxmox-mcp"} {
		if err := os.Mkdir(filepath.Join(a, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(a, d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{"proxmox-mcp", 0o755}, {"proxmox-mcp/f", 0o640},
		{"priv/proxmox-mcp", 0o700}, {"priv/proxmox-mcp/f", 0o600},
		{"nodes/a/priv", 0o700}, {"local", 0o755}, {".members", 0o440},
	} {
		m, uid, gid := mode(t, filepath.Join(a, tc.path))
		if m != tc.want || uid != 0 || gid != c.GID() {
			t.Errorf("%s: mode %o owner %d:%d, want %o 0:%d", tc.path, m, uid, gid, tc.want, c.GID())
		}
	}
	f := filepath.Join(a, "proxmox-mcp", "f")
	wantErrno(t, "chmod 0644", os.Chmod(f, 0o644), syscall.EPERM)
	if err := os.Chmod(f, 0o640); err != nil {
		t.Errorf("chmod to the mode it has: %v", err)
	}
	wantErrno(t, "chmod priv 0640", os.Chmod(filepath.Join(a, "priv/proxmox-mcp/f"), 0o640), syscall.EPERM)
	wantErrno(t, "chown 65534", os.Chown(f, 65534, 65534), syscall.EPERM)
	if err := os.Chown(f, 0, int(c.GID())); err != nil {
		t.Errorf("chown root:www-data: %v", err)
	}
	wantErrno(t, "symlink", os.Symlink("f", filepath.Join(a, "proxmox-mcp", "l")), syscall.ENOSYS)
	// pmxcfs has no link operation; the kernel answers EPERM for that.
	wantErrno(t, "link", os.Link(f, filepath.Join(a, "proxmox-mcp", "h")), syscall.EPERM)
	wantErrno(t, "mkfifo", unix.Mkfifo(filepath.Join(a, "proxmox-mcp", "p"), 0o600), syscall.ENOSYS)
	if target, err := os.Readlink(filepath.Join(a, "local")); err != nil || target != "nodes/a" {
		t.Errorf("local -> %q (%v), want nodes/a", target, err)
	}
	big := bytes.Repeat([]byte("x"), MaxFileSize+1)
	wantErrno(t, "a file over 1 MiB", os.WriteFile(filepath.Join(a, "proxmox-mcp", "big"), big, 0o600), syscall.EFBIG)
	if err := os.WriteFile(filepath.Join(a, "proxmox-mcp", "max"), big[:MaxFileSize], 0o600); err != nil {
		t.Errorf("a file of exactly 1 MiB: %v", err)
	}
	// Nobody but root and www-data reads anything; priv/ is root's alone.
	for _, p := range []string{"proxmox-mcp/f", "priv/proxmox-mcp/f"} {
		cmd := exec.Command("cat", filepath.Join(a, p))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Errorf("uid 65534 read %s: %v %q, want permission denied", p, err, out)
		}
	}
}

// A write is seen at once through every node; a rename replaces its
// target; non-empty directories and lock directories are not renamed;
// renameat2's flags are refused as libfuse 2 refuses them.
func TestReplicationAndRename(t *testing.T) {
	_, dirs := cluster(t, nil)
	a, b := dirs["a"], dirs["b"]
	if err := os.MkdirAll(filepath.Join(a, "priv/proxmox-mcp/keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, "priv/proxmox-mcp/keys/.k.tmp"), []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "priv/proxmox-mcp/keys/k"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(a, "priv/proxmox-mcp/keys/.k.tmp"), filepath.Join(a, "priv/proxmox-mcp/keys/k")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dirs["c"], "priv/proxmox-mcp/keys/k")); err != nil || string(got) != "new" {
		t.Errorf("node c reads %q (%v), want the renamed file", got, err)
	}
	wantErrno(t, "rename of a non-empty directory", os.Rename(filepath.Join(a, "priv/proxmox-mcp/keys"), filepath.Join(a, "priv/proxmox-mcp/k2")), syscall.ENOTEMPTY)
	if err := os.Mkdir(filepath.Join(a, "priv/lock/l"), 0o700); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "rename of a lock", os.Rename(filepath.Join(a, "priv/lock/l"), filepath.Join(a, "priv/lock/m")), syscall.EACCES)
	if err := os.WriteFile(filepath.Join(a, "priv/proxmox-mcp/x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(filepath.Join(a, "priv/proxmox-mcp"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	wantErrno(t, "RENAME_NOREPLACE", unix.Renameat2(int(d.Fd()), "x", int(d.Fd()), "y", unix.RENAME_NOREPLACE), syscall.EINVAL)
}

// PVE's lock protocol: mkdir in priv/lock is exclusive across nodes;
// utime(0, 0) removes a lock only once the asking node has seen it
// unchanged past the timeout; only the lock's node renews it.
func TestLocks(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	_, dirs := cluster(t, clock)
	la, lb := filepath.Join(dirs["a"], "priv/lock/proxmox-mcp"), filepath.Join(dirs["b"], "priv/lock/proxmox-mcp")
	if err := os.Mkdir(la, 0o700); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "mkdir of a held lock from another node", os.Mkdir(lb, 0o700), syscall.EEXIST)
	// utime(0, 0) is PVE's unlock request; pmxcfs answers it with an
	// error whatever it decides (EACCES: the lock stays; ENOENT: it went),
	// and PVE ignores the answer.
	zero := time.Unix(0, 0)
	wantErrno(t, "unlock request on a fresh lock", os.Chtimes(lb, zero, zero), syscall.EACCES)
	if _, err := os.Stat(lb); err != nil {
		t.Fatalf("a fresh lock went on an unlock request: %v", err)
	}
	wantErrno(t, "renewal by another node", os.Chtimes(lb, clock.Now(), clock.Now()), syscall.EACCES)
	clock.Add(8 * time.Second)
	if err := os.Chtimes(la, clock.Now(), clock.Now()); err != nil {
		t.Fatalf("renewal by the lock's node: %v", err)
	}
	clock.Add(8 * time.Second) // 16 s after mkdir, 8 s after the renewal
	wantErrno(t, "unlock request on a renewed lock", os.Chtimes(lb, zero, zero), syscall.EACCES)
	if _, err := os.Stat(lb); err != nil {
		t.Fatalf("a renewed lock went before its timeout: %v", err)
	}
	clock.Add(11 * time.Second)
	wantErrno(t, "unlock request on an expired lock", os.Chtimes(lb, zero, zero), syscall.ENOENT)
	if err := os.Mkdir(lb, 0o700); err != nil {
		t.Fatalf("mkdir after the expired lock was removed: %v", err)
	}
}

// An expired lock taken over at once by another node, 200 times (a lock
// of its own each time): the mkdir right after the removal takes the lock
// and says so. It made the lock and answered ENOENT about once in 25 (the
// kernel's FORGET of the old directory's inode, racing the mkdir, took
// the new entry), and the next mkdir found the lock held.
func TestLockTakenOverAtOnce(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	_, dirs := cluster(t, clock)
	zero := time.Unix(0, 0)
	for i := range 200 {
		name := fmt.Sprintf("priv/lock/take-over-%d", i)
		la, lb := filepath.Join(dirs["a"], name), filepath.Join(dirs["b"], name)
		if err := os.Mkdir(la, 0o700); err != nil {
			t.Fatal(err)
		}
		wantErrno(t, "unlock request on a held lock", os.Chtimes(lb, zero, zero), syscall.EACCES)
		clock.Add(11 * time.Second)
		wantErrno(t, "unlock request on an expired lock", os.Chtimes(lb, zero, zero), syscall.ENOENT)
		if err := os.Mkdir(lb, 0o700); err != nil {
			t.Fatalf("take-over %d: mkdir right after the expired lock went: %v", i, err)
		}
	}
}

// Without quorum a node reads the tree as it was, refuses every change
// (root included), drops the write bits and says so in .members; with
// quorum back it sees what the others wrote meanwhile.
func TestQuorum(t *testing.T) {
	c, dirs := cluster(t, nil)
	a, b := dirs["a"], dirs["b"]
	f := filepath.Join(a, "priv/f")
	if err := os.WriteFile(f, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Node("b").SetQuorate(false)
	if err := os.WriteFile(f, []byte("2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(b, "priv/f")); err != nil || string(got) != "1" {
		t.Errorf("node b without quorum reads %q (%v), want the state at the loss: 1", got, err)
	}
	wantErrno(t, "write without quorum", os.WriteFile(filepath.Join(b, "priv/g"), []byte("x"), 0o600), syscall.EACCES)
	wantErrno(t, "mkdir without quorum", os.Mkdir(filepath.Join(b, "priv/lock/x"), 0o700), syscall.EACCES)
	// b has not looked local up before: its attributes are not cached.
	if m, _, _ := mode(t, filepath.Join(b, "local")); m&0o200 != 0 {
		t.Errorf("local is %o without quorum; PVE's check_cfs_quorum reads the write bit", m)
	}
	m, err := ReadMembers(b)
	if err != nil || m.Cluster.Quorate != 0 || m.NodeList["a"].Online != 0 || m.NodeName != "b" {
		t.Errorf("b's .members without quorum: %+v, %v", m, err)
	}
	if m, err := ReadMembers(a); err != nil || m.Cluster.Quorate != 1 || m.NodeList["b"].Online != 0 || m.NodeList["c"].Online != 1 {
		t.Errorf("a's .members: %+v, %v", m, err)
	}
	c.Node("b").SetQuorate(true)
	if got, err := os.ReadFile(filepath.Join(b, "priv/f")); err != nil || string(got) != "2" {
		t.Errorf("node b with quorum back reads %q (%v), want 2", got, err)
	}
}

// A change through another node's mount raises no inotify event; one
// through this node's does (which proves the watch works).
func TestNoInotifyForRemoteChanges(t *testing.T) {
	_, dirs := cluster(t, nil)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, filepath.Join(dirs["b"], "priv"), unix.IN_CREATE|unix.IN_MODIFY|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs["a"], "priv/remote"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs["b"], "priv/local"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	if n < unix.SizeofInotifyEvent {
		t.Fatalf("short inotify read: %d bytes", n)
	}
	nameLen := binary.NativeEndian.Uint32(buf[12:16]) // struct inotify_event's len
	name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+nameLen]), "\x00")
	if name != "local" {
		t.Fatalf("first inotify event names %q, want local (the write through node a must raise none)", name)
	}
}
