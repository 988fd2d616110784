package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// scrape reads the metrics listener as Prometheus does (the text format)
// and parses it with Prometheus's own parser.
func scrape(t *testing.T, r *rig) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.d.Addresses()["metrics"]+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s: %s", resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	return fams
}

// series finds the one series of a family with exactly these labels; ok
// is false when there is none.
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) (*dto.Metric, bool) {
	mf := fams[name]
	if mf == nil {
		return nil, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range mf.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		match := true
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			return m, true
		}
	}
	return nil, false
}

func val(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// labelSets lists a family's label sets, for failure messages.
func labelSets(fams map[string]*dto.MetricFamily, name string) string {
	var out []string
	if mf := fams[name]; mf != nil {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fmt.Sprintf("{%s} %v", strings.Join(ls, ","), val(m)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// After a known sequence of calls (reads, a write that starts a task, a
// denial, an invalid argument, a tool that calls no endpoint) over two
// keys' sessions, each series says exactly what happened, and every label
// value is one of the bounded sets.
func TestMetricsAfterKnownCalls(t *testing.T) {
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
	if _, err := op.Call(tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Call(tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/stop"}); !errors.Is(err, mcptest.ErrTool) {
		t.Fatalf("read-only stop: %v, want a refusal", err)
	}
	if _, err := op.Call(tools.ToolCall, map[string]any{"method": "GET", "path": "/version", "params": map[string]any{"nosuch": 1}}); !errors.Is(err, mcptest.ErrTool) {
		t.Fatalf("invalid argument: %v, want a refusal", err)
	}
	if _, err := op.Call(tools.ToolSchemaStatus, nil); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, r)

	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"proxmox_mcp_tool_calls_total", []string{"tool", "proxmox_api_call", "outcome", "ok", "decision", "allow"}, 2},
		{"proxmox_mcp_tool_calls_total", []string{"tool", "proxmox_api_call", "outcome", "denied", "decision", "deny"}, 1},
		{"proxmox_mcp_tool_calls_total", []string{"tool", "proxmox_api_call", "outcome", "invalid", "decision", "none"}, 1},
		{"proxmox_mcp_tool_calls_total", []string{"tool", "proxmox_schema_status", "outcome", "ok", "decision", "none"}, 1},
		{"proxmox_mcp_tool_call_duration_seconds", []string{"method", "POST"}, 2},
		{"proxmox_mcp_pve_requests_total", []string{"class", "qemu", "method", "POST", "code", "2xx"}, 1},
		{"proxmox_mcp_pve_request_duration_seconds", []string{"class", "qemu", "method", "POST"}, 1},
		{"proxmox_mcp_schema_loads_total", []string{"result", "loaded"}, 1},
		{"proxmox_mcp_schema_loads_total", []string{"result", "rejected"}, 0},
		{"proxmox_mcp_schema_healthy", nil, 1},
		{"proxmox_mcp_schema_endpoints", nil, float64(r.d.schema.Status().Methods)},
		{"proxmox_mcp_schema_info", []string{"origin", "file", "sha256", r.d.schema.Status().SHA256}, 1},
		{"proxmox_mcp_sessions_open", nil, 2},
		{"proxmox_mcp_listener_info", []string{"listener", "loopback", "address", r.d.Addresses()["loopback"]}, 1},
		{"proxmox_mcp_listener_info", []string{"listener", "metrics", "address", r.d.Addresses()["metrics"]}, 1},
		{"proxmox_mcp_journal_open_intents", nil, 0},
		{"proxmox_mcp_journal_unknown_outcomes", nil, 0},
		{"proxmox_mcp_jobs_running", nil, 0},
		{"proxmox_mcp_journal_write_failures_total", nil, 0},
		{"proxmox_mcp_build_info", []string{"version", "test", "goversion", goVersion()}, 1},
	} {
		m, ok := series(fams, tc.name, tc.labels...)
		if !ok {
			t.Errorf("%s%v: absent; the family has: %s", tc.name, tc.labels, labelSets(fams, tc.name))
			continue
		}
		if got := val(m); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// Counts that depend on how the calls were spread over requests and
	// commits: at least so many.
	for _, tc := range []struct {
		name   string
		labels []string
		least  float64
	}{
		// The read of /version, and the start's task polls.
		{"proxmox_mcp_pve_requests_total", []string{"class", "version", "method", "GET", "code", "2xx"}, 1},
		{"proxmox_mcp_pve_requests_total", []string{"class", "tasks", "method", "GET", "code", "2xx"}, 1},
		// Every tool call's row (the start's intent and receipt are two).
		{"proxmox_mcp_journal_rows_total", nil, 6},
		{"proxmox_mcp_journal_commit_duration_seconds", nil, 1},
	} {
		m, ok := series(fams, tc.name, tc.labels...)
		if !ok || val(m) < tc.least {
			t.Errorf("%s%v: want at least %v; the family has: %s", tc.name, tc.labels, tc.least, labelSets(fams, tc.name))
		}
	}
	// The commits the histogram saw are the journal's own count.
	if h, ok := series(fams, "proxmox_mcp_journal_commit_duration_seconds"); ok {
		c, _ := series(fams, "proxmox_mcp_journal_commits_total")
		if c == nil || val(h) != val(c) {
			t.Errorf("commit histogram %v, commits %v", val(h), c)
		}
	}
	checkBoundedLabels(t, fams)
}

// Key failures, refusals and rate-limit refusals are counted by listener
// and status.
func TestMetricsCountRefusals(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(cfg map[string]any) {
		cfg["http"] = map[string]any{"rate_per_key": 0.01, "burst_per_key": 3}
	})
	r.start()
	post := func(auth string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", r.url+"/mcp", strings.NewReader(`{}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Two wrong keys and one request without any.
	for _, auth := range []string{"Bearer pmcp_aaaaaaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "Bearer not-a-key", ""} {
		if code := post(auth); code != http.StatusUnauthorized {
			t.Fatalf("%q: HTTP %d, want 401", auth, code)
		}
	}
	// A real key over its burst of 3: the initialize and initialized, one
	// call, then 429.
	s, err := mcptest.Dial(r.url+"/mcp", r.key("read-only"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(tools.ToolSchemaStatus, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(tools.ToolSchemaStatus, nil); err == nil || !strings.Contains(err.Error(), "HTTP 429") {
		t.Fatalf("fourth request: %v, want 429", err)
	}
	fams := scrape(t, r)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"proxmox_mcp_key_failures_total", []string{"listener", "loopback"}, 2},
		{"proxmox_mcp_http_refusals_total", []string{"listener", "loopback", "code", "401"}, 3},
		{"proxmox_mcp_http_refusals_total", []string{"listener", "loopback", "code", "429"}, 1},
		{"proxmox_mcp_rate_limited_total", []string{"listener", "loopback"}, 1},
		{"proxmox_mcp_tool_calls_total", []string{"tool", "proxmox_schema_status", "outcome", "ok", "decision", "none"}, 1},
	} {
		m, ok := series(fams, tc.name, tc.labels...)
		if !ok {
			t.Errorf("%s%v: absent; the family has: %s", tc.name, tc.labels, labelSets(fams, tc.name))
			continue
		}
		if got := val(m); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	checkBoundedLabels(t, fams)
}

// boundedLabels are the values each label of ours may take; "*" is a value
// fixed by the build or the configuration (a version, a hash, an address).
var boundedLabels = map[string][]string{
	"tool":      nil, // checked against the catalog
	"outcome":   {"ok", "error", "denied", "uncertain", "dry_run", "confirm", "invalid", "task_failed", "task_running", "pending", "other"},
	"decision":  {"allow", "deny", "confirm", "dry_run", "breakglass", "none", "other"},
	"method":    {"GET", "POST", "PUT", "DELETE", "none", "other"},
	"class":     {"qemu", "lxc", "storage", "tasks", "node", "nodes", "cluster", "access", "pools", "version", "other"},
	"code":      nil, // a status class or an HTTP status
	"listener":  {"loopback", "lan", "tailnet", "stdio", "metrics", "other"},
	"result":    {"loaded", "reloaded", "unchanged", "rejected"},
	"figure":    {"journal_pending"},
	"origin":    {"file", "cache"},
	"sha256":    {"*"},
	"address":   {"*"},
	"version":   {"*"},
	"goversion": {"*"},
}

// checkBoundedLabels fails on any label of ours not in its bounded set:
// no key, secret, path or caller's text can become a label.
func checkBoundedLabels(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	codes := map[string]bool{"2xx": true, "3xx": true, "4xx": true, "5xx": true, "error": true, "other": true}
	for name, mf := range fams {
		if !strings.HasPrefix(name, "proxmox_mcp_") || strings.HasPrefix(name, "proxmox_mcp_process_") {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				n, v := l.GetName(), l.GetValue()
				allowed, known := boundedLabels[n]
				switch {
				case !known:
					t.Errorf("%s has label %s, which is not in the bounded set", name, n)
				case n == "tool":
					if v != "other" && !strings.HasPrefix(v, "proxmox_") {
						t.Errorf("%s{tool=%q}: not a tool of the catalog", name, v)
					}
				case n == "code":
					if !codes[v] && (len(v) != 3 || v[0] < '1' || v[0] > '5') {
						t.Errorf("%s{code=%q}: not a status", name, v)
					}
				case len(allowed) == 1 && allowed[0] == "*":
				default:
					ok := false
					for _, a := range allowed {
						ok = ok || a == v
					}
					if !ok {
						t.Errorf("%s{%s=%q}: not one of %v", name, n, v, allowed)
					}
				}
			}
		}
	}
}

// The metrics listener answers only its own Host (no DNS rebinding), and
// its status page shows the figures.
func TestMetricsListenerHostAndPage(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	addr := r.d.Addresses()["metrics"]
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host: HTTP %d, want 403", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "proxmox-mcp") || !strings.Contains(string(b), "open intents") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("status page: %s %s", resp.Status, b)
	}
}

func goVersion() string { return runtime.Version() }
