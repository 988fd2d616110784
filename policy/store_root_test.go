package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// serviceDir is a state directory as root finds it on a host: owned by
// the service user (uid 65534 here), who can plant links in it. The tests
// that use it run as root, as `proxmox-mcp policy` does; they skip
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

// mkdirAs makes a directory under the state directory as the service user
// would have it.
func mkdirAs(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// The service user planted a link where `policy draft`, run as root,
// makes a directory (drafts/<id>, or policies/ itself) pointing at a
// directory elsewhere: the draft is refused and nothing is written or
// given away there. The old store followed the link with MkdirAll and
// wrote (and chowned) the draft's files through it.
func TestDraftRefusesPlantedDirectoryLink(t *testing.T) {
	for _, link := range []string{"policies/drafts/open", "policies/drafts", "policies"} {
		t.Run(strings.ReplaceAll(link, "/", "_"), func(t *testing.T) {
			state := serviceDir(t)
			outside := t.TempDir()
			lp := filepath.Join(state, link)
			if filepath.Dir(lp) != state {
				mkdirAs(t, filepath.Dir(lp))
			}
			if err := os.Symlink(outside, lp); err != nil {
				t.Fatal(err)
			}
			s, err := NewStore(state, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Draft(context.Background(), "open", []byte(allowAll), []byte(allowAllTests))
			if err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("draft through a planted %s link: %v, want a refusal naming the link", link, err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("written through the link: %v", entries)
			}
		})
	}
}

// The service user replaced policies.lock with a link to a file that does
// not exist: root creates nothing there. The old store opened the lock
// with O_CREATE through the link.
func TestPolicyLockLinkCreatesNothing(t *testing.T) {
	state := serviceDir(t)
	mkdirAs(t, filepath.Join(state, "policies"))
	target := filepath.Join(t.TempDir(), "made-by-root")
	if err := os.Symlink(target, filepath.Join(state, "policies", "policies.lock")); err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Draft(context.Background(), "open", []byte(allowAll), []byte(allowAllTests)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("draft with a planted lock link: %v", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("root created the link's target: %v", err)
	}
}

// What root stores for the service user is the service user's: the
// policies directory, the drafts and the index.
func TestDraftGivesFilesToStateOwner(t *testing.T) {
	state := serviceDir(t)
	s, err := NewStore(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Draft(context.Background(), "open", []byte(allowAll), []byte(allowAllTests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Activate(context.Background(), "open", res.Digest); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(filepath.Join(state, "policies"), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if uid, gid := ownerOf(fi); uid != 65534 || gid != 65534 {
			t.Errorf("%s is %d:%d, want the state directory's 65534:65534", p, uid, gid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ownerOf(fi os.FileInfo) (uid, gid uint32) {
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
