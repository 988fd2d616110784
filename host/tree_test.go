package host

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// bed is a host in a temporary directory: an allowed root (read and
// write), a read-only root, a secret directory and a secret file outside
// them, both refused.
type bed struct {
	dir, root, ro, secretDir, secretFile string
	tree                                 *Tree
}

func newBed(t testing.TB) *bed {
	t.Helper()
	// The real path: the tree refuses a root reached through a link.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &bed{
		dir: dir, root: filepath.Join(dir, "root"), ro: filepath.Join(dir, "ro"),
		secretDir: filepath.Join(dir, "state"), secretFile: filepath.Join(dir, "shadow"),
	}
	for _, d := range []string{b.root, b.ro, b.secretDir, filepath.Join(b.root, "sub")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(b.secretFile, []byte("root:$y$secret\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(b.secretDir, "keys.json"), []byte(`{"keys":[]}`), 0o600))
	must(t, os.WriteFile(filepath.Join(b.root, "syslog"), []byte("line one\nline two\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(b.ro, "motd"), []byte("hello\n"), 0o644))
	b.tree, err = OpenTree(
		[]Root{{Path: b.root, Write: true}, {Path: b.ro}},
		Refused{Dirs: []string{b.secretDir}, Files: []string{b.secretFile, filepath.Join(b.root, "sub", "*.key")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.tree.Close() })
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (mounts, owners)")
	}
}

// Every way out of a root, or into what is refused, is refused after
// canonicalization, and says which rule it broke.
func TestTreeRefusesEscapes(t *testing.T) {
	b := newBed(t)
	must(t, os.Symlink(b.secretFile, filepath.Join(b.root, "to-shadow")))
	must(t, os.Symlink("syslog", filepath.Join(b.root, "to-syslog")))
	must(t, os.Symlink(b.dir, filepath.Join(b.root, "up")))
	must(t, os.Link(b.secretFile, filepath.Join(b.root, "shadow-link")))
	must(t, os.Link(filepath.Join(b.secretDir, "keys.json"), filepath.Join(b.root, "keys-link")))
	must(t, unix.Mkfifo(filepath.Join(b.root, "fifo"), 0o600))
	must(t, os.WriteFile(filepath.Join(b.root, "sub", "node.key"), []byte("k"), 0o600))

	for _, tc := range []struct{ name, path, rule string }{
		{"dot-dot", b.root + "/../shadow", `the element ".."`},
		{"link out", b.root + "/to-shadow", "symbolic link"},
		{"link inside", b.root + "/to-syslog", "symbolic link"},
		{"link on the way", b.root + "/up/shadow", "symbolic link"},
		{"hard link to a refused file", b.root + "/shadow-link", "under another name"},
		{"hard link into a refused directory", b.root + "/keys-link", "under another name"},
		{"refused pattern", b.root + "/sub/node.key", "refused whatever the policy"},
		{"refused directory", b.secretDir + "/keys.json", "not beneath an allowed root"},
		{"outside every root", "/etc/passwd", "not beneath an allowed root"},
		{"fifo", b.root + "/fifo", "is a fifo"},
		{"control character", b.root + "/a\x00b", "control character"},
		{"long name", b.root + "/" + strings.Repeat("n", 300), "element of 300 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.tree.Read(ReadRequest{Path: tc.path})
			if err == nil || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("Read(%q) = %v; want a refusal saying %q", tc.path, err, tc.rule)
			}
		})
	}
	// A refused directory inside a root is refused by name too.
	tree, err := OpenTree([]Root{{Path: b.dir}}, Refused{Dirs: []string{b.secretDir}})
	must(t, err)
	defer tree.Close()
	if _, err := tree.Read(ReadRequest{Path: b.secretDir + "/keys.json"}); !errors.Is(err, ErrRefused) {
		t.Errorf("a file of a refused directory beneath a root: %v; want ErrRefused", err)
	}
	if _, err := tree.List(ListRequest{Path: b.secretDir}); !errors.Is(err, ErrRefused) {
		t.Errorf("listing a refused directory: %v; want ErrRefused", err)
	}
}

// /proc/self/root is a magic link, and proc is the kernel's: neither is
// read even under a root of "/" that crosses mounts.
func TestTreeRefusesKernelFiles(t *testing.T) {
	tree, err := OpenTree([]Root{{Path: "/", CrossMounts: true}}, DefaultRefused(SecretPaths{}))
	must(t, err)
	defer tree.Close()
	for _, p := range []string{"/proc/self/root/etc/hostname", "/proc/self/environ", "/proc/1/cmdline", "/sys/kernel/notes"} {
		if _, err := tree.Read(ReadRequest{Path: p}); err == nil {
			t.Errorf("Read(%s) succeeded; want it refused", p)
		}
	}
	if _, err := tree.Read(ReadRequest{Path: "/etc/shadow"}); !errors.Is(err, ErrRefused) {
		t.Errorf("Read(/etc/shadow) = %v; want ErrRefused", err)
	}
}

// A bind mount inside a root that leads elsewhere is refused unless the
// root allows crossing mounts, and then a refused directory brought in by
// it is still refused by its identity.
func TestTreeRefusesBindMounts(t *testing.T) {
	needRoot(t)
	b := newBed(t)
	mnt := filepath.Join(b.root, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	if err := unix.Mount(b.secretDir, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	if _, err := b.tree.Read(ReadRequest{Path: mnt + "/keys.json"}); err == nil || !strings.Contains(err.Error(), "crosses a mount point") {
		t.Errorf("through a bind mount: %v; want a refusal naming the mount point", err)
	}
	cross, err := OpenTree([]Root{{Path: b.root, CrossMounts: true}}, Refused{Dirs: []string{b.secretDir}})
	must(t, err)
	defer cross.Close()
	if _, err := cross.Read(ReadRequest{Path: mnt + "/keys.json"}); !errors.Is(err, ErrRefused) {
		t.Errorf("a refused directory bind-mounted into a root that crosses mounts: %v; want ErrRefused", err)
	}
	if _, err := cross.List(ListRequest{Path: mnt}); !errors.Is(err, ErrRefused) {
		t.Errorf("listing it: %v; want ErrRefused", err)
	}
}

func TestOpenTreeRefusesLinkedRoot(t *testing.T) {
	b := newBed(t)
	link := filepath.Join(b.dir, "link")
	must(t, os.Symlink(b.root, link))
	if _, err := OpenTree([]Root{{Path: link}}, Refused{}); err == nil || !strings.Contains(err.Error(), "name the real directory") {
		t.Errorf("a root reached through a link: %v; want it refused", err)
	}
}

// Pages of a file put together are the file; a text page never ends in
// the middle of a character; every page carries the whole file's hash.
func TestReadPages(t *testing.T) {
	b := newBed(t)
	content := []byte(strings.Repeat("héllo wörld ✓\n", 1000))
	must(t, os.WriteFile(filepath.Join(b.root, "utf8.log"), content, 0o644))
	want := sha256.Sum256(content)
	var got []byte
	for off := int64(0); ; {
		c, err := b.tree.Read(ReadRequest{Path: b.root + "/utf8.log", Offset: off, Length: 1000})
		must(t, err)
		if c.Encoding != "utf-8" || c.SHA256 != hex.EncodeToString(want[:]) || c.Size != int64(len(content)) {
			t.Fatalf("page at %d: encoding %s, sha256 %s, size %d", off, c.Encoding, c.SHA256, c.Size)
		}
		if c.Length > 1000 || c.Length < 997 && !c.EOF {
			t.Fatalf("page at %d has %d bytes; want 997 to 1000", off, c.Length)
		}
		got = append(got, c.Data...)
		off += int64(c.Length)
		if c.EOF {
			break
		}
	}
	if string(got) != string(content) {
		t.Fatalf("the pages put together differ from the file")
	}

	bin := []byte{0, 1, 2, 0xff, 'a'}
	must(t, os.WriteFile(filepath.Join(b.root, "bin"), bin, 0o644))
	c, err := b.tree.Read(ReadRequest{Path: b.root + "/bin"})
	must(t, err)
	if dec, _ := base64.StdEncoding.DecodeString(c.Data); c.Encoding != "base64" || string(dec) != string(bin) || !c.EOF {
		t.Errorf("binary: %+v", c)
	}
	if _, err := b.tree.Read(ReadRequest{Path: b.root + "/bin", Offset: 6}); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("offset past the end: %v", err)
	}
	if _, err := b.tree.Read(ReadRequest{Path: b.root + "/bin", Length: MaxReadLength + 1}); err == nil || !strings.HasPrefix(err.Error(), "length ") {
		t.Errorf("too long a page: %v", err)
	}
	if _, err := b.tree.Read(ReadRequest{Path: b.root + "/missing"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v; want fs.ErrNotExist", err)
	}
}

func TestListPages(t *testing.T) {
	b := newBed(t)
	for _, n := range []string{"c", "a", "b", "d", "e"} {
		must(t, os.WriteFile(filepath.Join(b.ro, n), nil, 0o640))
	}
	must(t, os.Symlink("/etc/shadow", filepath.Join(b.ro, "link")))
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		l, err := b.tree.List(ListRequest{Path: b.ro, After: after, Limit: 3})
		must(t, err)
		if l.Total != 7 {
			t.Fatalf("total %d; want 7", l.Total)
		}
		for _, e := range l.Entries {
			names = append(names, e.Name)
			if e.Name == "link" && (e.Type != "symlink" || e.Target != "/etc/shadow") {
				t.Errorf("the link: %+v", e)
			}
			if e.Name == "a" && (e.Mode != "0640" || e.Type != "file" || e.Path != b.ro+"/a") {
				t.Errorf("a: %+v", e)
			}
		}
		if l.Next == "" {
			break
		}
		after = l.Next
	}
	if got := strings.Join(names, ","); got != "a,b,c,d,e,link,motd" {
		t.Errorf("names %s; want a,b,c,d,e,link,motd once each, sorted", got)
	}
	e, err := b.tree.Stat(b.ro + "/link")
	must(t, err)
	if e.Type != "symlink" || e.Target != "/etc/shadow" {
		t.Errorf("Stat of a link: %+v; want the link itself", e)
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestWrite(t *testing.T) {
	b := newBed(t)
	p := b.root + "/sub/app.conf"
	data := []byte("a = 1\n")
	w, err := b.tree.Write(WriteRequest{Path: p, Data: data, SHA256: sum(data), Create: "new"})
	must(t, err)
	if !w.Created || w.Previous != "" || w.Mode != "0644" {
		t.Errorf("create: %+v", w)
	}
	if got, _ := os.ReadFile(p); string(got) != string(data) {
		t.Fatalf("the file holds %q", got)
	}
	must(t, os.Chmod(p, 0o600))

	// Conditional: only over the content the caller saw.
	next := []byte("a = 2\n")
	if _, err := b.tree.Write(WriteRequest{Path: p, Data: next, SHA256: sum(next), IfSHA256: sum([]byte("other"))}); !errors.Is(err, ErrConflict) {
		t.Errorf("a stale if_sha256: %v; want ErrConflict", err)
	}
	if _, err := b.tree.Write(WriteRequest{Path: p, Data: next, SHA256: sum(next), Create: "new"}); !errors.Is(err, ErrConflict) {
		t.Errorf("create new over an existing file: %v; want ErrConflict", err)
	}
	w, err = b.tree.Write(WriteRequest{Path: p, Data: next, SHA256: sum(next), IfSHA256: sum(data)})
	must(t, err)
	if w.Created || w.Previous != sum(data) || w.Mode != "0600" {
		t.Errorf("replace: %+v; want the old hash and the old mode kept", w)
	}

	for _, tc := range []struct {
		name string
		req  WriteRequest
		rule string
	}{
		{"data changed on the way", WriteRequest{Path: p, Data: next, SHA256: sum(data)}, "changed or cut on the way"},
		{"setuid", WriteRequest{Path: p, Data: next, SHA256: sum(next), Mode: ptr(uint32(0o4755))}, "setuid"},
		{"read-only root", WriteRequest{Path: b.ro + "/motd", Data: next, SHA256: sum(next)}, "allows no writes"},
		{"refused pattern", WriteRequest{Path: b.root + "/sub/x.key", Data: next, SHA256: sum(next)}, "refused whatever the policy"},
		{"outside", WriteRequest{Path: b.dir + "/new", Data: next, SHA256: sum(next)}, "not beneath an allowed root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := b.tree.Write(tc.req); err == nil || !strings.Contains(err.Error(), tc.rule) {
				t.Errorf("%v; want a refusal saying %q", err, tc.rule)
			}
		})
	}

	// A link at the target is refused, and what it points to unchanged.
	must(t, os.Symlink(b.secretFile, b.root+"/evil"))
	if _, err := b.tree.Write(WriteRequest{Path: b.root + "/evil", Data: next, SHA256: sum(next)}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("writing through a link: %v", err)
	}
	if got, _ := os.ReadFile(b.secretFile); !strings.HasPrefix(string(got), "root:") {
		t.Errorf("the link's target was changed: %q", got)
	}
	must(t, os.Link(b.secretFile, b.root+"/hard"))
	if _, err := b.tree.Write(WriteRequest{Path: b.root + "/hard", Data: next, SHA256: sum(next)}); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("writing a hard-linked file: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(next) {
		t.Errorf("a refused write changed the file: %q", got)
	}
	left, _ := filepath.Glob(b.root + "/sub/.*tmp*")
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteOwner(t *testing.T) {
	needRoot(t)
	b := newBed(t)
	data := []byte("x")
	w, err := b.tree.Write(WriteRequest{Path: b.root + "/owned", Data: data, SHA256: sum(data), UID: ptr(4321), GID: ptr(4322), Mode: ptr(uint32(0o640))})
	must(t, err)
	var st unix.Stat_t
	must(t, unix.Lstat(b.root+"/owned", &st))
	if st.Uid != 4321 || st.Gid != 4322 || st.Mode&0o777 != 0o640 || w.UID != 4321 {
		t.Errorf("owner %d:%d mode %o (%+v); want 4321:4322 0640", st.Uid, st.Gid, st.Mode&0o777, w)
	}
}

func ptr[T any](v T) *T { return &v }

// TestPVEConfigurationIsNeverWritten: even beneath a root that allows
// writes, nothing under /etc/pve is written as a file (a guest's
// configuration written so would attach the protected LV or bind-mount
// the repository past PVE's checks and the guard); it is still read.
func TestPVEConfigurationIsNeverWritten(t *testing.T) {
	tree, err := OpenTree([]Root{{Path: "/etc", Write: true}}, DefaultRefused(SecretPaths{}))
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for _, p := range []string{"/etc/pve/qemu-server/100.conf", "/etc/pve/nodes/pve1/lxc/200.conf", "/etc/pve/storage.cfg", "/etc/pve"} {
		if _, err := tree.precheck("path", p, true); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "PVE's API") {
			t.Errorf("a write to %s: %v", p, err)
		}
		if _, err := tree.cleanWritable("writable[0]", p); !errors.Is(err, ErrRefused) {
			t.Errorf("%s writable by a command: %v", p, err)
		}
	}
	if _, err := tree.precheck("path", "/etc/pve/qemu-server/100.conf", false); err != nil {
		t.Errorf("a read of a guest's configuration: %v", err)
	}
	if _, err := tree.precheck("path", "/etc/hosts", true); err != nil {
		t.Errorf("a write beside /etc/pve: %v", err)
	}
}
