package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/server"
)

// SessionOwner is who opened an MCP session: the key, and whatever tells
// apart callers that hold the same key (the Tailnet user and node). A
// session answers only its owner; the per-key quota counts by Key.
type SessionOwner struct {
	// Key is the key's id; never empty for an authenticated caller.
	Key string
	// Identity is what else the listener knows of the caller (the Tailnet
	// user and node), or empty.
	Identity string
}

func (o SessionOwner) String() string {
	if o.Identity == "" {
		return "key " + o.Key
	}
	return "key " + o.Key + " (" + o.Identity + ")"
}

// DefaultSessionEvictIdle is how long a session must have gone unused,
// with no request or stream open, before a new session of the same key may
// take its place.
const DefaultSessionEvictIdle = time.Minute

// SessionLimits bound the sessions a [Sessions] keeps.
type SessionLimits struct {
	// Max caps the sessions open at once over every listener; zero: no
	// cap.
	Max int
	// PerKey caps the sessions of one key; zero: Max.
	PerKey int
	// EvictIdle: a key at its quota (or the daemon at its cap) makes room
	// for a new session of that key by ending the key's session unused
	// the longest, if it has been unused this long and has no request or
	// stream open. DefaultSessionEvictIdle when zero.
	EvictIdle time.Duration
}

// Sessions is the session-id manager every listener's Streamable HTTP
// server shares. It hands out unguessable ids, binds each to the caller
// that opened it ([SessionOwner]), counts the sessions open over all
// listeners and per key, and remembers ended ids for a while (bounded), so
// their owner is told the session ended rather than that it never was.
//
// Only the guards of [NewHandler] open sessions: an initialize is let
// through only with a place reserved for it, and the id mcp-go asks for
// is made for that reservation's owner; a request that did not come
// through the guards gets an id that is never valid.
type Sessions struct {
	lim SessionLimits
	now func() time.Time

	mu         sync.Mutex
	live       map[string]*session
	perKey     map[string]int // live and reserved, by key
	reserved   int            // places reserved for initializes in flight
	terminated map[string]ended
	pruned     time.Time // when terminated was last pruned
}

type session struct {
	owner    SessionOwner
	lastUsed time.Time
	inFlight int
}

type ended struct {
	at    time.Time
	owner SessionOwner
}

const sessionPrefix = "pmcp-session-"

// terminatedMemory is how long an ended session's id is remembered, and
// maxTerminated how many are.
const (
	terminatedMemory = time.Hour
	maxTerminated    = 100000
)

// NewSessions returns a manager with those limits; now may be nil
// (time.Now).
func NewSessions(l SessionLimits, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	if l.PerKey <= 0 || (l.Max > 0 && l.PerKey > l.Max) {
		l.PerKey = l.Max
	}
	if l.EvictIdle <= 0 {
		l.EvictIdle = DefaultSessionEvictIdle
	}
	return &Sessions{lim: l, now: now, live: map[string]*session{}, perKey: map[string]int{}, terminated: map[string]ended{}}
}

// Full reports whether a new session would exceed the cap.
func (s *Sessions) Full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim.Max > 0 && len(s.live)+s.reserved >= s.lim.Max
}

// Open is the number of sessions open.
func (s *Sessions) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// OpenOf is the number of sessions open (or being opened) by a key.
func (s *Sessions) OpenOf(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perKey[key]
}

// sessionLimitError says which limit refused a new session.
type sessionLimitError struct {
	owner SessionOwner
	// perKey: the key's quota; otherwise the daemon's cap.
	perKey      bool
	open, limit int
	retryAfter  time.Duration
}

func (e *sessionLimitError) Error() string {
	if e.perKey {
		return fmt.Sprintf("too many sessions for key %s: it has %d open, its quota (http.max_sessions_per_key), and none has been idle long enough to make room; "+
			"end one (DELETE /mcp with its Mcp-Session-Id) or wait", e.owner.Key, e.open)
	}
	return fmt.Sprintf("too many sessions: %d are open, the most this daemon keeps (http.max_sessions); close one or wait for an idle one to end", e.open)
}

// reservation is a place held for the session an initialize opens.
type reservation struct {
	s     *Sessions
	owner SessionOwner
	// evicted are the sessions ended to make room.
	evicted []string
	// id is the session made for it; done once made or released.
	id   string
	done bool
}

// reserve holds a place for a new session of owner: within the key's
// quota and the cap, after ending the key's longest-unused idle session
// if that makes room. The error is a *sessionLimitError.
func (s *Sessions) reserve(owner SessionOwner) (*reservation, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &reservation{s: s, owner: owner}
	for {
		keyFull := s.lim.PerKey > 0 && s.perKey[owner.Key] >= s.lim.PerKey
		capFull := s.lim.Max > 0 && len(s.live)+s.reserved >= s.lim.Max
		if !keyFull && !capFull {
			break
		}
		id, wait := s.idlestLocked(owner.Key, now)
		if id == "" {
			e := &sessionLimitError{owner: owner, perKey: keyFull, open: s.perKey[owner.Key], limit: s.lim.PerKey, retryAfter: wait}
			if !keyFull {
				e.open, e.limit, e.retryAfter = len(s.live), s.lim.Max, 30*time.Second
			}
			return nil, e
		}
		s.endLocked(id, now)
		r.evicted = append(r.evicted, id)
	}
	s.reserved++
	s.perKey[owner.Key]++
	return r, nil
}

// idlestLocked is the key's session unused the longest among those idle
// for EvictIdle with nothing in flight; when there is none, how long until
// one may be (30 s when every session is busy). s.mu is held.
func (s *Sessions) idlestLocked(key string, now time.Time) (string, time.Duration) {
	var best string
	var bestAt time.Time
	wait := 30 * time.Second
	for id, se := range s.live {
		if se.owner.Key != key || se.inFlight > 0 {
			continue
		}
		if idle := now.Sub(se.lastUsed); idle < s.lim.EvictIdle {
			wait = min(wait, s.lim.EvictIdle-idle)
			continue
		}
		if best == "" || se.lastUsed.Before(bestAt) {
			best, bestAt = id, se.lastUsed
		}
	}
	return best, wait
}

// generate makes the session of the reservation; a second call gets an
// id that is never valid.
func (r *reservation) generate() string {
	id := sessionPrefix + uuid.NewString()
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.done {
		return id
	}
	r.done, r.id = true, id
	s.reserved--
	s.live[id] = &session{owner: r.owner, lastUsed: s.now()}
	return id
}

// release gives the place back if no session was made for it.
func (r *reservation) release() {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	s.reserved--
	s.decKeyLocked(r.owner.Key)
}

func (s *Sessions) decKeyLocked(key string) {
	if s.perKey[key] <= 1 {
		delete(s.perKey, key)
		return
	}
	s.perKey[key]--
}

// sessionState is what a session id is to a caller.
type sessionState int

const (
	// sessionLive: the caller's own, open.
	sessionLive sessionState = iota
	// sessionEnded: the caller's own, ended (DELETE, idle, evicted).
	sessionEnded
	// sessionUnknown: never given out, forgotten, or not an id.
	sessionUnknown
	// sessionForeign: another caller's, open or ended.
	sessionForeign
)

// acquire looks id up for owner; a live session of owner is marked in use
// until release.
func (s *Sessions) acquire(id string, owner SessionOwner) sessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.live[id]; ok {
		if se.owner != owner {
			return sessionForeign
		}
		se.inFlight++
		se.lastUsed = s.now()
		return sessionLive
	}
	if e, ok := s.terminated[id]; ok {
		if e.owner != owner {
			return sessionForeign
		}
		return sessionEnded
	}
	return sessionUnknown
}

// release ends a use that acquire began.
func (s *Sessions) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.live[id]; ok && se.inFlight > 0 {
		se.inFlight--
		se.lastUsed = s.now()
	}
}

// state is what id is to owner, without using it.
func (s *Sessions) state(id string, owner SessionOwner) sessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.live[id]; ok {
		if se.owner != owner {
			return sessionForeign
		}
		return sessionLive
	}
	if e, ok := s.terminated[id]; ok {
		if e.owner != owner {
			return sessionForeign
		}
		return sessionEnded
	}
	return sessionUnknown
}

// Terminate ends a session, whoever owns it (the idle sweep, the
// daemon's own housekeeping); it reports whether it was open.
func (s *Sessions) Terminate(id string) bool {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endLocked(id, now)
}

// endLocked ends a live session and remembers its id; s.mu is held.
func (s *Sessions) endLocked(id string, now time.Time) bool {
	se, ok := s.live[id]
	if !ok {
		return false
	}
	delete(s.live, id)
	s.decKeyLocked(se.owner.Key)
	// Forgetting old ids walks them all: at most once a minute, or when
	// the memory is full, so that ending many sessions stays cheap.
	if now.Sub(s.pruned) >= time.Minute || len(s.terminated) >= maxTerminated {
		s.pruned = now
		for t, e := range s.terminated {
			if now.Sub(e.at) > terminatedMemory {
				delete(s.terminated, t)
			}
		}
	}
	if len(s.terminated) < maxTerminated {
		s.terminated[id] = ended{at: now, owner: se.owner}
	}
	return true
}

// grant is what the guards hand mcp-go with a request: the Sessions they
// checked it against, its caller, and for an initialize the place
// reserved for its session.
type grant struct {
	s     *Sessions
	owner SessionOwner
	res   *reservation
}

type grantKey struct{}

func withGrant(ctx context.Context, g *grant) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// resolver gives mcp-go, per request, a session-id manager bound to the
// request's caller.
type resolver struct{ s *Sessions }

func (rs resolver) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		// The idle sweep.
		return sweeper(rs)
	}
	if g, ok := r.Context().Value(grantKey{}).(*grant); ok && g.s == rs.s {
		return callerSessions{g}
	}
	return refusing{}
}

// callerSessions is the manager of one guarded request.
type callerSessions struct{ g *grant }

// Generate makes the session of the initialize the guards reserved a
// place for; without one, an id that is never valid.
func (c callerSessions) Generate() string {
	if c.g.res == nil {
		return sessionPrefix + uuid.NewString()
	}
	return c.g.res.generate()
}

func (c callerSessions) Validate(id string) (bool, error) {
	switch c.g.s.state(id, c.g.owner) {
	case sessionLive:
		return false, nil
	case sessionEnded:
		return true, nil
	default:
		return false, errSessionNotFound
	}
}

// Terminate ends the caller's own session; another's is not allowed (the
// guards answer 404 before it comes to that).
func (c callerSessions) Terminate(id string) (bool, error) {
	switch c.g.s.state(id, c.g.owner) {
	case sessionForeign:
		return true, nil
	case sessionLive:
		c.g.s.Terminate(id)
	}
	return false, nil
}

var errSessionNotFound = errors.New("session not found")

// sweeper is the manager of mcp-go's idle sweep: it ends what it is told.
type sweeper struct{ s *Sessions }

func (sw sweeper) Generate() string                  { return sessionPrefix + uuid.NewString() }
func (sw sweeper) Validate(string) (bool, error)     { return false, errSessionNotFound }
func (sw sweeper) Terminate(id string) (bool, error) { sw.s.Terminate(id); return false, nil }

// refusing is the manager of a request that did not come through the
// guards: no session is valid for it and none it opens ever will be.
type refusing struct{}

func (refusing) Generate() string               { return sessionPrefix + uuid.NewString() }
func (refusing) Validate(string) (bool, error)  { return false, errSessionNotFound }
func (refusing) Terminate(string) (bool, error) { return true, nil }
