package keys

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Errors of Verify. Every refusal wraps ErrUnauthenticated, except a
// refusal for too many failures, which wraps ErrRateLimited (HTTP 429, not
// 401). The messages say why, for the log; they never contain the secret.
var (
	ErrUnauthenticated = errors.New("key not accepted")
	ErrRateLimited     = errors.New("too many failed key attempts from this source")
)

// Principal is who a verified key speaks for.
type Principal struct {
	KeyID   string
	Name    string
	Profile string
	Policy  string
	// Expires is zero when the key does not expire.
	Expires time.Time
}

// VerifierOptions configure a Verifier. Zero values take the defaults shown.
type VerifierOptions struct {
	// CacheTTL bounds how long a successful verification is reused (10m).
	CacheTTL time.Duration
	// CacheSize bounds the number of cached verifications (4096).
	CacheSize int
	// MaxConcurrentHashes bounds the scrypt computations in flight (half the
	// CPUs, at least 1); each takes 32 MiB at the default parameters.
	MaxConcurrentHashes int
	// FailureRate and FailureBurst limit failed attempts per source (1 per
	// second after a burst of 10).
	FailureRate  rate.Limit
	FailureBurst int
	// MaxSources bounds the sources tracked by the failure limiter (10000);
	// beyond it, new sources share one limiter.
	MaxSources int
	// Now is the clock (time.Now).
	Now func() time.Time
	// Rand seeds the cache key (crypto/rand).
	Rand io.Reader
	// Logger receives refusals at debug level (slog.Default()).
	Logger *slog.Logger
	// AfterHash, when set, runs after each scrypt computation, still
	// holding its slot. The daemon returns the hash's 32 MiB to the
	// operating system there (debug.FreeOSMemory), so a burst of first
	// verifications does not leave the process's resident size at several
	// times that.
	AfterHash func()
}

// Verifier checks keys against a Store.
type Verifier struct {
	store *Store
	opts  VerifierOptions
	mac   [32]byte // keys the cache: a dump of the process never shows tokens
	sem   chan struct{}

	cacheMu sync.RWMutex
	cache   map[[32]byte]cacheEntry

	limiter *failureLimiter

	hashes, hits, refusals, limited atomic.Int64
}

// Stats counts what a Verifier has done since it was made.
type Stats struct {
	// Hashes is the number of scrypt computations.
	Hashes int64
	// CacheHits is the number of verifications served from the cache.
	CacheHits int64
	// Refusals is the number of keys refused (rate-limited ones excluded).
	Refusals int64
	// RateLimited is the number of attempts refused for too many failures.
	RateLimited int64
}

// Stats returns the counters.
func (v *Verifier) Stats() Stats {
	return Stats{Hashes: v.hashes.Load(), CacheHits: v.hits.Load(), Refusals: v.refusals.Load(), RateLimited: v.limited.Load()}
}

type cacheEntry struct {
	id      string
	hash    string // the record's hash when verified: a replaced record misses
	expires time.Time
}

// NewVerifier returns a verifier over store.
func NewVerifier(store *Store, opts VerifierOptions) (*Verifier, error) {
	if store == nil {
		return nil, errors.New("keys: NewVerifier needs a store")
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = 10 * time.Minute
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 4096
	}
	if opts.MaxConcurrentHashes <= 0 {
		opts.MaxConcurrentHashes = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if opts.FailureRate <= 0 {
		opts.FailureRate = 1
	}
	if opts.FailureBurst <= 0 {
		opts.FailureBurst = 10
	}
	if opts.MaxSources <= 0 {
		opts.MaxSources = 10000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	v := &Verifier{
		store:   store,
		opts:    opts,
		sem:     make(chan struct{}, opts.MaxConcurrentHashes),
		cache:   make(map[[32]byte]cacheEntry),
		limiter: newFailureLimiter(opts.FailureRate, opts.FailureBurst, opts.MaxSources),
	}
	if _, err := io.ReadFull(opts.Rand, v.mac[:]); err != nil {
		return nil, fmt.Errorf("keys: cache key: %w", err)
	}
	return v, nil
}

// Verify checks a key presented by source (an address, or "stdio") and
// returns its principal. Cost: a cache hit is an HMAC, a map read and a
// stat of keys.json; an unknown id, a revoked, expired or malformed key is
// refused without hashing; only a known, usable id reaches scrypt, at most
// MaxConcurrentHashes at a time. Failures count against source.
func (v *Verifier) Verify(ctx context.Context, key string, source string) (Principal, error) {
	now := v.opts.Now()
	snap, err := v.store.Snapshot()
	if err != nil {
		return Principal{}, err
	}
	ck := v.cacheKey(key)
	v.cacheMu.RLock()
	e, hit := v.cache[ck]
	v.cacheMu.RUnlock()
	if hit {
		if rec := snap.Lookup(e.id); rec != nil && string(rec.Hash.Key) == e.hash && now.Before(e.expires) && rec.usable(now) {
			v.hits.Add(1)
			return principalOf(rec), nil
		}
		v.cacheMu.Lock()
		delete(v.cache, ck)
		v.cacheMu.Unlock()
	}
	if !v.limiter.allowed(source, now) {
		v.limited.Add(1)
		return Principal{}, fmt.Errorf("%w (%s)", ErrRateLimited, source)
	}
	rec, err := v.verifySlow(ctx, snap, key, now)
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			v.limiter.fail(source, now)
			v.refusals.Add(1)
		}
		v.opts.Logger.Debug("keys: refused", "source", source, "err", err)
		return Principal{}, err
	}
	v.remember(ck, cacheEntry{id: rec.ID, hash: string(rec.Hash.Key), expires: now.Add(v.opts.CacheTTL)}, now)
	return principalOf(rec), nil
}

func (v *Verifier) verifySlow(ctx context.Context, snap *Snapshot, key string, now time.Time) (*Record, error) {
	tok, err := ParseToken(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	rec := snap.Lookup(tok.ID)
	if rec == nil {
		return nil, fmt.Errorf("%w: unknown key id %s", ErrUnauthenticated, tok.ID)
	}
	switch st := rec.StateAt(now); st {
	case StateRevoked:
		return nil, fmt.Errorf("%w: key %s was revoked at %s", ErrUnauthenticated, rec.ID, rec.Revoked.UTC().Format(time.RFC3339))
	case StateExpired:
		return nil, fmt.Errorf("%w: key %s expired at %s", ErrUnauthenticated, rec.ID, rec.Expires.UTC().Format(time.RFC3339))
	}
	select {
	case v.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("keys: waiting to verify key %s: %w", rec.ID, ctx.Err())
	}
	v.hashes.Add(1)
	ok, err := rec.Hash.matches(tok.secret[:])
	if v.opts.AfterHash != nil {
		v.opts.AfterHash()
	}
	<-v.sem
	if err != nil {
		return nil, fmt.Errorf("%w: key %s: %w", ErrUnauthenticated, rec.ID, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: wrong secret for key %s", ErrUnauthenticated, rec.ID)
	}
	return rec, nil
}

func (v *Verifier) cacheKey(key string) [32]byte {
	m := hmac.New(sha256.New, v.mac[:])
	io.WriteString(m, key)
	var out [32]byte
	m.Sum(out[:0])
	return out
}

// remember caches a verification; when the cache is full, expired entries
// go first, then arbitrary ones.
func (v *Verifier) remember(ck [32]byte, e cacheEntry, now time.Time) {
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	if len(v.cache) >= v.opts.CacheSize {
		for k, old := range v.cache {
			if !now.Before(old.expires) {
				delete(v.cache, k)
			}
		}
		for k := range v.cache {
			if len(v.cache) < v.opts.CacheSize {
				break
			}
			delete(v.cache, k)
		}
	}
	v.cache[ck] = e
}

func principalOf(r *Record) Principal {
	return Principal{KeyID: r.ID, Name: r.Name, Profile: r.Profile, Policy: r.Policy, Expires: r.Expires}
}

// failureLimiter is a token bucket of failures per source.
type failureLimiter struct {
	mu       sync.Mutex
	r        rate.Limit
	burst    int
	max      int
	sources  map[string]*rate.Limiter
	overflow *rate.Limiter
}

func newFailureLimiter(r rate.Limit, burst, max int) *failureLimiter {
	return &failureLimiter{r: r, burst: burst, max: max, sources: make(map[string]*rate.Limiter), overflow: rate.NewLimiter(r, burst)}
}

// allowed reports whether source may attempt a verification: it has not
// used up its failures.
func (l *failureLimiter) allowed(source string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.sources[source]
	if lim == nil {
		if len(l.sources) < l.max {
			return true
		}
		lim = l.overflow
	}
	return lim.TokensAt(now) >= 1
}

// fail counts one failure against source.
func (l *failureLimiter) fail(source string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.sources[source]
	if lim == nil {
		if len(l.sources) >= l.max {
			l.prune(now)
		}
		if len(l.sources) >= l.max {
			l.overflow.AllowN(now, 1)
			return
		}
		lim = rate.NewLimiter(l.r, l.burst)
		l.sources[source] = lim
	}
	lim.AllowN(now, 1)
}

// prune forgets sources whose bucket is full again.
func (l *failureLimiter) prune(now time.Time) {
	for s, lim := range l.sources {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.sources, s)
		}
	}
}
