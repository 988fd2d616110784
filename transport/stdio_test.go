package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A client that writes its requests and closes its input (the MCP
// shutdown of stdio) gets every answer: the requests still being served
// when the input ends are not cancelled. It failed before drain: the slow
// call was cancelled as soon as the input ended. (mcp-go's stdio session
// is a package variable made outside any synctest bubble, so this test
// waits on channels and gives the old failure a window to show.)
func TestStdioAnswersWhatItReadBeforeTheEnd(t *testing.T) {
	release, started, cancelled := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-release:
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			close(cancelled)
			return mcp.NewToolResultText("cancelled"), nil
		}
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	eof := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- ServeStdio(t.Context(), s, eofReader{inR, eof}, outW, nil, nil); outW.Close() }()
	answers := make(chan map[string]any, 8)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				answers <- m
			}
		}
		close(answers)
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	<-answers
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"slow","arguments":{}}}`+"\n")
	<-started
	inW.Close()
	<-eof
	select {
	case <-cancelled:
		t.Fatal("the end of input cancelled a call being served")
	case err := <-served:
		t.Fatalf("the server ended (%v) with a call unanswered", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	var got []string
	for m := range answers {
		b, _ := json.Marshal(m["result"])
		got = append(got, string(b))
	}
	if len(got) != 1 || !strings.Contains(got[0], `"done"`) {
		t.Errorf("answers after the end of input: %v, want the call's done", got)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// eofReader closes eof when its reader ends.
type eofReader struct {
	r   io.Reader
	eof chan struct{}
}

func (e eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		close(e.eof)
	}
	return n, err
}

// The end of input does not wait for a request that ctx gives up on.
func TestStdioEndsWithTheContext(t *testing.T) {
	started := make(chan struct{})
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("stuck"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(t.Context())
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stuck","arguments":{}}}` + "\n")
	served := make(chan error, 1)
	go func() { served <- ServeStdio(ctx, s, in, io.Discard, nil, nil) }()
	<-started
	cancel()
	<-served
}

// Lines are tracked across writes that split them, and a line longer than
// the bound is passed on but not tracked.
func TestLineBuffer(t *testing.T) {
	var lines []string
	var l lineBuffer
	for _, p := range []string{`{"id":1,`, `"method":"x"}` + "\n" + `{"id"`, `:2}` + "\n\n", strings.Repeat("x", maxTrackedLine+1), "\n" + `{"id":3}` + "\n"} {
		l.feed([]byte(p), func(b []byte) { lines = append(lines, string(b)) })
	}
	want := []string{`{"id":1,"method":"x"}`, `{"id":2}`, ``, `{"id":3}`}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", lines, want)
	}
	for _, tt := range []struct {
		line          string
		id            string
		request, answ bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "1", true, false},
		{`{"jsonrpc":"2.0","id": "a" ,"result":{}}`, `"a"`, false, true},
		{`{"jsonrpc":"2.0","id":null,"error":{}}`, "", false, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", false, false},
		{`not json`, "", false, false},
	} {
		id, req, ans := idOf([]byte(tt.line))
		if id != tt.id || req != tt.request || ans != tt.answ {
			t.Errorf("idOf(%s) = %q %v %v", tt.line, id, req, ans)
		}
	}
}
