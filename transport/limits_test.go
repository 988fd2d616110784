package transport

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A bucket holds its burst, then refuses and says when the next token
// comes; it refills at its rate; names are independent; the map of names is
// bounded.
func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	l := NewLimiter(2, 3, 4, func() time.Time { return now })
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != 500*time.Millisecond {
		t.Errorf("over the burst: %v, wait %v, want a refusal and 500ms", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Error("another name shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Error("no refill after 500ms at 2/s")
	}
	for _, n := range []string{"c", "d", "e", "f", "g"} {
		l.Allow(n)
	}
	l.mu.Lock()
	n := len(l.buckets)
	l.mu.Unlock()
	if n > 4 {
		t.Errorf("%d buckets kept, the bound is 4", n)
	}
}

// Per-source limits apply before the key is checked (an unknown key costs
// a token too), with 429 and Retry-After.
func TestSourceLimit(t *testing.T) {
	var refused []int
	srv := guardedServer(t, HTTPOptions{
		SourceLimiter: NewLimiter(0.5, 2, 0, nil),
		Refused:       func(_ *http.Request, status int, _ string) { refused = append(refused, status) },
	}, 0)
	for i, key := range []string{"pmcp_bad", "pmcp_good"} {
		if resp := post(t, srv, initBody, map[string]string{"Authorization": "Bearer " + key}); resp.StatusCode == http.StatusTooManyRequests {
			t.Fatalf("request %d limited within the burst", i+1)
		}
	}
	resp := post(t, srv, initBody, map[string]string{"Authorization": "Bearer pmcp_good"})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third request: %d, want 429", resp.StatusCode)
	}
	if s, _ := strconv.Atoi(resp.Header.Get("Retry-After")); s < 1 || s > 2 {
		t.Errorf("Retry-After %q, want 1 or 2 (a token every 2 s)", resp.Header.Get("Retry-After"))
	}
	if len(refused) != 2 || refused[1] != http.StatusTooManyRequests {
		t.Errorf("refusals told %v", refused)
	}
}

// A client that sends its headers too slowly is disconnected.
func TestReadHeaderTimeout(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config = NewServer(http.NotFoundHandler(), Timeouts{ReadHeader: 200 * time.Millisecond})
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n") // and then nothing
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err == nil && !strings.Contains(line, "408") {
		t.Fatalf("the server answered %q to a half-sent request", line)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("the connection stayed open %v", waited)
	}
}

// A client that sends its body too slowly is cut off at the read timeout.
func TestReadTimeout(t *testing.T) {
	got := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewServer(h, Timeouts{ReadHeader: time.Second, Read: 300 * time.Millisecond})
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
	select {
	case err := <-got:
		if err == nil {
			t.Error("the handler read a whole body that never came")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the slow body was not cut off within 5 s")
	}
}

func TestSourceKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.168.1.20:5000", "192.168.1.20"},
		{"192.168.1.20", "192.168.1.20"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::9", "2001:db8:1:3::/64"},
		{"[::ffff:10.0.0.5]:80", "10.0.0.5"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::1]:9", "::/64"},
		{"not an address", "not an address"},
	} {
		if got := SourceKey(tc.in); got != tc.want {
			t.Errorf("SourceKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Reproduces a source that rotates IPv6 addresses within its /64 to get a
// fresh bucket for each: the source limiter counts the /64 as one.
func TestSourceLimitIPv6By64(t *testing.T) {
	var refused []string
	h, err := NewHandler(HTTPOptions{
		Listener: "lan", MCP: http.NotFoundHandler(), AllowedHosts: []string{"[fd00::1]:8443"}, Logger: quiet(),
		Authenticate:  func(ctx context.Context, _, _, _ string, _ *http.Request) (context.Context, error) { return ctx, nil },
		SourceLimiter: NewLimiter(0.001, 2, 0, nil),
		Refused:       func(_ *http.Request, _ int, reason string) { refused = append(refused, reason) },
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(remote string) int {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host, req.RemoteAddr = "[fd00::1]:8443", remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	for i, remote := range []string{"[fd00:1:2:3::1]:1000", "[fd00:1:2:3::2]:1000", "[fd00:1:2:3:ffff::3]:1000"} {
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if code := get(remote); code != want {
			t.Errorf("%s: %d, want %d", remote, code, want)
		}
	}
	if code := get("[fd00:1:2:4::1]:1000"); code != http.StatusOK {
		t.Errorf("another /64: %d", code)
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "too many requests from fd00:1:2:3::/64") {
		t.Errorf("refusals %q", refused)
	}
}
