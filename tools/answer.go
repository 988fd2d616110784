package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// AnswerText is what the text part of an answer with structured content
// holds (config tools.answer_text).
type AnswerText string

// The forms of an answer's text.
const (
	// AnswerJSON is the summary line and then the structured content's
	// JSON, for clients that hand the model only the text.
	AnswerJSON AnswerText = "json"
	// AnswerSummary is the summary line alone for a tool that declares an
	// outputSchema (its structured content is the answer); a tool without
	// one still carries the JSON.
	AnswerSummary AnswerText = "summary"
)

// ParseAnswerText reads json or summary; empty is json.
func ParseAnswerText(s string) (AnswerText, error) {
	switch a := AnswerText(s); a {
	case AnswerJSON, AnswerSummary:
		return a, nil
	case "":
		return AnswerJSON, nil
	}
	return "", fmt.Errorf("answer text %q is not json or summary", s)
}

// answerText completes the text of every answer with structured content:
// the handlers give a summary, and the JSON follows it unless the setting
// is AnswerSummary and the tool declares an outputSchema.
func (s *Server) answerText(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := next(ctx, req)
		if err != nil || res == nil || res.StructuredContent == nil {
			return res, err
		}
		if s.opts.AnswerText == AnswerSummary && s.declaresOutput(req.Params.Name) {
			return res, nil
		}
		b, merr := json.Marshal(res.StructuredContent)
		if merr != nil {
			return errorResult("internal error: cannot encode the answer: " + merr.Error()), nil
		}
		summary := text(res)
		content := make([]mcp.Content, 0, len(res.Content))
		for _, c := range res.Content {
			if _, ok := c.(mcp.TextContent); !ok {
				content = append(content, c)
			}
		}
		res.Content = append([]mcp.Content{mcp.NewTextContent(summary + "\n" + string(b))}, content...)
		return res, nil
	}
}

// declaresOutput reports whether the tool name has an outputSchema.
func (s *Server) declaresOutput(name string) bool {
	t := s.mcp.GetTool(name)
	return t != nil && (len(t.Tool.RawOutputSchema) > 0 || t.Tool.OutputSchema.Type != "")
}
