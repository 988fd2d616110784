package daemon

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// rawMCP sends one request to /mcp as a bare client does; session is the
// Mcp-Session-Id to send, if any.
func rawMCP(t *testing.T, hc *http.Client, url, method, key, session, body string) (*http.Response, string) {
	t.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == http.StatusOK {
		return resp, "" // an event stream: not read to its end
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const (
	rawInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	rawPing = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

// openSession initializes a session with key and returns its id.
func openSession(t *testing.T, hc *http.Client, url, key string) string {
	t.Helper()
	resp, body := rawMCP(t, hc, url, http.MethodPost, key, "", rawInit)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return id
}

// httpRows are the journal rows of HTTP refusals.
func httpRows(t *testing.T, r *rig) []journal.Event {
	t.Helper()
	events, err := r.d.jrnl.Tail(context.Background(), 200)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Event
	for _, ev := range events {
		if strings.HasPrefix(ev.Tool, "http ") {
			out = append(out, ev)
		}
	}
	return out
}

func keyIDOf(key string) string { return strings.Split(key, "_")[1] }

// Reproduces a session used by another key (mcp-go checks only that a
// session id exists): key B, knowing key A's session id, could call in it,
// read its event stream and end it. Each is 404 now, with a journal row
// naming key B.
func TestSessionOfAnotherKeyIs404(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	keyA, keyB := r.keyNamed(t, "alice", "read-only"), r.keyNamed(t, "bob", "read-only")
	url := r.url + "/mcp"
	id := openSession(t, nil, url, keyA)
	for _, m := range []struct{ method, body string }{{http.MethodPost, rawPing}, {http.MethodGet, ""}, {http.MethodDelete, ""}} {
		resp, body := rawMCP(t, nil, url, m.method, keyB, id, m.body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "session not found") {
			t.Errorf("%s by key B in key A's session: %d %s, want 404", m.method, resp.StatusCode, body)
		}
	}
	if resp, body := rawMCP(t, nil, url, http.MethodPost, keyA, id, rawPing); resp.StatusCode != http.StatusOK {
		t.Errorf("key A in its own session after key B's attempts: %d %s", resp.StatusCode, body)
	}
	rows := httpRows(t, r)
	if len(rows) != 3 {
		t.Fatalf("%d refusal rows, want 3: %+v", len(rows), rows)
	}
	for i, want := range []string{"http POST /mcp", "http GET /mcp", "http DELETE /mcp"} {
		ev := rows[i]
		if ev.Tool != want || ev.Status != 404 || ev.Principal.KeyID != keyIDOf(keyB) || ev.Principal.KeyName != "bob" ||
			ev.Principal.Profile != policy.ReadOnly || !strings.Contains(ev.Error, "is not this caller's") {
			t.Errorf("row %d: %s %d %+v %q", i, ev.Tool, ev.Status, ev.Principal, ev.Error)
		}
	}
}

// Reproduces one key taking every session: a key at its quota
// (http.max_sessions_per_key) is refused with 429, said so in the answer
// and the journal, while another key still opens a session.
func TestSessionQuotaPerKey(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(cfg map[string]any) {
		cfg["http"] = map[string]any{"max_sessions": 10, "max_sessions_per_key": 2}
	})
	r.start()
	keyA, keyB := r.keyNamed(t, "alice", "read-only"), r.keyNamed(t, "bob", "read-only")
	url := r.url + "/mcp"
	openSession(t, nil, url, keyA)
	openSession(t, nil, url, keyA)
	resp, body := rawMCP(t, nil, url, http.MethodPost, keyA, "", rawInit)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "http.max_sessions_per_key") {
		t.Fatalf("key A's third session: %d %s", resp.StatusCode, body)
	}
	openSession(t, nil, url, keyB)
	rows := httpRows(t, r)
	if len(rows) != 1 || rows[0].Status != 429 || rows[0].Principal.KeyID != keyIDOf(keyA) ||
		!strings.Contains(rows[0].Error, "too many sessions for key "+keyIDOf(keyA)) {
		t.Errorf("rows %+v", rows)
	}
}

// Reproduces refusals that left no journal row: a path holding %00 or
// %0A decodes to a control character, which the journal refused. They
// are recorded, escaped.
func TestHTTPRefusalWithControlCharactersLeavesARow(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	for _, p := range []string{"/%00", "/a%0Aforged%20line", "/mcp%00"} {
		resp, err := http.Get(r.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
	}
	var got []string
	for _, ev := range httpRows(t, r) {
		got = append(got, ev.Tool)
	}
	want := []string{`http GET /\x00`, `http GET /a\x0aforged line`, `http GET /mcp\x00`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("refusal rows %q, want %q", got, want)
	}
	if rep, err := r.d.jrnl.Verify(context.Background()); err != nil {
		t.Errorf("verify: %+v %v", rep, err)
	}
}

// Reproduces a tool call that was answered and not recorded: its path
// held control characters, the journal refused the row, and the caller was
// told so. The call is recorded now with its path escaped.
func TestToolCallWithControlCharactersInPathIsRecorded(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	c, ctx := r.client(r.key("read-only"))
	res, _ := callTool(t, c, ctx, tools.ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1\x00/qemu\n/101/status/current"})
	if text := resultText(res); !res.IsError || strings.Contains(text, "journal refused") {
		t.Fatalf("answer %v %q: want the call refused as invalid, not the journal refusing it", res.IsError, text)
	}
	ev := lastCall(t, r, journal.KindCall, `/nodes/pve1\x00/qemu\x0a/101/status/current`)
	if ev.Outcome != journal.OutcomeInvalid || ev.Tool != tools.ToolCall {
		t.Errorf("row: %s %s", ev.Tool, ev.Outcome)
	}
	if rep, err := r.d.jrnl.Verify(context.Background()); err != nil {
		t.Errorf("verify: %+v %v", rep, err)
	}
}

// The owner of a session is the key and the Tailnet identity.
func TestSessionOwner(t *testing.T) {
	caller := func(key string, tn *policy.TailnetIdentity) context.Context {
		return tools.WithCaller(context.Background(), tools.Caller{Principal: policy.Principal{KeyID: key, Tailnet: tn}})
	}
	alice := &policy.TailnetIdentity{User: "alice@example.com", Node: "laptop"}
	mallory := &policy.TailnetIdentity{User: "mallory@example.com", Node: "laptop"}
	aliceDesk := &policy.TailnetIdentity{User: "alice@example.com", Node: "desktop"}
	a := sessionOwner(caller("k1", alice))
	for name, other := range map[string]context.Context{
		"another key":       caller("k2", alice),
		"another user":      caller("k1", mallory),
		"another node":      caller("k1", aliceDesk),
		"no Tailnet":        caller("k1", nil),
		"a forged identity": caller("k1", &policy.TailnetIdentity{User: `alice@example.com" "laptop`}),
	} {
		if o := sessionOwner(other); o == a {
			t.Errorf("%s owns the session of %+v", name, a)
		}
	}
	if o := sessionOwner(caller("k1", &policy.TailnetIdentity{User: "alice@example.com", Node: "laptop"})); o != a || o.Key != "k1" {
		t.Errorf("the same caller: %+v, want %+v", o, a)
	}
	if o := sessionOwner(context.Background()); o.Key != "" {
		t.Errorf("no caller: %+v", o)
	}
}

// Regression: a source over the failed-key limiter was told to come back
// in a flat 10 s whatever the limiter knew. The 429 carries the limiter's
// own wait and names the budget that is used up. The wrong secrets are
// sent at once: each reserves its budget before scrypt runs, so those past
// the burst (10) are refused however slow the hashing is.
func TestFailedKeyLimitSaysWhenAndWhy(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	key := r.key("read-only")
	wrong := key[:len(key)-4] + "AAAA"
	if wrong == key {
		wrong = key[:len(key)-4] + "BBBB"
	}
	type answer struct {
		status int
		retry  string
		body   string
	}
	answers := make(chan answer, 30)
	for range 30 {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, r.url+"/mcp", strings.NewReader(rawInit))
			req.Header.Set("Authorization", "Bearer "+wrong)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{body: err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
		}()
	}
	var limited *answer
	for range 30 {
		a := <-answers
		if a.status == http.StatusTooManyRequests && limited == nil {
			limited = &a
		}
	}
	if limited == nil {
		t.Fatal("30 wrong secrets at once: none answered 429")
	}
	if limited.retry == "" || limited.retry == "10" {
		t.Errorf("Retry-After %q: want the limiter's wait (about a second at 1/s), not a flat 10", limited.retry)
	}
	if !strings.Contains(limited.body, "key "+keyIDOf(key)) || !strings.Contains(limited.body, "too many failed attempts") {
		t.Errorf("429 body does not name the budget: %s", limited.body)
	}
}
