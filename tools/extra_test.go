package tools

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func echoTool(name string) server.ServerTool {
	return server.ServerTool{
		Tool: mcp.NewTool(name, mcp.WithDescription("Echo a word."), mcp.WithString("word", mcp.Required()),
			annotate("Echo", hints{readOnly: true, idempotent: true})),
		Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo " + req.GetString("word", "")), nil
		},
	}
}

// Extra tools (a test rig's fixtures) are listed and callable for every
// authenticated caller in every mode, beside the tools its policy allows;
// a request without a caller still sees and calls nothing.
func TestExtraTools(t *testing.T) {
	for _, mode := range []Mode{ModeCompact, ModeSearch, ModeExpanded} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, harnessOpts{mode: mode, extra: []server.ServerTool{echoTool("fixture_echo")}})
			for _, profile := range []string{"read-only", "operator"} {
				c, ctx := h.as(profile)
				names := toolNames(t, c, ctx)
				if !slices.Contains(names, "fixture_echo") || !slices.Contains(names, ToolSearch) {
					t.Fatalf("%s sees %d tools, not fixture_echo beside the catalog", profile, len(names))
				}
				if profile == "read-only" && slices.Contains(names, ToolGuestPower) {
					t.Errorf("an extra tool changed what the policy shows: read-only sees %s", ToolGuestPower)
				}
				res, _ := call(t, c, ctx, "fixture_echo", map[string]any{"word": "hi"})
				if res.IsError || text(res) != "echo hi" {
					t.Errorf("%s calling fixture_echo: %v %q", profile, res.IsError, text(res))
				}
			}

			anon, err := client.NewInProcessClient(h.srv.MCP())
			if err != nil {
				t.Fatal(err)
			}
			defer anon.Close()
			ctx := context.Background()
			if err := anon.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
			init.Params.ClientInfo = mcp.Implementation{Name: "anonymous", Version: "1"}
			if _, err := anon.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			if names := toolNames(t, anon, ctx); len(names) != 0 {
				t.Errorf("a request without a caller sees %v", names)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "fixture_echo"
			if _, err := anon.CallTool(ctx, req); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("a request without a caller called fixture_echo: %v", err)
			}
		})
	}
}

// An extra tool may not take a catalog tool's name.
func TestExtraToolNameClash(t *testing.T) {
	opts := newHarness(t, harnessOpts{}).srv.opts
	opts.Extra = []server.ServerTool{echoTool(ToolCall)}
	_, err := New(opts)
	if err == nil || !strings.Contains(err.Error(), ToolCall) {
		t.Fatalf("New with an extra tool named %s: %v, want a refusal naming it", ToolCall, err)
	}
}
