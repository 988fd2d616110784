package policy

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readTree reads a state directory's policies/ as CheckTree takes it.
func readTree(t *testing.T, state string) map[string][]byte {
	t.Helper()
	root := filepath.Join(state, policiesDir)
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".lock") {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A store with an active version and a pending draft, as a tree.
func storeTree(t *testing.T) map[string][]byte {
	t.Helper()
	state := t.TempDir()
	s, err := NewStore(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := s.Draft(ctx, "ops", []byte(allowAll), []byte(allowAllTests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Activate(ctx, "ops", d.Digest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Draft(ctx, "ops", []byte(allowAll+"# v2\n"), []byte(allowAllTests)); err != nil {
		t.Fatal(err)
	}
	return readTree(t, state)
}

// CheckTree keeps exactly the files the index names, each checked against
// the index, and refuses a tree with any of them missing or altered, or an
// index naming paths outside the layout.
func TestCheckTree(t *testing.T) {
	tree := storeTree(t)
	tree["stray.txt"] = []byte("not named by the index")
	got, err := CheckTree(tree)
	if err != nil {
		t.Fatalf("CheckTree of a store's own files: %v", err)
	}
	// Named: the index, v1 and its tests, the pending draft and its tests.
	// The activated draft's files stay on disk but the index no longer
	// names them.
	var names []string
	for p := range got {
		names = append(names, p)
	}
	slices.Sort(names)
	if len(names) != 5 || !strings.HasPrefix(names[0], "drafts/ops/") || names[1] != strings.TrimSuffix(names[0], ".rego")+"_test.rego" || names[2] != "index.json" || names[3] != "ops/v1.rego" || names[4] != "ops/v1_test.rego" {
		t.Fatalf("CheckTree kept %v, want index.json, ops/v1.rego, ops/v1_test.rego and the pending draft's two files", names)
	}
	if empty, err := CheckTree(map[string][]byte{}); err != nil || len(empty) != 0 {
		t.Fatalf("CheckTree of no files: %v, %v; want an empty store", empty, err)
	}
	var draft string
	for p := range got {
		if strings.HasPrefix(p, "drafts/") && !strings.HasSuffix(p, "_test.rego") {
			draft = p
		}
	}
	digest := strings.TrimSuffix(filepath.Base(draft), ".rego")
	cases := []struct {
		name string
		edit func(m map[string][]byte)
		want string
	}{
		{"missing version", func(m map[string][]byte) { delete(m, "ops/v1.rego") }, "ops/v1.rego: the index names it but it is missing"},
		{"altered version", func(m map[string][]byte) { m["ops/v1.rego"] = append(m["ops/v1.rego"], '#') }, "ops/v1.rego: its digest is"},
		{"altered draft", func(m map[string][]byte) { m[draft] = []byte("package x\n") }, draft + ": its digest is"},
		{"missing draft tests", func(m map[string][]byte) { delete(m, strings.TrimSuffix(draft, ".rego")+"_test.rego") }, "is missing"},
		{"index not JSON", func(m map[string][]byte) { m["index.json"] = []byte("{") }, "index.json"},
		{"draft id outside the layout", func(m map[string][]byte) {
			m["index.json"] = []byte(strings.Replace(string(m["index.json"]), `"drafts": {
    "ops"`, `"drafts": {
    "../ops"`, 1))
		}, `draft id "../ops"`},
		{"draft digest outside the layout", func(m map[string][]byte) {
			m["index.json"] = []byte(strings.Replace(string(m["index.json"]), `"digest": "`+digest, `"digest": "../../`+digest[6:], 1))
		}, "has no sha256 digest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := map[string][]byte{}
			for k, v := range got {
				m[k] = v
			}
			c.edit(m)
			if _, err := CheckTree(m); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckTree: %v, want an error containing %q\nindex:\n%s", err, c.want, m["index.json"])
			}
		})
	}
}

// stagedShared is a shared copy of policies/ in a directory of its own:
// Change copies it into a fresh state directory, runs fn there and copies
// the result back, as package cluster does with pmxcfs.
type stagedShared struct {
	t      *testing.T
	shared string
}

func (s *stagedShared) Change(ctx context.Context, fn func(string) error) error {
	stage := s.t.TempDir()
	if err := os.CopyFS(filepath.Join(stage, policiesDir), os.DirFS(filepath.Join(s.shared, policiesDir))); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := fn(stage); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(s.shared, policiesDir)); err != nil {
		return err
	}
	return os.CopyFS(filepath.Join(s.shared, policiesDir), os.DirFS(filepath.Join(stage, policiesDir)))
}

// Through NewSharedStore a draft and its activation are made on the shared
// copy: a draft made there (by another node) is activated here by its
// digest, and this node's own policies/ is not written.
func TestSharedStoreChanges(t *testing.T) {
	shared, mirror := t.TempDir(), t.TempDir()
	ctx := context.Background()
	elsewhere, err := NewStore(shared, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := elsewhere.Draft(ctx, "ops", []byte(allowAll), []byte(allowAllTests))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSharedStore(mirror, nil, &stagedShared{t: t, shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Activate(ctx, "ops", d.Digest)
	if err != nil {
		t.Fatalf("Activate of a draft made on the shared copy: %v", err)
	}
	if v.Version != 1 {
		t.Fatalf("activated version %d, want 1", v.Version)
	}
	if got, err := elsewhere.Active("ops"); err != nil || got.Digest != d.Digest {
		t.Fatalf("the shared copy's active ops: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(mirror, policiesDir)); !os.IsNotExist(err) {
		t.Fatalf("the node's own policies/ was written (%v); only the mirror refresh may write it", err)
	}
}

// treeOf drafts and activates policies (id → source) in a fresh store and
// returns its checked tree.
func treeOf(t *testing.T, active map[string]string, drafts map[string]string) map[string][]byte {
	t.Helper()
	state := t.TempDir()
	s, err := NewStore(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for id, src := range active {
		d, err := s.Draft(ctx, id, []byte(src), []byte(allowAllTests))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Activate(ctx, id, d.Digest); err != nil {
			t.Fatal(err)
		}
	}
	for id, src := range drafts {
		if _, err := s.Draft(ctx, id, []byte(src), []byte(allowAllTests)); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := CheckTree(readTree(t, state))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// MergeTrees unites two stores' policies and drafts, and refuses a policy
// the two hold with other versions, naming it.
func TestMergeTrees(t *testing.T) {
	here := treeOf(t, map[string]string{"ops": allowAll}, map[string]string{"audit": allowAll + "# audit draft\n"})
	there := treeOf(t, map[string]string{"audit": allowAll + "# audit\n"}, map[string]string{"ops": allowAll + "# ops v2\n"})
	merged, err := MergeTrees(here, there)
	if err != nil {
		t.Fatalf("MergeTrees of distinct policies: %v", err)
	}
	dir := t.TempDir()
	for p, data := range merged {
		full := filepath.Join(dir, policiesDir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "audit" || list[0].ActiveVersion != 1 || len(list[0].Drafts) != 1 ||
		list[1].ID != "ops" || list[1].ActiveVersion != 1 || len(list[1].Drafts) != 1 {
		t.Fatalf("the merged store lists %+v, want audit and ops active with a draft each", list)
	}
	if again, err := MergeTrees(merged, merged); err != nil || len(again) != len(merged) {
		t.Fatalf("MergeTrees of a tree with itself: %d files, %v; want the same %d", len(again), err, len(merged))
	}
	other := treeOf(t, map[string]string{"ops": allowAll + "# another ops\n"}, nil)
	if _, err := MergeTrees(here, other); err == nil || !strings.Contains(err.Error(), "policy ops:") {
		t.Fatalf("MergeTrees of two different ops policies: %v, want a conflict naming ops", err)
	}
}
