package keys

import (
	"crypto/subtle"
	"fmt"
	"io"
	"regexp"
	"time"

	"golang.org/x/crypto/scrypt"
)

// Record is one key in keys.json. The secret itself is never stored.
type Record struct {
	// ID is the key id, the part of the key between the prefix and the secret.
	ID string `json:"id"`
	// Name is unique among current keys (neither revoked, expired nor
	// superseded by a rotation).
	Name string `json:"name"`
	// Profile is a built-in profile; exactly one of Profile and Policy is set.
	Profile string `json:"profile,omitempty"`
	// Policy is the id of a custom policy.
	Policy string `json:"policy,omitempty"`
	// Created is when the key was made.
	Created time.Time `json:"created"`
	// Expires is zero when the key does not expire.
	Expires time.Time `json:"expires,omitzero"`
	// Revoked is when the key was revoked, or zero.
	Revoked time.Time `json:"revoked,omitzero"`
	// RotatedFrom is the id of the key this one replaced.
	RotatedFrom string `json:"rotated_from,omitempty"`
	// RotatedTo is the id of the key that replaced this one.
	RotatedTo string `json:"rotated_to,omitempty"`
	// Hash is the scrypt hash of the secret.
	Hash Hash `json:"hash"`
}

// Hash is an scrypt hash with its parameters.
type Hash struct {
	// Alg is "scrypt".
	Alg string `json:"alg"`
	// N, R and P are scrypt's cost parameters.
	N int `json:"n"`
	R int `json:"r"`
	P int `json:"p"`
	// Salt is random, 16 bytes or more.
	Salt []byte `json:"salt"`
	// Key is the derived key, 32 bytes.
	Key []byte `json:"key"`
}

// Params are scrypt's cost parameters.
type Params struct{ N, R, P int }

// DefaultParams returns the parameters of new hashes, N=1024, r=8, p=1:
// 1 MiB and 2–4 ms of one core per hash. A key's secret is 256 random
// bits, which no guessing reaches whatever the hash costs, so scrypt's
// memory-hard cost protects nothing here; what it costs is the daemon's:
// 32 MiB at N=32768 for every first use of a key and every wrong secret.
// Records keep their own parameters, so those hashed at N=32768 still
// verify (docs/keys.md).
func DefaultParams() Params { return Params{N: 1 << 10, R: 8, P: 1} }

// Memory is the working memory of one hash, in bytes (128·N·r).
func (p Params) Memory() int { return 128 * p.N * p.R }

// The cap on the work a stored record can demand of a verification, so a
// tampered or hostile keys.json cannot make each attempt cost seconds or
// gigabytes: N ≤ 2^20, r ≤ 16, p ≤ 4 and 128·N·r ≤ 256 MiB.
const (
	maxN      = 1 << 20
	maxR      = 16
	maxP      = 4
	maxMemory = 256 << 20
	saltLen   = 16
	keyLen    = 32
)

// check validates parameters against the cap.
func (p Params) check() error {
	switch {
	case p.N < 2 || p.N&(p.N-1) != 0:
		return fmt.Errorf("scrypt N=%d is not a power of two above 1", p.N)
	case p.R < 1 || p.P < 1:
		return fmt.Errorf("scrypt r=%d, p=%d must be at least 1", p.R, p.P)
	case p.N > maxN || p.R > maxR || p.P > maxP || 128*p.N*p.R > maxMemory:
		return fmt.Errorf("scrypt N=%d r=%d p=%d exceed the accepted work (N ≤ %d, r ≤ %d, p ≤ %d, 128·N·r ≤ %d MiB)",
			p.N, p.R, p.P, maxN, maxR, maxP, maxMemory>>20)
	}
	return nil
}

// newHash hashes a secret with fresh salt.
func newHash(secret []byte, p Params, r io.Reader) (Hash, error) {
	if err := p.check(); err != nil {
		return Hash{}, err
	}
	salt := make([]byte, saltLen)
	if _, err := io.ReadFull(r, salt); err != nil {
		return Hash{}, fmt.Errorf("salt: %w", err)
	}
	key, err := scrypt.Key(secret, salt, p.N, p.R, p.P, keyLen)
	if err != nil {
		return Hash{}, fmt.Errorf("scrypt: %w", err)
	}
	return Hash{Alg: "scrypt", N: p.N, R: p.R, P: p.P, Salt: salt, Key: key}, nil
}

// check validates a stored hash.
func (h *Hash) check() error {
	if h.Alg != "scrypt" {
		return fmt.Errorf("hash algorithm %q is not scrypt", h.Alg)
	}
	if err := (Params{h.N, h.R, h.P}).check(); err != nil {
		return err
	}
	if len(h.Salt) < saltLen {
		return fmt.Errorf("salt has %d bytes, want at least %d", len(h.Salt), saltLen)
	}
	if len(h.Key) != keyLen {
		return fmt.Errorf("hash has %d bytes, want %d", len(h.Key), keyLen)
	}
	return nil
}

// matches hashes secret with the record's parameters and compares in
// constant time.
func (h *Hash) matches(secret []byte) (bool, error) {
	if err := h.check(); err != nil {
		return false, err
	}
	key, err := scrypt.Key(secret, h.Salt, h.N, h.R, h.P, keyLen)
	if err != nil {
		return false, fmt.Errorf("scrypt: %w", err)
	}
	return subtle.ConstantTimeCompare(key, h.Key) == 1, nil
}

// State is where a key stands at a given time.
type State string

// Key states.
const (
	StateActive     State = "active"
	StateSuperseded State = "superseded" // rotated; the old key works until its grace ends
	StateExpired    State = "expired"
	StateRevoked    State = "revoked"
)

// StateAt returns the key's state at now.
func (r *Record) StateAt(now time.Time) State {
	switch {
	case !r.Revoked.IsZero():
		return StateRevoked
	case !r.Expires.IsZero() && !now.Before(r.Expires):
		return StateExpired
	case r.RotatedTo != "":
		return StateSuperseded
	}
	return StateActive
}

// usable reports whether the key authenticates at now: active, or
// superseded and still within its grace.
func (r *Record) usable(now time.Time) bool {
	s := r.StateAt(now)
	return s == StateActive || s == StateSuperseded
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// CheckName checks a key name: 1 to 64 characters of letters, digits and
// . _ @ -, starting with a letter or digit, and not of the form of a key id
// (so that a reference to a key by id or by name is never ambiguous).
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("name %q: want 1 to 64 characters of [A-Za-z0-9._@-], starting with a letter or digit", name)
	}
	if IsID(name) {
		return fmt.Errorf("name %q has the form of a key id (%d characters of [a-z2-7]); choose another", name, IDLen)
	}
	return nil
}

var bindingRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Binding is what a key is allowed to do: a built-in profile or a custom
// policy id, exactly one of them.
type Binding struct {
	Profile string
	Policy  string
}

// check validates the syntax; whether the profile or policy exists is the
// store's CheckBinding's concern.
func (b Binding) check() error {
	switch {
	case b.Profile == "" && b.Policy == "":
		return fmt.Errorf("a key needs a profile or a policy")
	case b.Profile != "" && b.Policy != "":
		return fmt.Errorf("a key has a profile or a policy, not both (profile %q, policy %q)", b.Profile, b.Policy)
	case b.Profile != "" && !bindingRE.MatchString(b.Profile):
		return fmt.Errorf("profile %q: want [a-z0-9._-], at most 64 characters", b.Profile)
	case b.Policy != "" && !bindingRE.MatchString(b.Policy):
		return fmt.Errorf("policy %q: want [a-z0-9._-], at most 64 characters", b.Policy)
	}
	return nil
}

// Binding returns the record's binding.
func (r *Record) Binding() Binding { return Binding{Profile: r.Profile, Policy: r.Policy} }

// check validates a record read from keys.json.
func (r *Record) check() error {
	if err := CheckID(r.ID); err != nil {
		return err
	}
	if err := CheckName(r.Name); err != nil {
		return fmt.Errorf("key %s: %w", r.ID, err)
	}
	if err := r.Binding().check(); err != nil {
		return fmt.Errorf("key %s: %w", r.ID, err)
	}
	if r.Created.IsZero() {
		return fmt.Errorf("key %s: created is missing", r.ID)
	}
	if r.RotatedFrom != "" && !IsID(r.RotatedFrom) || r.RotatedTo != "" && !IsID(r.RotatedTo) {
		return fmt.Errorf("key %s: rotated_from/rotated_to must be key ids", r.ID)
	}
	if err := r.Hash.check(); err != nil {
		return fmt.Errorf("key %s: %w", r.ID, err)
	}
	return nil
}

// Info is the public view of a key: what `key list --json` and `key show
// --json` print. Its fields are stable; absent values are null.
type Info struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Profile     *string    `json:"profile"`
	Policy      *string    `json:"policy"`
	State       State      `json:"state"`
	Created     time.Time  `json:"created"`
	Expires     *time.Time `json:"expires"`
	Revoked     *time.Time `json:"revoked"`
	RotatedFrom *string    `json:"rotated_from"`
	RotatedTo   *string    `json:"rotated_to"`
}

// Info returns the public view at now.
func (r *Record) Info(now time.Time) Info {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	tm := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	return Info{
		ID: r.ID, Name: r.Name, Profile: str(r.Profile), Policy: str(r.Policy),
		State: r.StateAt(now), Created: r.Created.UTC(), Expires: tm(r.Expires), Revoked: tm(r.Revoked),
		RotatedFrom: str(r.RotatedFrom), RotatedTo: str(r.RotatedTo),
	}
}
