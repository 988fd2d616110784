package transport

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// Limiter is a token bucket per name (a key id, a client address): each
// refilled at Rate per second up to Burst. It keeps at most MaxNames
// buckets; beyond that, full buckets idle the longest are dropped first
// (a dropped bucket was full, so nothing is forgiven).
type Limiter struct {
	rate  rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

// NewLimiter returns a limiter; rate is per second. now may be nil
// (time.Now).
func NewLimiter(perSecond float64, burst, maxNames int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	if maxNames <= 0 {
		maxNames = 10000
	}
	return &Limiter{rate: rate.Limit(perSecond), burst: burst, max: maxNames, now: now, buckets: map[string]*bucket{}}
}

// Allow takes one token for name. When none is left it says how long until
// one is.
func (l *Limiter) Allow(name string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[name]
	if b == nil {
		if len(l.buckets) >= l.max {
			l.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[name] = b
	}
	b.last = now
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	wait := time.Second
	if l.rate > 0 {
		missing := 1 - b.lim.TokensAt(now)
		wait = time.Duration(math.Ceil(missing / float64(l.rate) * float64(time.Second)))
	}
	return false, max(wait, time.Millisecond)
}

// evict drops buckets that have refilled completely; with none, the one
// idle the longest. l.mu is held.
func (l *Limiter) evict(now time.Time) {
	full := time.Duration(math.Ceil(float64(l.burst)/float64(l.rate)*1e9)) * time.Nanosecond
	var oldest string
	var oldestAt time.Time
	for name, b := range l.buckets {
		if now.Sub(b.last) >= full {
			delete(l.buckets, name)
			continue
		}
		if oldest == "" || b.last.Before(oldestAt) {
			oldest, oldestAt = name, b.last
		}
	}
	if len(l.buckets) >= l.max && oldest != "" {
		delete(l.buckets, oldest)
	}
}

// Sessions is the session-id manager every listener's Streamable HTTP
// server shares. It hands out unguessable ids, counts the sessions open
// over all listeners, and remembers terminated ids for a while (bounded),
// so a client using one is told it ended rather than that it never was.
type Sessions struct {
	max int
	now func() time.Time

	open       atomic.Int64
	mu         sync.Mutex
	live       map[string]struct{}
	terminated map[string]time.Time
}

const sessionPrefix = "pmcp-session-"

// terminatedMemory is how long an ended session's id is remembered.
const terminatedMemory = time.Hour

// NewSessions returns a manager allowing max sessions at once.
func NewSessions(max int, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{max: max, now: now, live: map[string]struct{}{}, terminated: map[string]time.Time{}}
}

// Full reports whether a new session would exceed the cap.
func (s *Sessions) Full() bool { return s.max > 0 && int(s.open.Load()) >= s.max }

// Open is the number of sessions open.
func (s *Sessions) Open() int { return int(s.open.Load()) }

// Generate makes the id of a new session.
func (s *Sessions) Generate() string {
	id := sessionPrefix + uuid.NewString()
	s.mu.Lock()
	s.live[id] = struct{}{}
	s.mu.Unlock()
	s.open.Add(1)
	return id
}

// Validate checks an id a client sent.
func (s *Sessions) Validate(id string) (bool, error) {
	rest, ok := strings.CutPrefix(id, sessionPrefix)
	if !ok || uuid.Validate(rest) != nil {
		return false, fmt.Errorf("invalid session id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.terminated[id]; ok {
		return true, nil
	}
	if _, ok := s.live[id]; !ok {
		return false, fmt.Errorf("session not found")
	}
	return false, nil
}

// Terminate ends a session: the client's DELETE, or the idle sweep.
func (s *Sessions) Terminate(id string) (bool, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[id]; !ok {
		return false, nil
	}
	delete(s.live, id)
	s.open.Add(-1)
	for t, at := range s.terminated {
		if now.Sub(at) > terminatedMemory {
			delete(s.terminated, t)
		}
	}
	if len(s.terminated) < 100000 {
		s.terminated[id] = now
	}
	return false, nil
}
