package keys

import (
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Prefix starts every key; secret scanners can recognise it.
const Prefix = "pmcp_"

const (
	// IDLen is the length of a key id: 10 random bytes in base32.
	IDLen = 16
	// SecretBytes is the size of a secret: 256 bits.
	SecretBytes = 32
	// secretLen is the length of the secret in unpadded base64url.
	secretLen = 43
	// TokenLen is the length of a whole key.
	TokenLen = len(Prefix) + IDLen + 1 + secretLen
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ErrMalformed marks a string that is not a key of this format.
var ErrMalformed = errors.New("malformed key")

// redacted is what a Secret prints.
const redacted = "[REDACTED]"

// Secret holds a whole key (or any other secret text). It redacts itself in
// fmt, slog and JSON output; Reveal returns the text.
type Secret string

// Reveal returns the secret text; call it only where the secret must leave
// the process (printing a new key once).
func (s Secret) Reveal() string { return string(s) }

// String redacts.
func (Secret) String() string { return redacted }

// GoString redacts.
func (Secret) GoString() string { return redacted }

// LogValue redacts.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON redacts.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText redacts.
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Format redacts for every verb, %x and %q included.
func (Secret) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// Token is a parsed key.
type Token struct {
	// ID is the key id.
	ID string
	// secret is the decoded 256-bit secret.
	secret [SecretBytes]byte
}

// ParseToken checks the syntax of a key and splits it. It does no lookup and
// no hashing. Errors wrap ErrMalformed and never contain the secret.
func ParseToken(s string) (Token, error) {
	var t Token
	if len(s) > TokenLen+64 {
		return t, fmt.Errorf("%w: %d characters, a key has %d", ErrMalformed, len(s), TokenLen)
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return t, fmt.Errorf("%w: a key starts with %q", ErrMalformed, Prefix)
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok {
		return t, fmt.Errorf("%w: a key is %s<id>_<secret>; the '_' after the id is missing", ErrMalformed, Prefix)
	}
	// The id is not quoted: in a mistyped key it may be part of the secret.
	if err := idShape(id); err != nil {
		return t, fmt.Errorf("%w: key id: %w", ErrMalformed, err)
	}
	if len(secret) != secretLen {
		return t, fmt.Errorf("%w: the secret has %d characters, want %d (256 bits in base64url)", ErrMalformed, len(secret), secretLen)
	}
	n, err := base64.RawURLEncoding.Strict().Decode(t.secret[:], []byte(secret))
	if err != nil || n != SecretBytes {
		return Token{}, fmt.Errorf("%w: the secret is not canonical base64url", ErrMalformed)
	}
	t.ID = id
	return t, nil
}

// CheckID checks the syntax of a key id.
func CheckID(id string) error {
	if err := idShape(id); err != nil {
		return fmt.Errorf("key id %q: %w", truncate(id), err)
	}
	return nil
}

// idShape checks the syntax of a key id without quoting it.
func idShape(id string) error {
	if len(id) != IDLen {
		return fmt.Errorf("want %d characters of [a-z2-7], got %d", IDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return fmt.Errorf("character %q at %d is not in [a-z2-7]", c, i)
		}
	}
	return nil
}

// IsID reports whether s has the syntax of a key id.
func IsID(s string) bool { return CheckID(s) == nil }

func truncate(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}

// encode returns the whole key as plain text; Key wraps it in a Secret.
func (t Token) encode() string {
	return Prefix + t.ID + "_" + base64.RawURLEncoding.EncodeToString(t.secret[:])
}

// Key returns the whole key as a redacting Secret.
func (t Token) Key() Secret { return Secret(t.encode()) }

// newToken makes a key with a fresh id and secret from r.
func newToken(r io.Reader) (Token, error) {
	var t Token
	var idb [10]byte
	if _, err := io.ReadFull(r, idb[:]); err != nil {
		return t, fmt.Errorf("new key id: %w", err)
	}
	if _, err := io.ReadFull(r, t.secret[:]); err != nil {
		return t, fmt.Errorf("new key secret: %w", err)
	}
	t.ID = idEncoding.EncodeToString(idb[:])
	return t, nil
}
