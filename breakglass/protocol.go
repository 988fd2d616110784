package breakglass

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The protocol's limits.
const (
	// ProtocolVersion is the version of a preview and a signed request;
	// the runner refuses another.
	ProtocolVersion = 1
	// MaxTTL is how long a request may wait for its confirmations and its
	// run: five minutes from the preview.
	MaxTTL = 5 * time.Minute
	// MaxPutSize bounds a put_file's content (a staged upload).
	MaxPutSize = 64 << 30
	// maxPathLen bounds a target path.
	maxPathLen = 4096
)

// The operations a request may carry.
const (
	OpPutFile         = "put_file"
	OpMove            = "move"
	OpDeleteFile      = "delete_file"
	OpDeleteDirectory = "delete_directory"
	OpDeleteVolume    = "delete_volume"
)

// Kinds are the operations, in the order the documentation gives them.
var Kinds = []string{OpPutFile, OpMove, OpDeleteFile, OpDeleteDirectory, OpDeleteVolume}

// Operation is one exact change to the protected repository.
type Operation struct {
	// Kind is put_file, move, delete_file, delete_directory or
	// delete_volume.
	Kind string `json:"kind"`
	// Path is the file written (put_file), moved (move) or deleted
	// (delete_file, delete_directory): absolute, canonical, beneath a
	// protected path.
	Path string `json:"path,omitempty"`
	// To is where move puts Path (it must not exist).
	To string `json:"to,omitempty"`
	// SHA256 and Size name put_file's content: an upload staged with the
	// helper (breakglass.stage), checked again when it is written.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Mode is put_file's permission bits ("0644" when empty, the old
	// file's when it replaces one).
	Mode string `json:"mode,omitempty"`
	// Volume is delete_volume's logical volume, as vg/lv: one of the
	// protected volumes.
	Volume string `json:"volume,omitempty"`
}

var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	vgLV      = regexp.MustCompile(`^[a-zA-Z0-9+_.][a-zA-Z0-9+_.\-]*/[a-zA-Z0-9+_.][a-zA-Z0-9+_.\-]*$`)
)

// FieldError is a bad argument: the field and the rule it breaks.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// Check refuses an operation that is not exact: a field its kind does not
// take, a missing one, a path that is not canonical. Whether the targets
// are inside the repository is the repository's to say (Resolve).
func (o Operation) Check() error {
	type fields struct{ path, to, content, volume bool }
	want := map[string]fields{
		OpPutFile:         {path: true, content: true},
		OpMove:            {path: true, to: true},
		OpDeleteFile:      {path: true},
		OpDeleteDirectory: {path: true},
		OpDeleteVolume:    {volume: true},
	}
	w, ok := want[o.Kind]
	if !ok {
		return fieldErr("operation.kind", "%q is not one of %s", o.Kind, strings.Join(Kinds, ", "))
	}
	for _, f := range []struct {
		name       string
		set, takes bool
		optional   bool // taken, not needed
	}{
		{"operation.path", o.Path != "", w.path, false}, {"operation.to", o.To != "", w.to, false},
		{"operation.sha256", o.SHA256 != "", w.content, false}, {"operation.size", o.Size != 0, w.content, true},
		{"operation.mode", o.Mode != "", w.content, true}, {"operation.volume", o.Volume != "", w.volume, false},
	} {
		switch {
		case f.set && !f.takes:
			return fieldErr(f.name, "%s does not take it", o.Kind)
		case !f.set && f.takes && !f.optional:
			return fieldErr(f.name, "%s needs it", o.Kind)
		}
	}
	if w.path {
		if err := checkPath("operation.path", o.Path); err != nil {
			return err
		}
	}
	if w.to {
		if err := checkPath("operation.to", o.To); err != nil {
			return err
		}
		if o.To == o.Path || beneath(o.To, o.Path) {
			return fieldErr("operation.to", "%s is %s or beneath it: a move goes elsewhere", o.To, o.Path)
		}
	}
	if w.content {
		if !sha256Hex.MatchString(o.SHA256) {
			return fieldErr("operation.sha256", "must be the staged upload's SHA-256, 64 lowercase hex digits")
		}
		if o.Size < 0 || o.Size > MaxPutSize {
			return fieldErr("operation.size", "%d: must be 0 to %d bytes", o.Size, int64(MaxPutSize))
		}
		if o.Mode != "" {
			if _, err := parseMode(o.Mode); err != nil {
				return err
			}
		}
	}
	if w.volume && !vgLV.MatchString(o.Volume) {
		return fieldErr("operation.volume", "%q: must name a logical volume as vg/lv (not /dev/..., not a storage volume id)", o.Volume)
	}
	return nil
}

// parseMode reads permission bits as chmod takes them; setuid, setgid and
// sticky bits are refused.
func parseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || len(s) > 4 || m&^0o777 != 0 {
		return 0, fieldErr("operation.mode", "%q: must be octal permission bits such as \"0644\" (no setuid, setgid or sticky bit)", s)
	}
	return uint32(m), nil
}

// checkPath refuses a path that is not absolute and canonical: no "..",
// ".", "//", trailing "/" or NUL. A canonical path names one file, so
// what the preview shows is what the runner touches.
func checkPath(field, p string) error {
	switch {
	case len(p) > maxPathLen:
		return fieldErr(field, "longer than %d bytes", maxPathLen)
	case strings.ContainsRune(p, 0):
		return fieldErr(field, "contains NUL")
	case !strings.HasPrefix(p, "/"):
		return fieldErr(field, "%q: must be absolute", p)
	case path.Clean(p) != p || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return fieldErr(field, "%q: must be canonical (no \"..\", \".\", \"//\" or trailing \"/\"); it would be %s", p, path.Clean(p))
	case p == "/":
		return fieldErr(field, "must not be /")
	}
	return nil
}

// beneath reports whether p is strictly beneath dir, by whole path
// elements: /mnt/model-repo-notes is not beneath /mnt/model-repo.
func beneath(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// Principal is who took a step: a key (verified by the helper) or root at
// the host's command line.
type Principal struct {
	KeyID string `json:"key_id,omitempty"`
	Name  string `json:"name"`
	// Lineage is the first key of the key's rotations: two keys of one
	// lineage are one principal.
	Lineage string `json:"lineage,omitempty"`
	Profile string `json:"profile,omitempty"`
	Policy  string `json:"policy,omitempty"`
	// Host is set for root at the host's command line (Name says who, as
	// the login records it).
	Host bool `json:"host,omitempty"`
}

// Same reports whether p and q are one principal: the same key, keys of
// one lineage, or both root at the host.
func (p Principal) Same(q Principal) bool {
	switch {
	case p.Host || q.Host:
		return p.Host && q.Host
	case p.KeyID != "" && p.KeyID == q.KeyID:
		return true
	}
	return p.Lineage != "" && p.Lineage == q.Lineage
}

func (p Principal) String() string {
	if p.Host {
		return "root at the host (" + p.Name + ")"
	}
	return fmt.Sprintf("key %s (%s)", p.Name, p.KeyID)
}

// Target is one thing an operation touches, as the helper found it in the
// host's view, with the identity the runner compares before it acts.
type Target struct {
	// Role is what the operation does with it: "file" (put_file's),
	// "source" and "destination" (move's), "directory", "volume", and
	// "parent" (the directory a new entry goes in).
	Role string `json:"role"`
	Path string `json:"path,omitempty"`
	// Volume is an LV as vg/lv.
	Volume string `json:"volume,omitempty"`
	Exists bool   `json:"exists"`
	// Type is file, directory or volume.
	Type string `json:"type,omitempty"`
	// Dev and Ino are the file's identity; Size, Mtime (nanoseconds) and
	// SHA256 its content (SHA256 only up to HashLimit bytes).
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Mtime  int64  `json:"mtime_ns,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Files and Dirs count what a directory holds (recursively).
	Files int64 `json:"files,omitempty"`
	Dirs  int64 `json:"dirs,omitempty"`
	// LVUUID is a volume's identity.
	LVUUID string `json:"lv_uuid,omitempty"`
}

// Preview is what a request will do, as the helper resolved it: the
// exact thing both confirmations approve (by its digest).
type Preview struct {
	V         int       `json:"v"`
	ID        string    `json:"id"`
	Nonce     string    `json:"nonce"`
	Operation Operation `json:"operation"`
	Targets   []Target  `json:"targets"`
	// Changes say in words what will change.
	Changes   []string  `json:"changes"`
	Requester Principal `json:"requester"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
}

// Digest is the SHA-256 of the preview's JSON: what the confirmations
// and the signed request are bound to.
func (p Preview) Digest() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic("breakglass: a preview does not encode: " + err.Error()) // only plain fields
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// A request's confirmation phrase is "break glass <id> <code>", the code
// drawn at random for the request and kept in its root-only record: it
// confirms this request (and so its preview's digest) and nothing else,
// and nobody can work it out from what the answers show, so a model that
// was not given it (the person was asked by elicitation) cannot confirm.
const (
	codeAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	codeLen      = 10
)

func newCode() (string, error) {
	var b [codeLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("breakglass: random: %w", err)
	}
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b[:]), nil
}

func phraseOf(id, code string) string { return "break glass " + id + " " + code }

var idPattern = regexp.MustCompile(`^bg-[0-9a-f]{16}$`)

// ValidID reports whether id is a request's id (bg- and 16 hex digits).
func ValidID(id string) bool { return idPattern.MatchString(id) }

func newID() (id, nonce string, err error) {
	var b [8 + 32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("breakglass: random: %w", err)
	}
	return "bg-" + hex.EncodeToString(b[:8]), hex.EncodeToString(b[8:]), nil
}

// Signed is the request the helper signs once both confirmations hold and
// the runner executes once: everything it needs, nothing it must look up
// in a file the daemon could write.
type Signed struct {
	V         int       `json:"v"`
	ID        string    `json:"id"`
	Nonce     string    `json:"nonce"`
	Digest    string    `json:"digest"`
	Operation Operation `json:"operation"`
	Targets   []Target  `json:"targets"`
	Requester Principal `json:"requester"`
	Approver  Principal `json:"approver"`
	Issued    time.Time `json:"issued"`
	Expires   time.Time `json:"expires"`
	// Key is the signing key's fingerprint (KeyFingerprint).
	Key string `json:"key"`
}

// Envelope is a signed request as it lies in the queue: the payload's
// exact bytes and their Ed25519 signature.
type Envelope struct {
	Payload   []byte `json:"payload"`
	Signature []byte `json:"signature"`
}

// KeyFingerprint names a public key: the first 16 hex digits of its
// SHA-256.
func KeyFingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Sign makes the envelope of s.
func Sign(key ed25519.PrivateKey, s Signed) (Envelope, error) {
	s.Key = KeyFingerprint(key.Public().(ed25519.PublicKey))
	payload, err := json.Marshal(s)
	if err != nil {
		return Envelope{}, fmt.Errorf("breakglass: encode a signed request: %w", err)
	}
	return Envelope{Payload: payload, Signature: ed25519.Sign(key, payload)}, nil
}

// Errors of Open that a runner tells apart.
var (
	ErrSignature = errors.New("the signature does not verify with the runner's key")
	ErrExpired   = errors.New("the request has expired")
)

// Open verifies an envelope with pub and decodes its request strictly,
// refusing one of another version, another key, or past its expiry at
// now.
func Open(pub ed25519.PublicKey, env Envelope, now time.Time) (Signed, error) {
	if len(env.Signature) != ed25519.SignatureSize || !ed25519.Verify(pub, env.Payload, env.Signature) {
		return Signed{}, ErrSignature
	}
	var s Signed
	if err := decodeStrict(env.Payload, &s); err != nil {
		return Signed{}, fmt.Errorf("the signed request does not decode: %w", err)
	}
	switch {
	case s.V != ProtocolVersion:
		return s, fmt.Errorf("the signed request is of protocol version %d, the runner speaks %d", s.V, ProtocolVersion)
	case s.Key != KeyFingerprint(pub):
		return s, fmt.Errorf("the request names signing key %s, the runner's is %s", s.Key, KeyFingerprint(pub))
	case !ValidID(s.ID) || !sha256Hex.MatchString(s.Nonce) || !sha256Hex.MatchString(s.Digest):
		return s, errors.New("the signed request's id, nonce or digest is malformed")
	case s.Expires.Sub(s.Issued) > MaxTTL || s.Expires.Before(s.Issued):
		return s, fmt.Errorf("the signed request's lifetime %s is over %s", s.Expires.Sub(s.Issued), MaxTTL)
	case now.After(s.Expires):
		return s, fmt.Errorf("%w: it expired at %s, %s ago", ErrExpired, s.Expires.UTC().Format(time.RFC3339), now.Sub(s.Expires).Round(time.Second))
	case s.Requester.Same(s.Approver):
		return s, fmt.Errorf("the requester %s is its own approver", s.Requester)
	}
	if err := s.Operation.Check(); err != nil {
		return s, err
	}
	return s, nil
}
