package keys

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
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
// default parameters (DefaultParams).
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
// 1, 10 and 1000 keys in the store. Probes are not rate-limited here, so
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
			v := newVerifier(b, s, nil, VerifierOptions{ProbeRate: rate.Inf})
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

// BenchmarkVerifyFlood: the attack load of bad keys, after the budgets are
// used up, as the limiter sees it under a flood. "unknown" sends unknown
// ids from 100,000 rotating IPv4 sources, so the probe table is full and
// churns; "wrong-secret" sends wrong secrets for a known key from one
// source whose budget is used up (refused before scrypt).
func BenchmarkVerifyFlood(b *testing.B) {
	dir := b.TempDir()
	populate(b, dir, 10)
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(dir+"/"+FileName, old, old); err != nil {
		b.Fatal(err)
	}
	s := openStore(b, dir, nil)
	sn, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	sources := make([]string, 100000)
	for i := range sources {
		sources[i] = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
	}
	ctx := context.Background()
	b.Run("unknown", func(b *testing.B) {
		v := newVerifier(b, s, nil, VerifierOptions{})
		key := newTestToken(b).Key().Reveal()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := v.Verify(ctx, key, sources[i%len(sources)]); err == nil {
				b.Fatal("unknown key accepted")
			}
			i++
		}
		b.ReportMetric(float64(len(v.limiter.probes.m)), "tracked")
	})
	b.Run("wrong-secret", func(b *testing.B) {
		v := newVerifier(b, s, nil, VerifierOptions{FailureBurst: 1, FailureRate: 1e-9})
		var id string
		for _, r := range sn.records {
			id = r.ID
			break
		}
		tok := newTestToken(b)
		tok.ID = id
		key := tok.encode()
		if _, err := v.Verify(ctx, key, "10.0.0.1"); !errors.Is(err, ErrUnauthenticated) {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ctx, key, "10.0.0.1"); !errors.Is(err, ErrRateLimited) {
				b.Fatal(err)
			}
		}
		if v.Stats().Hashes != 1 {
			b.Fatalf("a used-up budget still hashed: %+v", v.Stats())
		}
	})
}

// BenchmarkLimiterTableMemory reports the heap a full table of 10,000
// failing sources holds (the default MaxSources), per source.
func BenchmarkLimiterTableMemory(b *testing.B) {
	srcs := make([]sourceKey, 10000)
	for i := range srcs {
		srcs[i] = sourceOf(fmt.Sprintf("2001:db8:%x:%x::1", i>>16, i&0xffff))
	}
	now := time.Now()
	var per float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := newFailureLimiter(limits{keyRate: 1, sourceRate: 1, probeRate: 1, keyBurst: 10, sourceBurst: 10, probeBurst: 10, max: len(srcs)})
		for _, src := range srcs {
			if err := l.probe(src, now); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per = float64(after.HeapAlloc-before.HeapAlloc) / float64(len(srcs))
		runtime.KeepAlive(l)
	}
	b.ReportMetric(per, "B/source")
}
