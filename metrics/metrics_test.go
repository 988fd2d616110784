package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestPVEClass(t *testing.T) {
	for path, want := range map[string]string{
		"/version":                               "version",
		"/nodes":                                 "nodes",
		"/nodes/pve1":                            "nodes",
		"/nodes/pve1/qemu/100/status/start":      "qemu",
		"/nodes/pve1/lxc":                        "lxc",
		"/nodes/pve1/storage/local/content":      "storage",
		"/nodes/pve1/tasks/UPID:pve1:1:2:3/log":  "tasks",
		"/nodes/pve1/network":                    "node",
		"/cluster/resources?type=vm":             "cluster",
		"/access/users":                          "access",
		"/pools":                                 "pools",
		"/storage/local":                         "storage",
		"/nosuch/secret-looking/path":            "other",
		"":                                       "other",
		"/nodes/pve1/qemu%2F..%2F/status/start":  "node",
		"/nodes/pve1/qemu/100/config?digest=abc": "qemu",
	} {
		if got := PVEClass(path); got != want {
			t.Errorf("PVEClass(%q) = %q, want %q", path, got, want)
		}
	}
}

// Whatever a caller sends, the labels stay within their sets: an unknown
// tool is "other", an unknown outcome, decision, method or listener too.
func TestLabelsAreBounded(t *testing.T) {
	m, err := New(Options{Logger: quiet(), KnownTool: func(n string) bool { return n == "proxmox_api_call" }})
	if err != nil {
		t.Fatal(err)
	}
	m.Call("proxmox_api_call", journal.OutcomeOK, policy.Allow, "GET", time.Millisecond)
	m.Call("pmcp_abcdefghijklmnop_SECRET", "free text", "whatever", "PATCH", time.Millisecond)
	m.Intent("c1", "proxmox_api_call", policy.Allow, "POST", time.Now())
	m.Receipt("c1", journal.OutcomeTaskRunning)
	m.Receipt("c-unknown", journal.OutcomeOK)
	m.KeyFailure("lan")
	m.KeyFailure("evil listener")
	m.Refusal("loopback", 429)
	m.Refusal("tailnet", 9999)
	m.PVERequest("GET", "/nodes/pve1/qemu/100/config", 200, time.Millisecond)
	m.PVERequest("POST", "/nodes/pve1/qemu/100/status/start", 0, time.Millisecond)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	text := b.String()
	for _, want := range []string{
		`proxmox_mcp_tool_calls_total{decision="allow",outcome="ok",tool="proxmox_api_call"} 1`,
		`proxmox_mcp_tool_calls_total{decision="other",outcome="other",tool="other"} 1`,
		`proxmox_mcp_tool_calls_total{decision="allow",outcome="task_running",tool="proxmox_api_call"} 1`,
		`proxmox_mcp_tool_calls_total{decision="none",outcome="ok",tool="other"} 1`,
		`proxmox_mcp_tool_call_duration_seconds_count{method="other"} 1`,
		`proxmox_mcp_key_failures_total{listener="lan"} 1`,
		`proxmox_mcp_key_failures_total{listener="other"} 1`,
		`proxmox_mcp_http_refusals_total{code="429",listener="loopback"} 1`,
		`proxmox_mcp_http_refusals_total{code="other",listener="tailnet"} 1`,
		`proxmox_mcp_rate_limited_total{listener="loopback"} 1`,
		`proxmox_mcp_pve_requests_total{class="qemu",code="2xx",method="GET"} 1`,
		`proxmox_mcp_pve_requests_total{class="qemu",code="error",method="POST"} 1`,
		`proxmox_mcp_schema_loads_total{result="rejected"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	for _, leak := range []string{"SECRET", "free text", "evil", "PATCH", "whatever", "/nodes/"} {
		if strings.Contains(text, leak) {
			t.Errorf("the metrics carry %q", leak)
		}
	}
}

// The pending counts are read at most once per PendingTTL; a failed read
// leaves the series out and is counted, never shown as zero.
func TestPendingIsCachedAndFailuresAreAbsent(t *testing.T) {
	now := time.Unix(1000, 0)
	reads := 0
	var fail error
	m, err := New(Options{Logger: quiet(), Now: func() time.Time { return now }, PendingTTL: 30 * time.Second,
		Pending: func(context.Context) (journal.Pending, error) {
			reads++
			return journal.Pending{OpenIntents: reads, Unknown: 2, RunningJobs: 3}, fail
		}})
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(name string) (float64, bool) {
		t.Helper()
		fams, _ := m.Registry().Gather()
		for _, f := range fams {
			if f.GetName() == name {
				return f.Metric[0].GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	if v, ok := gauge("proxmox_mcp_journal_open_intents"); !ok || v != 1 {
		t.Fatalf("first scrape: %v %v", v, ok)
	}
	now = now.Add(10 * time.Second)
	if v, _ := gauge("proxmox_mcp_journal_open_intents"); v != 1 || reads != 1 {
		t.Errorf("within the TTL: %v after %d reads", v, reads)
	}
	now = now.Add(30 * time.Second)
	fail = errors.New("disk on fire")
	if _, ok := gauge("proxmox_mcp_journal_unknown_outcomes"); ok {
		t.Error("a failed read was shown")
	}
	fams, _ := m.Registry().Gather()
	found := false
	for _, f := range fams {
		if f.GetName() == "proxmox_mcp_scrape_errors_total" && f.Metric[0].GetCounter().GetValue() == 1 {
			found = true
		}
	}
	if !found {
		t.Error("the failed read was not counted")
	}
}

func TestQuantile(t *testing.T) {
	h := &dto.Histogram{SampleCount: ptr(uint64(100)), Bucket: []*dto.Bucket{
		{UpperBound: ptr(0.01), CumulativeCount: ptr(uint64(50))},
		{UpperBound: ptr(0.1), CumulativeCount: ptr(uint64(90))},
		{UpperBound: ptr(1.0), CumulativeCount: ptr(uint64(100))},
	}}
	for q, want := range map[float64]float64{0.5: 0.01, 0.25: 0.005, 0.9: 0.1, 0.95: 0.55} {
		if got := quantile(q, h); math.Abs(got-want) > 1e-9 {
			t.Errorf("q%.2f = %v, want %v", q, got, want)
		}
	}
	if !math.IsNaN(quantile(0.5, &dto.Histogram{})) {
		t.Error("an empty histogram has a quantile")
	}
}

func ptr[T any](v T) *T { return &v }

// The handler serves the text format Prometheus parses, to the listener's
// own hosts only, and the page escapes what it shows.
func TestHandler(t *testing.T) {
	m, err := New(Options{Logger: quiet(), Version: "<b>1</b>", Schema: func() Schema { return Schema{Origin: "file", SHA256: "ab", Endpoints: 3, Healthy: true} }})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler([]string{"127.0.0.1:9765", "localhost:9765"})
	get := func(host, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "http://"+host+path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := get("localhost:9765", "/metrics")
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil || fams["proxmox_mcp_schema_endpoints"] == nil || fams["go_goroutines"] == nil || fams["proxmox_mcp_process_cpu_seconds_total"] == nil {
		t.Errorf("parse: %v; families %d", err, len(fams))
	}
	if rec := get("evil.example", "/metrics"); rec.Code != http.StatusForbidden {
		t.Errorf("foreign host: %d", rec.Code)
	}
	if rec := get("127.0.0.1:9765", "/nosuch"); rec.Code != http.StatusNotFound {
		t.Errorf("/nosuch: %d", rec.Code)
	}
	page := get("127.0.0.1:9765", "/")
	if page.Code != 200 || strings.Contains(page.Body.String(), "<b>1</b>") || !strings.Contains(page.Body.String(), "&lt;b&gt;1&lt;/b&gt;") {
		t.Errorf("page: %d %s", page.Code, page.Body.String())
	}
	if rec := get("127.0.0.1:9765", "/status.json"); rec.Code != http.StatusNotFound {
		t.Errorf("/status.json without Options.Status: %d", rec.Code)
	}
}

// TestStatusJSON: /status.json is Options.Status as JSON, behind the same
// Host check.
func TestStatusJSON(t *testing.T) {
	m, err := New(Options{Logger: quiet(), Status: func(ctx context.Context) any {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Status without a deadline")
		}
		return map[string]any{"state": "serving", "keys": 2}
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler([]string{"127.0.0.1:9765"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:9765/status.json", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != `{"keys":2,"state":"serving"}`+"\n" {
		t.Errorf("/status.json: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://evil.example/status.json", nil))
	if rec.Code != http.StatusForbidden {
		t.Errorf("foreign host: %d", rec.Code)
	}
}

// TestStatusPage: /status is Options.StatusPage with the page's headers,
// behind the same Host check; a page that fails to render is a 500 with
// none of it sent; without the option there is no /status.
func TestStatusPage(t *testing.T) {
	fail := false
	m, err := New(Options{Logger: quiet(), StatusPage: func(ctx context.Context, w io.Writer) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("StatusPage without a deadline")
		}
		io.WriteString(w, "<p>half") //nolint:errcheck // a buffer
		if fail {
			return errors.New("no status")
		}
		io.WriteString(w, "</p>") //nolint:errcheck // a buffer
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler([]string{"127.0.0.1:9765"})
	get := func(host string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://"+host+"/status", nil))
		return rec
	}
	rec := get("127.0.0.1:9765")
	if rec.Code != 200 || rec.Body.String() != "<p>half</p>" {
		t.Errorf("/status: %d %q", rec.Code, rec.Body.String())
	}
	for k, v := range map[string]string{"Content-Type": "text/html; charset=utf-8", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if rec := get("evil.example"); rec.Code != http.StatusForbidden {
		t.Errorf("foreign host: %d", rec.Code)
	}
	fail = true
	if rec := get("127.0.0.1:9765"); rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "half") {
		t.Errorf("a failed page: %d %q", rec.Code, rec.Body.String())
	}
	m2, _ := New(Options{Logger: quiet()})
	rec = httptest.NewRecorder()
	m2.Handler([]string{"127.0.0.1:9765"}).ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:9765/status", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/status without Options.StatusPage: %d", rec.Code)
	}
}

// TestCounts: the counters the status page shows are the sums of their
// series.
func TestCounts(t *testing.T) {
	m, err := New(Options{Logger: quiet(), KnownTool: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Counts(); c != (Counts{}) {
		t.Errorf("at start: %+v", c)
	}
	m.Call("a", journal.OutcomeOK, policy.Allow, "GET", time.Millisecond)
	m.Call("a", journal.OutcomeOK, policy.Allow, "GET", time.Millisecond)
	m.Call("b", journal.OutcomeDenied, policy.Deny, "POST", 0)
	m.Call("b", journal.OutcomeTaskFailed, policy.Allow, "POST", 0)
	m.Call("c", journal.OutcomeError, "", "", 0)
	m.KeyFailure("loopback")
	m.KeyFailure("lan")
	m.Refusal("loopback", http.StatusUnauthorized)
	m.Refusal("lan", http.StatusTooManyRequests)
	want := Counts{Calls: 5, Denied: 1, Errors: 2, KeyFailures: 2, Refusals: 2, RateLimited: 1}
	if c := m.Counts(); c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
}

// BenchmarkCallMetrics is what the metrics add to one tool call that
// reads PVE once: the call's counter and duration, the PVE request's, and
// one journal commit.
func BenchmarkCallMetrics(b *testing.B) {
	m, err := New(Options{Logger: quiet(), KnownTool: func(string) bool { return true }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.PVERequest("GET", "/nodes/pve1/qemu/100/status/current", 200, 3*time.Millisecond)
		m.JournalCommit(1, 2*time.Millisecond)
		m.Call("proxmox_api_call", journal.OutcomeOK, policy.Allow, "GET", 5*time.Millisecond)
	}
}

// BenchmarkWriteMetrics is the same for a write: intent, receipt, the
// PVE request and two commits.
func BenchmarkWriteMetrics(b *testing.B) {
	m, err := New(Options{Logger: quiet(), KnownTool: func(string) bool { return true }})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		m.Intent("c-0123456789abcdef", "proxmox_api_call", policy.Allow, "POST", now)
		m.JournalCommit(1, 2*time.Millisecond)
		m.PVERequest("POST", "/nodes/pve1/qemu/100/status/start", 200, 3*time.Millisecond)
		m.Receipt("c-0123456789abcdef", journal.OutcomeOK)
		m.JournalCommit(1, 2*time.Millisecond)
	}
}

// BenchmarkScrape is one scrape of a registry with a busy catalog's series.
func BenchmarkScrape(b *testing.B) {
	m, err := New(Options{Logger: quiet(), KnownTool: func(string) bool { return true },
		Schema: func() Schema {
			return Schema{Origin: "file", SHA256: strings.Repeat("a", 64), Endpoints: 646, Healthy: true}
		}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		m.Call("proxmox_tool_"+string(rune('a'+i%26))+string(rune('a'+i/26)), journal.OutcomeOK, policy.Allow, "GET", time.Millisecond)
	}
	h := m.Handler([]string{"127.0.0.1:9765"})
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:9765/metrics", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
