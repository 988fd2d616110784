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

	"github.com/mark3labs/mcp-go/server"
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

// Session ids are unguessable and known: a made-up id is invalid, an ended
// one is reported terminated, and the count follows.
func TestSessions(t *testing.T) {
	s := NewSessions(2, nil)
	a, b := s.Generate(), s.Generate()
	if a == b || !strings.HasPrefix(a, "pmcp-session-") || s.Open() != 2 || !s.Full() {
		t.Fatalf("ids %q %q, open %d", a, b, s.Open())
	}
	if term, err := s.Validate(a); term || err != nil {
		t.Errorf("live session: %v %v", term, err)
	}
	if _, err := s.Validate("pmcp-session-00000000-0000-0000-0000-000000000000"); err == nil {
		t.Error("an id never given is valid")
	}
	if _, err := s.Validate("mcp-session-x"); err == nil {
		t.Error("a foreign id is valid")
	}
	s.Terminate(a)
	s.Terminate(a) // twice is once
	if term, _ := s.Validate(a); !term || s.Open() != 1 || s.Full() {
		t.Errorf("after terminate: terminated %v, open %d", term, s.Open())
	}
}

// guardedServer is an MCP endpoint behind NewHandler with the guards set.
func guardedServer(t *testing.T, o HTTPOptions, idle time.Duration) *httptest.Server {
	t.Helper()
	s := server.NewMCPServer("t", "1")
	o.Listener = "lan"
	o.MCP = NewStreamable(s, StreamableOptions{Sessions: o.Sessions, IdleTTL: idle})
	o.Authenticate = func(ctx context.Context, key, _, _ string, _ *http.Request) (context.Context, error) {
		if key != "pmcp_good" {
			return nil, fmt.Errorf("no")
		}
		return ctx, nil
	}
	o.AllowedHosts = []string{"127.0.0.1"}
	h, err := NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
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

// The session cap refuses the initialize that would open one session too
// many with 503; ending a session frees its place; requests within open
// sessions are not refused.
func TestSessionCap(t *testing.T) {
	sessions := NewSessions(2, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 0)
	auth := map[string]string{"Authorization": "Bearer pmcp_good"}
	var ids []string
	for range 2 {
		resp := post(t, srv, initBody, auth)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	resp := post(t, srv, initBody, auth)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third session: %d, want 503 with Retry-After", resp.StatusCode)
	}
	inSession := map[string]string{"Authorization": "Bearer pmcp_good", "Mcp-Session-Id": ids[0], "MCP-Protocol-Version": "2025-11-25"}
	if resp := post(t, srv, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, inSession); resp.StatusCode != http.StatusOK {
		t.Errorf("a request within an open session: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer pmcp_good")
	req.Header.Set("Mcp-Session-Id", ids[0])
	del, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if resp := post(t, srv, initBody, auth); resp.StatusCode != http.StatusOK {
		t.Errorf("initialize after a session ended: %d", resp.StatusCode)
	}
}

// A session unused for the idle timeout is ended, and its place freed.
func TestSessionIdleTimeout(t *testing.T) {
	sessions := NewSessions(10, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 500*time.Millisecond)
	resp := post(t, srv, initBody, map[string]string{"Authorization": "Bearer pmcp_good"})
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" || sessions.Open() != 1 {
		t.Fatalf("session %q, open %d", id, sessions.Open())
	}
	deadline := time.Now().Add(5 * time.Second)
	for sessions.Open() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was not ended within 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if term, _ := sessions.Validate(id); !term {
		t.Error("the swept session is not reported terminated")
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
