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
	"testing"
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
	failing := false
	srv, _ := testServer(t, func(context.Context) map[string]string {
		if failing {
			return map[string]string{"schema": "ok", "pve": "unreachable: connection refused"}
		}
		return map[string]string{"schema": "ok", "pve": "ok"}
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
	if code, m := get("/readyz"); code != 200 || m["ready"] != true {
		t.Errorf("readyz %d %v", code, m)
	}
	failing = true
	if code, m := get("/readyz"); code != 503 || m["ready"] != false {
		t.Errorf("readyz failing %d %v", code, m)
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("unknown path %d", code)
	}
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
