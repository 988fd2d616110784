package keys

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// The failure limiter decides who may make the Verifier run scrypt. It keeps
// three tables of token buckets, each bounded:
//
//   - per key id: wrong secrets for a known, usable key, from any source;
//   - per source: wrong secrets for known, usable keys from that source;
//   - per source, for probes: keys refused without hashing (malformed,
//     unknown id, revoked, expired). This table never gates a known key.
//
// A verification that will hash takes a token from its key's bucket and its
// source's bucket before scrypt runs, and gives both back when the secret
// was right, so no more hashes run for a key or a source than it has tokens,
// however many attempts arrive at once. A bucket that is full again is
// dropped: a source or key that is not in a table has a full bucket, and
// no source is ever judged by a bucket it shares with others.

// sourceKey is a client address as the limiter counts it (see sourceOf).
type sourceKey struct {
	addr netip.Addr // valid for an address source
	name string     // a source that is not an address, such as "stdio"
}

func (s sourceKey) String() string {
	if s.addr.IsValid() {
		if s.addr.Is6() && !tailnetULA.Contains(s.addr) {
			return netip.PrefixFrom(s.addr, 64).String()
		}
		if s.addr == loopbackSource {
			return "loopback"
		}
		return s.addr.String()
	}
	return s.name
}

var (
	// Every loopback address (127.0.0.0/8, ::1) is one source: the host's
	// own clients share it, and rotating 127.x addresses gains nothing.
	loopbackSource = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	// Tailscale's ULA range. The coordination server assigns each node one
	// address in it, and every node of a tailnet sits in one /64
	// (fd7a:115c:a1e0::/64), so it is counted by address, as IPv4 is.
	tailnetULA = netip.MustParsePrefix("fd7a:115c:a1e0::/48")
)

// sourceOf normalizes the source Verify was given: an IPv4 address (or an
// IPv4-mapped IPv6 one) is itself; every loopback address is one source; an
// IPv6 address counts by its /64, which one host or one customer network
// usually holds whole, except in Tailscale's range; anything that is not an
// address ("stdio") is itself.
func sourceOf(s string) sourceKey {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return sourceKey{name: s}
	}
	a = a.Unmap().WithZone("")
	switch {
	case a.IsLoopback():
		return sourceKey{addr: loopbackSource}
	case a.Is4(), tailnetULA.Contains(a):
		return sourceKey{addr: a}
	}
	p, _ := a.Prefix(64) // cannot fail for IPv6 at 64 bits
	return sourceKey{addr: p.Addr()}
}

// bucket is one token bucket in a table, linked in the order it was last
// charged (most recent first).
type bucket[K comparable] struct {
	key    K
	tokens float64   // tokens at last
	last   time.Time // when tokens was computed
	// out counts tokens taken whose attempts are still running: such a
	// bucket is never dropped, so concurrent attempts cannot get a fresh one.
	out        int
	prev, next *bucket[K]
}

// table is a bounded set of token buckets with one rate and burst. It is
// not safe for concurrent use: the limiter's mutex guards it.
//
// A token is taken (take) before the attempt it pays for, and either given
// back (giveBack) or kept (settle) when the attempt is over. Taking never
// drops a bucket, so an attempt that turns out right never costs anyone
// their record; settling a failure brings the table back to max, first by
// dropping buckets that have refilled (which forgives nothing: an absent
// bucket is a full one), and only when none has by dropping the least
// recently charged one, which forgives its failures. Buckets with attempts
// running are never dropped, so the table holds at most max buckets plus
// one per attempt in flight.
type table[K comparable] struct {
	rate  float64 // tokens per second; +Inf: never limits
	burst float64
	max   int
	m     map[K]*bucket[K]
	// head is the most recently charged bucket, tail the least.
	head, tail *bucket[K]
	// nextFull is a lower bound on when a bucket without attempts running
	// is full again: a sweep before it cannot find one, so it is skipped.
	nextFull time.Time
	forgiven int64 // buckets dropped before they were full
}

func newTable[K comparable](rate float64, burst, max int) *table[K] {
	return &table[K]{rate: rate, burst: float64(burst), max: max, m: make(map[K]*bucket[K])}
}

func (t *table[K]) unlimited() bool { return math.IsInf(t.rate, 1) }

// tokensAt is b's content at now.
func (t *table[K]) tokensAt(b *bucket[K], now time.Time) float64 {
	el := now.Sub(b.last).Seconds()
	if el <= 0 {
		return b.tokens
	}
	return min(t.burst, b.tokens+el*t.rate)
}

// fullAt is when a bucket holding tokens at now is full.
func (t *table[K]) fullAt(tokens float64, now time.Time) time.Time {
	secs := (t.burst - tokens) / t.rate
	if secs <= 0 {
		return now
	}
	if secs > 100*365*24*3600 || math.IsNaN(secs) {
		return now.AddDate(100, 0, 0)
	}
	return now.Add(time.Duration(secs * float64(time.Second)))
}

// wait is how long k waits for its next token; zero when it has one.
func (t *table[K]) wait(k K, now time.Time) time.Duration {
	if t.unlimited() {
		return 0
	}
	b := t.m[k]
	if b == nil {
		return 0
	}
	have := t.tokensAt(b, now)
	if have >= 1 {
		return 0
	}
	return max(time.Nanosecond, time.Duration((1-have)/t.rate*float64(time.Second)))
}

// take charges one token to k, which must have one (wait returned zero),
// for an attempt that is starting.
func (t *table[K]) take(k K, now time.Time) {
	if t.unlimited() {
		return
	}
	b := t.m[k]
	if b == nil {
		b = &bucket[K]{key: k, tokens: t.burst}
		t.m[k] = b
	} else {
		b.tokens = t.tokensAt(b, now)
		t.unlink(b)
	}
	b.tokens--
	b.last = now
	b.out++
	t.pushFront(b)
}

// giveBack returns the token taken for an attempt that was right, or never
// ran. A bucket full again is dropped.
func (t *table[K]) giveBack(k K, now time.Time) {
	if t.unlimited() {
		return
	}
	b := t.m[k]
	if b == nil || b.out == 0 {
		return
	}
	b.out--
	b.tokens = min(t.burst, t.tokensAt(b, now)+1)
	b.last = now
	t.idle(b, now)
}

// settle keeps the token taken for an attempt that failed, and brings the
// table back to its bound.
func (t *table[K]) settle(k K, now time.Time) {
	if t.unlimited() {
		return
	}
	if b := t.m[k]; b != nil && b.out > 0 {
		b.out--
		t.idle(b, now)
	}
	t.trim(now)
}

// idle notes a bucket whose attempts may all be over: a full one is
// dropped; another may be full before the bound said.
func (t *table[K]) idle(b *bucket[K], now time.Time) {
	if b.out > 0 {
		return
	}
	have := t.tokensAt(b, now)
	if have >= t.burst {
		t.remove(b)
		return
	}
	if f := t.fullAt(have, now); f.Before(t.nextFull) {
		t.nextFull = f
	}
}

// trim drops buckets until the table holds at most max: first every bucket
// that has refilled, then the least recently charged ones.
func (t *table[K]) trim(now time.Time) {
	if len(t.m) <= t.max {
		return
	}
	if !now.Before(t.nextFull) {
		next := time.Time{}
		for _, b := range t.m {
			if b.out > 0 {
				continue
			}
			have := t.tokensAt(b, now)
			if have >= t.burst {
				t.remove(b)
				continue
			}
			if f := t.fullAt(have, now); next.IsZero() || f.Before(next) {
				next = f
			}
		}
		t.nextFull = next
	}
	for b := t.tail; b != nil && len(t.m) > t.max; {
		prev := b.prev
		if b.out == 0 {
			t.remove(b)
			t.forgiven++
		}
		b = prev
	}
}

func (t *table[K]) pushFront(b *bucket[K]) {
	b.prev, b.next = nil, t.head
	if t.head != nil {
		t.head.prev = b
	}
	t.head = b
	if t.tail == nil {
		t.tail = b
	}
}

func (t *table[K]) unlink(b *bucket[K]) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		t.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		t.tail = b.prev
	}
	b.prev, b.next = nil, nil
}

func (t *table[K]) remove(b *bucket[K]) {
	t.unlink(b)
	delete(t.m, b.key)
}

// LimitError is the refusal of an attempt over a failure budget. It wraps
// ErrRateLimited; RetryAfter is when the budget has its next token.
type LimitError struct {
	// Reason names the budget that is used up.
	Reason     string
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %s (next attempt in %s)", ErrRateLimited, e.Reason, e.RetryAfter.Round(time.Millisecond))
}

// Unwrap returns ErrRateLimited.
func (e *LimitError) Unwrap() error { return ErrRateLimited }

// limits are the rates and bursts of a failureLimiter.
type limits struct {
	keyRate, sourceRate, probeRate    float64
	keyBurst, sourceBurst, probeBurst int
	max                               int
}

// failureLimiter holds the three tables under one mutex, so checking both of
// a hash's budgets and charging them is one step.
type failureLimiter struct {
	mu      sync.Mutex
	keys    *table[string]
	sources *table[sourceKey]
	probes  *table[sourceKey]
}

func newFailureLimiter(l limits) *failureLimiter {
	return &failureLimiter{
		keys:    newTable[string](l.keyRate, l.keyBurst, l.max),
		sources: newTable[sourceKey](l.sourceRate, l.sourceBurst, l.max),
		probes:  newTable[sourceKey](l.probeRate, l.probeBurst, l.max),
	}
}

// reserve takes a token from key id's budget and src's before a hash. It
// fails, taking nothing, when either is used up. id must not share memory
// with a presented key (the table keeps it).
func (l *failureLimiter) reserve(id string, src sourceKey, now time.Time) error {
	l.mu.Lock()
	kw, sw := l.keys.wait(id, now), l.sources.wait(src, now)
	if kw == 0 && sw == 0 {
		l.keys.take(id, now)
		l.sources.take(src, now)
	}
	l.mu.Unlock()
	switch {
	case kw > 0 && sw > 0:
		return &LimitError{Reason: fmt.Sprintf("key %s and source %s have too many failed attempts", id, src), RetryAfter: max(kw, sw)}
	case kw > 0:
		return &LimitError{Reason: fmt.Sprintf("key %s has too many failed attempts", id), RetryAfter: kw}
	case sw > 0:
		return &LimitError{Reason: fmt.Sprintf("source %s has too many failed attempts", src), RetryAfter: sw}
	}
	return nil
}

// release gives back what reserve took: the secret was right, or the
// attempt never hashed.
func (l *failureLimiter) release(id string, src sourceKey, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys.giveBack(id, now)
	l.sources.giveBack(src, now)
}

// fail keeps what reserve took: the secret was wrong.
func (l *failureLimiter) fail(id string, src sourceKey, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys.settle(id, now)
	l.sources.settle(src, now)
}

// probe charges a refusal that cost no hashing to src's probe budget, or
// fails when it is used up.
func (l *failureLimiter) probe(src sourceKey, now time.Time) error {
	l.mu.Lock()
	w := l.probes.wait(src, now)
	if w == 0 {
		l.probes.take(src, now)
		l.probes.settle(src, now)
	}
	l.mu.Unlock()
	if w > 0 {
		return &LimitError{Reason: fmt.Sprintf("source %s has sent too many unknown, malformed, revoked or expired keys", src), RetryAfter: w}
	}
	return nil
}

// forgiven counts buckets dropped from full tables before they refilled.
func (l *failureLimiter) forgiven() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys.forgiven + l.sources.forgiven + l.probes.forgiven
}
