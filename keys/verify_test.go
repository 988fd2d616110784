package keys

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func newVerifier(t testing.TB, s *Store, c *clock, opts VerifierOptions) *Verifier {
	t.Helper()
	if c != nil {
		opts.Now = c.Now
	}
	v, err := NewVerifier(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{})
	alice := mustCreate(t, s, "alice", readOnly)
	key := alice.Key.Reveal()

	p, err := v.Verify(ctx, key, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := Principal{KeyID: alice.Record.ID, Name: "alice", Profile: "read-only"}
	if p != want {
		t.Fatalf("Verify = %+v, want %+v", p, want)
	}
	if st := v.Stats(); st.Hashes != 1 || st.CacheHits != 0 {
		t.Fatalf("first verification: %+v", st)
	}
	for range 5 {
		if _, err := v.Verify(ctx, key, "10.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	if st := v.Stats(); st.Hashes != 1 || st.CacheHits != 5 {
		t.Fatalf("repeat verifications must come from the cache: %+v", st)
	}
	// A wrong secret with the same id is not a cache hit and is refused.
	wrong := key[:len(key)-2] + flip(key[len(key)-2:])
	if _, err := v.Verify(ctx, wrong, "10.0.0.1"); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "wrong secret") {
		t.Fatalf("wrong secret: %v", err)
	}
}

// flip changes a two-character base64url tail into another canonical one.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestVerifyRefusals(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	dir := t.TempDir()
	s := openStore(t, dir, c)
	v := newVerifier(t, s, c, VerifierOptions{ProbeBurst: 1000})
	other := newTestToken(t).Key().Reveal() // a well-formed key with an id nobody has
	expiring, err := s.Create(ctx, CreateRequest{Name: "temp", Binding: readOnly, Expires: c.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	revoked := mustCreate(t, s, "gone", readOnly)
	if _, err := s.Revoke(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	c.Add(2 * time.Hour)
	tests := []struct{ name, key, want string }{
		{"malformed", "pmcp_nope", "malformed key"},
		{"wrong prefix", "Bearer xyz", `starts with "pmcp_"`},
		{"unknown id", other, "unknown key id"},
		{"expired", expiring.Key.Reveal(), "expired at"},
		{"revoked", revoked.Key.Reveal(), "was revoked at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(ctx, tt.key, "10.0.0.2")
			if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify: %v, want %q", err, tt.want)
			}
		})
	}
	if st := v.Stats(); st.Hashes != 0 {
		t.Fatalf("refusals before the hash must cost no scrypt: %+v", st)
	}
}

// Revocation, rotation and expiry apply to the next request although the
// key's verification is cached.
func TestCachedKeyStopsOnNextRequest(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, cli *Store, c *clock, id string)
		want   string
	}{
		{"revoke", func(t *testing.T, cli *Store, _ *clock, id string) {
			if _, err := cli.Revoke(ctx, id); err != nil {
				t.Fatal(err)
			}
		}, "revoked"},
		{"rotate", func(t *testing.T, cli *Store, _ *clock, _ string) {
			if _, err := cli.Rotate(ctx, "alice", RotateRequest{}); err != nil {
				t.Fatal(err)
			}
		}, "revoked"},
		{"expire", func(t *testing.T, _ *Store, c *clock, _ string) { c.Add(2 * time.Hour) }, "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			dir := t.TempDir()
			daemon := openStore(t, dir, c)
			cli := openStore(t, dir, c)
			v := newVerifier(t, daemon, c, VerifierOptions{})
			k, err := cli.Create(ctx, CreateRequest{Name: "alice", Binding: readOnly, Expires: c.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := v.Verify(ctx, k.Key.Reveal(), "s"); err != nil {
					t.Fatal(err)
				}
			}
			tc.change(t, cli, c, k.Record.ID)
			if _, err := v.Verify(ctx, k.Key.Reveal(), "s"); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("after %s: %v", tc.name, err)
			}
		})
	}
}

func TestRotationWithGraceKeepsBothWorking(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{})
	old := mustCreate(t, s, "ci", readOnly)
	rot, err := s.Rotate(ctx, "ci", RotateRequest{Grace: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Secret{old.Key, rot.Key} {
		if _, err := v.Verify(ctx, k.Reveal(), "s"); err != nil {
			t.Fatalf("during the grace: %v", err)
		}
	}
	c.Add(10 * time.Minute)
	if _, err := v.Verify(ctx, old.Key.Reveal(), "s"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("old key after the grace: %v", err)
	}
	if _, err := v.Verify(ctx, rot.Key.Reveal(), "s"); err != nil {
		t.Fatalf("new key after the grace: %v", err)
	}
}

func TestFailuresAreRateLimitedPerSource(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{FailureRate: 1, FailureBurst: 3, KeyFailureBurst: 1000})
	good := mustCreate(t, s, "alice", readOnly).Key.Reveal()
	if _, err := v.Verify(ctx, good, "attacker"); err != nil { // cached now
		t.Fatal(err)
	}
	bad := wrongSecret(mustCreate(t, s, "bob", readOnly).Key.Reveal())
	for i := range 3 {
		if _, err := v.Verify(ctx, bad, "attacker"); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	if _, err := v.Verify(ctx, bad, "attacker"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("4th failure within a second: %v, want ErrRateLimited", err)
	}
	if _, err := v.Verify(ctx, bad, "other"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("another source is not limited: %v", err)
	}
	if _, err := v.Verify(ctx, good, "attacker"); err != nil {
		t.Fatalf("a cached good key from a limited source: %v", err)
	}
	c.Add(time.Second)
	if _, err := v.Verify(ctx, bad, "attacker"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after a second the source may try again: %v", err)
	}
	if st := v.Stats(); st.RateLimited != 1 || st.Hashes != 1+3+1+1 {
		t.Errorf("stats %+v: want 1 limited, 6 hashes (none for the limited attempt)", st)
	}
}

func TestScryptIsBounded(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir(), nil)
	v := newVerifier(t, s, nil, VerifierOptions{MaxConcurrentHashes: 1})
	k := mustCreate(t, s, "alice", readOnly)
	v.sem <- struct{}{} // another verification holds the only slot
	gone, cancel := context.WithCancel(ctx)
	cancel() // the client gave up while waiting for a slot
	if _, err := v.Verify(gone, k.Key.Reveal(), "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with no free slot: %v", err)
	}
	<-v.sem
	if st := v.Stats(); st.Refusals != 0 {
		t.Fatalf("a wait that timed out is not a failure of the key: %+v", st)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.Verify(ctx, k.Key.Reveal(), "s"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func TestVerifyRefusesExcessiveWork(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	k := mustCreate(t, s, "alice", readOnly)
	sn, _ := s.Snapshot()
	rec := sn.Lookup(k.Record.ID)
	rec.Hash.N = 1 << 24 // as if keys.json had been tampered with after loading
	v := newVerifier(t, s, nil, VerifierOptions{})
	if _, err := v.Verify(ctx, k.Key.Reveal(), "s"); err == nil || !strings.Contains(err.Error(), "exceed the accepted work") {
		t.Fatalf("Verify with N=2^24: %v", err)
	}
}

// New keys are hashed with the default parameters (N=1024, r=8, p=1; issue
// 16 chose them by measurement), a 16-byte salt and a 32-byte key.
func TestDefaultParamsRoundTrip(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := mustCreate(t, s, "alice", readOnly)
	if h := k.Record.Hash; h.N != 1024 || h.R != 8 || h.P != 1 || len(h.Salt) != 16 || len(h.Key) != 32 {
		t.Fatalf("hash params %+v", h)
	}
	v := newVerifier(t, s, nil, VerifierOptions{})
	if _, err := v.Verify(context.Background(), k.Key.Reveal(), "s"); err != nil {
		t.Fatal(err)
	}
}
