package transport

import (
	"math"
	"net/netip"
	"sync"
	"time"

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

// SourceKey is the name a client address is limited by: the IP of an IPv4
// client (an IPv4-mapped IPv6 address is the IPv4 one), the /64 of an IPv6
// client, which is what one host or one site is commonly given, so
// rotating addresses within it gains nothing. remoteAddr is host:port or a
// bare address; anything else is used as it is.
func SourceKey(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	var ip netip.Addr
	if err == nil {
		ip = ap.Addr()
	} else if ip, err = netip.ParseAddr(remoteAddr); err != nil {
		return remoteAddr
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}
