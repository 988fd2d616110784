package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// needRoot skips a test that needs root (to give files away, or to make a
// directory another user owns), failing instead under PMCP_REQUIRE_E2E.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("PMCP_REQUIRE_E2E") != "" {
		t.Fatal("this test needs root (PMCP_REQUIRE_E2E is set): run it as root")
	}
	t.Skip("needs root: it models root working in a directory the service user owns")
}

// serviceUID is the uid that models the service user.
const serviceUID = 65534

// foreignDir is a directory another user can write, as the service
// user's state directory is to root: owned by uid 65534 when the test runs
// as root, else world-writable.
func foreignDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, serviceUID, serviceUID); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustOpen(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteFileMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "x")
	if err := WriteFile(path, []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// A symbolic link where a file is written is replaced, never written
// through: the file it points to keeps its content and mode.
func TestWriteFileReplacesLink(t *testing.T) {
	dir := foreignDir(t)
	outside := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(outside, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "keys.json")); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, dir)
	if err := d.WriteFile("keys.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(outside); string(got) != "root:x:0:0\n" {
		t.Errorf("the link's target was written: %q", got)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target has mode %v", fi.Mode().Perm())
	}
	if fi, err := os.Lstat(filepath.Join(dir, "keys.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("keys.json is %v, %v: want the new regular file", fi, err)
	}
}

// Every operation on an entry refuses a symbolic link there, whichever
// way it points, and creates or changes nothing through it.
func TestDirRefusesLinks(t *testing.T) {
	dir := foreignDir(t)
	outside := t.TempDir()
	file := filepath.Join(outside, "shadow")
	if err := os.WriteFile(file, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"file":    file,
		"dir":     outside,
		"missing": filepath.Join(outside, "created"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	d := mustOpen(t, dir)
	ops := []struct {
		name string
		link string
		op   func(name string) error
	}{
		{"Open", "file", func(n string) error { f, err := d.Open(n); closeIf(f); return err }},
		{"ReadFile", "file", func(n string) error { _, err := d.ReadFile(n); return err }},
		{"OpenEntry", "file", func(n string) error { f, _, err := d.OpenEntry(n); closeIf(f); return err }},
		{"OpenDir", "dir", func(n string) error { s, err := d.OpenDir(n); closeDir(s); return err }},
		{"Mkdir", "dir", func(n string) error { s, err := d.Mkdir(n, 0o700); closeDir(s); return err }},
		{"Mkdir of a dangling link", "missing", func(n string) error { s, err := d.Mkdir(n, 0o700); closeDir(s); return err }},
		{"Lock", "missing", func(n string) error {
			u, err := d.Lock(t.Context(), n)
			if err == nil {
				u()
			}
			return err
		}},
		{"Lock of a file", "file", func(n string) error {
			u, err := d.Lock(t.Context(), n)
			if err == nil {
				u()
			}
			return err
		}},
		{"CreateFile", "missing", func(n string) error { return d.CreateFile(n, []byte("x"), 0o600) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			err := op.op(op.link)
			if err == nil {
				t.Fatalf("%s of a symbolic link succeeded", op.name)
			}
			if op.name != "CreateFile" && !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("error does not say why: %v", err)
			}
		})
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("something was made through a link: %v", entries)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode changed to %v", fi.Mode().Perm())
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func closeDir(d *Dir) {
	if d != nil {
		d.Close()
	}
}

// A hard link in a directory another user can write could be any file of
// the file system (/etc/shadow, when the kernel lets them link it): it is
// neither read nor opened to change its owner or mode.
func TestDirRefusesHardLinks(t *testing.T) {
	dir := foreignDir(t)
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "keys.json")); err != nil {
		t.Skipf("cannot make a hard link here: %v", err)
	}
	d := mustOpen(t, dir)
	if _, err := d.ReadFile("keys.json"); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("read of a hard link: %v", err)
	}
	if _, _, err := d.OpenEntry("keys.json"); err == nil {
		t.Error("opened a hard link to change it")
	}
	// In a directory only this user can write, a hard link is its own doing.
	mine := t.TempDir()
	if err := os.Link(outside, filepath.Join(mine, "x")); err != nil {
		t.Fatal(err)
	}
	if got, err := mustOpen(t, mine).ReadFile("x"); err != nil || string(got) != "secret" {
		t.Errorf("read in a trusted directory: %q, %v", got, err)
	}
}

// A FIFO is refused at once, not waited on.
func TestDirRefusesSpecialFiles(t *testing.T) {
	dir := foreignDir(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "keys.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mustOpen(t, dir).ReadFile("keys.json"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("read of a FIFO: %v", err)
	}
}

func TestDirRefusesBadNames(t *testing.T) {
	d := mustOpen(t, t.TempDir())
	for _, name := range []string{"", ".", "..", "a/b", "/etc", "x\x00"} {
		if _, err := d.ReadFile(name); err == nil || !strings.Contains(err.Error(), "entry name") {
			t.Errorf("ReadFile(%q): %v", name, err)
		}
	}
}

// The walk from "/" follows a link only in a directory nobody else can
// write; a link the service user planted in its own directory is refused,
// for the directory and for a file read by path.
func TestOpenDirFollowsOnlyTrustedLinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Trusted: base is this user's, 0700.
	if err := os.Symlink("real", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, filepath.Join(base, "link"))
	if d.Path() != real {
		t.Errorf("opened %s, want %s", d.Path(), real)
	}
	if got, err := ReadFile(filepath.Join(base, "link", "f")); err != nil || string(got) != "ok" {
		t.Errorf("read through a trusted link: %q, %v", got, err)
	}
	if err := os.Symlink("f", filepath.Join(real, "g")); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(filepath.Join(real, "g")); err != nil || string(got) != "ok" {
		t.Errorf("read of a trusted link to a file: %q, %v", got, err)
	}

	foreign := foreignDir(t)
	if err := os.Symlink(real, filepath.Join(foreign, "policies")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "f"), filepath.Join(foreign, "keys.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(filepath.Join(foreign, "policies")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("OpenDir through a planted link: %v", err)
	}
	if _, err := MkdirAll(filepath.Join(foreign, "policies", "drafts"), 0o700); err == nil {
		t.Error("MkdirAll through a planted link succeeded")
	}
	if _, err := os.Stat(filepath.Join(real, "drafts")); err == nil {
		t.Error("MkdirAll made a directory through a planted link")
	}
	if _, err := ReadFile(filepath.Join(foreign, "keys.json")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadFile of a planted link: %v", err)
	}
}

func TestOpenDirLoop(t *testing.T) {
	base := t.TempDir()
	if err := os.Symlink("b", filepath.Join(base, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(base, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(filepath.Join(base, "a")); err == nil {
		t.Error("a link loop opened")
	}
	if _, err := OpenDir("relative/path"); err == nil {
		t.Error("a relative path opened")
	}
}

// Root creating directories and files in another user's directory gives
// them to that user; the modes are exact whatever the umask.
func TestOwnerFollowsDirectory(t *testing.T) {
	needRoot(t)
	dir := foreignDir(t)
	sub, err := MkdirAll(filepath.Join(dir, "policies", "drafts"), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.WriteFile("x", []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := sub.CreateFile("y", []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err := sub.Lock(t.Context(), "z.lock")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for p, mode := range map[string]os.FileMode{
		"policies": 0o700, "policies/drafts": 0o700, "policies/drafts/x": 0o640,
		"policies/drafts/y": 0o600, "policies/drafts/z.lock": 0o600,
	} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != serviceUID || st.Gid != serviceUID || fi.Mode().Perm() != mode {
			t.Errorf("%s is %d:%d %v, want %d:%d %v", p, st.Uid, st.Gid, fi.Mode().Perm(), serviceUID, serviceUID, mode)
		}
	}
}

func TestCreateFileNeverReplaces(t *testing.T) {
	d := mustOpen(t, t.TempDir())
	if err := d.CreateFile("v1.rego", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := d.CreateFile("v1.rego", []byte("two"), 0o600)
	if !os.IsExist(err) && !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second create: %v, want an exists error", err)
	}
	if got, _ := d.ReadFile("v1.rego"); string(got) != "one" {
		t.Errorf("content %q after a refused create", got)
	}
	names, _ := d.ReadDirNames()
	if len(names) != 1 {
		t.Errorf("left behind: %v", names)
	}
}

// RemoveAll removes a link planted in the tree, never what it points to.
func TestRemoveAllKeepsLinkTargets(t *testing.T) {
	dir := foreignDir(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "shadow"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "policies", "a", "b")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{filepath.Join(tree, "etc"), filepath.Join(dir, "policies", "f")} {
		if err := os.Symlink(outside, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, dir)
	if removed, err := d.RemoveAll("policies"); err != nil || !removed {
		t.Fatalf("RemoveAll: %v, %v", removed, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "policies")); !os.IsNotExist(err) {
		t.Errorf("policies is still there: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(outside, "shadow")); err != nil || string(got) != "secret" {
		t.Errorf("a link's target was removed: %q, %v", got, err)
	}
	if removed, err := d.RemoveAll("policies"); err != nil || removed {
		t.Errorf("RemoveAll of a missing entry: %v, %v", removed, err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if removed, err := d.Remove("l"); err != nil || !removed {
		t.Errorf("Remove of a link: %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "shadow")); err != nil {
		t.Errorf("Remove of a link removed its target: %v", err)
	}
}
