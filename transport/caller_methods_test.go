package transport

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// whoCompletes completes any argument with who is asking.
type whoCompletes struct{}

func (whoCompletes) CompleteResourceArgument(ctx context.Context, _ string, _ mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	who, _ := ctx.Value(whoKey{}).(string)
	return &mcp.Completion{Values: []string{"who=" + who}}, nil
}

func (whoCompletes) CompletePromptArgument(ctx context.Context, _ string, _ mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	who, _ := ctx.Value(whoKey{}).(string)
	return &mcp.Completion{Values: []string{"who=" + who}}, nil
}

// whoServer answers resources/read and completion/complete with who is
// asking, as the context of the request says.
func whoServer() *server.MCPServer {
	s := server.NewMCPServer("t", "1", server.WithResourceCapabilities(false, false), server.WithCompletions(),
		server.WithResourceCompletionProvider(whoCompletes{}), server.WithPromptCompletionProvider(whoCompletes{}))
	s.AddResource(mcp.NewResource("test://who", "who"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		who, _ := ctx.Value(whoKey{}).(string)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "who=" + who}}, nil
	})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://things/{id}", "thing"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		who, _ := ctx.Value(whoKey{}).(string)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "who=" + who}}, nil
	})
	return s
}

// The requests besides tools/call that read or complete (resources/read of
// a resource and of a template, completion/complete of a template's and a
// prompt's argument) carry the caller the transport authenticated.
var callerRequests = map[string]string{
	"resource":   `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://who"}}`,
	"template":   `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://things/7"}}`,
	"completion": `{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"test://things/{id}"},"argument":{"name":"id","value":""}}}`,
	"prompt":     `{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"x","value":""}}}`,
}

func TestCallerReachesResourcesAndCompletion(t *testing.T) {
	h, err := NewHandler(HTTPOptions{
		Listener: "loopback",
		MCP:      NewStreamable(whoServer(), StreamableOptions{}),
		Authenticate: func(ctx context.Context, key, listener, source string, r *http.Request) (context.Context, error) {
			if key != "pmcp_good" {
				return nil, io.EOF
			}
			return context.WithValue(ctx, whoKey{}, "http-key"), nil
		},
		AllowedHosts: []string{"127.0.0.1"},
		MaxBodyBytes: DefaultMaxBody,
		Logger:       quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp := post(t, srv, initBody, map[string]string{"Authorization": "Bearer pmcp_good"})
	sid := resp.Header.Get("Mcp-Session-Id")
	for name, body := range callerRequests {
		t.Run("http "+name, func(t *testing.T) {
			resp := post(t, srv, body, map[string]string{"Authorization": "Bearer pmcp_good", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
			got, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(got), "who=http-key") {
				t.Errorf("%s saw %s", name, got)
			}
			resp = post(t, srv, body, map[string]string{"Authorization": "Bearer pmcp_wrong", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s with a wrong key: %d, want 401", name, resp.StatusCode)
			}
		})
	}
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for _, body := range callerRequests {
		in.WriteString(body + "\n")
	}
	var out bytes.Buffer
	err = ServeStdio(t.Context(), whoServer(), strings.NewReader(in.String()), &out, func(ctx context.Context) context.Context {
		return context.WithValue(ctx, whoKey{}, "stdio-key")
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "who=stdio-key"); n != len(callerRequests) {
		t.Errorf("stdio: %d of %d answers saw the caller:\n%s", n, len(callerRequests), out.String())
	}
}
