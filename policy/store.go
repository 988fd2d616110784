package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// Errors callers branch on.
var (
	// ErrNotFound: no such policy, version or draft.
	ErrNotFound = errors.New("no such policy")
	// ErrDigestMismatch: activation named a digest no draft has.
	ErrDigestMismatch = errors.New("digest does not match")
)

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckID checks a custom policy id: 1 to 64 characters of [a-z0-9._-],
// not the name of a built-in profile.
func CheckID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("policy id %q: want 1 to 64 characters of [a-z0-9._-], starting with a letter or digit", id)
	}
	if IsProfile(id) {
		return fmt.Errorf("policy id %q is a built-in profile", id)
	}
	return nil
}

// Store keeps custom policies under <state dir>/policies: drafts that passed
// their tests, and immutable numbered versions, one of them active. The
// index is written atomically under an flock, like keys.json. The state
// directory belongs to the service user and the CLI writes it as root, so
// every file and directory is opened relative to a directory descriptor,
// never through a symbolic link (atomicfile), and what root creates is
// given to the state directory's owner.
type Store struct {
	state  string // the state directory
	dir    string // <state>/policies
	now    func() time.Time
	shared Shared // cluster mode: where changes are made (nil: here)
}

// policiesDir is the name of the store's directory in the state directory.
const policiesDir = "policies"

// NewStore returns the policy store of a state directory.
func NewStore(stateDir string, now func() time.Time) (*Store, error) {
	if !filepath.IsAbs(stateDir) {
		return nil, fmt.Errorf("policy: state directory %q must be absolute", stateDir)
	}
	if now == nil {
		now = time.Now
	}
	return &Store{state: stateDir, dir: filepath.Join(stateDir, policiesDir), now: now}, nil
}

// Index is the content of policies/index.json.
type index struct {
	Version  int                 `json:"version"`
	Policies map[string]*Entry   `json:"policies"`
	Drafts   map[string][]*Draft `json:"drafts"`
}

// Entry is a custom policy's versions.
type Entry struct {
	ID       string          `json:"id"`
	Active   int             `json:"active"`
	Versions []*VersionEntry `json:"versions"`
}

// VersionEntry is one immutable version.
type VersionEntry struct {
	Version   int       `json:"version"`
	Digest    string    `json:"digest"`
	Created   time.Time `json:"created"`
	Activated time.Time `json:"activated"`
}

// Draft is a policy text whose tests passed, waiting for activation.
type Draft struct {
	Digest  string    `json:"digest"`
	Created time.Time `json:"created"`
	Tests   int       `json:"tests"`
}

const indexName = "index.json"

func (s *Store) indexPath() string { return filepath.Join(s.dir, indexName) }

func decodeIndex(data []byte) (*index, error) {
	var ix index
	if err := json.Unmarshal(data, &ix, json.RejectUnknownMembers(true)); err != nil {
		return nil, err
	}
	if ix.Version != 1 {
		return nil, fmt.Errorf("version %d is not supported (this build reads version 1)", ix.Version)
	}
	if ix.Policies == nil {
		ix.Policies = map[string]*Entry{}
	}
	if ix.Drafts == nil {
		ix.Drafts = map[string][]*Draft{}
	}
	for id, e := range ix.Policies {
		if err := CheckID(id); err != nil || e.ID != id {
			return nil, fmt.Errorf("policy %q: bad id", id)
		}
		if e.Active < 1 || e.Active > len(e.Versions) {
			return nil, fmt.Errorf("policy %s: active version %d does not exist", id, e.Active)
		}
	}
	return &ix, nil
}

// openDir opens <state>/policies and then each of sub, never following a
// symbolic link.
func (s *Store) openDir(sub ...string) (*atomicfile.Dir, error) {
	d, err := atomicfile.OpenDir(s.state)
	if err != nil {
		return nil, err
	}
	for _, name := range append([]string{policiesDir}, sub...) {
		next, err := d.OpenDir(name)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

// readFile reads a stored file: name in the directory sub of policies/.
func (s *Store) readFile(sub []string, name string) ([]byte, error) {
	d, err := s.openDir(sub...)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(name)
}

// readIndex reads the index; a missing one is empty.
func (s *Store) readIndex() (*index, []byte, error) {
	return s.decodeIndexFile(s.readFile(nil, indexName))
}

// readIndexIn reads the index of the open policies directory.
func (s *Store) readIndexIn(pd *atomicfile.Dir) (*index, []byte, error) {
	return s.decodeIndexFile(pd.ReadFile(indexName))
}

func (s *Store) decodeIndexFile(data []byte, err error) (*index, []byte, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return &index{Version: 1, Policies: map[string]*Entry{}, Drafts: map[string][]*Draft{}}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: %s is invalid: %w", s.indexPath(), err)
	}
	return ix, data, nil
}

// update changes the index under the lock; files fn writes (in pd, the
// open policies directory) are created before the index names them, so a
// crash leaves at most an unreferenced file, never an index entry without
// its text.
func (s *Store) update(ctx context.Context, fn func(ix *index, pd *atomicfile.Dir, now time.Time) error) error {
	if s.shared == nil {
		return s.updateLocal(ctx, fn)
	}
	// Cluster mode: the change is made, under the cluster's lock, on a
	// state directory holding the shared policies; Shared stores the
	// result and refreshes this node's mirror.
	return s.shared.Change(ctx, func(stateDir string) error {
		staged, err := NewStore(stateDir, s.now)
		if err != nil {
			return err
		}
		return staged.updateLocal(ctx, fn)
	})
}

// updateLocal is update on the state directory's own policies.
func (s *Store) updateLocal(ctx context.Context, fn func(ix *index, pd *atomicfile.Dir, now time.Time) error) error {
	sd, err := atomicfile.MkdirAll(s.state, 0o700)
	if err != nil {
		return fmt.Errorf("policy: state directory: %w", err)
	}
	defer sd.Close()
	pd, err := sd.Mkdir(policiesDir, 0o700)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	defer pd.Close()
	unlock, err := pd.Lock(ctx, "policies.lock")
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	defer unlock()
	ix, old, err := s.readIndexIn(pd)
	if err != nil {
		return err
	}
	if err := fn(ix, pd, s.now().UTC()); err != nil {
		return err
	}
	out, err := json.Marshal(ix, json.Deterministic(true), jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return fmt.Errorf("policy: encode index: %w", err)
	}
	out = append(out, '\n')
	if bytes.Equal(out, old) {
		return nil
	}
	if err := pd.WriteFile(indexName, out, 0o600); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

// writeNew creates sub/name in the policies directory pd, a file that must
// not exist yet (stored texts are immutable), fsynced, and given with the
// directories it makes to the state directory's owner. A symbolic link
// anywhere on the way is refused; an existing file with the same content
// is success.
func writeNew(pd *atomicfile.Dir, sub []string, name string, data []byte) error {
	d := pd
	for _, n := range sub {
		next, err := d.Mkdir(n, 0o700)
		if d != pd {
			d.Close()
		}
		if err != nil {
			return err
		}
		d = next
	}
	defer d.Close()
	err := d.CreateFile(name, data, 0o600)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	existing, rerr := d.ReadFile(name)
	if rerr != nil {
		return fmt.Errorf("%w (and it cannot be read: %w)", err, rerr)
	}
	if !bytes.Equal(existing, data) {
		return fmt.Errorf("%s exists with other content; stored policies are immutable", filepath.Join(d.Path(), name))
	}
	return nil
}

// The places of stored texts: a directory under policies/ and a name.

func draftDir(id string) []string { return []string{"drafts", id} }

func draftName(digest string) string { return digest + ".rego" }

func draftTestName(digest string) string { return digest + "_test.rego" }

func versionName(v int) string { return "v" + strconv.Itoa(v) + ".rego" }

func versionTestName(v int) string { return "v" + strconv.Itoa(v) + "_test.rego" }

// DraftResult is what a draft produced.
type DraftResult struct {
	ID     string       `json:"id"`
	Digest string       `json:"digest"`
	Tests  []TestResult `json:"tests"`
}

// Draft compiles a policy, runs its tests, and on success stores it as a
// draft of id under its digest. Nothing is stored when any step fails.
func (s *Store) Draft(ctx context.Context, id string, src, tests []byte) (DraftResult, error) {
	if err := CheckID(id); err != nil {
		return DraftResult{}, fmt.Errorf("policy: %w", err)
	}
	res, err := Check(ctx, id, src, tests)
	if err != nil {
		return res, err
	}
	err = s.update(ctx, func(ix *index, pd *atomicfile.Dir, now time.Time) error {
		if err := writeNew(pd, draftDir(id), draftName(res.Digest), src); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		if err := writeNew(pd, draftDir(id), draftTestName(res.Digest), tests); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		ix.Drafts[id] = slices.DeleteFunc(ix.Drafts[id], func(d *Draft) bool { return d.Digest == res.Digest })
		ix.Drafts[id] = append(ix.Drafts[id], &Draft{Digest: res.Digest, Created: now, Tests: len(res.Tests)})
		return nil
	})
	return res, err
}

// Check compiles a policy and runs its tests without storing anything.
func Check(ctx context.Context, id string, src, tests []byte) (DraftResult, error) {
	res := DraftResult{ID: id, Digest: Digest(src)}
	name := id + ".rego"
	if _, err := CompileCustom(ctx, name, src); err != nil {
		return res, err
	}
	if len(bytes.TrimSpace(tests)) == 0 {
		return res, fmt.Errorf("%w: policy %s has no tests (%s_test.rego beside it)", ErrTestsFailed, id, id)
	}
	results, err := RunTests(ctx, []Module{{Name: name, Source: src}, {Name: id + "_test.rego", Source: tests}}, 0)
	res.Tests = results
	return res, err
}

// Activate makes the draft of id with this digest the policy's next
// version and activates it. A digest no draft of id has is refused: what is
// activated is exactly the text that was drafted (and simulated).
func (s *Store) Activate(ctx context.Context, id, digest string) (VersionEntry, error) {
	if err := CheckID(id); err != nil {
		return VersionEntry{}, fmt.Errorf("policy: %w", err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(digest) {
		return VersionEntry{}, fmt.Errorf("policy: digest %q: want 64 lower-case hex digits (sha256)", digest)
	}
	var out VersionEntry
	err := s.update(ctx, func(ix *index, pd *atomicfile.Dir, now time.Time) error {
		i := slices.IndexFunc(ix.Drafts[id], func(d *Draft) bool { return d.Digest == digest })
		if i < 0 {
			have := make([]string, 0, len(ix.Drafts[id]))
			for _, d := range ix.Drafts[id] {
				have = append(have, d.Digest[:12])
			}
			return fmt.Errorf("policy: %w: policy %s has no draft with digest %s (drafts: %v); run policy draft first",
				ErrDigestMismatch, id, digest, have)
		}
		src, err := readIn(pd, draftDir(id), draftName(digest))
		if err != nil {
			return fmt.Errorf("policy: draft text: %w", err)
		}
		if got := Digest(src); got != digest {
			return fmt.Errorf("policy: %w: the stored draft's text now has digest %s", ErrDigestMismatch, got)
		}
		tests, err := readIn(pd, draftDir(id), draftTestName(digest))
		if err != nil {
			return fmt.Errorf("policy: draft tests: %w", err)
		}
		if _, err := Check(ctx, id, src, tests); err != nil {
			return err
		}
		e := ix.Policies[id]
		if e == nil {
			e = &Entry{ID: id}
		}
		if e.Active > 0 && e.Versions[e.Active-1].Digest == digest {
			return fmt.Errorf("policy: version %d of %s already has digest %s and is active", e.Active, id, digest[:12])
		}
		v := len(e.Versions) + 1
		if err := writeNew(pd, []string{id}, versionName(v), src); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		if err := writeNew(pd, []string{id}, versionTestName(v), tests); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		out = VersionEntry{Version: v, Digest: digest, Created: now, Activated: now}
		e.Versions = append(e.Versions, &out)
		e.Active = v
		ix.Policies[id] = e
		ix.Drafts[id] = slices.Delete(ix.Drafts[id], i, i+1)
		if len(ix.Drafts[id]) == 0 {
			delete(ix.Drafts, id)
		}
		return nil
	})
	return out, err
}

// Summary describes a custom policy for policy list.
type Summary struct {
	ID            string    `json:"id"`
	ActiveVersion int       `json:"active_version"`
	Digest        string    `json:"digest"`
	Activated     time.Time `json:"activated"`
	Versions      int       `json:"versions"`
	Drafts        []string  `json:"drafts"`
}

// List returns the custom policies, by id, and the ids that only have
// drafts.
func (s *Store) List() ([]Summary, error) {
	ix, _, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for id := range ix.Policies {
		ids[id] = true
	}
	for id := range ix.Drafts {
		ids[id] = true
	}
	out := make([]Summary, 0, len(ids))
	for id := range ids {
		sum := Summary{ID: id, Drafts: []string{}}
		if e := ix.Policies[id]; e != nil {
			v := e.Versions[e.Active-1]
			sum.ActiveVersion, sum.Digest, sum.Activated, sum.Versions = v.Version, v.Digest, v.Activated, len(e.Versions)
		}
		for _, d := range ix.Drafts[id] {
			sum.Drafts = append(sum.Drafts, d.Digest)
		}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Version is a stored policy text.
type Version struct {
	ID      string
	Version int
	Digest  string
	Source  []byte
	Tests   []byte
	Active  bool
}

// Get returns version v of id (0: the active version). The text is checked
// against the digest recorded at activation.
func (s *Store) Get(id string, v int) (Version, error) {
	if err := CheckID(id); err != nil {
		return Version{}, fmt.Errorf("policy: %w", err)
	}
	ix, _, err := s.readIndex()
	if err != nil {
		return Version{}, err
	}
	return s.get(ix, id, v)
}

func (s *Store) get(ix *index, id string, v int) (Version, error) {
	e := ix.Policies[id]
	if e == nil {
		return Version{}, fmt.Errorf("policy: %w: %s has no active version", ErrNotFound, id)
	}
	if v == 0 {
		v = e.Active
	}
	if v < 1 || v > len(e.Versions) {
		return Version{}, fmt.Errorf("policy: %w: %s has versions 1 to %d, not %d", ErrNotFound, id, len(e.Versions), v)
	}
	src, err := s.readFile([]string{id}, versionName(v))
	if err != nil {
		return Version{}, fmt.Errorf("policy: %w", err)
	}
	want := e.Versions[v-1].Digest
	if got := Digest(src); got != want {
		return Version{}, fmt.Errorf("policy: %s v%d was changed on disk: digest %s, recorded %s", id, v, got, want)
	}
	tests, err := s.readFile([]string{id}, versionTestName(v))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Version{}, fmt.Errorf("policy: %w", err)
	}
	return Version{ID: id, Version: v, Digest: want, Source: src, Tests: tests, Active: v == e.Active}, nil
}

// Active returns the active version of id.
func (s *Store) Active(id string) (Version, error) {
	return s.Get(id, 0)
}

// IndexFingerprint is a cheap token that changes whenever the index may
// have changed (one stat); racy reports that the index changed so recently
// that a further change could keep the same token.
func (s *Store) IndexFingerprint() (fp fingerprint, racy bool, err error) {
	fp, err = statFile(s.indexPath())
	if err != nil {
		return fp, false, fmt.Errorf("policy: %w", err)
	}
	return fp, fp.exists && s.now().Sub(fp.mtime) < 2*time.Second, nil
}

// fingerprint is what a stat tells about a file.
type fingerprint struct {
	exists       bool
	size         int64
	mtime, ctime time.Time
	ino          uint64
}

func statFile(path string) (fingerprint, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fingerprint{}, nil
	}
	if err != nil {
		return fingerprint{}, err
	}
	fp := fingerprint{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := sysStat(fi); ok {
		fp.ino, fp.ctime = st.ino, st.ctime
	}
	return fp, nil
}
