package transport

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// Session refusals are what the MCP specification's streamable HTTP
// transport says: 400 for a request without the session id, 404 for an
// unknown, foreign or ended one, each with a JSON-RPC error body that
// answers the request's id (mcp-go answered a POST without an id with a
// plain-text 404, and the guards with {"error": ...}). Each is reported for
// the journal as the other refusals are.
func TestSessionErrorsAreJSONRPC(t *testing.T) {
	rs := &refusals{}
	srv := guardedServer(t, HTTPOptions{Sessions: NewSessions(SessionLimits{Max: 10}, nil), Refused: rs.add}, 0)
	ended := initialize(t, srv, "pmcp_a")
	if resp := do(t, srv, http.MethodDelete, inSession("pmcp_a", ended)); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the owner's session: %d", resp.StatusCode)
	}
	live := initialize(t, srv, "pmcp_a")
	v := map[string]string{"Authorization": "Bearer pmcp_a", "MCP-Protocol-Version": "2025-11-25"}
	for _, tc := range []struct {
		name, method, body string
		hdr                map[string]string
		status, code       int
		id, message        string
	}{
		{"POST without a session", "POST", pingBody, v, 400, codeSessionRequired, "2", "needs the Mcp-Session-Id header"},
		{"POST of a string id", "POST", `{"jsonrpc":"2.0","id":"x-7","method":"tools/list"}`, v, 400, codeSessionRequired, `"x-7"`, "initialize first"},
		{"notification without a session", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, v, 400, codeSessionRequired, "null", "Mcp-Session-Id"},
		{"GET without a session", "GET", "", v, 400, codeSessionRequired, "null", "GET /mcp needs"},
		{"DELETE without a session", "DELETE", "", v, 400, codeSessionRequired, "null", "DELETE /mcp needs"},
		{"unknown session", "POST", pingBody, inSession("pmcp_a", sessionPrefix+uuid.NewString()), 404, codeSessionNotFound, "2", "session not found"},
		{"ended session", "POST", pingBody, inSession("pmcp_a", ended), 404, codeSessionNotFound, "2", "session ended"},
		{"another key's session", "POST", pingBody, inSession("pmcp_b", live), 404, codeSessionNotFound, "2", "session not found"},
		{"GET of an unknown session", "GET", "", inSession("pmcp_a", "mcp-session-made-up"), 404, codeSessionNotFound, "null", "session not found"},
		{"batch in an unknown session", "POST", "[" + pingBody + "]", inSession("pmcp_a", "mcp-session-made-up"), 404, codeSessionNotFound, "null", "session not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s %s, want %d application/json", resp.StatusCode, resp.Header.Get("Content-Type"), raw, tc.status)
			}
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("body %s: %v", raw, err)
			}
			if got.JSONRPC != "2.0" || string(got.ID) != tc.id || got.Error.Code != tc.code || !strings.Contains(got.Error.Message, tc.message) {
				t.Errorf("body %s, want jsonrpc 2.0, id %s, code %d, a message with %q", raw, tc.id, tc.code, tc.message)
			}
			if r := rs.take(); len(r) != 1 || r[0].status != tc.status {
				t.Errorf("refusals reported: %+v, want one %d", r, tc.status)
			}
		})
	}
}

// requestID answers only the ids JSON-RPC allows.
func TestRequestID(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":7}`: "7", `{"id":-1.5}`: "-1.5", `{"id":"a"}`: `"a"`, `{"id":null}`: "", `{"method":"x"}`: "",
		`{"id":{"a":1}}`: "", `{"id":[1]}`: "", `{"id":true}`: "", `[{"id":1}]`: "", `not json`: "", ``: "",
	} {
		if got := string(requestID([]byte(body))); got != want {
			t.Errorf("requestID(%s) = %q, want %q", body, got, want)
		}
	}
}
