package keys

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeShared is a shared copy of keys.json held in memory: Change stages
// it in a fresh directory, runs fn there, keeps what fn wrote and mirrors
// it into the node's state directory, as package cluster does on pmxcfs.
type fakeShared struct {
	t       *testing.T
	data    []byte // the shared keys.json; nil: none yet
	mirror  string // the node's state directory
	refuse  error  // when set, Change fails before fn runs (no quorum)
	changes int
}

func (f *fakeShared) Change(ctx context.Context, fn func(stateDir string) error) error {
	if f.refuse != nil {
		return f.refuse
	}
	stage := f.t.TempDir()
	if f.data != nil {
		if err := os.WriteFile(filepath.Join(stage, FileName), f.data, 0o600); err != nil {
			return err
		}
	}
	if err := fn(stage); err != nil {
		return err
	}
	out, err := os.ReadFile(filepath.Join(stage, FileName))
	if err != nil {
		return err
	}
	f.data, f.changes = out, f.changes+1
	return os.WriteFile(filepath.Join(f.mirror, FileName), out, 0o600)
}

// With Options.Shared every change is made on the shared copy and seen
// through the mirror; a change the shared copy refuses, or one whose
// checks fail on the shared records, stores nothing anywhere.
func TestSharedChanges(t *testing.T) {
	dir := t.TempDir()
	sh := &fakeShared{t: t, mirror: dir}
	s, err := Open(dir, Options{Params: fastParams, Shared: sh})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	alice := mustCreate(t, s, "alice", Binding{Profile: "operator"})
	if sh.changes != 1 {
		t.Fatalf("changes made through Shared: %d, want 1", sh.changes)
	}
	recs, err := DecodeFile(sh.data)
	if err != nil || len(recs) != 1 || recs[0].ID != alice.Record.ID {
		t.Fatalf("shared keys.json holds %+v (%v), want alice's record", recs, err)
	}
	if got, err := s.Get("alice"); err != nil || got.ID != alice.Record.ID {
		t.Fatalf("Get(alice) through the mirror: %+v, %v", got, err)
	}

	// A record another node made is in the shared copy only: the name
	// check runs on the shared records, not on this node's mirror.
	other, err := Open(t.TempDir(), Options{Params: fastParams})
	if err != nil {
		t.Fatal(err)
	}
	bob := mustCreate(t, other, "bob", Binding{Profile: "read-only"})
	if sh.data, err = EncodeFile(append(recs, bob.Record)); err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(sh.data)
	if _, err := s.Create(ctx, CreateRequest{Name: "bob", Binding: Binding{Profile: "operator"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("Create(bob) with bob in the shared copy: %v, want ErrConflict", err)
	}
	if !bytes.Equal(sh.data, before) {
		t.Fatal("a refused change altered the shared copy")
	}
	if _, err := s.Revoke(ctx, bob.Record.ID); err != nil {
		t.Fatalf("Revoke(bob) made on the shared copy: %v", err)
	}
	if got, err := s.Get(bob.Record.ID); err != nil || got.Revoked.IsZero() {
		t.Fatalf("bob after the revocation, through the mirror: %+v, %v", got, err)
	}

	sh.refuse = errors.New("this node has no quorum")
	before, mirrored := bytes.Clone(sh.data), mustRead(t, filepath.Join(dir, FileName))
	if _, err := s.Create(ctx, CreateRequest{Name: "carol", Binding: Binding{Profile: "operator"}}); err == nil || err.Error() != "this node has no quorum" {
		t.Fatalf("Create without quorum: %v, want the shared copy's refusal", err)
	}
	if !bytes.Equal(sh.data, before) || !bytes.Equal(mustRead(t, filepath.Join(dir, FileName)), mirrored) {
		t.Fatal("a refused change altered the shared copy or the mirror")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DecodeFile and EncodeFile are the Store's own format: what one writes
// the other reads back, and a file the Store would refuse is refused.
func TestFileFormat(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	a := mustCreate(t, s, "alice", Binding{Profile: "operator"})
	data, err := EncodeFile([]Record{a.Record})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := mustRead(t, s.Path())
	if !bytes.Equal(data, onDisk) {
		t.Fatalf("EncodeFile:\n%s\nthe Store wrote:\n%s", data, onDisk)
	}
	if recs, err := DecodeFile(data); err != nil || len(recs) != 1 || recs[0].ID != a.Record.ID {
		t.Fatalf("DecodeFile: %+v, %v", recs, err)
	}
	for name, bad := range map[string]string{
		"not JSON":        "{",
		"unknown member":  `{"version":1,"keys":[],"extra":1}`,
		"other version":   `{"version":2,"keys":[]}`,
		"invalid record":  `{"version":1,"keys":[{"id":"x"}]}`,
		"trailing object": `{"version":1,"keys":[]} {}`,
	} {
		if _, err := DecodeFile([]byte(bad)); err == nil {
			t.Errorf("DecodeFile(%s) accepted %q", name, bad)
		}
	}
	if empty, err := EncodeFile(nil); err != nil || !bytes.Contains(empty, []byte(`"keys": []`)) {
		t.Errorf("EncodeFile(nil) = %s, %v; want an empty key list", empty, err)
	}
}
