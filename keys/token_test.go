package keys

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func newTestToken(t testing.TB) Token {
	t.Helper()
	tok, err := newToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenRoundTrip(t *testing.T) {
	for range 100 {
		tok := newTestToken(t)
		s := tok.encode()
		if len(s) != TokenLen {
			t.Fatalf("len(%q) = %d, want %d", s, len(s), TokenLen)
		}
		got, err := ParseToken(s)
		if err != nil {
			t.Fatalf("ParseToken(%q): %v", s, err)
		}
		if got != tok {
			t.Fatalf("ParseToken(%q) = %v, want %v", s, got.ID, tok.ID)
		}
	}
}

func TestParseTokenRejects(t *testing.T) {
	valid := newTestToken(t).encode()
	id := valid[len(Prefix) : len(Prefix)+IDLen]
	secret := valid[len(Prefix)+IDLen+1:]
	tests := []struct{ name, in, want string }{
		{"empty", "", `a key starts with "pmcp_"`},
		{"wrong prefix", "mcpd_" + id + "_" + secret, `a key starts with "pmcp_"`},
		{"upper-case prefix", "PMCP_" + id + "_" + secret, `a key starts with "pmcp_"`},
		{"bearer left in", "Bearer " + valid, `a key starts with "pmcp_"`},
		{"no separator", Prefix + id + strings.ReplaceAll(secret, "_", "A"), `the '_' after the id is missing`},
		{"short id", Prefix + id[:15] + "_" + secret, `want 16 characters of [a-z2-7], got 15`},
		{"upper-case id", Prefix + strings.ToUpper(id) + "_" + secret, `is not in [a-z2-7]`},
		{"id with 0", Prefix + "0" + id[1:] + "_" + secret, `character '0' at 0`},
		{"truncated secret", Prefix + id + "_" + secret[:42], `the secret has 42 characters, want 43`},
		{"long secret", Prefix + id + "_" + secret + "A", `the secret has 44 characters, want 43`},
		{"padded secret", Prefix + id + "_" + secret[:41] + "==", `not canonical base64url`},
		{"std base64 chars", Prefix + id + "_" + "+" + secret[1:], `not canonical base64url`},
		{"non-canonical last char", Prefix + id + "_" + secret[:42] + nonCanonical(secret[42]), `not canonical base64url`},
		{"trailing newline", valid + "\n", `the secret has 44 characters`},
		{"huge", strings.Repeat("x", 10000), `10000 characters, a key has 65`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseToken(tt.in)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseToken: err = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("err %q contains the secret", err)
			}
		})
	}
}

// nonCanonical returns a last base64url character that decodes to the same
// bytes but sets unused low bits.
func nonCanonical(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	return string(alphabet[i^1])
}

// echoedSecret returns a 12-character run of a key-length input that the
// error repeats, skipping runs of lower-case letters alone (the words of the
// message itself).
func echoedSecret(input, msg string) string {
	if len(input) < TokenLen-8 {
		return ""
	}
	body := strings.TrimPrefix(input, Prefix)
	for i := 0; i+12 <= len(body); i++ {
		w := body[i : i+12]
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			continue
		}
		if strings.Contains(msg, w) {
			return w
		}
	}
	return ""
}

func TestMalformedKeyErrorsHideTheSecret(t *testing.T) {
	secret := strings.Repeat("Zq9-", 10) + "Zq9"
	for _, s := range []string{
		Prefix + "002222220000000000000000" + secret[:27], // the '_' typed elsewhere
		Prefix + secret + "_" + "aaaaaaaaaaaaaaaa",        // id and secret swapped
		Prefix + "ab" + secret + "_",
	} {
		_, err := ParseToken(s)
		if err == nil {
			t.Fatalf("ParseToken(%q) accepted", s)
		}
		if leak := echoedSecret(s, err.Error()); leak != "" {
			t.Errorf("error %q echoes %q", err, leak)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add("pmcp_002222220000000000000000" + strings.Repeat("0", 27))
	f.Add(newTestToken(f).encode())
	f.Add("pmcp_aaaaaaaaaaaaaaaa_")
	f.Add("pmcp__")
	f.Add("pmcp_" + strings.Repeat("a", 16) + "_" + strings.Repeat("A", 43))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if leak := echoedSecret(s, err.Error()); leak != "" {
				t.Fatalf("error %q echoes %q of a key-length input: it may contain the secret", err, leak)
			}
			return
		}
		// Anything accepted is canonical: it encodes back to the same text.
		if got := tok.encode(); got != s {
			t.Fatalf("ParseToken(%q) accepted a non-canonical key; it encodes as %q", s, got)
		}
		if CheckID(tok.ID) != nil {
			t.Fatalf("accepted id %q fails CheckID", tok.ID)
		}
	})
}

func TestSecretRedacts(t *testing.T) {
	key := newTestToken(t).Key()
	plain := key.Reveal()
	type wrapper struct {
		Key Secret `json:"key"`
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("made", "key", key, "w", wrapper{key})
	slog.New(slog.NewTextHandler(&logged, nil)).Info("made", "key", key)
	js, err := json.Marshal(wrapper{key})
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v": fmt.Sprintf("%v", key), "%s": fmt.Sprintf("%s", key), "%q": fmt.Sprintf("%q", key),
		"%x": fmt.Sprintf("%x", key), "%+v": fmt.Sprintf("%+v", wrapper{key}), "%#v": fmt.Sprintf("%#v", key),
		"String": key.String(), "json": string(js), "slog": logged.String(),
		"error": fmt.Errorf("failed with %v", key).Error(),
	}
	for name, out := range outputs {
		if strings.Contains(out, plain) || strings.Contains(out, plain[len(plain)-20:]) {
			t.Errorf("%s leaks the secret: %s", name, out)
		}
		if !strings.Contains(out, "REDACTED") {
			t.Errorf("%s does not say REDACTED: %s", name, out)
		}
	}
	if !strings.HasPrefix(plain, Prefix) {
		t.Errorf("Reveal = %q, want the key", plain)
	}
}
