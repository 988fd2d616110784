package journal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Redactor removes secrets from arguments and text before they reach the
// journal. A redacted value becomes a marker holding a short keyed hash of
// the secret, "[redacted hmac:0123456789ab]": two calls that used the same
// secret carry the same marker, so they can be correlated, while the
// marker does not reveal the secret (the hash is keyed by the journal's own
// 256-bit salt, stored in the journal's meta table: a guess cannot be
// checked against a marker without the database file itself).
//
// What is redacted:
//
//   - the value of every parameter whose name says it is a secret, at any
//     depth of the arguments (see [SecretParam]); the name is kept;
//   - inside any string, at any depth and in error text: our keys
//     (pmcp_<id>_<secret> keeps pmcp_<id>_ and loses the secret), PVE API
//     token secrets (user@realm!token=<uuid> keeps the token id; a UUID
//     right after the word token or secret is redacted too), PVE tickets
//     (PVE:user@realm:…), otpauth:// URIs and PEM private key blocks;
//   - inside PVE property strings ("a=1,password=x"), the value of a
//     secret-named property.
//
// Public SSH keys (sshkeys, ssh-public-keys) are kept: they are not
// secrets, and which keys were granted access to a guest is evidence an
// operator needs. A private key pasted into them is still caught by the
// PEM rule.
type Redactor struct {
	salt []byte
}

// NewRedactor returns a redactor keyed by salt (at least 16 bytes).
func NewRedactor(salt []byte) (*Redactor, error) {
	if len(salt) < 16 {
		return nil, fmt.Errorf("journal: redaction salt: %d bytes, want at least 16", len(salt))
	}
	return &Redactor{salt: bytes.Clone(salt)}, nil
}

// SecretParam reports whether a parameter of the endpoint at pathTemplate
// (empty: any endpoint) named name holds a secret; the rule is schema's
// (schema.SecretParam), which owns what an endpoint's parameters are.
func SecretParam(pathTemplate, name string) bool { return schema.SecretParam(pathTemplate, name) }

// Marker returns the marker that stands for a secret value.
func (r *Redactor) Marker(secret string) string {
	m := hmac.New(sha256.New, r.salt)
	io.WriteString(m, secret)
	return "[redacted hmac:" + hex.EncodeToString(m.Sum(nil)[:6]) + "]"
}

// Patterns found inside any string.
var (
	// Our keys: keep the prefix and id, which identify the key without
	// granting anything.
	reKey = regexp.MustCompile(`(pmcp_[a-z2-7]{16}_)([A-Za-z0-9_-]{20,})`)
	// PVE API token secrets: USER@REALM!TOKENID=UUID (the Authorization
	// header's form) or :UUID; the token id is kept.
	reToken = regexp.MustCompile(`([A-Za-z0-9._+-]+@[A-Za-z0-9._-]+![A-Za-z][A-Za-z0-9._-]*)([=:]\s*)([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})`)
	// A bare UUID named as a token or secret ("token: UUID", "secret=UUID"):
	// a PVE token secret on its own.
	reTokenWord = regexp.MustCompile(`(?i)((?:token|secret)(?:\s*[:=]\s*|\s+))([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
	// PVE tickets: PVE:USER@REALM:HEXTIME::SIGNATURE (also after
	// PVEAuthCookie=).
	reTicket = regexp.MustCompile(`PVE(?:VNC|SPICE)?:[^\s:;,"']+:[0-9A-Fa-f]{8}::[A-Za-z0-9+/=]+`)
	// otpauth:// URIs hold the TOTP secret.
	reOTPAuth = regexp.MustCompile(`otpauth://[^\s"']+`)
	// PEM private keys, also URL-encoded (sshkeys is URL-encoded).
	rePEM = regexp.MustCompile(`(?s)-----BEGIN(?:[ A-Z0-9]|%20)*PRIVATE(?: |%20)KEY-----.*?(?:-----END(?:[ A-Z0-9]|%20)*PRIVATE(?: |%20)KEY-----|$)`)
	// Property strings: name=value pairs separated by commas.
	reProp = regexp.MustCompile(`(^|[,;&])\s*([A-Za-z][A-Za-z0-9_-]*)=([^,;&]*)`)
)

// Text redacts secrets found inside s by pattern (keys, tokens, tickets,
// otpauth URIs, PEM private keys, secret properties of property strings).
func (r *Redactor) Text(s string) string {
	if strings.Contains(s, "pmcp_") {
		s = reKey.ReplaceAllStringFunc(s, func(m string) string {
			g := reKey.FindStringSubmatch(m)
			return g[1] + r.Marker(m)
		})
	}
	if strings.Contains(s, "!") {
		s = reToken.ReplaceAllStringFunc(s, func(m string) string {
			g := reToken.FindStringSubmatch(m)
			return g[1] + g[2] + r.Marker(g[3])
		})
	}
	if strings.Contains(s, "-") {
		s = reTokenWord.ReplaceAllStringFunc(s, func(m string) string {
			g := reTokenWord.FindStringSubmatch(m)
			return g[1] + r.Marker(g[2])
		})
	}
	if strings.Contains(s, "PVE") {
		s = reTicket.ReplaceAllStringFunc(s, r.Marker)
	}
	if strings.Contains(s, "otpauth://") {
		s = reOTPAuth.ReplaceAllStringFunc(s, r.Marker)
	}
	if strings.Contains(s, "PRIVATE") {
		s = rePEM.ReplaceAllStringFunc(s, r.Marker)
	}
	if strings.Contains(s, "=") {
		s = reProp.ReplaceAllStringFunc(s, func(m string) string {
			g := reProp.FindStringSubmatch(m)
			if !SecretParam("", g[2]) || strings.HasPrefix(g[3], "[redacted hmac:") {
				return m
			}
			return m[:len(m)-len(g[3])] + r.Marker(g[3])
		})
	}
	return s
}

// Value returns a redacted copy of v, which holds decoded JSON (maps,
// slices, strings, json.Number, float64, bool, nil): secret-named
// parameters at any depth are replaced by a marker, and every string is
// passed through [Redactor.Text]. v is not modified.
func (r *Redactor) Value(pathTemplate string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if _, isBool := val.(bool); SecretParam(pathTemplate, k) && !isBool && val != nil && val != "" {
				out[k] = r.Marker(canonicalText(val))
				continue
			}
			out[k] = r.Value(pathTemplate, val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = r.Value(pathTemplate, val)
		}
		return out
	case string:
		return r.jsonText(pathTemplate, x)
	default:
		return v
	}
}

// jsonText redacts a string that holds a JSON object or array (a webhook
// body, a plugin's settings) as arguments, and any other string as text.
func (r *Redactor) jsonText(pathTemplate, s string) string {
	t := strings.TrimSpace(s)
	if len(t) < 2 || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(t)) {
		return r.Text(s)
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var inner any
	if err := dec.Decode(&inner); err != nil {
		return r.Text(s)
	}
	before, err1 := json.Marshal(inner)
	after, err2 := json.Marshal(r.Value(pathTemplate, inner))
	if err1 != nil || err2 != nil || bytes.Equal(before, after) {
		return s
	}
	return string(after)
}

// canonicalText is the text a marker hashes for a non-string secret.
func canonicalText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// JSON encodes v (any value that encodes to JSON) and returns the redacted
// JSON text; nil encodes as null. Object keys come out sorted, so the same
// arguments always give the same text.
func (r *Redactor) JSON(pathTemplate string, v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode: %w", err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode: text after the JSON value")
	}
	out, err := json.Marshal(r.Value(pathTemplate, generic))
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return out, nil
}
