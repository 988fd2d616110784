package keys

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// populate writes n keys with cheap hashes straight to keys.json.
func populate(b *testing.B, dir string, n int) {
	b.Helper()
	s := openStore(b, dir, nil)
	recs := make([]Record, 0, n)
	for i := range n {
		rec, _, err := s.newRecord(fmt.Sprintf("key-%d", i), readOnly, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		rec.Created = time.Now()
		recs = append(recs, rec)
	}
	data, err := encode(recs)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkVerifyCached: a key seen before, as on every request after the
// first. The file is older than the racy window, as in steady operation.
func BenchmarkVerifyCached(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	k := mustCreate(b, s, "alice", readOnly)
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(s.Path(), old, old); err != nil {
		b.Fatal(err)
	}
	v := newVerifier(b, s, nil, VerifierOptions{})
	ctx := context.Background()
	key := k.Key.Reveal()
	if _, err := v.Verify(ctx, key, "10.0.0.1"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, key, "10.0.0.1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyFirst: the first request with a key, one scrypt at the
// default parameters (N=32768, r=8, p=1).
func BenchmarkVerifyFirst(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	k := mustCreate(b, s, "alice", readOnly)
	ctx := context.Background()
	key := k.Key.Reveal()
	v := newVerifier(b, s, nil, VerifierOptions{})
	b.ReportAllocs()
	for b.Loop() {
		v.cacheMu.Lock()
		clear(v.cache)
		v.cacheMu.Unlock()
		if _, err := v.Verify(ctx, key, "10.0.0.1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyUnknownID: a well-formed key whose id is not stored, with
// 1, 10 and 1000 keys in the store. Failures are not rate-limited here, so
// every attempt does the full refusal.
func BenchmarkVerifyUnknownID(b *testing.B) {
	for _, n := range []int{1, 10, 1000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			populate(b, dir, n)
			old := time.Now().Add(-time.Minute)
			if err := os.Chtimes(dir+"/"+FileName, old, old); err != nil {
				b.Fatal(err)
			}
			s := openStore(b, dir, nil)
			v := newVerifier(b, s, nil, VerifierOptions{FailureRate: rate.Inf})
			tok, err := newToken(rand.Reader)
			if err != nil {
				b.Fatal(err)
			}
			key := tok.encode()
			ctx := context.Background()
			if _, err := s.Snapshot(); err != nil { // load keys.json once, as the daemon does at start
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, key, "10.0.0.9"); err == nil {
					b.Fatal("unknown key accepted")
				}
			}
		})
	}
}

func BenchmarkParseToken(b *testing.B) {
	key := newTestToken(b).encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseToken(key); err != nil {
			b.Fatal(err)
		}
	}
}
