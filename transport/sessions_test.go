package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/server"
)

type ownerKey struct{}

// testKeys are the keys guardedServer accepts and the owners they make:
// pmcp_a and pmcp_a_laptop are one key (a) held by two Tailnet identities.
var testKeys = map[string]SessionOwner{
	"pmcp_good":     {Key: "good"},
	"pmcp_a":        {Key: "a", Identity: "tailnet alice desktop"},
	"pmcp_a_laptop": {Key: "a", Identity: "tailnet mallory laptop"},
	"pmcp_b":        {Key: "b"},
}

// refusal is one refusal the guards reported, with the owner the
// request's context carried.
type refusal struct {
	status int
	reason string
	owner  SessionOwner
}

type refusals struct {
	mu   sync.Mutex
	list []refusal
}

func (rs *refusals) add(r *http.Request, status int, reason string) {
	o, _ := r.Context().Value(ownerKey{}).(SessionOwner)
	rs.mu.Lock()
	rs.list = append(rs.list, refusal{status, reason, o})
	rs.mu.Unlock()
}

func (rs *refusals) take() []refusal {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := rs.list
	rs.list = nil
	return out
}

// guardedServer is an MCP endpoint behind NewHandler with the guards set
// and the keys of testKeys.
func guardedServer(t *testing.T, o HTTPOptions, idle time.Duration) *httptest.Server {
	t.Helper()
	s := server.NewMCPServer("t", "1")
	o.Listener = "lan"
	o.MCP = NewStreamable(s, StreamableOptions{Sessions: o.Sessions, IdleTTL: idle})
	o.Authenticate = func(ctx context.Context, key, _, _ string, _ *http.Request) (context.Context, error) {
		owner, ok := testKeys[key]
		if !ok {
			return nil, fmt.Errorf("no")
		}
		return context.WithValue(ctx, ownerKey{}, owner), nil
	}
	o.SessionOwner = func(ctx context.Context) SessionOwner {
		owner, _ := ctx.Value(ownerKey{}).(SessionOwner)
		return owner
	}
	o.AllowedHosts = []string{"127.0.0.1"}
	o.Logger = quiet()
	h, err := NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func auth(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

func inSession(key, id string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}
}

// initialize opens a session for key and returns its id.
func initialize(t *testing.T, srv *httptest.Server, key string) string {
	t.Helper()
	resp := post(t, srv, initBody, auth(key))
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("initialize with %s: %d %s", key, resp.StatusCode, body)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize opened no session")
	}
	return id
}

const pingBody = `{"jsonrpc":"2.0","id":2,"method":"ping"}`

func do(t *testing.T, srv *httptest.Server, method string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+"/mcp", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Reproduces a session used by another key: mcp-go checked only that the
// id existed, so key b, knowing key a's session id, could call tools in
// it, read its event stream and end it. Each is now 404, answered as for
// an id never given out, and reported (for the journal) with key b's
// context and why.
func TestSessionOfAnotherKeyIs404(t *testing.T) {
	rs := &refusals{}
	srv := guardedServer(t, HTTPOptions{Sessions: NewSessions(SessionLimits{Max: 10}, nil), Refused: rs.add}, 0)
	id := initialize(t, srv, "pmcp_a")
	if resp := post(t, srv, pingBody, inSession("pmcp_a", id)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the owner's own request: %d", resp.StatusCode)
	}
	for _, tc := range []struct {
		name string
		send func() *http.Response
	}{
		{"POST", func() *http.Response { return post(t, srv, pingBody, inSession("pmcp_b", id)) }},
		{"GET stream", func() *http.Response { return do(t, srv, http.MethodGet, inSession("pmcp_b", id)) }},
		{"DELETE", func() *http.Response { return do(t, srv, http.MethodDelete, inSession("pmcp_b", id)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.send()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "session not found") {
				t.Fatalf("key b with key a's session: %d %s, want 404 session not found", resp.StatusCode, body)
			}
			got := rs.take()
			if len(got) != 1 || got[0].status != 404 || got[0].owner.Key != "b" || !strings.Contains(got[0].reason, "is not this caller's") {
				t.Errorf("refusals reported: %+v, want one 404 with key b's context", got)
			}
		})
	}
	// The session survived the foreign DELETE.
	if resp := post(t, srv, pingBody, inSession("pmcp_a", id)); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's request after another key's DELETE: %d", resp.StatusCode)
	}
}

// Reproduces a session used by the same key from another Tailnet
// identity: the owner is the key and the identity, so it is 404 too.
func TestSessionOfAnotherTailnetIdentityIs404(t *testing.T) {
	rs := &refusals{}
	srv := guardedServer(t, HTTPOptions{Sessions: NewSessions(SessionLimits{Max: 10}, nil), Refused: rs.add}, 0)
	id := initialize(t, srv, "pmcp_a")
	resp := post(t, srv, pingBody, inSession("pmcp_a_laptop", id))
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("key a from another Tailnet identity: %d, want 404", resp.StatusCode)
	}
	if got := rs.take(); len(got) != 1 || got[0].owner.Identity != "tailnet mallory laptop" {
		t.Errorf("refusals: %+v", got)
	}
}

// An id never given out, and an ended one, are 404 to everyone; the
// owner of an ended one is told it ended.
func TestSessionEndedAndUnknown(t *testing.T) {
	rs := &refusals{}
	srv := guardedServer(t, HTTPOptions{Sessions: NewSessions(SessionLimits{Max: 10}, nil), Refused: rs.add}, 0)
	id := initialize(t, srv, "pmcp_a")
	if resp := do(t, srv, http.MethodDelete, inSession("pmcp_a", id)); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the owner's session: %d", resp.StatusCode)
	}
	for _, tc := range []struct {
		key, id, want string
	}{
		{"pmcp_a", id, "session ended"},
		{"pmcp_b", id, "session not found"},
		{"pmcp_a", sessionPrefix + uuid.NewString(), "session not found"},
		{"pmcp_a", "mcp-session-made-up", "session not found"},
	} {
		resp := post(t, srv, pingBody, inSession(tc.key, tc.id))
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s with %s: %d %s, want 404 %q", tc.key, tc.id, resp.StatusCode, body, tc.want)
		}
	}
	if got := rs.take(); len(got) != 4 {
		t.Errorf("%d refusals reported, want 4: %+v", len(got), got)
	}
}

// A GET stream or a DELETE without a session id is refused: mcp-go would
// open an uncounted session for the GET.
func TestStreamWithoutSessionIs400(t *testing.T) {
	sessions := NewSessions(SessionLimits{Max: 10}, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 0)
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if resp := do(t, srv, m, auth("pmcp_a")); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s without a session: %d, want 400", m, resp.StatusCode)
		}
	}
	if n := sessions.Open(); n != 0 {
		t.Errorf("%d sessions open", n)
	}
}

// The session cap refuses the initialize that would open one session too
// many with 503; ending a session frees its place; requests within open
// sessions are not refused.
func TestSessionCap(t *testing.T) {
	sessions := NewSessions(SessionLimits{Max: 2}, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 0)
	ids := []string{initialize(t, srv, "pmcp_a"), initialize(t, srv, "pmcp_b")}
	resp := post(t, srv, initBody, auth("pmcp_good"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "http.max_sessions)") {
		t.Fatalf("third session: %d %s, want 503 with Retry-After", resp.StatusCode, body)
	}
	if resp := post(t, srv, pingBody, inSession("pmcp_a", ids[0])); resp.StatusCode != http.StatusOK {
		t.Errorf("a request within an open session: %d", resp.StatusCode)
	}
	if resp := do(t, srv, http.MethodDelete, inSession("pmcp_a", ids[0])); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	initialize(t, srv, "pmcp_good")
}

// Reproduces the cap skipped by an initialize that carries a made-up
// Mcp-Session-Id: every initialize opens a session, so every one counts.
func TestInitializeWithMadeUpSessionIDAtTheCapIs503(t *testing.T) {
	sessions := NewSessions(SessionLimits{Max: 2}, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 0)
	initialize(t, srv, "pmcp_a")
	initialize(t, srv, "pmcp_b")
	hdr := inSession("pmcp_b", sessionPrefix+uuid.NewString())
	if resp := post(t, srv, initBody, hdr); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("initialize with a made-up session id at the cap: %d, want 503", resp.StatusCode)
	}
	if n := sessions.Open(); n != 2 {
		t.Errorf("%d sessions open, want 2", n)
	}
}

// Reproduces one key taking every session: each key has its quota, well
// under the cap; a key at its quota is refused (429, naming the quota)
// while another key still opens one.
func TestSessionQuotaPerKey(t *testing.T) {
	rs := &refusals{}
	sessions := NewSessions(SessionLimits{Max: 10, PerKey: 2}, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions, Refused: rs.add}, 0)
	initialize(t, srv, "pmcp_a")
	initialize(t, srv, "pmcp_a_laptop") // the same key from elsewhere counts against it
	resp := post(t, srv, initBody, auth("pmcp_a"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "http.max_sessions_per_key") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("key a over its quota: %d %s (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if got := rs.take(); len(got) != 1 || !strings.Contains(got[0].reason, "too many sessions for key a") {
		t.Errorf("refusals: %+v", got)
	}
	initialize(t, srv, "pmcp_b")
	if sessions.OpenOf("a") != 2 || sessions.OpenOf("b") != 1 || sessions.Open() != 3 {
		t.Errorf("open: a %d, b %d, all %d", sessions.OpenOf("a"), sessions.OpenOf("b"), sessions.Open())
	}
}

// A key at its quota makes room by ending its session unused the
// longest, once that one has been idle for EvictIdle with no request or
// stream open; a session in use is never ended for it.
func TestSessionQuotaEndsTheIdlest(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	sessions := NewSessions(SessionLimits{Max: 10, PerKey: 2}, clock)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 0)
	first := initialize(t, srv, "pmcp_a")
	advance(time.Second)
	second := initialize(t, srv, "pmcp_a")
	// Idle, but not for long enough.
	advance(30 * time.Second)
	resp := post(t, srv, initBody, auth("pmcp_a"))
	// The first one may make room 29 s from now.
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "29" {
		t.Fatalf("at the quota, nothing idle for a minute: %d, Retry-After %q (want 429 and 29)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The first session holds a stream open: it is in use however long.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp", nil)
	for k, v := range inSession("pmcp_a", first) {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	stream, err := srv.Client().Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	advance(2 * time.Minute)
	third := initialize(t, srv, "pmcp_a")
	if resp := post(t, srv, pingBody, inSession("pmcp_a", second)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the idlest session after it made room: %d, want 404", resp.StatusCode)
	}
	for _, id := range []string{first, third} {
		if resp := post(t, srv, pingBody, inSession("pmcp_a", id)); resp.StatusCode != http.StatusOK {
			t.Errorf("session %s: %d, want 200", id, resp.StatusCode)
		}
	}
	if n := sessions.OpenOf("a"); n != 2 {
		t.Errorf("key a has %d sessions, want 2", n)
	}
}

// Many initializes at once never open more sessions than the cap: a
// place is reserved before the initialize reaches mcp-go.
func TestSessionCapUnderConcurrency(t *testing.T) {
	sessions := NewSessions(SessionLimits{Max: 5, PerKey: 5}, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 40 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer pmcp_good")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[200] != 5 || sessions.Open() != 5 {
		t.Errorf("answers %v, open %d: want exactly 5 sessions", codes, sessions.Open())
	}
}

// A request that reaches the Streamable handler without passing the
// guards with its Sessions is given no session that is ever valid.
func TestSessionWithoutTheGuardsIsNeverValid(t *testing.T) {
	sessions := NewSessions(SessionLimits{Max: 10}, nil)
	h := NewStreamable(server.NewMCPServer("t", "1"), StreamableOptions{Sessions: sessions})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp := post(t, srv, initBody, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp := post(t, srv, pingBody, map[string]string{"Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a session opened around the guards: %d, want 404", resp.StatusCode)
	}
	if n := sessions.Open(); n != 0 {
		t.Errorf("%d sessions open", n)
	}
}

// A session unused for the idle timeout is ended, and its place freed.
func TestSessionIdleTimeout(t *testing.T) {
	sessions := NewSessions(SessionLimits{Max: 10}, nil)
	srv := guardedServer(t, HTTPOptions{Sessions: sessions}, 500*time.Millisecond)
	id := initialize(t, srv, "pmcp_good")
	if sessions.Open() != 1 {
		t.Fatalf("open %d", sessions.Open())
	}
	deadline := time.Now().Add(5 * time.Second)
	for sessions.Open() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was not ended within 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := sessions.state(id, testKeys["pmcp_good"]); st != sessionEnded {
		t.Errorf("the swept session is %v, want ended", st)
	}
}

// The manager's own rules: reservations count until released or used,
// quotas count by key, ended ids are remembered with their owner.
func TestSessionsReserve(t *testing.T) {
	s := NewSessions(SessionLimits{Max: 3, PerKey: 2}, nil)
	a, a2, b := SessionOwner{Key: "a"}, SessionOwner{Key: "a", Identity: "x"}, SessionOwner{Key: "b"}
	r1, err := s.reserve(a)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.reserve(a2)
	if err != nil {
		t.Fatal(err)
	}
	var le *sessionLimitError
	if _, err := s.reserve(a); !errors.As(err, &le) || !le.perKey || le.open != 2 {
		t.Fatalf("a third of key a: %v", err)
	}
	r2.release()
	r2.release() // twice is once
	if s.OpenOf("a") != 1 {
		t.Errorf("after a release key a holds %d", s.OpenOf("a"))
	}
	id := r1.generate()
	if other := r1.generate(); other == id || s.state(other, a) != sessionUnknown {
		t.Errorf("a second id of one reservation is valid: %q", other)
	}
	r1.release() // used: no effect
	rb, _ := s.reserve(b)
	rb2, _ := s.reserve(b)
	if _, err := s.reserve(SessionOwner{Key: "c"}); !errors.As(err, &le) || le.perKey || le.limit != 3 {
		t.Fatalf("over the cap: %v", err)
	}
	rb.generate()
	rb2.release()
	if s.Open() != 2 || s.Full() {
		t.Errorf("open %d, full %v", s.Open(), s.Full())
	}
	for _, tc := range []struct {
		owner SessionOwner
		want  sessionState
	}{{a, sessionLive}, {a2, sessionForeign}, {b, sessionForeign}} {
		if got := s.state(id, tc.owner); got != tc.want {
			t.Errorf("state for %v: %v, want %v", tc.owner, got, tc.want)
		}
	}
	if !s.Terminate(id) || s.Terminate(id) {
		t.Error("Terminate does not report what it ended")
	}
	if s.state(id, a) != sessionEnded || s.state(id, b) != sessionForeign || s.OpenOf("a") != 0 {
		t.Errorf("after Terminate: %v %v, key a holds %d", s.state(id, a), s.state(id, b), s.OpenOf("a"))
	}
}

// An ended id is forgotten after terminatedMemory.
func TestSessionsForgetEndedIDs(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := NewSessions(SessionLimits{Max: 10}, func() time.Time { return now })
	o := SessionOwner{Key: "a"}
	open := func() string {
		r, err := s.reserve(o)
		if err != nil {
			t.Fatal(err)
		}
		return r.generate()
	}
	old := open()
	s.Terminate(old)
	now = now.Add(terminatedMemory + time.Minute)
	s.Terminate(open())
	if st := s.state(old, o); st != sessionUnknown {
		t.Errorf("an id ended over an hour ago is %v, want forgotten", st)
	}
}

// The cost the guards add to every request in a session.
func BenchmarkSessionAcquireRelease(b *testing.B) {
	s := NewSessions(SessionLimits{Max: 256, PerKey: 16}, nil)
	owners := make([]SessionOwner, 16)
	ids := make([]string, 16)
	for i := range ids {
		owners[i] = SessionOwner{Key: fmt.Sprintf("key%02d", i)}
		r, err := s.reserve(owners[i])
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = r.generate()
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			j := i % len(ids)
			if s.acquire(ids[j], owners[j]) != sessionLive {
				b.Fatal("not live")
			}
			s.release(ids[j])
			i++
		}
	})
}
