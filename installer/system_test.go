package installer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// execRoot is a root whose /usr/bin holds shell scripts.
func execRoot(t *testing.T, scripts map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(root, "usr/bin", name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// ExecRunner runs the program found under its root with the arguments as
// they are (no shell), a fixed environment, stdin, and a timeout.
func TestExecRunner(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to run the test scripts")
	}
	t.Setenv("PMCP_TEST_LEAK", "secret")
	root := execRoot(t, map[string]string{
		"args":  `for a in "$@"; do echo "[$a]"; done; echo "PATH=$PATH LC_ALL=$LC_ALL LEAK=$PMCP_TEST_LEAK"; cat`,
		"fails": `echo "create user failed: user 'x@pve' already exists" >&2; exit 255`,
		"slow":  `sleep 10`,
	})
	r := ExecRunner{Root: root}
	ctx := context.Background()
	out, _, err := r.Run(ctx, Cmd{Name: "args", Args: []string{"a b", "$(id)", "x;rm -rf /", "'q'"}, Stdin: []byte("from stdin\n")})
	if err != nil {
		t.Fatal(err)
	}
	want := "[a b]\n[$(id)]\n[x;rm -rf /]\n['q']\nPATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 LEAK=\nfrom stdin\n"
	if string(out) != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}

	_, _, err = r.Run(ctx, Cmd{Name: "fails", Args: []string{"user", "add"}})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != 255 || err.Error() != "fails user add: exit status 255: create user failed: user 'x@pve' already exists" {
		t.Errorf("error %v", err)
	}
	if !alreadyExists(err) {
		t.Error("alreadyExists does not see it")
	}

	start := time.Now()
	_, _, err = r.Run(ctx, Cmd{Name: "slow", Timeout: 200 * time.Millisecond})
	if !errors.As(err, &ce) || ce.Code != -1 || !strings.Contains(err.Error(), "no answer within 200ms") || time.Since(start) > 8*time.Second {
		t.Errorf("timeout: %v after %s", err, time.Since(start))
	}

	for _, name := range []string{"pveum", "../bin/sh", "/bin/sh", ""} {
		_, _, err = r.Run(ctx, Cmd{Name: name})
		if !errors.As(err, &ce) || ce.Code != -1 {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, _, err = r.Run(ctx, Cmd{Name: "pveum"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing program: %v", err)
	}
}

// Commands are shown as an operator would type them.
func TestCmdString(t *testing.T) {
	c := Cmd{Name: "pveum", Args: []string{"acl", "modify", "/", "--tokens", "proxmox-mcp@pve!root", "--comment", "it's here", ""}}
	if got, want := c.String(), `pveum acl modify / --tokens 'proxmox-mcp@pve!root' --comment 'it'\''s here' ''`; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

// writeFile writes atomically, gives the file its owner before opening it
// up, and reports what changed.
func TestWriteFile(t *testing.T) {
	h := newFakeHost(t)
	s := h.system()
	h.write("/etc/passwd", h.read("/etc/passwd")+"proxmox-mcp:x:999:999::/var/lib/proxmox-mcp:/usr/sbin/nologin\n", 0o644)
	h.write("/etc/group", h.read("/etc/group")+"proxmox-mcp:x:999:\n", 0o644)
	h.mkdir("/etc/x", 0o755)
	for i, step := range []struct {
		data string
		mode os.FileMode
		o    Owner
		want change
	}{
		{"a", 0o640, confOwner, created},
		{"a", 0o640, confOwner, unchanged},
		{"a", 0o600, confOwner, fixed},
		{"a", 0o600, svcOwner, fixed},
		{"b", 0o600, svcOwner, updated},
	} {
		c, err := s.writeFile("/etc/x/f", []byte(step.data), step.mode, step.o)
		if err != nil || c != step.want {
			t.Fatalf("step %d: %q %v, want %q", i, c, err, step.want)
		}
		st, _ := s.stat("/etc/x/f")
		if st.mode != step.mode || s.owner(st) != step.o || h.read("/etc/x/f") != step.data {
			t.Errorf("step %d: %s %04o", i, s.owner(st), st.mode)
		}
	}
	if _, err := s.writeFile("/etc/x/g", nil, 0o600, Owner{"nobody", "nogroup"}); err == nil || !strings.Contains(err.Error(), `there is no user "nobody"`) {
		t.Errorf("unknown owner: %v", err)
	}
	if leftovers, _ := filepath.Glob(h.hostPath("/etc/x/.*tmp*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// readableBy works out access as the kernel does, directories included.
func TestReadableBy(t *testing.T) {
	h := newFakeHost(t)
	s := h.system()
	h.mkdir("/etc/a", 0o750)
	h.write("/etc/a/f", "x", 0o640)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.chown("/etc/a", 0, 999))
	must(h.chown("/etc/a/f", 0, 999))
	if err := s.readableBy("/etc/a/f", 999, 999); err != nil {
		t.Errorf("group member: %v", err)
	}
	if err := s.readableBy("/etc/a/f", 1000, 1000); err == nil || !strings.Contains(err.Error(), "the directory /etc/a is root:999 0750") {
		t.Errorf("stranger: %v", err)
	}
	must(os.Chmod(h.hostPath("/etc/a/f"), 0o600))
	if err := s.readableBy("/etc/a/f", 999, 999); err == nil || !strings.Contains(err.Error(), "permission denied (it is root:999 0600)") {
		t.Errorf("owner only: %v", err)
	}
	if err := s.readableBy("/etc/a/none", 0, 0); err == nil {
		t.Error("a missing file is readable")
	}
}
