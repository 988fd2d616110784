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
// refusal for too many failures, which is a *LimitError wrapping
// ErrRateLimited (HTTP 429, not 401). The messages say why, for the log;
// they never contain the secret.
var (
	ErrUnauthenticated = errors.New("key not accepted")
	ErrRateLimited     = errors.New("too many failed key attempts")
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
	// CPUs, at least 1); each takes 1 MiB at the default parameters, and up
	// to 32 MiB for a record hashed at N=32768.
	MaxConcurrentHashes int
	// FailureRate and FailureBurst limit the wrong secrets for known keys
	// from one source (1 per second after a burst of 10). A source is an
	// IPv4 address, an IPv6 /64 (an address in Tailscale's
	// fd7a:115c:a1e0::/48), "loopback" for every loopback address, or the
	// string given ("stdio"). rate.Inf turns a limit off.
	FailureRate  rate.Limit
	FailureBurst int
	// KeyFailureRate and KeyFailureBurst limit the wrong secrets for one key
	// id from all sources together (1 per second after a burst of 10). An
	// attempt at a known key hashes only when both its key's and its
	// source's budgets have a token; the token is taken before scrypt runs
	// and given back when the secret was right. A key this Verifier has
	// accepted before (its cache entry only expired) is re-verified without
	// either budget, so an attack on its id cannot lock it out.
	KeyFailureRate  rate.Limit
	KeyFailureBurst int
	// ProbeRate and ProbeBurst limit, per source, the keys refused without
	// hashing: malformed, unknown id, revoked or expired (1 per second after
	// a burst of 10). Their budget is separate: it never refuses a known,
	// usable key, however many probes a shared source (loopback) sent.
	ProbeRate  rate.Limit
	ProbeBurst int
	// MaxSources bounds each of the limiter's tables: sources with wrong
	// secrets, key ids with wrong secrets, sources with probes (10000). A
	// full table first drops the entries whose budgets have refilled, which
	// forgives nothing; only when none has, it drops the least recently
	// charged one, forgiving its failures (Stats.Forgiven). A source that
	// never failed is never charged for another's failures.
	MaxSources int
	// Now is the clock (time.Now).
	Now func() time.Time
	// Rand seeds the cache key (crypto/rand).
	Rand io.Reader
	// Logger receives refusals at debug level (slog.Default()).
	Logger *slog.Logger
	// AfterHash, when set, runs after each scrypt computation with the
	// bytes of working memory it took (Params.Memory), still holding its
	// slot. The daemon returns a large hash's memory to the operating
	// system there (debug.FreeOSMemory), so a burst of first verifications
	// of records hashed at N=32768 does not leave the process's resident
	// size at several times 32 MiB.
	AfterHash func(memory int)
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
	// Forgiven is the number of budgets the limiter dropped from a full
	// table before they had refilled (see VerifierOptions.MaxSources).
	Forgiven int64
}

// Stats returns the counters.
func (v *Verifier) Stats() Stats {
	return Stats{
		Hashes:      v.hashes.Load(),
		CacheHits:   v.hits.Load(),
		Refusals:    v.refusals.Load(),
		RateLimited: v.limited.Load(),
		Forgiven:    v.limiter.forgiven(),
	}
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
	if opts.KeyFailureRate <= 0 {
		opts.KeyFailureRate = 1
	}
	if opts.KeyFailureBurst <= 0 {
		opts.KeyFailureBurst = 10
	}
	if opts.ProbeRate <= 0 {
		opts.ProbeRate = 1
	}
	if opts.ProbeBurst <= 0 {
		opts.ProbeBurst = 10
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
		store: store,
		opts:  opts,
		sem:   make(chan struct{}, opts.MaxConcurrentHashes),
		cache: make(map[[32]byte]cacheEntry),
		limiter: newFailureLimiter(limits{
			keyRate: float64(opts.KeyFailureRate), keyBurst: opts.KeyFailureBurst,
			sourceRate: float64(opts.FailureRate), sourceBurst: opts.FailureBurst,
			probeRate: float64(opts.ProbeRate), probeBurst: opts.ProbeBurst,
			max: opts.MaxSources,
		}),
	}
	if _, err := io.ReadFull(opts.Rand, v.mac[:]); err != nil {
		return nil, fmt.Errorf("keys: cache key: %w", err)
	}
	return v, nil
}

// Verify checks a key presented by source (an address without port, or
// "stdio") and returns its principal. Cost: a cache hit is an HMAC, a map
// read and a stat of keys.json, and is served whatever the source's
// failures (it needs the exact key); a malformed key, an unknown id, a
// revoked or expired key is refused without hashing and charged to the
// source's probe budget only; a known, usable id reaches scrypt only with a
// token from its key's and its source's failure budgets, taken before the
// hash and given back when the secret was right (a key whose cache entry
// has only expired needs no token), and at most MaxConcurrentHashes at a
// time. A refusal over a budget is a *LimitError.
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
	// proven: this exact key was accepted for this very record before, and
	// only its cache entry has expired. Its hash cannot fail, so it needs
	// no failure budget: an attack on its id does not lock it out. The
	// entry stays until the new verification replaces it, so concurrent
	// requests with the key are proven too.
	proven := false
	if hit {
		if rec := snap.Lookup(e.id); rec != nil && string(rec.Hash.Key) == e.hash && rec.usable(now) {
			if now.Before(e.expires) {
				v.hits.Add(1)
				return principalOf(rec), nil
			}
			proven = true
		} else {
			v.cacheMu.Lock()
			delete(v.cache, ck)
			v.cacheMu.Unlock()
		}
	}
	src := sourceOf(source)
	rec, tok, err := v.usableRecord(snap, key, now)
	if err != nil {
		if lerr := v.limiter.probe(src, now); lerr != nil {
			return Principal{}, v.overLimit(lerr)
		}
		return Principal{}, v.refuse(source, err)
	}
	// rec.ID, not tok.ID: the table keeps the id, and tok.ID is a slice of
	// the presented key, secret included.
	if !proven {
		if lerr := v.limiter.reserve(rec.ID, src, now); lerr != nil {
			return Principal{}, v.overLimit(lerr)
		}
	}
	settle := func(failed bool) {
		switch {
		case proven:
		case failed:
			v.limiter.fail(rec.ID, src, v.opts.Now())
		default:
			v.limiter.release(rec.ID, src, v.opts.Now())
		}
	}
	ok, err := v.hash(ctx, rec, &tok)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		settle(false) // it never hashed: not a failure of the key
		return Principal{}, err
	case err != nil:
		settle(true)
		return Principal{}, v.refuse(source, err)
	case !ok:
		settle(true)
		return Principal{}, v.refuse(source, fmt.Errorf("%w: wrong secret for key %s", ErrUnauthenticated, rec.ID))
	}
	settle(false)
	v.remember(ck, cacheEntry{id: rec.ID, hash: string(rec.Hash.Key), expires: now.Add(v.opts.CacheTTL)}, now)
	return principalOf(rec), nil
}

func (v *Verifier) refuse(source string, err error) error {
	v.refusals.Add(1)
	v.opts.Logger.Debug("keys: refused", "source", source, "err", err)
	return err
}

func (v *Verifier) overLimit(err error) error {
	v.limited.Add(1)
	return err
}

// usableRecord finds the record a key names and checks that it could be
// accepted, all without hashing.
func (v *Verifier) usableRecord(snap *Snapshot, key string, now time.Time) (*Record, Token, error) {
	tok, err := ParseToken(key)
	if err != nil {
		return nil, Token{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	rec := snap.Lookup(tok.ID)
	if rec == nil {
		return nil, Token{}, fmt.Errorf("%w: unknown key id %s", ErrUnauthenticated, tok.ID)
	}
	switch st := rec.StateAt(now); st {
	case StateRevoked:
		return nil, Token{}, fmt.Errorf("%w: key %s was revoked at %s", ErrUnauthenticated, rec.ID, rec.Revoked.UTC().Format(time.RFC3339))
	case StateExpired:
		return nil, Token{}, fmt.Errorf("%w: key %s expired at %s", ErrUnauthenticated, rec.ID, rec.Expires.UTC().Format(time.RFC3339))
	}
	if err := rec.Hash.check(); err != nil {
		return nil, Token{}, fmt.Errorf("%w: key %s: %w", ErrUnauthenticated, rec.ID, err)
	}
	return rec, tok, nil
}

// hash runs scrypt for tok against rec in one of the bounded slots.
func (v *Verifier) hash(ctx context.Context, rec *Record, tok *Token) (bool, error) {
	select {
	case v.sem <- struct{}{}:
	case <-ctx.Done():
		return false, fmt.Errorf("keys: waiting to verify key %s: %w", rec.ID, ctx.Err())
	}
	v.hashes.Add(1)
	ok, err := rec.Hash.matches(tok.secret[:])
	if v.opts.AfterHash != nil {
		v.opts.AfterHash(Params{rec.Hash.N, rec.Hash.R, rec.Hash.P}.Memory())
	}
	<-v.sem
	if err != nil {
		return false, fmt.Errorf("%w: key %s: %w", ErrUnauthenticated, rec.ID, err)
	}
	return ok, nil
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
