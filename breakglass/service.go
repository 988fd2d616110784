package breakglass

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"golang.org/x/sys/unix"
)

// The service's directory (root's alone, 0700), beside the helper's
// journal: the signing key, each request's record, the queue the runner
// watches, the results, the nonces used, the staged uploads.
const (
	KeyFile    = "signing.key"
	requestDir = "requests"
	QueueDir   = "queue"
	resultDir  = "results"
	nonceDir   = "nonces"
	stagingDir = "staging"
	lockFile   = "lock"
)

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// Dir is the service's directory; it must be root's alone.
	Dir        string
	Repository Repository
	// Now is the clock (time.Now).
	Now func() time.Time
	// TTL is how long a request lives from its preview (MaxTTL, and no
	// more).
	TTL time.Duration
	// HostApprovalOnly takes the second confirmation from root at the
	// host's command line only (protected.approval "host").
	HostApprovalOnly bool
	// MinFree is the space staging leaves free on the file system of the
	// service's directory, where the helper's journal is too
	// (DefaultMinFree; the larger of it and 5 % of the file system).
	MinFree int64
}

// Limits on what one principal can leave waiting.
const (
	// MaxLivePerPrincipal requests of one principal (its key lineage) may
	// wait for confirmation, approval or the runner at once.
	MaxLivePerPrincipal = 8
	// MaxLive requests of everyone may.
	MaxLive = 64
	// DefaultMinFree is the space staging always leaves free: 1 GiB.
	DefaultMinFree = 1 << 30
)

// Service keeps the protocol's records and signs: the helper runs it for
// keys, the host's command line for root, the runner reads its queue.
// Every record lives in the directory, so a helper that exits or
// restarts between two steps loses nothing.
type Service struct {
	opts ServiceOptions
	dir  *atomicfile.Dir
}

// ErrState marks a step the request's state does not allow (expired,
// denied, not yet confirmed, done); ErrPrincipal a step taken by the
// wrong principal.
var (
	ErrState     = errors.New("break-glass step refused")
	ErrPrincipal = errors.New("break-glass principal refused")
	ErrNotFound  = errors.New("no such break-glass request")
)

// OpenService opens (making it when missing) the service's directory and
// refuses one anybody but root can reach.
func OpenService(o ServiceOptions) (*Service, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TTL <= 0 || o.TTL > MaxTTL {
		o.TTL = MaxTTL
	}
	d, err := atomicfile.MkdirAll(o.Dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("breakglass: %w", err)
	}
	if err := rootsAlone(d); err != nil {
		d.Close()
		return nil, err
	}
	for _, sub := range []string{requestDir, QueueDir, resultDir, nonceDir, stagingDir} {
		s, err := d.Mkdir(sub, 0o700)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("breakglass: %w", err)
		}
		err = rootsAlone(s)
		s.Close()
		if err != nil {
			d.Close()
			return nil, err
		}
	}
	return &Service{opts: o, dir: d}, nil
}

// rootsAlone refuses a directory that is not this process's user's (root's)
// alone.
func rootsAlone(d *atomicfile.Dir) error {
	if err := d.CheckPrivate(); err != nil {
		return fmt.Errorf("breakglass: %w", err)
	}
	return nil
}

// Close closes the directory.
func (s *Service) Close() error { return s.dir.Close() }

// Dir is the service's directory.
func (s *Service) Dir() string { return s.dir.Path() }

// Repository is the repository the service changes.
func (s *Service) Repository() Repository { return s.opts.Repository }

// Record is one request as the service keeps it.
type Record struct {
	Preview Preview `json:"preview"`
	Digest  string  `json:"digest"`
	// Code is the secret part of the requester's phrase (Phrase): only
	// the requester's answer carries the phrase, never a record shown.
	Code string `json:"code,omitempty"`
	// Confirmed is when the requester confirmed (the first confirmation).
	Confirmed time.Time `json:"confirmed,omitzero"`
	// Approver and Approved: the second confirmation, by another
	// principal; the request was signed and queued then.
	Approver *Principal `json:"approver,omitempty"`
	Approved time.Time  `json:"approved,omitzero"`
	Denied   *Denial    `json:"denied,omitempty"`
	// Result is the runner's.
	Result *Result `json:"result,omitempty"`
}

// Denial is a request refused by a principal.
type Denial struct {
	By     Principal `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Result is what the runner did with a signed request.
type Result struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
	// Outcome is done, refused (nothing was done) or failed (the
	// operation began and did not finish: look at the repository).
	Outcome  string    `json:"outcome"`
	Message  string    `json:"message,omitempty"`
	Changes  []string  `json:"changes,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// The states of a request.
const (
	StateAwaitingConfirmation = "awaiting_confirmation"
	StateAwaitingApproval     = "awaiting_approval"
	StateQueued               = "queued"
	StateDenied               = "denied"
	StateExpired              = "expired"
)

// live says whether the request still waits for a step or the runner.
func (r Record) live(now time.Time) bool {
	switch r.State(now) {
	case StateAwaitingConfirmation, StateAwaitingApproval, StateQueued:
		return true
	}
	return false
}

// Phrase is what the requester types to confirm the request.
func (r Record) Phrase() string { return phraseOf(r.Preview.ID, r.Code) }

// Shown is the record as it may be shown to anyone: without the code of
// the requester's phrase.
func (r Record) Shown() Record {
	r.Code = ""
	return r
}

// State is where the request stands at now: awaiting_confirmation,
// awaiting_approval, queued, denied, expired, or the runner's outcome.
func (r Record) State(now time.Time) string {
	switch {
	case r.Result != nil:
		return r.Result.Outcome
	case r.Denied != nil:
		return StateDenied
	case now.After(r.Preview.Expires):
		return StateExpired
	case !r.Approved.IsZero():
		return StateQueued
	case !r.Confirmed.IsZero():
		return StateAwaitingApproval
	}
	return StateAwaitingConfirmation
}

// Request resolves op's targets in the host's view and keeps the
// preview, which waits for the requester's confirmation.
func (s *Service) Request(ctx context.Context, who Principal, op Operation) (Record, error) {
	targets, changes, err := s.opts.Repository.Resolve(ctx, op, s.staging())
	if err != nil {
		return Record{}, err
	}
	id, nonce, err := newID()
	if err != nil {
		return Record{}, err
	}
	now := s.opts.Now().UTC().Truncate(time.Second)
	p := Preview{V: ProtocolVersion, ID: id, Nonce: nonce, Operation: op, Targets: targets, Changes: changes,
		Requester: who, Created: now, Expires: now.Add(s.opts.TTL)}
	code, err := newCode()
	if err != nil {
		return Record{}, err
	}
	rec := Record{Preview: p, Digest: p.Digest(), Code: code}
	unlock, err := s.lock(ctx)
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	recs, err := s.List()
	if err != nil {
		return Record{}, err
	}
	// What earlier requests left behind goes first (a failed sweep stops
	// nothing: it is only space); this request's content is live.
	s.sweep(recs, op.SHA256) //nolint:errcheck // see above
	if err := s.checkLive(who, recs); err != nil {
		return Record{}, err
	}
	if err := s.write(requestDir, id+".json", rec, false); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// checkLive refuses a request beyond what may wait at once.
func (s *Service) checkLive(who Principal, recs []Record) error {
	now := s.opts.Now()
	mine, all := 0, 0
	for _, r := range recs {
		if r.live(now) {
			all++
			if r.Preview.Requester.Same(who) {
				mine++
			}
		}
	}
	switch {
	case mine >= MaxLivePerPrincipal:
		return fmt.Errorf("%w: %s has %d requests waiting (at most %d): deny or let some expire first", ErrState, who, mine, MaxLivePerPrincipal)
	case all >= MaxLive:
		return fmt.Errorf("%w: %d requests are waiting on this host (at most %d): deny or let some expire first", ErrState, all, MaxLive)
	}
	return nil
}

// Confirm is the requester's confirmation: the phrase of this request and
// its digest, by the principal that asked.
func (s *Service) Confirm(ctx context.Context, who Principal, id, phrase string) (Record, error) {
	return s.update(ctx, id, func(rec *Record, now time.Time) error {
		if st := rec.State(now); st != StateAwaitingConfirmation {
			return stateErr(rec, now, "confirm")
		}
		if !who.Same(rec.Preview.Requester) {
			return fmt.Errorf("%w: %s asked for %s, so only it confirms first; %s approves it, with proxmox_breakglass_approve or the host's command line", ErrPrincipal, rec.Preview.Requester, id, who)
		}
		if rec.Code == "" || subtle.ConstantTimeCompare([]byte(phrase), []byte(rec.Phrase())) != 1 {
			return &FieldError{Field: "phrase", Rule: "it is not this request's confirmation phrase (break glass <id> <code>, given to the requester with the preview)"}
		}
		rec.Confirmed = now
		return nil
	})
}

// Approve is the second confirmation, by a principal other than the
// requester, of the preview with this digest: the request is signed and
// queued for the runner.
func (s *Service) Approve(ctx context.Context, who Principal, id, digest string) (Record, error) {
	key, err := s.signingKey()
	if err != nil {
		return Record{}, err
	}
	return s.update(ctx, id, func(rec *Record, now time.Time) error {
		switch st := rec.State(now); {
		case st == StateAwaitingConfirmation:
			return fmt.Errorf("%w: %s waits for its requester's confirmation first", ErrState, id)
		case st != StateAwaitingApproval:
			return stateErr(rec, now, "approve")
		}
		if s.opts.HostApprovalOnly && !who.Host {
			return fmt.Errorf("%w: this host takes the approval of break-glass requests from root at its command line only (protected.approval is \"host\"): proxmox-mcp breakglass approve %s --digest %s", ErrPrincipal, id, rec.Digest)
		}
		if who.Same(rec.Preview.Requester) {
			return fmt.Errorf("%w: %s asked for %s and can never be its own approver, under any key of its lineage; another principal approves", ErrPrincipal, who, id)
		}
		if digest != rec.Digest {
			return &FieldError{Field: "digest", Rule: fmt.Sprintf("%q is not the digest of %s's preview (%s): approve what you saw, after reading it again", digest, id, rec.Digest)}
		}
		p := rec.Preview
		env, err := Sign(key, Signed{V: ProtocolVersion, ID: p.ID, Nonce: p.Nonce, Digest: rec.Digest, Operation: p.Operation,
			Targets: p.Targets, Requester: p.Requester, Approver: who, Issued: now, Expires: p.Expires})
		if err != nil {
			return err
		}
		if err := s.write(QueueDir, id+".json", env, false); err != nil {
			return err
		}
		rec.Approver, rec.Approved = &who, now
		return nil
	})
}

// Deny refuses a request that has not run: by its requester, or by a
// principal that may approve it.
func (s *Service) Deny(ctx context.Context, who Principal, id, reason string) (Record, error) {
	if len(reason) > 1024 {
		return Record{}, &FieldError{Field: "reason", Rule: "at most 1024 bytes"}
	}
	return s.update(ctx, id, func(rec *Record, now time.Time) error {
		switch st := rec.State(now); st {
		case StateAwaitingConfirmation, StateAwaitingApproval:
		case StateQueued:
			// Signed and queued: withdrawing the file stops the runner
			// (it may have taken it already; its result says).
			if _, err := s.remove(QueueDir, id+".json"); err != nil {
				return err
			}
		default:
			return stateErr(rec, now, "deny")
		}
		rec.Denied = &Denial{By: who, At: now, Reason: reason}
		return nil
	})
}

func stateErr(rec *Record, now time.Time, step string) error {
	st := rec.State(now)
	switch st {
	case StateExpired:
		return fmt.Errorf("%w: %s expired at %s (%s after its preview): ask again", ErrState, rec.Preview.ID, rec.Preview.Expires.Format(time.RFC3339), MaxTTL)
	case StateDenied:
		return fmt.Errorf("%w: %s was denied by %s", ErrState, rec.Preview.ID, rec.Denied.By)
	}
	return fmt.Errorf("%w: %s is %s; it cannot be %s now", ErrState, rec.Preview.ID, st, map[string]string{"confirm": "confirmed", "approve": "approved", "deny": "denied"}[step])
}

// Get is one request's record.
func (s *Service) Get(id string) (Record, error) {
	if !ValidID(id) {
		return Record{}, &FieldError{Field: "id", Rule: fmt.Sprintf("%q is not a break-glass request id (bg- and 16 hex digits)", id)}
	}
	var rec Record
	if err := s.read(requestDir, id+".json", &rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// List is every request kept, the newest first.
func (s *Service) List() ([]Record, error) {
	d, err := s.dir.OpenDir(requestDir)
	if err != nil {
		return nil, fmt.Errorf("breakglass: %w", err)
	}
	names, err := d.ReadDirNames()
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("breakglass: %w", err)
	}
	var out []Record
	for _, n := range names {
		id, ok := strings.CutSuffix(n, ".json")
		if !ok || !ValidID(id) {
			continue
		}
		rec, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b Record) int { return b.Preview.Created.Compare(a.Preview.Created) })
	return out, nil
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.opts.Now() }

func (s *Service) update(ctx context.Context, id string, fn func(*Record, time.Time) error) (Record, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	rec, err := s.Get(id)
	if err != nil {
		return Record{}, err
	}
	if err := fn(&rec, s.opts.Now().UTC()); err != nil {
		return rec, err
	}
	if err := s.write(requestDir, id+".json", rec, true); err != nil {
		return Record{}, err
	}
	return rec, nil
}

func (s *Service) lock(ctx context.Context) (func(), error) {
	unlock, err := s.dir.Lock(ctx, lockFile)
	if err != nil {
		return nil, fmt.Errorf("breakglass: %w", err)
	}
	return unlock, nil
}

func (s *Service) write(sub, name string, v any, replace bool) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("breakglass: encode %s/%s: %w", sub, name, err)
	}
	d, err := s.dir.OpenDir(sub)
	if err != nil {
		return fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	if replace {
		err = d.WriteFile(name, append(data, '\n'), 0o600)
	} else {
		err = d.CreateFile(name, append(data, '\n'), 0o600)
	}
	if err != nil {
		return fmt.Errorf("breakglass: write %s/%s: %w", sub, name, err)
	}
	return nil
}

func (s *Service) read(sub, name string, v any) error {
	d, err := s.dir.OpenDir(sub)
	if err != nil {
		return fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	data, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, strings.TrimSuffix(name, ".json"))
	}
	if err != nil {
		return fmt.Errorf("breakglass: read %s/%s: %w", sub, name, err)
	}
	if err := decodeStrict(data, v); err != nil {
		return fmt.Errorf("breakglass: %s/%s does not decode: %w", sub, name, err)
	}
	return nil
}

func (s *Service) remove(sub, name string) (bool, error) {
	d, err := s.dir.OpenDir(sub)
	if err != nil {
		return false, fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	return d.Remove(name)
}

// decodeStrict decodes exactly one JSON value, no unknown field.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// signingKey reads the signing key, root's alone.
func (s *Service) signingKey() (ed25519.PrivateKey, error) {
	return pki.ReadSigningKey(filepath.Join(s.Dir(), KeyFile))
}

// staging is the service's staged uploads.
func (s *Service) staging() Staging { return stagedUploads{s} }

type stagedUploads struct{ s *Service }

func (u stagedUploads) Size(sha string) (int64, error) {
	d, err := u.s.dir.OpenDir(stagingDir)
	if err != nil {
		return 0, fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	fi, err := d.Lstat(sha)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, &FieldError{Field: "operation.sha256", Rule: fmt.Sprintf("no upload with sha256 %s is staged: stage the content first (proxmox_breakglass_stage)", sha)}
	}
	if err != nil {
		return 0, fmt.Errorf("breakglass: %w", err)
	}
	return fi.Size(), nil
}

func (u stagedUploads) Open(sha string) (*os.File, error) {
	d, err := u.s.dir.OpenDir(stagingDir)
	if err != nil {
		return nil, fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	return d.Open(sha)
}

// Staged is a staged upload's state.
type Staged struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Received is how many bytes are in; Complete when all are and the
	// hash held.
	Received int64 `json:"received"`
	Complete bool  `json:"complete"`
}

// Stage takes one chunk of an upload of size bytes whose SHA-256 is sha:
// chunks come in order (offset is what was received so far; 0 starts
// again), and the last one is checked against sha before the upload can
// be named by a put_file.
func (s *Service) Stage(ctx context.Context, sha string, size, offset int64, data []byte) (Staged, error) {
	switch {
	case !sha256Hex.MatchString(sha):
		return Staged{}, &FieldError{Field: "sha256", Rule: "must be the whole content's SHA-256, 64 lowercase hex digits"}
	case size < 0 || size > MaxPutSize:
		return Staged{}, &FieldError{Field: "size", Rule: fmt.Sprintf("%d: must be 0 to %d bytes", size, int64(MaxPutSize))}
	case offset < 0 || offset+int64(len(data)) > size:
		return Staged{}, &FieldError{Field: "offset", Rule: fmt.Sprintf("a chunk of %d bytes at %d runs past the size %d", len(data), offset, size)}
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return Staged{}, err
	}
	defer unlock()
	d, err := s.dir.OpenDir(stagingDir)
	if err != nil {
		return Staged{}, fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	if fi, err := d.Lstat(sha); err == nil {
		return Staged{SHA256: sha, Size: fi.Size(), Received: fi.Size(), Complete: true}, nil
	}
	part := sha + ".part"
	dfd := int(d.File().Fd())
	flags := unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if offset == 0 {
		flags |= unix.O_CREAT | unix.O_TRUNC
	}
	fd, err := unix.Openat(dfd, part, flags, 0o600)
	if errors.Is(err, unix.ENOENT) {
		return Staged{}, &FieldError{Field: "offset", Rule: fmt.Sprintf("%d: nothing of %s is staged yet; start at 0", offset, sha[:12])}
	}
	if err != nil {
		return Staged{}, fmt.Errorf("breakglass: stage %s: %w", part, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.Path(), part))
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Staged{}, err
	}
	if fi.Size() != offset {
		return Staged{}, &FieldError{Field: "offset", Rule: fmt.Sprintf("%d: %d bytes of %s are staged, so the next chunk starts there", offset, fi.Size(), sha[:12])}
	}
	if err := s.checkFree(dfd, int64(len(data))); err != nil {
		return Staged{}, err
	}
	if _, err := f.WriteAt(data, offset); err != nil {
		return Staged{}, fmt.Errorf("breakglass: stage %s: %w", part, err)
	}
	got := offset + int64(len(data))
	if got < size {
		return Staged{SHA256: sha, Size: size, Received: got}, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Staged{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Staged{}, fmt.Errorf("breakglass: hash %s: %w", part, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != sha {
		unix.Unlinkat(dfd, part, 0) //nolint:errcheck // a wrong upload is dropped either way
		return Staged{}, &FieldError{Field: "sha256", Rule: fmt.Sprintf("the %d bytes staged hash to %s, not %s: the upload was dropped; stage it again from 0", size, sum, sha)}
	}
	if err := f.Sync(); err != nil {
		return Staged{}, err
	}
	if err := unix.Renameat2(dfd, part, dfd, sha, unix.RENAME_NOREPLACE); err != nil && !errors.Is(err, unix.EEXIST) {
		return Staged{}, fmt.Errorf("breakglass: stage %s: %w", sha, err)
	}
	return Staged{SHA256: sha, Size: size, Received: size, Complete: true}, d.Sync()
}

// checkFree refuses a chunk that would leave the file system of the
// service's directory with less than MinFree (or 5 %) free: staging must
// not fill the disk the helper's journal is on.
func (s *Service) checkFree(fd int, n int64) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return fmt.Errorf("breakglass: the staging file system: %w", err)
	}
	free := int64(st.Bavail) * st.Bsize
	keep := max(s.opts.MinFree, int64(st.Blocks)*st.Bsize/20)
	if s.opts.MinFree == 0 {
		keep = max(DefaultMinFree, int64(st.Blocks)*st.Bsize/20)
	}
	if free-n < keep {
		return fmt.Errorf("%w: staging %d more bytes would leave %d free on the helper's file system, under the %d it keeps free; nothing was staged", ErrState, n, free-n, keep)
	}
	return nil
}
