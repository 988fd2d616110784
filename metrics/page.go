package metrics

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The figures page at / of the metrics listener (the daemon's own state
// is its status page at /status, rendered by package daemon): the same
// figures as /metrics, gathered from the same registry, as tables a person reads
// without Grafana. It is rendered on the server (no script), refreshes
// itself every 15 s, and shows nothing /metrics does not.

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="15">
<title>proxmox-mcp status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;background:#f6f7f9;color:#1d2430}
h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:0 0 8px;color:#3b4a5f}
.sub{color:#5b6b80;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;margin-bottom:18px}
.tile{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:10px}
.tile .v{font-size:24px;font-weight:600} .tile .k{color:#5b6b80;font-size:12px}
.tile.warn .v{color:#b54708} .tile.bad .v{color:#b42318} .tile.ok .v{color:#067647}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:12px}
table{border-collapse:collapse;width:100%} th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eef1f4}
th{color:#5b6b80;font-weight:500} td.n{text-align:right;font-variant-numeric:tabular-nums}
.none{color:#8a97a8}
</style></head><body>
<h1>proxmox-mcp</h1>
<div class="sub">version {{.Version}} · schema {{.SchemaOrigin}} {{.SchemaSHA}} · {{.Endpoints}} endpoints · scraped from this daemon's own registry</div>
<div class="grid">
{{range .Tiles}}<div class="tile {{.Class}}"><div class="v">{{.Value}}</div><div class="k">{{.Name}}</div></div>
{{end}}</div>
<div class="cols">
{{range .Tables}}<section><h2>{{.Title}}</h2>{{if .Rows}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if $i}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table>{{else}}<div class="none">nothing yet</div>{{end}}</section>
{{end}}</div></body></html>
`))

type tile struct{ Name, Value, Class string }

type table struct {
	Title string
	Head  []string
	Rows  [][]string
}

type page struct {
	Version, SchemaOrigin, SchemaSHA, Endpoints string
	Tiles                                       []tile
	Tables                                      []table
}

func (m *Metrics) statusPage(w http.ResponseWriter, r *http.Request) {
	families, err := m.reg.Gather()
	if err != nil && len(families) == 0 {
		http.Error(w, "the metrics could not be gathered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	p := buildPage(families)
	pageHeaders(w)
	if err := pageTemplate.Execute(w, p); err != nil {
		m.o.Logger.Warn("metrics: status page", "err", err)
	}
}

// byName indexes gathered families by name.
type byName map[string]*dto.MetricFamily

func (f byName) metrics(name string) []*dto.Metric {
	if mf := f[namespace+"_"+name]; mf != nil {
		return mf.Metric
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// sum adds a series' values, keeping those whose labels pass keep.
func (f byName) sum(name string, keep func(*dto.Metric) bool) (float64, bool) {
	ms := f.metrics(name)
	total := 0.0
	for _, m := range ms {
		if keep == nil || keep(m) {
			total += value(m)
		}
	}
	return total, len(ms) > 0
}

func count(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

// quantile estimates a quantile of a histogram by linear interpolation in
// its buckets, as Prometheus's histogram_quantile does.
func quantile(q float64, h *dto.Histogram) float64 {
	n := float64(h.GetSampleCount())
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	prevBound, prevCount := 0.0, 0.0
	for _, b := range h.Bucket {
		c := float64(b.GetCumulativeCount())
		if c >= rank {
			if c == prevCount {
				return b.GetUpperBound()
			}
			return prevBound + (b.GetUpperBound()-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b.GetUpperBound(), c
	}
	return prevBound
}

func millis(s float64) string {
	if math.IsNaN(s) {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", s*1000)
}

func buildPage(families []*dto.MetricFamily) page {
	f := byName{}
	for _, mf := range families {
		f[mf.GetName()] = mf
	}
	p := page{SchemaOrigin: "–", SchemaSHA: "", Endpoints: "–", Version: "–"}
	for _, m := range f.metrics("build_info") {
		p.Version = label(m, "version")
	}
	for _, m := range f.metrics("schema_info") {
		p.SchemaOrigin, p.SchemaSHA = label(m, "origin"), label(m, "sha256")
		if len(p.SchemaSHA) > 12 {
			p.SchemaSHA = p.SchemaSHA[:12]
		}
	}
	if v, ok := f.sum("schema_endpoints", nil); ok {
		p.Endpoints = count(v, ok)
	}
	healthy, hok := f.sum("schema_healthy", nil)
	schemaTile := tile{Name: "schema", Value: "–"}
	if hok {
		schemaTile = tile{Name: "schema", Value: "current", Class: "ok"}
		if healthy == 0 {
			schemaTile = tile{Name: "schema", Value: "degraded", Class: "bad"}
		}
	}
	calls, cok := f.sum("tool_calls_total", nil)
	denied, _ := f.sum("tool_calls_total", func(m *dto.Metric) bool { return label(m, "outcome") == "denied" })
	errs, _ := f.sum("tool_calls_total", func(m *dto.Metric) bool {
		o := label(m, "outcome")
		return o == "error" || o == "task_failed" || o == "uncertain"
	})
	warn := func(name string, v float64, ok bool, class string) tile {
		t := tile{Name: name, Value: count(v, ok)}
		if ok && v > 0 {
			t.Class = class
		}
		return t
	}
	open, ook := f.sum("journal_open_intents", nil)
	unknown, uok := f.sum("journal_unknown_outcomes", nil)
	running, rok := f.sum("jobs_running", nil)
	sessions, sok := f.sum("sessions_open", nil)
	keyFail, kok := f.sum("key_failures_total", nil)
	limited, lok := f.sum("rate_limited_total", nil)
	p.Tiles = []tile{
		schemaTile,
		{Name: "tool calls", Value: count(calls, cok)},
		warn("denied", denied, cok, "warn"),
		warn("errors", errs, cok, "bad"),
		{Name: "sessions open", Value: count(sessions, sok)},
		warn("open intents", open, ook, "warn"),
		warn("unknown outcomes", unknown, uok, "bad"),
		{Name: "jobs running", Value: count(running, rok)},
		warn("key failures", keyFail, kok, "warn"),
		warn("rate limited", limited, lok, "warn"),
	}

	callsT := table{Title: "Tool calls", Head: []string{"tool", "outcome", "decision", "calls"}}
	for _, m := range f.metrics("tool_calls_total") {
		callsT.Rows = append(callsT.Rows, []string{label(m, "tool"), label(m, "outcome"), label(m, "decision"), count(value(m), true)})
	}
	slices.SortFunc(callsT.Rows, func(a, b []string) int { return cmp.Compare(strings.Join(a[:3], " "), strings.Join(b[:3], " ")) })

	pveT := table{Title: "PVE requests", Head: []string{"class", "method", "requests", "p50", "p99"}}
	for _, m := range f.metrics("pve_request_duration_seconds") {
		h := m.Histogram
		pveT.Rows = append(pveT.Rows, []string{label(m, "class"), label(m, "method"), count(float64(h.GetSampleCount()), true),
			millis(quantile(.5, h)), millis(quantile(.99, h))})
	}
	slices.SortFunc(pveT.Rows, func(a, b []string) int { return cmp.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })

	journalT := table{Title: "Journal", Head: []string{"figure", "value"}}
	for _, m := range f.metrics("journal_commit_duration_seconds") {
		h := m.Histogram
		journalT.Rows = append(journalT.Rows,
			[]string{"commits", count(float64(h.GetSampleCount()), true)},
			[]string{"commit p50", millis(quantile(.5, h))},
			[]string{"commit p99", millis(quantile(.99, h))})
	}
	if v, ok := f.sum("journal_rows_total", nil); ok {
		journalT.Rows = append(journalT.Rows, []string{"rows written", count(v, ok)})
	}
	if v, ok := f.sum("journal_write_failures_total", nil); ok {
		journalT.Rows = append(journalT.Rows, []string{"write failures", count(v, ok)})
	}

	edgeT := table{Title: "Listeners and refusals", Head: []string{"listener", "address", "refused", "key failures"}}
	addrs := map[string]string{}
	for _, m := range f.metrics("listener_info") {
		addrs[label(m, "listener")] = label(m, "address")
	}
	names := make([]string, 0, len(addrs))
	for n := range addrs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ref, _ := f.sum("http_refusals_total", func(m *dto.Metric) bool { return label(m, "listener") == n })
		kf, _ := f.sum("key_failures_total", func(m *dto.Metric) bool { return label(m, "listener") == n })
		edgeT.Rows = append(edgeT.Rows, []string{n, addrs[n], count(ref, true), count(kf, true)})
	}
	p.Tables = []table{callsT, pveT, journalT, edgeT}
	return p
}
