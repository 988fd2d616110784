package daemon

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Session refusals through the whole daemon: a request without
// Mcp-Session-Id is 400 and an unknown session 404, each a JSON-RPC error
// answering the request's id (mcp-go answered the first with a plain-text
// 404), and each a denied journal row naming the key.
func TestSessionErrorsAreJSONRPCAndJournaled(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	key := r.keyNamed(t, "alice", "read-only")
	url := r.url + "/mcp"
	for _, tc := range []struct {
		session string
		status  int
		code    int
		message string
	}{
		{"", http.StatusBadRequest, -32000, "needs the Mcp-Session-Id header"},
		{"mcp-session-never-given-out", http.StatusNotFound, -32001, "session not found"},
	} {
		resp, body := rawMCP(t, nil, url, http.MethodPost, key, tc.session, rawPing)
		var got struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		err := json.Unmarshal([]byte(body), &got)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || err != nil ||
			got.JSONRPC != "2.0" || len(got.ID) == 0 || string(got.ID) == "null" || got.Error.Code != tc.code || !strings.Contains(got.Error.Message, tc.message) {
			t.Errorf("ping with session %q: %d %s %s, want %d, a JSON-RPC error %d with the request's id", tc.session, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.code)
		}
	}
	rows := httpRows(t, r)
	if len(rows) != 2 {
		t.Fatalf("%d refusal rows, want 2: %+v", len(rows), rows)
	}
	for i, status := range []int{400, 404} {
		if ev := rows[i]; ev.Tool != "http POST /mcp" || ev.Status != status || ev.Principal.KeyID != keyIDOf(key) {
			t.Errorf("row %d: %s %d %+v %q, want http POST /mcp %d by alice", i, ev.Tool, ev.Status, ev.Principal, ev.Error, status)
		}
	}
}
