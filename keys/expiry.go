package keys

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxLifetime bounds an expiry: a key that should never expire is created
// without one, not with a date centuries away.
const maxLifetime = 10 * 366 * 24 * time.Hour

// ParseExpiry reads an expiry as an RFC 3339 time (2026-12-31T23:00:00Z), a
// Go duration (720h, 90m) or a number of days (30d), relative to now. The
// result must lie in the future and at most ten years ahead. An empty or
// malformed value is an error, never "no expiry".
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	if strings.TrimSpace(s) != s || s == "" {
		return time.Time{}, fmt.Errorf("expiry %q: want an RFC 3339 time (2026-12-31T23:00:00Z), a duration (720h) or days (30d)", s)
	}
	var at time.Time
	switch {
	case strings.HasSuffix(s, "d") && isDigits(s[:len(s)-1]):
		days, err := strconv.Atoi(s[:len(s)-1])
		if err != nil || days <= 0 || days > 3660 {
			return time.Time{}, fmt.Errorf("expiry %q: days must be between 1 and 3660", s)
		}
		at = now.Add(time.Duration(days) * 24 * time.Hour)
	case strings.ContainsAny(s, "T:") || strings.Count(s, "-") >= 2:
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("expiry %q: not an RFC 3339 time (2026-12-31T23:00:00Z): %w", s, err)
		}
		at = t
	default:
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("expiry %q: want an RFC 3339 time (2026-12-31T23:00:00Z), a duration (720h) or days (30d)", s)
		}
		if d <= 0 {
			return time.Time{}, fmt.Errorf("expiry %q: the duration must be positive", s)
		}
		at = now.Add(d)
	}
	at = at.UTC().Truncate(time.Second)
	if !at.After(now) {
		return time.Time{}, fmt.Errorf("expiry %q: %s is not in the future", s, at.UTC().Format(time.RFC3339))
	}
	if at.Sub(now) > maxLifetime {
		return time.Time{}, fmt.Errorf("expiry %q: more than ten years ahead; create the key without --expires if it should not expire", s)
	}
	return at, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
