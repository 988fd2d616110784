package mcptest

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The client initializes a session, lists tools and calls them against
// mcp-go's Streamable HTTP server; a tool error and a bad key are errors.
func TestSession(t *testing.T) {
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + r.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("fail"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("no"), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithStateful(true))
	ts := httptest.NewServer(h)
	defer ts.Close()

	sess, err := Dial(ts.URL+"/mcp", "k")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if sess.session == "" {
		t.Error("no session id")
	}
	size, n, err := sess.ToolsList()
	if err != nil || n != 2 || size < 20 {
		t.Fatalf("tools/list: %d bytes, %d tools, %v", size, n, err)
	}
	res, err := sess.Call("echo", map[string]any{"text": "hi"})
	if err != nil || !strings.Contains(string(res), "echo: hi") {
		t.Errorf("echo: %s, %v", res, err)
	}
	if _, err := sess.Call("fail", nil); !errors.Is(err, ErrTool) {
		t.Errorf("tool error: %v", err)
	}
	gone := httptest.NewServer(h)
	gone.Close()
	if _, err := Dial(gone.URL+"/mcp", "k"); err == nil {
		t.Error("a server that is gone initialized")
	}
}

// A notification the server sends during a call comes before the answer
// in the SSE stream; the client reads the answer. After End the server
// knows the session no more.
func TestSessionNotificationAndEnd(t *testing.T) {
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("notify"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/tools/list_changed", nil); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("done"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateful(true)))
	defer ts.Close()
	sess, err := Dial(ts.URL+"/mcp", "k")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.Call("notify", nil)
	if err != nil || !strings.Contains(string(res), "done") {
		t.Fatalf("call after a notification: %s, %v", res, err)
	}
	if err := sess.End(); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Call("notify", nil); err == nil {
		t.Error("a call on an ended session was answered")
	}
}
