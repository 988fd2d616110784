package keys

import (
	"strings"
	"testing"
	"time"
)

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "30d", want: now.AddDate(0, 0, 30)},
		{in: "1d", want: now.Add(24 * time.Hour)},
		{in: "720h", want: now.Add(720 * time.Hour)},
		{in: "90m", want: now.Add(90 * time.Minute)},
		{in: "2026-12-31T23:00:00Z", want: time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)},
		{in: "2026-12-31T23:00:00+02:00", want: time.Date(2026, 12, 31, 21, 0, 0, 0, time.UTC)},
		{in: "", err: "want an RFC 3339 time"},
		{in: " 30d", err: "want an RFC 3339 time"},
		{in: "tomorrow", err: "want an RFC 3339 time"},
		{in: "never", err: "want an RFC 3339 time"},
		{in: "NaN", err: "want an RFC 3339 time"},
		{in: "30", err: "want an RFC 3339 time"},
		{in: "0d", err: "days must be between 1 and 3660"},
		{in: "99999999999999999999d", err: "days must be between 1 and 3660"},
		{in: "-5h", err: "the duration must be positive"},
		{in: "0s", err: "the duration must be positive"},
		{in: "2026-13-01T00:00:00Z", err: "not an RFC 3339 time"},
		{in: "2026-12-31", err: "not an RFC 3339 time"},
		{in: "2026-12-31 23:00:00", err: "not an RFC 3339 time"},
		{in: "2020-01-01T00:00:00Z", err: "is not in the future"},
		{in: "2026-03-10T12:00:00Z", err: "is not in the future"},
		{in: "2040-01-01T00:00:00Z", err: "more than ten years ahead"},
		{in: "100000h", err: "more than ten years ahead"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseExpiry(tt.in, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseExpiry(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
				}
				if !got.IsZero() {
					t.Errorf("ParseExpiry(%q) returned %v with its error", tt.in, got)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("ParseExpiry(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
