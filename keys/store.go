package keys

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// RacyInterval is how long after keys.json was last changed the store
// reads it again on every Snapshot (each key check): a change within the
// file system's timestamp granularity could leave its size and times as
// they were. Past it, a Snapshot is one stat.
const RacyInterval = 2 * time.Second

// File names in the state directory.
const (
	FileName    = "keys.json"
	lockName    = "keys.lock"
	formatVer   = 1
	maxFileSize = 16 << 20
)

// Errors callers branch on.
var (
	// ErrNotFound: no key has that id or current name.
	ErrNotFound = errors.New("no such key")
	// ErrConflict: the name is taken, or the key is not in a state that
	// allows the operation.
	ErrConflict = errors.New("key conflict")
)

// Options configure a Store. Zero values take defaults.
type Options struct {
	// Params are the scrypt parameters of new hashes; DefaultParams() if zero.
	Params Params
	// CheckBinding verifies that a profile or policy exists and may be bound;
	// nil accepts any syntactically valid binding.
	CheckBinding func(Binding) error
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Rand is the source of ids, secrets and salts; crypto/rand if nil.
	Rand io.Reader
	// Logger receives reload errors; slog.Default() if nil.
	Logger *slog.Logger
	// Shared, when set, makes every change on the keys a cluster shares
	// (cluster mode): see [Shared]. The state directory's keys.json is
	// then the node's mirror of them, which the Store reads as before.
	Shared Shared
}

// Store is keys.json in a state directory. It is safe for concurrent use by
// goroutines and, through its flock, by processes.
type Store struct {
	dir, path string
	opts      Options

	mu        sync.Mutex // serializes reloads within the process
	snap      atomic.Pointer[Snapshot]
	badFP     fingerprint // the file state whose reload failed, logged once
	badLogged bool
}

// Open returns the store of a state directory. Nothing is created until the
// first change.
func Open(dir string, opts Options) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("keys: state directory %q must be absolute", dir)
	}
	if opts.Params == (Params{}) {
		opts.Params = DefaultParams()
	}
	if err := opts.Params.check(); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Store{
		dir: dir, path: filepath.Join(dir, FileName), opts: opts,
	}, nil
}

// Path returns the path of keys.json.
func (s *Store) Path() string { return s.path }

// file is the JSON layout of keys.json.
type file struct {
	Version int      `json:"version"`
	Keys    []Record `json:"keys"`
}

// decode parses keys.json strictly.
func decode(data []byte) ([]Record, error) {
	var f file
	if err := json.Unmarshal(data, &f, json.RejectUnknownMembers(true)); err != nil {
		return nil, err
	}
	if f.Version != formatVer {
		return nil, fmt.Errorf("version %d is not supported (this build reads version %d)", f.Version, formatVer)
	}
	seen := make(map[string]bool, len(f.Keys))
	for i := range f.Keys {
		r := &f.Keys[i]
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("keys[%d]: %w", i, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("keys[%d]: id %s appears twice", i, r.ID)
		}
		seen[r.ID] = true
	}
	return f.Keys, nil
}

func encode(recs []Record) ([]byte, error) {
	data, err := json.Marshal(file{Version: formatVer, Keys: recs}, jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Snapshot is an immutable view of keys.json.
type Snapshot struct {
	records []Record
	byID    map[string]*Record
	fp      fingerprint
	sum     [sha256.Size]byte
	racy    bool // the file changed so recently that its timestamps cannot be trusted
}

// Lookup returns the record with the id, or nil. O(1).
func (sn *Snapshot) Lookup(id string) *Record { return sn.byID[id] }

// Records returns the records in file order (creation order).
func (sn *Snapshot) Records() []Record { return slices.Clone(sn.records) }

func newSnapshot(recs []Record, fp fingerprint, sum [sha256.Size]byte, loaded time.Time) *Snapshot {
	sn := &Snapshot{records: recs, byID: make(map[string]*Record, len(recs)), fp: fp, sum: sum}
	for i := range sn.records {
		sn.byID[sn.records[i].ID] = &sn.records[i]
	}
	sn.racy = fp.exists && loaded.Sub(fp.mtime) < RacyInterval
	return sn
}

// fingerprint is what a stat tells about the file: an atomic rename gives a
// new inode, a write a new size or timestamps.
type fingerprint struct {
	exists       bool
	ino, size    int64
	mtime, ctime time.Time
}

func statFile(path string) (fingerprint, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fingerprint{}, nil
	}
	if err != nil {
		return fingerprint{}, err
	}
	return fingerprintOf(fi), nil
}

func fingerprintOf(fi fs.FileInfo) fingerprint {
	fp := fingerprint{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fp.ino = int64(st.Ino)
		fp.ctime = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return fp
}

// Snapshot returns the current keys, reloading keys.json when it changed.
// The check costs one stat; a file changed within the last two seconds is
// also re-read and hashed on each call, because a second change within one
// timestamp tick could otherwise go unseen. When a reload fails (a file
// being replaced by root, a malformed edit) the last good snapshot stays in
// force and the error is logged once; with none, the error is returned.
func (s *Store) Snapshot() (*Snapshot, error) {
	cur := s.snap.Load()
	fp, err := statFile(s.path)
	if err != nil {
		return s.keepOrFail(fmt.Errorf("keys: stat %s: %w", s.path, err))
	}
	if cur != nil && cur.fp == fp && !cur.racy {
		return cur, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c2 := s.snap.Load(); c2 != cur && c2 != nil && c2.fp == fp && !c2.racy {
		return c2, nil
	}
	if c2 := s.snap.Load(); c2 != nil && s.badLogged && s.badFP == fp && s.opts.Now().Sub(fp.mtime) >= RacyInterval {
		return c2, nil // the same broken file as before: not worth another read
	}
	sn, err := s.read()
	if err != nil {
		return s.keepOrFailLocked(fp, err)
	}
	s.snap.Store(sn)
	s.badLogged = false
	return sn, nil
}

// keepOrFail returns the last good snapshot after a failed stat.
func (s *Store) keepOrFail(err error) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keepOrFailLocked(fingerprint{}, err)
}

// keepOrFailLocked keeps the last good snapshot after a failed reload and
// logs the failure once per state of the file, not once per request.
func (s *Store) keepOrFailLocked(fp fingerprint, err error) (*Snapshot, error) {
	cur := s.snap.Load()
	if cur == nil {
		return nil, err
	}
	if !s.badLogged || s.badFP != fp {
		s.opts.Logger.Warn("keys: keeping the last good key set", "path", s.path, "err", err)
		s.badLogged, s.badFP = true, fp
	}
	return cur, nil
}

// read loads keys.json; a missing file (or state directory) is an empty
// store.
func (s *Store) read() (*Snapshot, error) {
	now := s.opts.Now()
	f, err := s.open()
	if errors.Is(err, fs.ErrNotExist) {
		return newSnapshot(nil, fingerprint{}, [sha256.Size]byte{}, now), nil
	}
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	defer f.Close()
	// Stat the open file: the fingerprint then describes exactly the bytes read.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	fp := fingerprintOf(fi)
	data, err := s.readAll(f)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if cur := s.snap.Load(); cur != nil && cur.sum == sum && cur.fp.exists {
		return newSnapshot(cur.records, fp, sum, now), nil
	}
	recs, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("keys: %s is invalid: %w", s.path, err)
	}
	return newSnapshot(recs, fp, sum, now), nil
}

// open opens keys.json for reading. The state directory belongs to the
// service user, and the CLI reads and writes it as root: it is opened
// without following a link the service user could plant (atomicfile), and
// keys.json must be a regular file with one link.
func (s *Store) open() (*os.File, error) {
	d, err := atomicfile.OpenDir(s.dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Open(FileName)
}

// readAll reads an open keys.json, up to the size limit.
func (s *Store) readAll(f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("keys: read %s: %w", s.path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("keys: %s is larger than %d bytes", s.path, maxFileSize)
	}
	return data, nil
}

// update runs fn on the current records under the lock and writes the
// result atomically. When fn fails nothing is written. Everything is done
// relative to the state directory's descriptor and never through a
// symbolic link; run as root, the lock file and keys.json are given to
// the directory's owner.
func (s *Store) update(ctx context.Context, fn func(recs []Record, now time.Time) ([]Record, error)) error {
	if s.opts.Shared == nil {
		return s.updateLocal(ctx, fn)
	}
	// Cluster mode: the change is made, under the cluster's lock, on a
	// state directory holding the shared keys; Shared stores the result
	// and refreshes this node's mirror.
	return s.opts.Shared.Change(ctx, func(stateDir string) error {
		staged, err := Open(stateDir, Options{Params: s.opts.Params, Now: s.opts.Now, Rand: s.opts.Rand, Logger: s.opts.Logger})
		if err != nil {
			return err
		}
		return staged.updateLocal(ctx, fn)
	})
}

// updateLocal is update on the state directory's own keys.json.
func (s *Store) updateLocal(ctx context.Context, fn func(recs []Record, now time.Time) ([]Record, error)) error {
	d, err := atomicfile.MkdirAll(s.dir, 0o700)
	if err != nil {
		return fmt.Errorf("keys: state directory: %w", err)
	}
	defer d.Close()
	unlock, err := d.Lock(ctx, lockName)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	defer unlock()
	var data []byte
	f, err := d.Open(FileName)
	if err == nil {
		data, err = s.readAll(f)
		f.Close()
	}
	var recs []Record
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("keys: %w", err)
	default:
		if recs, err = decode(data); err != nil {
			return fmt.Errorf("keys: %s is invalid, so it is left alone: %w", s.path, err)
		}
	}
	next, err := fn(slices.Clone(recs), s.opts.Now().UTC())
	if err != nil {
		return err
	}
	out, err := encode(next)
	if err != nil {
		return fmt.Errorf("keys: encode: %w", err)
	}
	if bytes.Equal(out, data) {
		return nil
	}
	if err := d.WriteFile(FileName, out, 0o600); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// CreateRequest describes a new key.
type CreateRequest struct {
	Name    string
	Binding Binding
	// Expires is zero for a key that does not expire.
	Expires time.Time
}

// Created is a new key: its record and the key itself, which exists nowhere
// else and is shown once.
type Created struct {
	Record Record
	Key    Secret
}

func (s *Store) checkBinding(b Binding) error {
	if err := b.check(); err != nil {
		return err
	}
	if s.opts.CheckBinding != nil {
		return s.opts.CheckBinding(b)
	}
	return nil
}

// newRecord makes a key and its record. The hash is computed before the
// lock is taken: scrypt is slow and must not hold up other writers.
func (s *Store) newRecord(name string, b Binding, expires time.Time) (Record, Token, error) {
	tok, err := newToken(s.opts.Rand)
	if err != nil {
		return Record{}, Token{}, fmt.Errorf("keys: %w", err)
	}
	h, err := newHash(tok.secret[:], s.opts.Params, s.opts.Rand)
	if err != nil {
		return Record{}, Token{}, fmt.Errorf("keys: %w", err)
	}
	return Record{ID: tok.ID, Name: name, Profile: b.Profile, Policy: b.Policy, Expires: expires, Hash: h}, tok, nil
}

// current finds the key a name or id refers to: an id matches any record;
// a name matches the one current key of that name.
func current(recs []Record, ref string, now time.Time) (int, error) {
	if IsID(ref) {
		for i := range recs {
			if recs[i].ID == ref {
				return i, nil
			}
		}
		return -1, fmt.Errorf("%w: no key has id %s", ErrNotFound, ref)
	}
	for i := range recs {
		if recs[i].Name == ref && recs[i].StateAt(now) == StateActive {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w: no current key is named %q", ErrNotFound, ref)
}

func nameTaken(recs []Record, name string, now time.Time) error {
	for i := range recs {
		if recs[i].Name == name && recs[i].StateAt(now) == StateActive {
			return fmt.Errorf("%w: the name %q belongs to key %s; names are unique among current keys (rotate or revoke it first)", ErrConflict, name, recs[i].ID)
		}
	}
	return nil
}

// Create makes a key. The name must be free among current keys.
func (s *Store) Create(ctx context.Context, req CreateRequest) (Created, error) {
	if err := CheckName(req.Name); err != nil {
		return Created{}, fmt.Errorf("keys: %w", err)
	}
	if err := s.checkBinding(req.Binding); err != nil {
		return Created{}, fmt.Errorf("keys: %w", err)
	}
	if !req.Expires.IsZero() && !req.Expires.After(s.opts.Now()) {
		return Created{}, fmt.Errorf("keys: expiry %s is not in the future", req.Expires.UTC().Format(time.RFC3339))
	}
	rec, tok, err := s.newRecord(req.Name, req.Binding, req.Expires.UTC())
	if err != nil {
		return Created{}, err
	}
	err = s.update(ctx, func(recs []Record, now time.Time) ([]Record, error) {
		if err := nameTaken(recs, req.Name, now); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
		if _, err := current(recs, rec.ID, now); err == nil {
			return nil, fmt.Errorf("keys: %w: id %s already exists", ErrConflict, rec.ID)
		}
		rec.Created = now
		return append(recs, rec), nil
	})
	if err != nil {
		return Created{}, err
	}
	return Created{Record: rec, Key: tok.Key()}, nil
}

// RotateRequest describes a rotation.
type RotateRequest struct {
	// Expires of the new key; zero keeps the old key's expiry.
	Expires time.Time
	// Grace keeps the old key working for this long after the rotation; zero
	// stops it at once. Either way the new key works from the same write.
	Grace time.Duration
}

// Rotate replaces the current key ref (a name or an id) with a new key of
// the same name and binding, in one atomic write: there is no moment when
// neither works. The old key is revoked, or superseded until the grace ends.
func (s *Store) Rotate(ctx context.Context, ref string, req RotateRequest) (Created, error) {
	if req.Grace < 0 || req.Grace > 30*24*time.Hour {
		return Created{}, fmt.Errorf("keys: grace %s must be between 0 and 720h", req.Grace)
	}
	snap, err := s.Snapshot()
	if err != nil {
		return Created{}, err
	}
	now := s.opts.Now()
	i, err := current(snap.records, ref, now)
	if err != nil {
		return Created{}, fmt.Errorf("keys: %w", err)
	}
	old := snap.records[i]
	if err := s.checkBinding(old.Binding()); err != nil {
		return Created{}, fmt.Errorf("keys: key %s: %w", old.ID, err)
	}
	expires := req.Expires
	if expires.IsZero() {
		expires = old.Expires
	}
	if !expires.IsZero() && !expires.After(now) {
		return Created{}, fmt.Errorf("keys: expiry %s is not in the future", expires.UTC().Format(time.RFC3339))
	}
	rec, tok, err := s.newRecord(old.Name, old.Binding(), expires.UTC())
	if err != nil {
		return Created{}, err
	}
	rec.RotatedFrom = old.ID
	err = s.update(ctx, func(recs []Record, now time.Time) ([]Record, error) {
		j := slices.IndexFunc(recs, func(r Record) bool { return r.ID == old.ID })
		if j < 0 {
			return nil, fmt.Errorf("keys: %w: key %s vanished", ErrNotFound, old.ID)
		}
		if st := recs[j].StateAt(now); st != StateActive {
			return nil, fmt.Errorf("keys: %w: key %s is %s and cannot be rotated", ErrConflict, old.ID, st)
		}
		recs[j].RotatedTo = rec.ID
		if req.Grace == 0 {
			recs[j].Revoked = now
		} else if end := now.Add(req.Grace); recs[j].Expires.IsZero() || end.Before(recs[j].Expires) {
			recs[j].Expires = end
		}
		rec.Created = now
		return append(recs, rec), nil
	})
	if err != nil {
		return Created{}, err
	}
	return Created{Record: rec, Key: tok.Key()}, nil
}

// Revoke stops a key at once. ref is a name (the current key of that name)
// or an id (any key not yet revoked, a superseded one included).
func (s *Store) Revoke(ctx context.Context, ref string) (Record, error) {
	var out Record
	err := s.update(ctx, func(recs []Record, now time.Time) ([]Record, error) {
		i, err := current(recs, ref, now)
		if err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
		if !recs[i].Revoked.IsZero() {
			return nil, fmt.Errorf("keys: %w: key %s was already revoked at %s", ErrConflict, recs[i].ID, recs[i].Revoked.Format(time.RFC3339))
		}
		recs[i].Revoked = now
		out = recs[i]
		return recs, nil
	})
	return out, err
}

// Get returns the key a name or id refers to.
func (s *Store) Get(ref string) (Record, error) {
	snap, err := s.Snapshot()
	if err != nil {
		return Record{}, err
	}
	i, err := current(snap.records, ref, s.opts.Now())
	if err != nil {
		return Record{}, fmt.Errorf("keys: %w", err)
	}
	return snap.records[i], nil
}

// List returns every record, oldest first.
func (s *Store) List() ([]Record, error) {
	snap, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	return snap.Records(), nil
}

// Now returns the store's clock reading.
func (s *Store) Now() time.Time { return s.opts.Now() }
