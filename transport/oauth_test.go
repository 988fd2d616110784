package transport

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// After a 401 with no discovery documents, OAuth clients fall back to
// /register, /authorize and /token at the server's origin; mcp-remote shows
// the person what /register answered ("Dynamic Client Registration
// rejected (HTTP 404): …"), which was "the MCP endpoint is /mcp". Each now
// says the server takes API keys and the key was not accepted, and is not
// journaled as a refused caller.
func TestOAuthFallbackEndpoints(t *testing.T) {
	srv, refused := testServer(t, nil)
	for _, tc := range []struct{ method, path string }{
		{"POST", "/register"}, {"GET", "/authorize"}, {"POST", "/token"}, {"GET", "/register"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{"client_name":"MCP CLI Proxy"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(body), "takes proxmox-mcp API keys") ||
			!strings.Contains(string(body), "key that was not accepted") || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, body)
		}
	}
	if len(*refused) != 0 {
		t.Errorf("OAuth fallback endpoints were journaled as refusals: %q", *refused)
	}
}
