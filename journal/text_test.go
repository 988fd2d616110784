package journal

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeText(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		multiline bool
		want      string
	}{
		{"plain", "/nodes/pve1/qemu/100/config", false, "/nodes/pve1/qemu/100/config"},
		{"utf-8 kept", "Zürich 東京", false, "Zürich 東京"},
		{"nul", "/a\x00b", false, `/a\x00b`},
		{"newline", "alice\nforged line", false, `alice\x0aforged line`},
		{"tab and cr", "a\tb\rc", false, `a\x09b\x0dc`},
		{"escape sequence", "\x1b[31mred", false, `\x1b[31mred`},
		{"del", "a\x7f", false, `a\x7f`},
		{"not utf-8", "a\xffb\xc3", false, `a\xffb\xc3`},
		{"c1 control", "a\u0085b", false, `a\u0085b`},
		{"line separator", "a\u2028b\u2029", false, `a\u2028b\u2029`},
		{"bidi override", "file\u202egnp.exe", false, `file\u202egnp.exe`},
		{"multiline keeps newline and tab", "line one\n\tline two\x00", true, "line one\n\tline two\\x00"},
		{"multiline escapes cr", "a\r\nb", true, "a\\x0d\nb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := escapeText(tc.in, tc.multiline)
			if got != tc.want {
				t.Errorf("escapeText(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !utf8.ValidString(got) || needsEscape(got, tc.multiline) {
				t.Errorf("escapeText(%q) = %q still needs escaping", tc.in, got)
			}
		})
	}
}

// Text over its limit is cut at a character, within the limit, with a
// note of how much was cut.
func TestFitText(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	got := fitText(long, maxName, false)
	if len(got) > maxName || !utf8.ValidString(got) || !strings.HasSuffix(got, " more bytes]") {
		t.Errorf("fitText: %d bytes %q", len(got), got)
	}
	if got := fitText("short", maxName, false); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
}

// Reproduces the refusal that left no row: a tool call whose path, tool
// name, key name, error and arguments hold control characters, invalid
// UTF-8 and a method PVE does not have was refused by the journal
// ("control character U+0000"), so the call was answered and not recorded.
// Now it is recorded, escaped; the chain verifies and the export holds
// printable text only.
func TestControlCharactersAreRecordedEscaped(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	c := Call{
		Principal: Principal{KeyID: "abcdefghijklmnop", KeyName: "alice\nforged line", Transport: "tailnet", Source: "100.64.0.7:4242",
			TailnetUser: "bob@example.com\x1b[2K", TailnetNode: "laptop\u202e"},
		Tool:   "proxmox_api_call\x00",
		Method: "GET\n",
		Path:   "nodes/a\x00b\nc\xff",
		Args:   map[string]any{"method": "GET\n", "path": "nodes/a\x00b\nc"},
	}
	res := Result{Outcome: OutcomeInvalid, Error: "no endpoint for GET /nodes/a\x00b\nc\nNothing was sent."}
	ev, err := j.Record(ctx, c, res)
	if err != nil {
		t.Fatalf("the journal refused the row: %v", err)
	}
	want := map[string][2]string{
		"principal.key_name":     {ev.Principal.KeyName, `alice\x0aforged line`},
		"principal.tailnet_user": {ev.Principal.TailnetUser, `bob@example.com\x1b[2K`},
		"principal.tailnet_node": {ev.Principal.TailnetNode, `laptop\u202e`},
		"tool":                   {ev.Tool, `proxmox_api_call\x00`},
		"method":                 {ev.Method, `GET\x0a`},
		"path":                   {ev.Path, `nodes/a\x00b\x0ac\xff`},
		"error":                  {ev.Error, "no endpoint for GET /nodes/a\\x00b\nc\nNothing was sent."},
	}
	for field, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", field, v[0], v[1])
		}
	}
	var args map[string]string
	if err := json.Unmarshal(ev.Args, &args); err != nil || args["path"] != "nodes/a\x00b\nc" {
		t.Errorf("args %s: %v (JSON keeps the caller's string exactly)", ev.Args, err)
	}
	// The same text on a row that is not a refusal of the arguments: the
	// method and path keep their forms, the rest is escaped.
	ok := readCall()
	ok.Tool, ok.Path, ok.Decision.Reasons = "proxmox_api_call\x07", "/nodes/pve\x001/qemu/100/status/current", []string{"because\x1b]0;owned\x07"}
	ev2, err := j.Record(ctx, ok, Result{Outcome: OutcomeOK, Status: 200})
	if err != nil {
		t.Fatalf("a read with a control character in its path: %v", err)
	}
	if ev2.Path != `/nodes/pve\x001/qemu/100/status/current` || ev2.Decision.Reasons[0] != `because\x1b]0;owned\x07` || ev2.Tool != `proxmox_api_call\x07` {
		t.Errorf("read row: path %q, reasons %q, tool %q", ev2.Path, ev2.Decision.Reasons, ev2.Tool)
	}
	// An intent and its receipt with such text.
	w := writeCall()
	w.Principal.KeyName = "carol\r"
	in, err := j.Intent(ctx, w)
	if err != nil {
		t.Fatalf("intent: %v", err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeError, Error: "PVE said \x00", UPID: "UPID:pve1:\x01"}); err != nil {
		t.Fatalf("receipt: %v", err)
	}
	if rep, err := j.Verify(ctx); err != nil || rep.Rows != 4 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	dest := filepath.Join(t.TempDir(), "export.jsonl")
	if _, err := j.Export(ctx, dest, FormatJSONL); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %d: %v", n, err)
		}
		for _, s := range []string{e.Principal.KeyName, e.Principal.TailnetUser, e.Principal.TailnetNode, e.Tool, e.Method, e.Path, e.UPID} {
			if needsEscape(s, false) {
				t.Errorf("export line %d holds unescaped text %q", n, s)
			}
		}
		if needsEscape(e.Error, true) {
			t.Errorf("export line %d: error %q", n, e.Error)
		}
	}
	if n != 4 {
		t.Errorf("%d export lines, want 4", n)
	}
}

// Reproduces the refusal of an over-long value ("tool: 300 bytes, at most
// 256"), which left no row: it is cut, with a note, and recorded.
func TestLongTextIsCutNotRefused(t *testing.T) {
	j := openTest(t, Options{})
	c := readCall()
	c.Tool = strings.Repeat("t", 300)
	c.Path = "/" + strings.Repeat("p", 5000)
	ev, err := j.Record(context.Background(), c, Result{Outcome: OutcomeOK})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if len(ev.Tool) > maxName || !strings.HasSuffix(ev.Tool, "more bytes]") || len(ev.Path) > maxPath || !strings.HasPrefix(ev.Path, "/ppp") {
		t.Errorf("tool %q (%d bytes), path %d bytes", ev.Tool, len(ev.Tool), len(ev.Path))
	}
}

// The cost of escaping on every text column of every row: clean text (the
// usual case) is only scanned.
func BenchmarkEscapeText(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"clean path", "/nodes/pve1/qemu/100/status/current"},
		{"clean error", strings.Repeat("PVE refused POST /nodes/pve1/qemu/100/config: 400 parameter verification failed. ", 20)},
		{"control characters", "/nodes/a\x00b\nc\x1b[31m/qemu/100"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				escapeText(bc.s, false)
			}
		})
	}
}

// FuzzFitText: whatever bytes a caller chose, the text recorded is valid
// UTF-8 with no control character (but newline and tab where allowed),
// within its limit, and text that needed nothing is kept as it was.
func FuzzFitText(f *testing.F) {
	for _, s := range []string{"/nodes/pve1/qemu/100", "a\x00b\nc\td", "\xff\xfe", "bidi \u202e txt", "line\u2028sep", strings.Repeat("é", 300)} {
		f.Add(s, 64, false)
		f.Add(s, 8, true)
	}
	f.Fuzz(func(t *testing.T, s string, limit int, multiline bool) {
		if limit < 32 || limit > 1<<16 {
			limit = 32 + (limit&0xffff)%1024
		}
		got := fitText(s, limit, multiline)
		if !utf8.ValidString(got) {
			t.Fatalf("fitText(%q) = %q: not UTF-8", s, got)
		}
		if len(got) > limit {
			t.Fatalf("fitText(%q, %d) = %d bytes, over the limit", s, limit, len(got))
		}
		for _, r := range got {
			if multiline && (r == '\n' || r == '\t') {
				continue
			}
			if r < 0x20 || r == 0x7f || escapedRune(r) {
				t.Fatalf("fitText(%q) = %q keeps %U", s, got, r)
			}
		}
		if !needsEscape(s, multiline) && len(s) <= limit && got != s {
			t.Fatalf("fitText changed clean text %q to %q", s, got)
		}
	})
}
