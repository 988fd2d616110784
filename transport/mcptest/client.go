// Package mcptest owns a bare Streamable HTTP client of the daemon's /mcp
// endpoint: one JSON-RPC request per POST, a bearer key, a session when
// the server gives one. It costs as little as a client can, so that load
// tests and benchmarks measure the server, not the client.
package mcptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// ProtocolVersion is the revision the session negotiates.
const ProtocolVersion = "2025-06-18"

// Session is an initialized MCP session over Streamable HTTP. Its methods
// may be called from one goroutine at a time per session.
type Session struct {
	url, key, session string
	hc                *http.Client
	id                atomic.Int64
}

// ErrTool marks a tools/call whose result has isError set.
var ErrTool = errors.New("the tool answered with an error")

// Dial initializes a session with the endpoint (http://host:port/mcp).
func Dial(url, key string) (*Session, error) {
	s := &Session{url: url, key: key, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	resp, _, err := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + ProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"mcptest","version":"1"}}}`)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	s.session = resp.Header.Get("Mcp-Session-Id")
	if _, _, err := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return s, nil
}

// Close releases the session's idle connections.
func (s *Session) Close() { s.hc.CloseIdleConnections() }

func (s *Session) post(body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest("POST", s.url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp, b, nil
}

// result posts a request and returns its JSON-RPC result.
func (s *Session) result(method, params string) (json.RawMessage, error) {
	id := s.id.Add(1)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
	if params != "" {
		body += `,"params":` + params
	}
	_, b, err := s.post(body + "}")
	if err != nil {
		return nil, err
	}
	msg, err := answer(b, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if msg.Error != nil {
		return nil, fmt.Errorf("%s: JSON-RPC error %d: %s", method, msg.Error.Code, msg.Error.Message)
	}
	return msg.Result, nil
}

// rpcAnswer is a JSON-RPC message as far as the client reads it.
type rpcAnswer struct {
	ID     *int64          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer finds the answer to request id in a body: a JSON message, or an
// SSE stream whose data lines may carry notifications (a tools/list_changed
// after a schema swap) before the answer.
func answer(b []byte, id int64) (rpcAnswer, error) {
	var msg rpcAnswer
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		if err := json.Unmarshal(b, &msg); err != nil {
			return msg, fmt.Errorf("%w: %.200s", err, b)
		}
		return msg, nil
	}
	for line := range bytes.Lines(b) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		msg = rpcAnswer{}
		if err := json.Unmarshal(data, &msg); err != nil {
			return msg, fmt.Errorf("%w: %.200s", err, data)
		}
		if msg.ID != nil && *msg.ID == id {
			return msg, nil
		}
	}
	return msg, fmt.Errorf("no answer to request %d in: %.200s", id, b)
}

// End ends the session on the server (DELETE with its Mcp-Session-Id) and
// releases the idle connections.
func (s *Session) End() error {
	defer s.Close()
	if s.session == "" {
		return nil
	}
	req, err := http.NewRequest(http.MethodDelete, s.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Mcp-Session-Id", s.session)
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("DELETE session: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Call invokes a tool and returns its result; a result with isError is
// returned with ErrTool.
func (s *Session) Call(tool string, args map[string]any) (json.RawMessage, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	res, err := s.result("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, a))
	if err != nil {
		return nil, err
	}
	if bytes.Contains(res, []byte(`"isError":true`)) {
		return res, fmt.Errorf("%s: %w: %.300s", tool, ErrTool, res)
	}
	return res, nil
}

// ToolsList returns the size in bytes of the tools/list results, every
// page of it (following nextCursor), and the number of tools.
func (s *Session) ToolsList() (size, tools int, err error) {
	list, err := s.Tools()
	if err != nil {
		return 0, 0, err
	}
	return list.Bytes, len(list.Tools), nil
}

// ToolList is a whole tools/list, gathered over its pages.
type ToolList struct {
	// Tools are the tools of every page, in order, as the server sent them.
	Tools []json.RawMessage
	// Pages is the number of tools/list requests it took.
	Pages int
	// Bytes is the size of all the results together.
	Bytes int
	// PageBytes is the size of each page's result.
	PageBytes []int
}

// maxPages bounds how many pages Tools follows: a server that hands out
// cursors forever is an error, not a hang.
const maxPages = 1000

// Tools lists every tool, following nextCursor from page to page.
func (s *Session) Tools() (ToolList, error) {
	var out ToolList
	cursor := ""
	for {
		params := ""
		if cursor != "" {
			c, err := json.Marshal(cursor)
			if err != nil {
				return out, err
			}
			params = `{"cursor":` + string(c) + `}`
		}
		res, err := s.result("tools/list", params)
		if err != nil {
			return out, err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return out, fmt.Errorf("tools/list: %w", err)
		}
		out.Tools = append(out.Tools, page.Tools...)
		out.Pages++
		out.Bytes += len(res)
		out.PageBytes = append(out.PageBytes, len(res))
		if page.NextCursor == "" {
			return out, nil
		}
		if out.Pages >= maxPages {
			return out, fmt.Errorf("tools/list: still a nextCursor after %d pages", maxPages)
		}
		cursor = page.NextCursor
	}
}
