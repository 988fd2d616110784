package keys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// fastParams keep tests quick; a few tests use DefaultParams.
var fastParams = Params{N: 1 << 10, R: 8, P: 1}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB, dir string, c *clock) *Store {
	t.Helper()
	opts := Options{Params: fastParams}
	if c != nil {
		opts.Now = c.Now
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustCreate(t testing.TB, s *Store, name string, b Binding) Created {
	t.Helper()
	c, err := s.Create(context.Background(), CreateRequest{Name: name, Binding: b})
	if err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	return c
}

var readOnly = Binding{Profile: "read-only"}

func TestCreateListShow(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openStore(t, dir, c)
	alice := mustCreate(t, s, "alice", readOnly)
	bob := mustCreate(t, s, "bob", Binding{Policy: "vm-100-199"})
	if alice.Record.ID == bob.Record.ID {
		t.Fatal("two keys share an id")
	}
	tok, err := ParseToken(alice.Key.Reveal())
	if err != nil || tok.ID != alice.Record.ID {
		t.Fatalf("the new key %v does not parse to its record's id: %v", tok.ID, err)
	}
	recs, err := s.List()
	if err != nil || len(recs) != 2 || recs[0].Name != "alice" || recs[1].Name != "bob" {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	for _, ref := range []string{"alice", alice.Record.ID} {
		got, err := s.Get(ref)
		if err != nil || got.ID != alice.Record.ID {
			t.Errorf("Get(%q) = %v, %v", ref, got.ID, err)
		}
	}
	if _, err := s.Get("carol"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(carol) err = %v, want ErrNotFound", err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("keys.json mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(s.Path())
	if strings.Contains(string(data), alice.Key.Reveal()[len(Prefix)+IDLen+1:]) {
		t.Error("keys.json contains a secret")
	}
}

func TestCreateRejects(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openStore(t, dir, c)
	s.opts.CheckBinding = func(b Binding) error {
		if b.Profile == "superuser" {
			return fmt.Errorf("profile %q does not exist", b.Profile)
		}
		return nil
	}
	mustCreate(t, s, "alice", readOnly)
	before, _ := os.ReadFile(s.Path())
	tests := []struct {
		name string
		req  CreateRequest
		want string
	}{
		{"duplicate name", CreateRequest{Name: "alice", Binding: readOnly}, `the name "alice" belongs to key`},
		{"empty name", CreateRequest{Name: "", Binding: readOnly}, `name "": want 1 to 64 characters`},
		{"name with space", CreateRequest{Name: "a b", Binding: readOnly}, `name "a b": want`},
		{"name like an id", CreateRequest{Name: "abcdefghijklmnop", Binding: readOnly}, `has the form of a key id`},
		{"no binding", CreateRequest{Name: "x"}, `needs a profile or a policy`},
		{"both", CreateRequest{Name: "x", Binding: Binding{Profile: "admin", Policy: "p"}}, `not both`},
		{"bad profile syntax", CreateRequest{Name: "x", Binding: Binding{Profile: "Admin!"}}, `profile "Admin!": want`},
		{"unknown profile", CreateRequest{Name: "x", Binding: Binding{Profile: "superuser"}}, `profile "superuser" does not exist`},
		{"past expiry", CreateRequest{Name: "x", Binding: readOnly, Expires: c.Now().Add(-time.Hour)}, `is not in the future`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Create(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Create: err = %v, want %q", err, tt.want)
			}
			after, _ := os.ReadFile(s.Path())
			if string(after) != string(before) {
				t.Fatal("a refused Create changed keys.json")
			}
		})
	}
}

func TestRotateAndRevokeByName(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	old := mustCreate(t, s, "alice", readOnly)
	c.Add(time.Minute)
	rot, err := s.Rotate(ctx, "alice", RotateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rot.Record.Name != "alice" || rot.Record.RotatedFrom != old.Record.ID || rot.Record.Profile != "read-only" {
		t.Fatalf("rotated record %+v", rot.Record)
	}
	prev, _ := s.Get(old.Record.ID)
	if prev.StateAt(c.Now()) != StateRevoked || prev.RotatedTo != rot.Record.ID {
		t.Fatalf("old key after rotation: %+v", prev)
	}
	// The bridge's bug: after a rotation, revoking by name hit the old record.
	got, err := s.Get("alice")
	if err != nil || got.ID != rot.Record.ID {
		t.Fatalf("Get(alice) after rotation = %s, %v; want the new key %s", got.ID, err, rot.Record.ID)
	}
	rot2, err := s.Rotate(ctx, "alice", RotateRequest{})
	if err != nil {
		t.Fatalf("second rotation by name: %v", err)
	}
	rev, err := s.Revoke(ctx, "alice")
	if err != nil || rev.ID != rot2.Record.ID {
		t.Fatalf("Revoke(alice) = %s, %v; want the current key %s", rev.ID, err, rot2.Record.ID)
	}
	if _, err := s.Revoke(ctx, "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Revoke(alice) with no current key: %v, want ErrNotFound", err)
	}
	if _, err := s.Revoke(ctx, rot2.Record.ID); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "already revoked") {
		t.Errorf("second Revoke by id: %v", err)
	}
	if _, err := s.Rotate(ctx, old.Record.ID, RotateRequest{}); !errors.Is(err, ErrConflict) {
		t.Errorf("Rotate of a revoked key: %v, want ErrConflict", err)
	}
	// The name is free again.
	mustCreate(t, s, "alice", readOnly)
}

func TestRotateGrace(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	old := mustCreate(t, s, "ci", Binding{Profile: "operator"})
	rot, err := s.Rotate(ctx, "ci", RotateRequest{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	prev, _ := s.Get(old.Record.ID)
	if st := prev.StateAt(c.Now()); st != StateSuperseded {
		t.Fatalf("old key state %s, want superseded during the grace", st)
	}
	if got, _ := s.Get("ci"); got.ID != rot.Record.ID {
		t.Fatalf("name resolves to %s during the grace, want the new key", got.ID)
	}
	c.Add(time.Hour)
	if st := prev.StateAt(c.Now()); st != StateExpired {
		t.Fatalf("old key state %s after the grace, want expired", st)
	}
	if _, err := s.Rotate(ctx, "ci", RotateRequest{Grace: -time.Second}); err == nil {
		t.Fatal("negative grace accepted")
	}
}

func TestInvalidFileIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	mustCreate(t, s, "alice", readOnly)
	good, _ := os.ReadFile(s.Path())
	tests := map[string]string{
		"unknown field": strings.Replace(string(good), `"version": 1`, `"version": 1, "extra": true`, 1),
		"bad version":   strings.Replace(string(good), `"version": 1`, `"version": 7`, 1),
		"truncated":     string(good[:len(good)/2]),
		"huge N":        strings.Replace(string(good), `"n": 1024`, `"n": 1073741824`, 1),
		"bad id":        strings.Replace(string(good), `"id": "`, `"id": "X`, 1),
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(s.Path(), []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			fresh := openStore(t, dir, nil)
			if _, err := fresh.List(); err == nil || !strings.Contains(err.Error(), "is invalid") {
				t.Fatalf("List of a bad file: %v", err)
			}
			if _, err := fresh.Create(context.Background(), CreateRequest{Name: "bob", Binding: readOnly}); err == nil || !strings.Contains(err.Error(), "left alone") {
				t.Fatalf("Create over a bad file: %v", err)
			}
			after, _ := os.ReadFile(s.Path())
			if string(after) != bad {
				t.Fatal("a bad file was overwritten")
			}
		})
	}
}

// Two stores (the CLI and the daemon, or two CLIs) writing at once lose
// nothing: every update happens under the flock on a fresh read.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	dir := t.TempDir()
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := openStore(t, dir, nil) // its own lock file descriptor
			for i := range each {
				if _, err := s.Create(context.Background(), CreateRequest{Name: fmt.Sprintf("w%d-k%d", w, i), Binding: readOnly}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs, err := openStore(t, dir, nil).List()
	if err != nil || len(recs) != writers*each {
		t.Fatalf("after concurrent writes: %d records, %v; want %d", len(recs), err, writers*each)
	}
}

func TestLockWaitsForHolder(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	unlock, err := d.Lock(context.Background(), lockName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Create(ctx, CreateRequest{Name: "alice", Binding: readOnly}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create while another holds the lock: %v, want a deadline error", err)
	}
	unlock()
	mustCreate(t, s, "alice", readOnly)
}

// Run as root (the CLI on a PVE host), the store gives keys.json and its lock
// to the state directory's owner, the service user.
func TestOwnershipFollowsStateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	dir := t.TempDir()
	const uid, gid = 65534, 65534
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, nil)
	mustCreate(t, s, "alice", readOnly)
	if _, err := s.Rotate(context.Background(), "alice", RotateRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileName, lockName} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s is owned by %d:%d, want the state directory's %d:%d", name, st.Uid, st.Gid, uid, gid)
		}
		if name == FileName && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", name, fi.Mode().Perm())
		}
	}
}

// The daemon's store sees a change made by another process on its next
// look, even two changes within one timestamp tick.
func TestSnapshotSeesChanges(t *testing.T) {
	dir := t.TempDir()
	daemon := openStore(t, dir, nil)
	cliStore := openStore(t, dir, nil)
	sn, err := daemon.Snapshot()
	if err != nil || len(sn.Records()) != 0 {
		t.Fatalf("empty store: %v, %v", sn, err)
	}
	a := mustCreate(t, cliStore, "alice", readOnly)
	sn, _ = daemon.Snapshot()
	if sn.Lookup(a.Record.ID) == nil {
		t.Fatal("daemon did not see the new key")
	}
	same, _ := daemon.Snapshot()
	if _, err := cliStore.Revoke(context.Background(), a.Record.ID); err != nil {
		t.Fatal(err)
	}
	sn, _ = daemon.Snapshot()
	if sn.Lookup(a.Record.ID).Revoked.IsZero() {
		t.Fatal("daemon did not see the revocation")
	}
	if same == sn {
		t.Fatal("snapshot not replaced after a change")
	}
	// A change that keeps size, inode-independent timestamps: rewrite the
	// file in place with identical length and the old mtime.
	data, _ := os.ReadFile(daemon.Path())
	fi, _ := os.Stat(daemon.Path())
	sn, _ = daemon.Snapshot()
	edited := strings.Replace(string(data), `"alice"`, `"alicf"`, 1)
	if err := os.WriteFile(daemon.Path(), []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(daemon.Path(), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	sn2, _ := daemon.Snapshot()
	if sn2.Lookup(a.Record.ID).Name != "alicf" {
		t.Fatal("an in-place edit with the same size and mtime within the racy window went unseen")
	}
	_ = sn
}

// A broken keys.json does not take the daemon down: the last good keys stay
// in force until the file is fixed.
func TestSnapshotKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	a := mustCreate(t, s, "alice", readOnly)
	if _, err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s.opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	for range 5 {
		sn, err := s.Snapshot()
		if err != nil || sn.Lookup(a.Record.ID) == nil {
			t.Fatalf("after a broken write: %v, %v; want the last good keys", sn, err)
		}
	}
	if n := strings.Count(logged.String(), "keeping the last good key set"); n != 1 {
		t.Errorf("the broken file was logged %d times in 5 requests, want once:\n%s", n, logged.String())
	}
}
