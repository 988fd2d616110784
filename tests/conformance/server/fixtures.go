package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fixtures the conformance scenarios call, by the names and shapes the
// suite's scenario descriptions (`conformance list` and its docs) give.

// annotated sets all four annotations, as every tool of ours does: these
// fixtures only read and stay on this machine.
func annotated(title string) mcp.ToolOption {
	t, f := true, false
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{Title: title, ReadOnlyHint: &t, DestructiveHint: &f, IdempotentHint: &t, OpenWorldHint: &f})
}

func rawSchema(v any) mcp.ToolOption {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{}
		t.RawInputSchema = b
	}
}

var noArgs = rawSchema(map[string]any{"type": "object", "properties": map[string]any{}})

func fixture(name, desc string, schema mcp.ToolOption, h server.ToolHandlerFunc) server.ServerTool {
	return server.ServerTool{Tool: mcp.NewTool(name, mcp.WithDescription(desc), schema, annotated(desc)), Handler: h}
}

func fixtureTools() []server.ServerTool {
	text := func(s string) server.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(s), nil
		}
	}
	content := func(c ...mcp.Content) server.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: c}, nil
		}
	}
	return []server.ServerTool{
		fixture("test_simple_text", "Returns one text block.", noArgs, text("This is a simple text response for testing.")),
		fixture("test_image_content", "Returns one PNG image.", noArgs, content(mcp.NewImageContent(pngPixel, "image/png"))),
		fixture("test_audio_content", "Returns one WAV clip.", noArgs, content(mcp.NewAudioContent(wavClip, "audio/wav"))),
		fixture("test_embedded_resource", "Returns an embedded text resource.", noArgs, content(mcp.NewEmbeddedResource(mcp.TextResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}))),
		fixture("test_multiple_content_types", "Returns text, an image and an embedded resource.", noArgs, content(
			mcp.NewTextContent("Multiple content types test:"),
			mcp.NewImageContent(pngPixel, "image/png"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}),
		)),
		fixture("test_error_handling", "Fails on purpose, as a tool result.", noArgs,
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultError("This tool intentionally returns an error for testing"), nil
			}),
		fixture("test_tool_with_logging", "Sends three log messages while it runs.", noArgs, withLogging),
		fixture("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", noArgs, withProgress),
		fixture("test_sampling", "Asks the client's model to answer a prompt.",
			rawSchema(map[string]any{"type": "object", "properties": map[string]any{"prompt": map[string]any{"type": "string"}}, "required": []string{"prompt"}}),
			sampling),
		fixture("test_elicitation", "Asks the user for a username and an email.",
			rawSchema(map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []string{"message"}}),
			elicit(func(req mcp.CallToolRequest) (string, map[string]any) {
				return req.GetString("message", ""), map[string]any{
					"type": "object",
					"properties": map[string]any{
						"username": map[string]any{"type": "string", "description": "User's response"},
						"email":    map[string]any{"type": "string", "description": "User's email address"},
					},
					"required": []string{"username", "email"},
				}
			})),
		fixture("test_elicitation_sep1034_defaults", "Asks the user with a default for every primitive type.", noArgs,
			elicit(func(mcp.CallToolRequest) (string, map[string]any) {
				return "Provide your information", map[string]any{
					"type": "object",
					"properties": map[string]any{
						"name":     map[string]any{"type": "string", "default": "John Doe"},
						"age":      map[string]any{"type": "integer", "default": 30},
						"score":    map[string]any{"type": "number", "default": 95.5},
						"status":   map[string]any{"type": "string", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
						"verified": map[string]any{"type": "boolean", "default": true},
					},
				}
			})),
		fixture("test_elicitation_sep1330_enums", "Asks the user to choose, with every enum form.", noArgs,
			elicit(func(mcp.CallToolRequest) (string, map[string]any) {
				titled := func() []any {
					return []any{map[string]any{"const": "value1", "title": "Value One"}, map[string]any{"const": "value2", "title": "Value Two"}}
				}
				return "Select options", map[string]any{
					"type": "object",
					"properties": map[string]any{
						"untitledSingle": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
						"titledSingle":   map[string]any{"type": "string", "oneOf": titled()},
						"legacyEnum":     map[string]any{"type": "string", "enum": []string{"opt1", "opt2"}, "enumNames": []string{"Option One", "Option Two"}},
						"untitledMulti":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
						"titledMulti":    map[string]any{"type": "array", "items": map[string]any{"anyOf": titled()}},
					},
				}
			})),
		fixture("json_schema_2020_12_tool", "Takes an input schema with JSON Schema 2020-12 keywords.",
			rawSchema(map[string]any{
				"$schema": "https://json-schema.org/draft/2020-12/schema",
				"type":    "object",
				"$defs": map[string]any{"address": map[string]any{
					"type":       "object",
					"properties": map[string]any{"street": map[string]any{"type": "string"}, "city": map[string]any{"type": "string"}},
				}},
				"properties":           map[string]any{"name": map[string]any{"type": "string"}, "address": map[string]any{"$ref": "#/$defs/address"}},
				"additionalProperties": false,
			}),
			text("JSON Schema 2020-12 tool called.")),
	}
}

// withLogging sends three notifications/message 50 ms apart, then answers.
func withLogging(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	srv := server.ServerFromContext(ctx)
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if err := srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), map[string]any{
			"level": "info", "logger": "conformance-rig", "data": msg,
		}); err != nil {
			return nil, err
		}
	}
	return mcp.NewToolResultText("Tool with logging executed successfully"), nil
}

// withProgress reports 0, 50 and 100 of 100 to the caller's progress token.
func withProgress(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return mcp.NewToolResultText("no progress token, no progress"), nil
	}
	srv := server.ServerFromContext(ctx)
	for i, p := range []int{0, 50, 100} {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if err := srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": req.Params.Meta.ProgressToken, "progress": p, "total": 100,
		}); err != nil {
			return nil, err
		}
	}
	return mcp.NewToolResultText("progress reported"), nil
}

// sampling asks the client's model (sampling/createMessage) and returns its
// answer.
func sampling(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	//lint:ignore SA1019 the suite's tools-call-sampling scenario speaks 2025-11-25, which has sampling
	res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{
		Request: mcp.Request{Method: string(mcp.MethodSamplingCreateMessage)},
		CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", ""))}},
			MaxTokens: 100,
		},
	})
	if err != nil {
		return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
	}
	answer := "No response"
	if tc, ok := res.Content.(mcp.TextContent); ok {
		answer = tc.Text
	}
	return mcp.NewToolResultText("LLM response: " + answer), nil
}

// elicit asks the user (elicitation/create) with the message and schema
// build gives, and reports the action and the content.
func elicit(build func(mcp.CallToolRequest) (string, map[string]any)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msg, schema := build(req)
		res, err := server.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{
			Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params:  mcp.ElicitationParams{Message: msg, RequestedSchema: schema},
		})
		if err != nil {
			return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("User response: action=%s, content=%v", res.Action, res.Content)), nil
	}
}

// addFixtures gives the MCP server the capabilities and the resources and
// prompts the scenarios use, beside the daemon's own prompt.
func addFixtures(s *server.MCPServer) {
	server.WithResourceCapabilities(true, true)(s)
	server.WithCompletions()(s)
	server.WithElicitation()(s)
	s.EnableSampling()

	s.AddResource(mcp.NewResource("test://static-text", "static-text",
		mcp.WithResourceTitle("Static text"), mcp.WithResourceDescription("A text resource."), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."}}, nil
		})
	s.AddResource(mcp.NewResource("test://static-binary", "static-binary",
		mcp.WithResourceTitle("Static binary"), mcp.WithResourceDescription("A PNG resource."), mcp.WithMIMEType("image/png")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: pngPixel}}, nil
		})
	s.AddResource(mcp.NewResource("test://watched-resource", "watched-resource",
		mcp.WithResourceDescription("A resource clients subscribe to."), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "watched"}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://template/{id}/data", "template",
		mcp.WithTemplateDescription("Data for an ID."), mcp.WithTemplateMIMEType("application/json")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "test://template/"), "/data")
			body, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(body)}}, nil
		})

	user := func(c mcp.Content) mcp.PromptMessage { return mcp.PromptMessage{Role: mcp.RoleUser, Content: c} }
	s.AddPrompt(mcp.NewPrompt("test_simple_prompt", mcp.WithPromptTitle("Simple"), mcp.WithPromptDescription("A prompt without arguments.")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.NewTextContent("This is a simple prompt for testing."))}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_arguments", mcp.WithPromptTitle("With arguments"), mcp.WithPromptDescription("A prompt with two required arguments."),
		mcp.WithArgument("arg1", mcp.ArgumentDescription("First argument"), mcp.RequiredArgument()),
		mcp.WithArgument("arg2", mcp.ArgumentDescription("Second argument"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.NewTextContent(
				fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])))}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_embedded_resource", mcp.WithPromptTitle("With a resource"), mcp.WithPromptDescription("A prompt that embeds a resource."),
		mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."})),
				user(mcp.NewTextContent("Please process the embedded resource above.")),
			}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_image", mcp.WithPromptTitle("With an image"), mcp.WithPromptDescription("A prompt with an image.")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.NewImageContent(pngPixel, "image/png")),
				user(mcp.NewTextContent("Please analyze the image above.")),
			}}, nil
		})
}

// pngPixel is a 1×1 PNG, base64; wavClip a 16-bit mono WAV of one sample.
var (
	pngPixel = func() string {
		img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
		img.Set(0, 0, color.NRGBA{R: 0xe5, G: 0x70, B: 0x00, A: 0xff})
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			panic(err)
		}
		return base64.StdEncoding.EncodeToString(b.Bytes())
	}()
	wavClip = func() string {
		const rate, samples = 8000, 1
		var b bytes.Buffer
		w := func(v any) { binary.Write(&b, binary.LittleEndian, v) } //nolint:errcheck // bytes.Buffer does not fail
		b.WriteString("RIFF")
		w(uint32(36 + 2*samples))
		b.WriteString("WAVEfmt ")
		w(uint32(16))
		w(uint16(1)) // PCM
		w(uint16(1)) // mono
		w(uint32(rate))
		w(uint32(rate * 2))
		w(uint16(2))
		w(uint16(16))
		b.WriteString("data")
		w(uint32(2 * samples))
		w(int16(0))
		return base64.StdEncoding.EncodeToString(b.Bytes())
	}()
)
