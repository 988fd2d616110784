package pki

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A PKI directory someone else owns (here uid 65534, as when pki.dir is
// put under the service user's state directory) with its lock file
// replaced by a link to a file that does not exist: `pki init`, run as
// root, creates nothing through it. The old lock opened the link with
// O_CREATE.
func TestLockLinkCreatesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("PMCP_REQUIRE_E2E") != "" {
			t.Fatal("this test needs root (PMCP_REQUIRE_E2E is set)")
		}
		t.Skip("needs root: it models root's `pki init` in a directory another user owns")
	}
	dir := filepath.Join(t.TempDir(), "pki")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "made-by-root")
	if err := os.Symlink(target, filepath.Join(dir, lockFileName)); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Dir: dir, Hostname: "pve1", KeyGroup: OwnerOnly, Now: (&clock{now: t0}).Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Init(context.Background(), testNames(t), false); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("init with a planted lock link: %v", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("root created the link's target: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, CAKeyFile)); !os.IsNotExist(err) {
		t.Errorf("the CA key was written although the lock was refused: %v", err)
	}
}
