package breakglass

import (
	"crypto/ed25519"
	"path"
	"strings"
	"testing"
	"time"
)

// FuzzSignedRequest: whatever bytes are signed, Open never panics, and
// what it accepts is a request the runner may act on: a valid id, nonce
// and digest, a lifetime of at most five minutes, distinct principals and
// an exact operation whose paths are absolute and canonical.
func FuzzSignedRequest(f *testing.F) {
	seed := []byte(`{"v":1,"id":"bg-0123456789abcdef","nonce":"` + strings.Repeat("a", 64) + `","digest":"` + strings.Repeat("b", 64) +
		`","operation":{"kind":"delete_file","path":"/mnt/model-repo/a"},"targets":[],"requester":{"key_id":"k1","name":"a"},"approver":{"name":"root","host":true},` +
		`"issued":"2026-12-02T12:00:00Z","expires":"2026-12-02T12:05:00Z","key":"KEY"}`)
	f.Add(seed)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"operation":{"kind":"move","path":"/a/b","to":"/a/b/c"}}`))
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		f.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	now := time.Date(2026, 12, 2, 12, 1, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, payload []byte) {
		payload = []byte(strings.ReplaceAll(string(payload), "KEY", KeyFingerprint(pub)))
		env := Envelope{Payload: payload, Signature: ed25519.Sign(key, payload)}
		s, err := Open(pub, env, now)
		if err != nil {
			return
		}
		if !ValidID(s.ID) || s.Expires.Sub(s.Issued) > MaxTTL || now.After(s.Expires) || s.Requester.Same(s.Approver) {
			t.Fatalf("accepted %+v", s)
		}
		for _, p := range []string{s.Operation.Path, s.Operation.To} {
			if p != "" && (!strings.HasPrefix(p, "/") || path.Clean(p) != p) {
				t.Fatalf("accepted the path %q", p)
			}
		}
		// Changing one byte of what was signed breaks the signature.
		env.Payload = append([]byte(nil), payload...)
		env.Payload[0] ^= 1
		if _, err := Open(pub, env, now); err != ErrSignature {
			t.Fatalf("a changed payload: %v", err)
		}
	})
}
