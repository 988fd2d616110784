package keys

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// wrongSecret is key with another secret: the same, known id.
func wrongSecret(key string) string { return key[:len(key)-2] + flip(key[len(key)-2:]) }

// expectVerify checks one attempt's outcome: "ok", "401" or "429".
func expectVerify(t *testing.T, v *Verifier, key, source, want string) {
	t.Helper()
	_, err := v.Verify(context.Background(), key, source)
	got := "ok"
	switch {
	case errors.Is(err, ErrRateLimited):
		got = "429"
	case errors.Is(err, ErrUnauthenticated):
		got = "401"
	case err != nil:
		t.Fatalf("Verify from %s: unexpected %v", source, err)
	}
	if got != want {
		t.Fatalf("Verify from %s: %s (%v), want %s", source, got, err, want)
	}
}

// Reproduces the review's finding: 1,000 unknown key ids from 127.0.0.1
// used up the loopback source's failures, so a valid key that had not been
// used yet was answered 429 — every local client shares that source.
func TestUnknownIDsDoNotLockOutAValidKey(t *testing.T) {
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{})
	alice := mustCreate(t, s, "alice", readOnly).Key.Reveal()
	for range 1000 {
		_, err := v.Verify(context.Background(), newTestToken(t).Key().Reveal(), "127.0.0.1")
		if !errors.Is(err, ErrUnauthenticated) && !errors.Is(err, ErrRateLimited) {
			t.Fatalf("unknown id: %v", err)
		}
	}
	expectVerify(t, v, alice, "127.0.0.1", "ok")
	// Nor did they use up the budget of wrong secrets for known keys.
	bob := mustCreate(t, s, "bob", readOnly).Key.Reveal()
	expectVerify(t, v, wrongSecret(bob), "127.0.0.1", "401")
	st := v.Stats()
	if st.Hashes != 2 {
		t.Errorf("unknown ids must cost no hashing: %+v", st)
	}
	if st.RateLimited != 1000-10 {
		t.Errorf("the probe budget (a burst of 10) still slows the unknown ids: %+v", st)
	}
}

// Keys refused without hashing have their own per-source budget; it refuses
// them, never a known key.
func TestProbesHaveTheirOwnBudget(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{FailureBurst: 2, ProbeBurst: 3})
	revoked := mustCreate(t, s, "gone", readOnly).Key.Reveal()
	if _, err := s.Revoke(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	alice := mustCreate(t, s, "alice", readOnly).Key.Reveal()
	probes := []string{"pmcp_nope", newTestToken(t).Key().Reveal(), revoked}
	for _, k := range probes {
		expectVerify(t, v, k, "10.0.0.1", "401")
	}
	for _, k := range probes {
		expectVerify(t, v, k, "10.0.0.1", "429")
	}
	expectVerify(t, v, newTestToken(t).Key().Reveal(), "10.0.0.2", "401") // another source's own
	expectVerify(t, v, wrongSecret(alice), "10.0.0.1", "401")
	expectVerify(t, v, alice, "10.0.0.1", "ok")
	c.Add(time.Second)
	expectVerify(t, v, revoked, "10.0.0.1", "401")
}

// Reproduces the review's finding: the limiter only looked at the budget
// before scrypt and charged it afterwards, so 32 concurrent wrong secrets
// for one key with a burst of 1 ran 32 hashes.
func TestConcurrentWrongSecretsHashOnlyWithinTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClock()
		s := openStore(t, t.TempDir(), c)
		k := mustCreate(t, s, "alice", readOnly).Key.Reveal()
		hashing := make(chan struct{})
		v := newVerifier(t, s, c, VerifierOptions{
			FailureBurst:        1,
			MaxConcurrentHashes: 32,
			AfterHash:           func(int) { <-hashing }, // every hash holds its slot until all have tried
		})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var limited []*LimitError
		for range 32 {
			wg.Go(func() {
				_, err := v.Verify(context.Background(), wrongSecret(k), "10.0.0.1")
				var le *LimitError
				if errors.As(err, &le) {
					mu.Lock()
					limited = append(limited, le)
					mu.Unlock()
				} else if !errors.Is(err, ErrUnauthenticated) {
					t.Errorf("Verify: %v", err)
				}
			})
		}
		synctest.Wait() // every attempt has hashed (and waits), or has been refused
		if st := v.Stats(); st.Hashes != 1 || st.RateLimited != 31 {
			t.Errorf("32 concurrent wrong secrets with a burst of 1: %+v, want 1 hash and 31 refused", st)
		}
		close(hashing)
		wg.Wait()
		if len(limited) != 31 {
			t.Fatalf("%d refusals over the budget, want 31", len(limited))
		}
		if le := limited[0]; le.RetryAfter <= 0 || le.RetryAfter > time.Second || !strings.Contains(le.Reason, "source 10.0.0.1 ") {
			t.Errorf("LimitError %+v: want the source named and a wait of at most 1s", le)
		}
	})
}

// A right secret gives back the token it reserved; a cancelled wait for a
// hash slot gives it back too.
func TestReservationIsGivenBack(t *testing.T) {
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{FailureBurst: 1, MaxConcurrentHashes: 1})
	alice := mustCreate(t, s, "alice", readOnly).Key.Reveal()
	bob := mustCreate(t, s, "bob", readOnly).Key.Reveal()
	expectVerify(t, v, alice, "10.0.0.1", "ok")

	v.sem <- struct{}{} // another verification holds the only slot
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Verify(gone, bob, "10.0.0.1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with no free slot: %v", err)
	}
	<-v.sem

	expectVerify(t, v, wrongSecret(bob), "10.0.0.1", "401") // the one token is still there
	expectVerify(t, v, wrongSecret(bob), "10.0.0.1", "429")
	expectVerify(t, v, alice, "10.0.0.1", "ok") // cached: served although the source is limited
}

// Reproduces the review's finding: once MaxSources sources were tracked, a
// new source was judged by one shared overflow bucket, which other sources'
// failures had emptied, so a source that never failed was answered 429.
func TestFullTableNeverChargesANewSource(t *testing.T) {
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{FailureBurst: 2, KeyFailureBurst: 1000, MaxSources: 3})
	alice := mustCreate(t, s, "alice", readOnly).Key.Reveal()
	for i := 1; i <= 6; i++ {
		src := fmt.Sprintf("10.0.0.%d", i)
		expectVerify(t, v, wrongSecret(alice), src, "401")
		expectVerify(t, v, wrongSecret(alice), src, "401")
		expectVerify(t, v, wrongSecret(alice), src, "429")
	}
	// Every tracked source is still failing: each newcomer forgave the
	// least recently failed one, and only it.
	if st := v.Stats(); st.Forgiven != 3 {
		t.Errorf("Forgiven = %d, want 3 (sources 1, 2 and 3)", st.Forgiven)
	}
	if n := len(v.limiter.sources.m); n != 3 {
		t.Errorf("%d sources tracked, want the bound of 3", n)
	}
	expectVerify(t, v, wrongSecret(alice), "10.0.0.6", "429") // the newest were kept
	bob := mustCreate(t, s, "bob", readOnly).Key.Reveal()
	expectVerify(t, v, bob, "10.0.0.99", "ok")

	// Once the buckets have refilled, room is made by dropping them, which
	// forgives nothing.
	c.Add(time.Minute)
	for i := 10; i <= 12; i++ {
		expectVerify(t, v, wrongSecret(alice), fmt.Sprintf("10.0.0.%d", i), "401")
	}
	if st := v.Stats(); st.Forgiven != 3 {
		t.Errorf("Forgiven = %d after refilled buckets made room, want still 3", st.Forgiven)
	}
}

// Reproduces the review's findings: sources were counted by their exact
// string, so every address of an IPv6 /64 (one host's privacy addresses)
// and every 127.x address had a budget of its own.
func TestSourcesAreNormalized(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first       string
		same, other []string
	}{
		{"loopback", "127.0.0.1", []string{"127.0.0.2", "127.255.3.4", "::1", "::ffff:127.0.0.9"}, []string{"stdio", "10.0.0.1"}},
		{"IPv6 /64", "2001:db8:1:2::1", []string{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2:abcd::7"}, []string{"2001:db8:1:3::1", "2001:db8::1"}},
		{"link-local zones", "fe80::1%eth0", []string{"fe80::2%eth1", "fe80::3"}, []string{"fe80:0:0:1::1"}},
		{"IPv4-mapped", "192.0.2.1", []string{"::ffff:192.0.2.1"}, []string{"192.0.2.2", "::ffff:192.0.2.3"}},
		{"Tailnet addresses", "fd7a:115c:a1e0::1", []string{"fd7a:115c:a1e0:0:0:0:0:1"}, []string{"fd7a:115c:a1e0::2", "100.64.0.1"}},
		{"stdio", "stdio", []string{"stdio"}, []string{"stdio2", "127.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			s := openStore(t, t.TempDir(), c)
			v := newVerifier(t, s, c, VerifierOptions{FailureBurst: 2, KeyFailureBurst: 1000})
			k := wrongSecret(mustCreate(t, s, "alice", readOnly).Key.Reveal())
			expectVerify(t, v, k, tc.first, "401")
			expectVerify(t, v, k, tc.first, "401")
			for _, src := range tc.same {
				expectVerify(t, v, k, src, "429")
			}
			for _, src := range tc.other {
				expectVerify(t, v, k, src, "401")
			}
		})
	}
}

func TestSourceOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "10.1.2.3"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"2001:db8:aa:bb:1:2:3:4", "2001:db8:aa:bb::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"fd7a:115c:a1e0::da01:a867", "fd7a:115c:a1e0::da01:a867"},
		{"fd7a:115c:a1e1::1", "fd7a:115c:a1e1::/64"},
		{"stdio", "stdio"},
		{"[::1]", "[::1]"}, // not an address as given: itself
	} {
		if got := sourceOf(tc.in).String(); got != tc.want {
			t.Errorf("sourceOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Failures of a known key are limited per key id across sources (the old
// limiter had no per-key budget), and they do not use up another key's.
func TestKeyBudgetsAreSeparate(t *testing.T) {
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{FailureBurst: 100, KeyFailureBurst: 3})
	a := mustCreate(t, s, "a", readOnly).Key.Reveal()
	b := mustCreate(t, s, "b", readOnly).Key.Reveal()
	for i := 1; i <= 3; i++ {
		expectVerify(t, v, wrongSecret(a), fmt.Sprintf("10.0.1.%d", i), "401")
	}
	expectVerify(t, v, wrongSecret(a), "10.0.1.4", "429") // a fresh source: key a's budget is used up
	expectVerify(t, v, wrongSecret(b), "10.0.1.4", "401")
	expectVerify(t, v, b, "10.0.1.5", "ok")
	// The price of a per-key budget: while a's is used up, a's own first
	// verification waits too (a cached one does not).
	expectVerify(t, v, a, "10.0.1.6", "429")
	c.Add(time.Second)
	expectVerify(t, v, a, "10.0.1.6", "ok")
}

// A key accepted before whose cache entry has expired is re-verified
// without the failure budgets: someone spending its id's failures cannot
// lock out a client that has been using it.
func TestProvenKeyOutlivesItsCacheUnderAttack(t *testing.T) {
	c := newClock()
	s := openStore(t, t.TempDir(), c)
	v := newVerifier(t, s, c, VerifierOptions{CacheTTL: time.Minute, KeyFailureBurst: 2, KeyFailureRate: 1.0 / 3600})
	alice := mustCreate(t, s, "alice", readOnly).Key.Reveal()
	expectVerify(t, v, alice, "10.0.0.1", "ok")
	expectVerify(t, v, wrongSecret(alice), "10.0.9.1", "401")
	expectVerify(t, v, wrongSecret(alice), "10.0.9.2", "401")
	expectVerify(t, v, wrongSecret(alice), "10.0.9.3", "429")
	c.Add(2 * time.Minute) // the cache entry expired; alice's key budget has not refilled
	expectVerify(t, v, alice, "10.0.0.1", "ok")
	if st := v.Stats(); st.Hashes != 4 || st.CacheHits != 0 {
		t.Errorf("the expired entry must be verified again with scrypt: %+v", st)
	}
	expectVerify(t, v, wrongSecret(alice), "10.0.9.4", "429") // and the attacker is still limited
}

func TestTableEvictionOrder(t *testing.T) {
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tb := newTable[string](1, 4, 3) // one token a second, a burst of 4, three buckets
	fail := func(k string, now time.Time) { tb.take(k, now); tb.settle(k, now) }
	for range 3 {
		fail("a", at(0)) // 1 token left
		fail("b", at(1000))
		fail("c", at(2000))
	}
	fail("a", at(2000)) // 3-1 = 2 tokens; a is now the most recently charged
	// The table is full and no bucket has refilled: the least recently
	// charged (b) is forgiven, and only it.
	fail("d", at(2000))
	if _, ok := tb.m["b"]; ok || tb.forgiven != 1 || len(tb.m) != 3 {
		t.Fatalf("after d: %v, forgiven %d; want b dropped and forgiven", keysOf(tb), tb.forgiven)
	}
	// At 3.5 s d (3 tokens at 2 s) is full, a (3.5) and c (2.5) are not: d
	// makes room, which forgives nothing.
	fail("e", at(3500))
	if got := fmt.Sprint(keysOf(tb)); got != "[e a c]" || tb.forgiven != 1 {
		t.Fatalf("after e: %s, forgiven %d; want [e a c], d dropped as full", got, tb.forgiven)
	}
	// A right attempt gives its token back, and a bucket full again is
	// dropped at once; taking never drops another bucket, even over max.
	tb.take("f", at(3500))
	if len(tb.m) != 4 || tb.forgiven != 1 {
		t.Fatalf("taking for f: %v, forgiven %d; want four buckets, nobody forgiven", keysOf(tb), tb.forgiven)
	}
	tb.giveBack("f", at(3500))
	if got := fmt.Sprint(keysOf(tb)); got != "[e a c]" {
		t.Fatalf("after f was right: %s, want [e a c]", got)
	}
}

func keysOf[K comparable](tb *table[K]) []K {
	var ks []K
	for b := tb.head; b != nil; b = b.next {
		ks = append(ks, b.key)
	}
	return ks
}

// The sweep of a full table is skipped before nextFull; that is only right
// if no bucket is full before it. Random operations check the invariant and
// the list's consistency with the map.
func TestTableNextFullIsALowerBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tb := newTable[int](0.01, 3, 20)
	out := map[int]int{} // attempts running, by key
	var running []int
	for i := range 20000 {
		now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		if len(running) > 0 && (len(running) == 5 || rng.IntN(2) == 0) {
			j := rng.IntN(len(running))
			k := running[j]
			running = append(running[:j], running[j+1:]...)
			if rng.IntN(2) == 0 {
				tb.giveBack(k, now)
			} else {
				tb.settle(k, now)
			}
			out[k]--
		} else if k := rng.IntN(60); tb.wait(k, now) == 0 {
			tb.take(k, now)
			out[k]++
			running = append(running, k)
		}
		if len(tb.m) > tb.max+len(running) {
			t.Fatalf("op %d: %d buckets, max %d and %d running", i, len(tb.m), tb.max, len(running))
		}
		n := 0
		for b := tb.head; b != nil; b = b.next {
			n++
			if tb.m[b.key] != b {
				t.Fatalf("op %d: list holds %v, map does not", i, b.key)
			}
			if b.next != nil && b.next.prev != b {
				t.Fatalf("op %d: broken links at %v", i, b.key)
			}
			if b.out != out[b.key] {
				t.Fatalf("op %d: bucket %v has %d out, want %d", i, b.key, b.out, out[b.key])
			}
			if b.out == 0 && now.Before(tb.nextFull) && tb.tokensAt(b, now) >= tb.burst {
				t.Fatalf("op %d: bucket %v is full before nextFull", i, b.key)
			}
		}
		if n != len(tb.m) {
			t.Fatalf("op %d: list has %d, map %d", i, n, len(tb.m))
		}
		for k, o := range out {
			if _, ok := tb.m[k]; o > 0 && !ok {
				t.Fatalf("op %d: bucket %v dropped with %d attempts running", i, k, o)
			}
		}
	}
	if tb.forgiven == 0 {
		t.Fatal("the run never filled the table with failing buckets; the test exercises nothing")
	}
}
