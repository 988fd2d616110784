package keys

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serviceDir is a state directory as root finds it on a host: owned by
// the service user (uid 65534 here), who can plant links in it. The
// tests that use it run as root, as `proxmox-mcp key` does; they skip
// otherwise, and fail under PMCP_REQUIRE_E2E.
func serviceDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("PMCP_REQUIRE_E2E") != "" {
			t.Fatal("this test needs root (PMCP_REQUIRE_E2E is set): it models root's CLI in the service user's directory")
		}
		t.Skip("needs root: it models root's CLI in a directory the service user owns")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The service user replaced keys.lock with a link to a file that does not
// exist: `key create` run as root must create nothing there. The old
// store opened the lock with O_CREATE through the link, so root created
// any empty file the service user named.
func TestKeyLockLinkCreatesNothing(t *testing.T) {
	dir := serviceDir(t)
	target := filepath.Join(t.TempDir(), "etc", "made-by-root")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, lockName)); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, nil)
	_, err := s.Create(context.Background(), CreateRequest{Name: "alice", Binding: readOnly})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("create with a planted lock link: %v, want a refusal naming the link", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("root created the link's target: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
		t.Errorf("keys.json was written although the lock was refused: %v", err)
	}
}

// The service user replaced keys.json with a link to a file elsewhere
// (here another store's keys.json, standing for any file root can read):
// root's `key list` and `key create` must not read through it. The old
// store read the link's target and listed its keys.
func TestKeyFileLinkNotRead(t *testing.T) {
	dir := serviceDir(t)
	other := t.TempDir()
	mustCreate(t, openStore(t, other, nil), "elsewhere", readOnly)
	target := filepath.Join(other, FileName)
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, nil)
	if recs, err := s.List(); err == nil {
		t.Fatalf("list read through the link: %v", recs)
	}
	if _, err := s.Create(context.Background(), CreateRequest{Name: "alice", Binding: readOnly}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("create with keys.json a link: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Error("the link's target changed")
	}
}
