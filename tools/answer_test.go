package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// An answer's text is its summary and then its structured content's JSON,
// unless answer_text is summary and the tool declares an outputSchema:
// then the text is the summary alone and the structured content is the
// answer. A tool without an outputSchema always carries the JSON, and an
// error keeps its text.
func TestAnswerText(t *testing.T) {
	content := map[string]any{"data": map[string]any{"node": "pve1", "cpu": 0.25}}
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return structured("pve1: cpu 25 %.", content), nil
	}
	typed := mcp.NewTool("typed_answer", mcp.WithRawOutputSchema(json.RawMessage(`{"type":"object","properties":{"data":{"type":"object"}}}`)))
	untyped := mcp.NewTool("untyped_answer")
	failing := mcp.NewTool("failing_answer", mcp.WithRawOutputSchema(json.RawMessage(`{"type":"object"}`)))
	extra := []server.ServerTool{
		{Tool: typed, Handler: handler},
		{Tool: untyped, Handler: handler},
		{Tool: failing, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return errorResult("PVE refused it"), nil
		}},
	}
	withJSON := "pve1: cpu 25 %.\n" + `{"data":{"cpu":0.25,"node":"pve1"}}`
	for _, tc := range []struct {
		setting                AnswerText
		typed, untyped, failed string
	}{
		{"", withJSON, withJSON, "PVE refused it"},
		{AnswerJSON, withJSON, withJSON, "PVE refused it"},
		{AnswerSummary, "pve1: cpu 25 %.", withJSON, "PVE refused it"},
	} {
		t.Run(string(tc.setting), func(t *testing.T) {
			h := newHarness(t, harnessOpts{reg: demoRegistry(t), extra: extra, answerText: tc.setting})
			c, ctx := h.as("read-only")
			for tool, want := range map[string]string{"typed_answer": tc.typed, "untyped_answer": tc.untyped, "failing_answer": tc.failed} {
				res, _ := call(t, c, ctx, tool, nil)
				if got := text(res); got != want {
					t.Errorf("%s: text %q, want %q", tool, got, want)
				}
				if tool != "failing_answer" && res.StructuredContent == nil {
					t.Errorf("%s: no structured content", tool)
				}
			}
		})
	}
}

func TestParseAnswerText(t *testing.T) {
	for in, want := range map[string]AnswerText{"": AnswerJSON, "json": AnswerJSON, "summary": AnswerSummary} {
		if got, err := ParseAnswerText(in); err != nil || got != want {
			t.Errorf("ParseAnswerText(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseAnswerText("both"); err == nil || !strings.Contains(err.Error(), "json or summary") {
		t.Errorf("ParseAnswerText(both): %v", err)
	}
}
