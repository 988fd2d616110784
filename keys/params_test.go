package keys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/crypto/scrypt"
)

// oldRecordKey is the key of testdata/n32768/keys.json, a record that
// `proxmox-mcp key create` wrote with the parameters of before issue 16
// (N=32768, r=8, p=1). It is a test fixture, no deployment's key.
const oldRecordKey = "pmcp_f73f4ov6fbocedeq_u4ZwpikXDJCKdzOJeqPUarpIddvDxDvRjXhsTI4VWww"

// A record hashed with earlier parameters verifies with a store and a
// verifier of today's defaults (each record carries its own), a wrong
// secret for it is refused, and a key created beside it gets today's
// parameters.
func TestRecordOfEarlierParamsVerifies(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "n32768", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var hashed []int
	v := newVerifier(t, s, nil, VerifierOptions{AfterHash: func(memory int) { hashed = append(hashed, memory) }})
	ctx := context.Background()
	p, err := v.Verify(ctx, oldRecordKey, "s")
	if err != nil || p.Name != "before-issue-16" || p.Profile != "read-only" {
		t.Fatalf("the N=32768 record: %+v, %v", p, err)
	}
	wrong := oldRecordKey[:len(oldRecordKey)-4] + "AAAA"
	if _, err := v.Verify(ctx, wrong, "s"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a wrong secret for the N=32768 record: %v, want %v", err, ErrUnauthenticated)
	}
	k := mustCreate(t, s, "after", readOnly)
	if h := k.Record.Hash; (Params{h.N, h.R, h.P}) != DefaultParams() {
		t.Errorf("a new key's parameters are N=%d r=%d p=%d, want %+v", h.N, h.R, h.P, DefaultParams())
	}
	if _, err := v.Verify(ctx, k.Key.Reveal(), "s"); err != nil {
		t.Errorf("the new key beside it: %v", err)
	}
	if _, err := v.Verify(ctx, oldRecordKey, "s"); err != nil {
		t.Errorf("the N=32768 record after a write of the file: %v", err)
	}
	// AfterHash is told each hash's working memory: 32 MiB for the old
	// record (its first use and the wrong secret), 1 MiB for the new key.
	if want := []int{32 << 20, 32 << 20, 1 << 20}; !slices.Equal(hashed, want) {
		t.Errorf("AfterHash saw %v bytes, want %v", hashed, want)
	}
}

// BenchmarkScryptParams: one scrypt hash (r=8, p=1, a 32-byte key) at the
// cost parameters considered for keys; B/op is its working memory (128·N·r
// bytes). See docs/keys.md for the choice.
func BenchmarkScryptParams(b *testing.B) {
	secret := make([]byte, 32)
	salt := make([]byte, saltLen)
	for _, logN := range []int{8, 10, 12, 14, 15} {
		b.Run(fmt.Sprintf("N=2^%d", logN), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := scrypt.Key(secret, salt, 1<<logN, 8, 1, keyLen); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
