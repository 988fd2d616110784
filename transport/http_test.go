package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type whoKey struct{}

// testServer is a real MCP server with one tool that says who called.
func testServer(t *testing.T, ready Readiness) (*httptest.Server, *[]string) {
	t.Helper()
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who, _ := ctx.Value(whoKey{}).(string)
		return mcp.NewToolResultText(who), nil
	})
	var refused []string
	h, err := NewHandler(HTTPOptions{
		Listener: "loopback",
		MCP:      NewStreamable(s, StreamableOptions{}),
		Authenticate: func(ctx context.Context, key, listener, source string, r *http.Request) (context.Context, error) {
			switch key {
			case "pmcp_good":
				return context.WithValue(ctx, whoKey{}, listener+"/"+source[:strings.LastIndexByte(source, ':')]), nil
			case "pmcp_flood":
				return nil, &RateLimitError{RetryAfter: 30 * time.Second}
			case "pmcp_stranger":
				return nil, fmt.Errorf("the tailnet listener: %w", &ForbiddenError{Reason: "the caller is not a tailnet peer", Err: errors.New("no match for IP:port")})
			}
			return nil, errors.New("no")
		},
		AllowedHosts:   []string{"127.0.0.1", "localhost"},
		AllowedOrigins: []string{"https://app.example.net"},
		MaxBodyBytes:   DefaultMaxBody,
		Ready:          ready,
		Refused:        func(r *http.Request, status int, reason string) { refused = append(refused, reason) },
		Logger:         quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &refused
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(t *testing.T, srv *httptest.Server, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestGuards(t *testing.T) {
	srv, refused := testServer(t, nil)
	for _, tc := range []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		want   string
	}{
		{"no key", initBody, nil, 401, "Bearer"},
		{"wrong scheme", initBody, map[string]string{"Authorization": "Basic Zm9vOmJhcg=="}, 401, "Bearer"},
		{"bad key", initBody, map[string]string{"Authorization": "Bearer pmcp_bad"}, 401, "not accepted"},
		{"evil origin", initBody, map[string]string{"Authorization": "Bearer pmcp_good", "Origin": "https://evil.example"}, 403, "Origin"},
		{"rebinding host", initBody, map[string]string{"Authorization": "Bearer pmcp_good", "Host": "evil.example:8765"}, 403, "Host"},
		{"body over 1 MiB", `{"x":"` + strings.Repeat("a", DefaultMaxBody) + `"}`, map[string]string{"Authorization": "Bearer pmcp_good"}, 413, "limit"},
		{"rate limited", initBody, map[string]string{"Authorization": "Bearer pmcp_flood"}, 429, "too many"},
		{"unidentified caller", initBody, map[string]string{"Authorization": "Bearer pmcp_stranger"}, 403, "forbidden: the caller is not a tailnet peer"},
		{"allowed origin", initBody, map[string]string{"Authorization": "Bearer pmcp_good", "Origin": "https://app.example.net"}, 200, ""},
		{"good", initBody, map[string]string{"Authorization": "Bearer pmcp_good"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, srv, tc.body, tc.hdr)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.want != "" && !strings.Contains(string(body)+resp.Header.Get("WWW-Authenticate"), tc.want) {
				t.Errorf("answer %q lacks %q", body, tc.want)
			}
			if tc.status == 429 && resp.Header.Get("Retry-After") != "30" {
				t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
		})
	}
	if len(*refused) != 8 {
		t.Errorf("%d refusals reported, want 8: %q", len(*refused), *refused)
	}
}

// TestOAuthDiscoveryProbes: the discovery documents a client looks for
// after a 401 answer a 404 that says the server takes API keys, and none
// is journaled as a refused caller (each was a denied row before).
func TestOAuthDiscoveryProbes(t *testing.T) {
	srv, refused := testServer(t, nil)
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
		"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		resp, err := srv.Client().Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(body), "not OAuth") || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
	if len(*refused) != 0 {
		t.Errorf("discovery probes were journaled as refusals: %q", *refused)
	}
	resp := post(t, srv, initBody, map[string]string{"Authorization": "Bearer pmcp_bad"})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || !strings.Contains(string(body), "not OAuth") || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "the API key was not accepted") {
		t.Errorf("a wrong key: %d %s %q", resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
	}
}

// A chunked body (no Content-Length) over the limit is refused too.
func TestChunkedBodyLimit(t *testing.T) {
	srv, _ := testServer(t, nil)
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"x":"`))
		for range 1100 {
			pw.Write([]byte(strings.Repeat("a", 1024)))
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", pr)
	req.Header.Set("Authorization", "Bearer pmcp_good")
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
}

// The caller the authenticator returns reaches the tool.
func TestCallerReachesTool(t *testing.T) {
	srv, _ := testServer(t, nil)
	resp := post(t, srv, initBody, map[string]string{"Authorization": "Bearer pmcp_good"})
	sid := resp.Header.Get("Mcp-Session-Id")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	resp = post(t, srv, call, map[string]string{"Authorization": "Bearer pmcp_good", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "loopback/127.0.0.1") {
		t.Errorf("tool saw %s", body)
	}
}

func TestHealthAndReady(t *testing.T) {
	srv, _ := testServer(t, func(context.Context) map[string]string {
		return map[string]string{"schema": "ok", "pve": "unreachable: connection refused"}
	})
	get := func(path string) (int, map[string]any) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m) //nolint:errcheck // checked below
		return resp.StatusCode, m
	}
	if code, m := get("/healthz"); code != 200 || m["status"] != "ok" || len(m) != 1 {
		t.Errorf("healthz %d %v", code, m)
	}
	if code, m := get("/readyz"); code != 503 || m["ready"] != false || m["checks"] == nil {
		t.Errorf("readyz failing, from loopback: %d %v (want the checks)", code, m)
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("unknown path %d", code)
	}
}

// readyHandler is a handler whose readiness checks count their runs and
// take a while (in a synctest bubble, no real time).
func readyHandler(t *testing.T, failing *atomic.Bool, runs *atomic.Int32, limiter *Limiter) http.Handler {
	t.Helper()
	h, err := NewHandler(HTTPOptions{
		Listener:      "lan",
		Logger:        quiet(),
		MCP:           http.NotFoundHandler(),
		Authenticate:  func(ctx context.Context, _, _, _ string, _ *http.Request) (context.Context, error) { return ctx, nil },
		AllowedHosts:  []string{"pve1.lan:8443"},
		SourceLimiter: limiter,
		Ready: func(ctx context.Context) map[string]string {
			runs.Add(1)
			time.Sleep(200 * time.Millisecond) // a PVE request and a policy evaluation
			if failing.Load() {
				return map[string]string{"pve": "unreachable: connection refused"}
			}
			return map[string]string{"pve": "ok"}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readyz(h http.Handler, remote string) (int, map[string]any) {
	req := httptest.NewRequest("GET", "/readyz", nil)
	req.Host = "pve1.lan:8443"
	req.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var m map[string]any
	json.Unmarshal(w.Body.Bytes(), &m) //nolint:errcheck // checked by the callers
	return w.Code, m
}

// Reproduces /readyz running a PVE request and a policy evaluation per
// hit: N hits at once share one run of the checks; a hit within
// ReadyCacheTTL of a run's start is answered from it; after that a change
// shows.
func TestReadyzConcurrentHitsRunTheChecksOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		var runs atomic.Int32
		h := readyHandler(t, &failing, &runs, nil)
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				if code, m := readyz(h, fmt.Sprintf("127.0.0.1:%d", 40000+i)); code != 200 || m["ready"] != true {
					t.Errorf("hit %d: %d %v", i, code, m)
				}
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("50 hits at once ran the checks %d times, want 1", n)
		}
		// PVE goes away: within the cache time of the run's start the
		// answer is the cached one; after it, the change shows.
		failing.Store(true)
		time.Sleep(ReadyCacheTTL - 300*time.Millisecond) // 200 ms of the run, then this: 100 ms left
		if code, _ := readyz(h, "127.0.0.1:1"); code != 200 || runs.Load() != 1 {
			t.Errorf("within the cache time: %d, %d runs", code, runs.Load())
		}
		time.Sleep(100 * time.Millisecond)
		if code, m := readyz(h, "127.0.0.1:1"); code != 503 || m["ready"] != false || runs.Load() != 2 {
			t.Errorf("after the cache time: %d %v, %d runs", code, m, runs.Load())
		}
	})
}

// A run that outlasts the cache time is not waited for by a caller that
// came after the cache time: it starts its own, so its answer is never
// older than ReadyCacheTTL.
func TestReadyzSlowRunIsNotReusedPastTheCacheTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		release := make(chan struct{})
		h, err := NewHandler(HTTPOptions{
			Listener: "loopback", MCP: http.NotFoundHandler(), AllowedHosts: []string{"127.0.0.1"},
			Authenticate: func(ctx context.Context, _, _, _ string, _ *http.Request) (context.Context, error) { return ctx, nil },
			Ready: func(ctx context.Context) map[string]string {
				if runs.Add(1) == 1 {
					<-release
				}
				return map[string]string{"pve": "ok"}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		get := func() int {
			req := httptest.NewRequest("GET", "/readyz", nil)
			req.Host, req.RemoteAddr = "127.0.0.1", "127.0.0.1:5"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w.Code
		}
		go get() // the slow first run
		synctest.Wait()
		time.Sleep(ReadyCacheTTL)
		if code := get(); code != 200 || runs.Load() != 2 {
			t.Errorf("a hit after the cache time while the first run hangs: %d, %d runs (want its own run)", code, runs.Load())
		}
		close(release)
	})
}

// Reproduces /readyz telling anyone what is wrong inside the host: a
// caller that is not on loopback sees only whether the daemon is ready.
func TestReadyzNonLoopbackSeesOnlyReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		var runs atomic.Int32
		failing.Store(true)
		h := readyHandler(t, &failing, &runs, nil)
		for _, remote := range []string{"192.168.1.20:5000", "[fd00::7]:5000", "100.64.0.9:443"} {
			code, m := readyz(h, remote)
			if code != 503 || len(m) != 1 || m["ready"] != false {
				t.Errorf("from %s: %d %v, want 503 and only ready", remote, code, m)
			}
		}
		for _, remote := range []string{"127.0.0.1:5000", "[::1]:5000"} {
			if code, m := readyz(h, remote); code != 503 || m["checks"] == nil {
				t.Errorf("from %s: %d %v, want the checks", remote, code, m)
			}
		}
	})
}

// Reproduces /readyz outside the source limiter: it costs a token like
// /mcp, and a source over its rate gets 429.
func TestReadyzIsSourceLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		var runs atomic.Int32
		h := readyHandler(t, &failing, &runs, NewLimiter(1, 3, 0, nil))
		for i := range 3 {
			if code, _ := readyz(h, "192.168.1.20:5000"); code != 200 {
				t.Fatalf("hit %d within the burst: %d", i+1, code)
			}
		}
		if code, m := readyz(h, "192.168.1.20:5001"); code != http.StatusTooManyRequests || !strings.Contains(fmt.Sprint(m["error"]), "too many requests from 192.168.1.20") {
			t.Errorf("over the burst: %d %v", code, m)
		}
		if code, _ := readyz(h, "192.168.1.21:5000"); code != 200 {
			t.Errorf("another source: %d", code)
		}
	})
}

// A listener whose names change while it runs answers from its hook for
// a Host it does not list.
func TestHostAllowedHook(t *testing.T) {
	names := map[string]bool{"mcp.tail-scale.ts.net": true}
	var asked []string
	h, err := NewHandler(HTTPOptions{
		Listener: "tailnet",
		MCP:      http.NotFoundHandler(),
		Authenticate: func(ctx context.Context, _, _, _ string, _ *http.Request) (context.Context, error) {
			return ctx, nil
		},
		HostAllowed: func(host string) bool { asked = append(asked, host); return names[host] },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		want int
	}{{"mcp.tail-scale.ts.net", 200}, {"MCP.tail-scale.ts.net", 200}, {"evil.example", 403}} {
		host, want := tc.host, tc.want
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
	if len(asked) != 3 || asked[1] != "mcp.tail-scale.ts.net" {
		t.Errorf("the hook was asked %q (lower-cased hosts expected)", asked)
	}
	if _, err := NewHandler(HTTPOptions{MCP: http.NotFoundHandler(), Authenticate: func(ctx context.Context, _, _, _ string, _ *http.Request) (context.Context, error) {
		return ctx, nil
	}}); err == nil {
		t.Error("a handler without allowed Hosts or a hook was built")
	}
}

func TestLoopbackHosts(t *testing.T) {
	hosts, err := LoopbackHosts("127.0.0.1:8765")
	if err != nil || strings.Join(hosts, ",") != "127.0.0.1:8765,localhost:8765" {
		t.Errorf("%v %v", hosts, err)
	}
	for _, bad := range []string{"0.0.0.0:8765", "10.0.0.5:8765", "nonsense", "[::]:1"} {
		if _, err := LoopbackHosts(bad); err == nil {
			t.Errorf("%s accepted as loopback", bad)
		}
	}
}
