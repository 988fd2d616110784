package daemon

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/metrics"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const hostile = `<script>alert("x")</script>`

// hostileField is markup that survives the configuration's error message
// (which writes a field name as a JSON pointer, "/" as "~1").
const hostileField = `<img src=x onerror=alert(1)>`

// markup finds the elements a value that escaped its escaping would make.
func markup(n *html.Node) bool {
	return n.Type == html.ElementNode && (n.Data == "script" || n.Data == "img")
}

// A fixed Status renders to the golden page; every value that has HTML in
// it comes out as text, never as markup.
func TestStatusPageGolden(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	now := started.Add(26*time.Hour + 3*time.Minute + 4*time.Second)
	st := Status{
		Version: "1.4.0", PID: 4242, Started: started, State: "serving",
		Line: "serving 646 PVE API endpoints; listeners: loopback 127.0.0.1:8765, metrics 127.0.0.1:9765; last error: reload: " + hostile,
		Listeners: []StatusListener{
			{Name: "lan", Address: "192.0.2.10:8766", URL: "https://192.0.2.10:8766/mcp"},
			{Name: "loopback", Address: "127.0.0.1:8765", URL: "http://127.0.0.1:8765/mcp"},
			{Name: "metrics", Address: "127.0.0.1:9765", URL: "http://127.0.0.1:9765/"},
		},
		Schema: schema.Status{Source: "/usr/share/pve-docs/api-viewer/apidoc.js", Origin: schema.OriginFile,
			SHA256: "9f2c4e1a7b3d5e6f00112233445566778899aabbccddeeff0011223344556677", Paths: 433, Methods: 646,
			LoadedAt: started.Add(time.Second), CheckedAt: now.Add(-time.Minute), Reloads: 1,
			LastError: "apidoc.js: " + hostile},
		SchemaHealthy:  false,
		Keys:           StatusKeys{Total: 3, ByState: map[string]int{"active": 2, "revoked": 1}},
		Policies:       1,
		Sessions:       2,
		Pending:        journal.Pending{OpenIntents: 0, Unknown: 1, RunningJobs: 1},
		LastError:      "reload: " + hostile + " (the running configuration stays)",
		Reconciliation: "reconciled 2 open intents at start",
		Counts:         metrics.Counts{Calls: 17, Denied: 2, Errors: 1, KeyFailures: 3, Refusals: 4, RateLimited: 1},
	}
	var b bytes.Buffer
	if err := RenderStatusPage(&b, st, now); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-page.html", b.Bytes())

	doc := parsePage(t, b.Bytes())
	if n := find(doc, markup); len(n) != 0 {
		t.Errorf("the page has %d script or img elements: a value was not escaped", len(n))
	}
	problems := find(doc, hasClass("problem"))
	if len(problems) != 1 || text(problems[0]) != "last error: "+st.LastError {
		t.Errorf("last error box: %q", texts(problems))
	}
	if got := tiles(doc); got["tool calls"] != "17" || got["denied"] != "2" || got["errors"] != "1" || got["key failures"] != "3" ||
		got["HTTP refusals"] != "4" || got["rate limited"] != "1" || got["unknown outcomes"] != "1" || got["jobs running"] != "1" || got["sessions open"] != "2" {
		t.Errorf("tiles: %v", got)
	}
	if got := header(doc); got != "version 1.4.0 · pid 4242 · started 2026-05-04 09:00:00 UTC · up 26h3m4s" {
		t.Errorf("header: %q", got)
	}
	rows := rowsOf(doc)
	for _, want := range [][]string{
		{"lan", "192.0.2.10:8766", "https://192.0.2.10:8766/mcp"},
		{"health", "degraded"},
		{"last error", "apidoc.js: " + hostile},
		{"revoked", "1"},
		{"cluster", "off"},
	} {
		if !hasRow(rows, want) {
			t.Errorf("no row %q in %q", want, rows)
		}
	}
	var refresh string
	for _, m := range find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "meta" }) {
		if attr(m, "http-equiv") == "refresh" {
			refresh = attr(m, "content")
		}
	}
	if refresh != "10" {
		t.Errorf("refresh: %q, want 10", refresh)
	}
}

// A running daemon's /status, after a known sequence of calls and
// refusals and a refused reload whose error has HTML in it: the values a
// person reads, the headers, and the error as text.
func TestStatusPageOfARunningDaemon(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	op, err := mcptest.Dial(r.url+"/mcp", r.key("operator"))
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ro, err := mcptest.Dial(r.url+"/mcp", r.key("read-only"))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := op.Call(tools.ToolCall, map[string]any{"method": "GET", "path": "/version"}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Call(tools.ToolSchemaStatus, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Call(tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/stop"}); !errors.Is(err, mcptest.ErrTool) {
		t.Fatalf("read-only stop: %v, want a refusal", err)
	}
	req, _ := http.NewRequest("POST", r.url+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer pmcp_aaaaaaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: HTTP %d", resp.StatusCode)
	}
	// A configuration with a misspelt field whose name is markup.
	r.cfg[hostileField] = true
	r.writeConfig()
	if err := r.d.Reload(context.Background()); err == nil {
		t.Fatal("a configuration with an unknown field was accepted")
	}

	addrs := r.d.Addresses()
	resp, err = http.Get("http://" + addrs["metrics"] + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body) //nolint:errcheck // checked by parsing
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/status: %s: %s", resp.Status, body.Bytes())
	}
	for h, want := range map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
		"Cache-Control":           "no-store",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if bytes.Contains(body.Bytes(), []byte(hostileField)) {
		t.Errorf("the page holds the markup unescaped:\n%s", body.Bytes())
	}
	doc := parsePage(t, body.Bytes())
	if n := find(doc, markup); len(n) != 0 {
		t.Errorf("the page has %d script or img elements", len(n))
	}
	if h1 := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "h1" }); len(h1) != 1 || text(h1[0]) != "proxmox-mcp serving" {
		t.Errorf("title: %q", texts(h1))
	}
	if h := header(doc); !strings.HasPrefix(h, "version test · pid ") {
		t.Errorf("header: %q", h)
	}
	problems := find(doc, hasClass("problem"))
	if len(problems) != 1 || !strings.Contains(text(problems[0]), hostileField) {
		t.Errorf("the refused reload's error, as text: %q", texts(problems))
	}
	want := map[string]string{"tool calls": "3", "denied": "1", "errors": "0", "sessions open": "2",
		"key failures": "1", "HTTP refusals": "1", "rate limited": "0", "open intents": "0", "unknown outcomes": "0", "jobs running": "0"}
	got := tiles(doc)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tile %q = %q, want %q", k, got[k], v)
		}
	}
	rows := rowsOf(doc)
	for _, want := range [][]string{
		{"loopback", addrs["loopback"], "http://" + addrs["loopback"] + "/mcp"},
		{"metrics", addrs["metrics"], "http://" + addrs["metrics"] + "/"},
		{"health", "current"},
		{"keys", "2"},
		{"active", "2"},
	} {
		if !hasRow(rows, want) {
			t.Errorf("no row %q in %q", want, rows)
		}
	}
	// The same figures as /status.json.
	st, err := FetchStatus(context.Background(), addrs["metrics"])
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts.Calls != 3 || st.Counts.Denied != 1 || st.Counts.KeyFailures != 1 || st.Counts.Refusals != 1 {
		t.Errorf("/status.json counts: %+v", st.Counts)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./daemon -run StatusPageGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
		for i := range max(len(wl), len(gl)) {
			var w, g string
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if w != g {
				t.Errorf("%s differs from the golden file at line %d (run go test ./daemon -run StatusPageGolden -update if intended)\nwant: %s\ngot:  %s", path, i+1, w, g)
				return
			}
		}
	}
}

func parsePage(t *testing.T, b []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func hasClass(class string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		return n.Type == html.ElementNode && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
	}
}

// text is the text a browser shows of n, spaces collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func texts(ns []*html.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = text(n)
	}
	return out
}

// tiles maps each tile's label to its figure.
func tiles(doc *html.Node) map[string]string {
	out := map[string]string{}
	for _, t := range find(doc, hasClass("tile")) {
		v, k := find(t, hasClass("v")), find(t, hasClass("k"))
		if len(v) == 1 && len(k) == 1 {
			out[text(k[0])] = text(v[0])
		}
	}
	return out
}

func header(doc *html.Node) string {
	if s := find(doc, hasClass("sub")); len(s) == 1 {
		return text(s[0])
	}
	return ""
}

// rowsOf lists every table row as its cells' text.
func rowsOf(doc *html.Node) [][]string {
	var rows [][]string
	for _, tr := range find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "tr" }) {
		var row []string
		for c := tr.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
				row = append(row, text(c))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func hasRow(rows [][]string, want []string) bool {
	for _, r := range rows {
		if strings.Join(r, "\x00") == strings.Join(want, "\x00") {
			return true
		}
	}
	return false
}
