package daemon

import (
	"bytes"
	"html/template"
	"io"
	"time"
)

// The status page at /status of the metrics listener: the daemon's Status
// (what /status.json serves and `proxmox-mcp status` prints) as one HTML
// page a person reads in a browser. It is rendered on the server with
// html/template, which escapes every value; it has no script and loads
// nothing (the handler's Content-Security-Policy forbids both), and it
// refreshes itself every 10 s. It shows what Status holds and nothing
// more: counts, addresses and states, never a key, a key's name or a
// secret.

var statusPageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="10">
<title>proxmox-mcp status</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;background:#f6f7f9;color:#1d2430}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:15px;margin:0 0 8px;color:#3b4a5f}
.sub{color:#5b6b80;margin-bottom:12px}
.state{display:inline-block;padding:1px 8px;border-radius:10px;font-size:13px;font-weight:600;background:#fef0c7;color:#93370d}
.state.serving{background:#d1fadf;color:#05603a}
.line{font-family:ui-monospace,monospace;font-size:12px;color:#3b4a5f;margin-bottom:14px;overflow-wrap:anywhere}
.problem{background:#fee4e2;border:1px solid #fda29b;color:#7a271a;border-radius:6px;padding:8px 12px;margin-bottom:14px;overflow-wrap:anywhere}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:10px;margin-bottom:16px}
.tile{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:8px 10px}
.tile .v{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
.tile .k{color:#5b6b80;font-size:12px}
.tile.warn .v{color:#b54708}
.tile.bad .v{color:#b42318}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:12px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eef1f4;vertical-align:top;overflow-wrap:anywhere}
th{color:#5b6b80;font-weight:500;white-space:nowrap}
td.n{font-variant-numeric:tabular-nums}
.ok{color:#067647}
.bad{color:#b42318}
.none{color:#8a97a8}
footer{margin-top:16px;color:#5b6b80;font-size:12px}
</style>
</head>
<body>
<h1>proxmox-mcp <span class="state {{.S.State}}">{{.S.State}}</span></h1>
<div class="sub">version {{.S.Version}} · pid {{.S.PID}} · started {{when .S.Started}} · up {{.Uptime}}</div>
<div class="line">{{.S.Line}}</div>
{{with .S.LastError}}<div class="problem">last error: {{.}}</div>
{{end}}{{with .S.PendingError}}<div class="problem">the journal's pending writes cannot be read: {{.}}</div>
{{end}}<div class="grid">
<div class="tile"><div class="v">{{.S.Counts.Calls}}</div><div class="k">tool calls</div></div>
<div class="tile{{if .S.Counts.Denied}} warn{{end}}"><div class="v">{{.S.Counts.Denied}}</div><div class="k">denied</div></div>
<div class="tile{{if .S.Counts.Errors}} bad{{end}}"><div class="v">{{.S.Counts.Errors}}</div><div class="k">errors</div></div>
<div class="tile"><div class="v">{{.S.Sessions}}</div><div class="k">sessions open</div></div>
<div class="tile{{if .S.Counts.KeyFailures}} warn{{end}}"><div class="v">{{.S.Counts.KeyFailures}}</div><div class="k">key failures</div></div>
<div class="tile{{if .S.Counts.Refusals}} warn{{end}}"><div class="v">{{.S.Counts.Refusals}}</div><div class="k">HTTP refusals</div></div>
<div class="tile{{if .S.Counts.RateLimited}} warn{{end}}"><div class="v">{{.S.Counts.RateLimited}}</div><div class="k">rate limited</div></div>
<div class="tile{{if .S.Pending.OpenIntents}} warn{{end}}"><div class="v">{{.S.Pending.OpenIntents}}</div><div class="k">open intents</div></div>
<div class="tile{{if .S.Pending.Unknown}} bad{{end}}"><div class="v">{{.S.Pending.Unknown}}</div><div class="k">unknown outcomes</div></div>
<div class="tile"><div class="v">{{.S.Pending.RunningJobs}}</div><div class="k">jobs running</div></div>
</div>
<div class="cols">
<section><h2>Listeners</h2>{{if .S.Listeners}}<table>
<tr><th>listener</th><th>address</th><th>URL</th></tr>
{{range .S.Listeners}}<tr><td>{{.Name}}</td><td>{{.Address}}</td><td>{{.URL}}</td></tr>
{{end}}</table>{{else}}<div class="none">none open</div>{{end}}</section>
<section><h2>Schema</h2><table>
<tr><th>health</th><td>{{if .S.SchemaHealthy}}<span class="ok">current</span>{{else}}<span class="bad">degraded</span>{{end}}</td></tr>
<tr><th>source</th><td>{{.S.Schema.Source}} ({{.S.Schema.Origin}})</td></tr>
<tr><th>endpoints</th><td class="n">{{.S.Schema.Methods}} on {{.S.Schema.Paths}} paths</td></tr>
<tr><th>sha256</th><td>{{short .S.Schema.SHA256}}</td></tr>
<tr><th>loaded</th><td>{{when .S.Schema.LoadedAt}}</td></tr>
<tr><th>reloads</th><td class="n">{{.S.Schema.Reloads}}</td></tr>
<tr><th>checked</th><td>{{when .S.Schema.CheckedAt}}</td></tr>
{{with .S.Schema.LastError}}<tr><th>last error</th><td class="bad">{{.}}</td></tr>
{{end}}{{with .S.Schema.CacheError}}<tr><th>cache</th><td class="bad">{{.}}</td></tr>
{{end}}</table></section>
<section><h2>Keys and policies</h2><table>
<tr><th>keys</th><td class="n">{{.S.Keys.Total}}</td></tr>
{{range $state, $n := .S.Keys.ByState}}<tr><th>{{$state}}</th><td class="n">{{$n}}</td></tr>
{{end}}{{with .S.Keys.Error}}<tr><th>error</th><td class="bad">{{.}}</td></tr>
{{end}}<tr><th>custom policies</th><td class="n">{{.S.Policies}}</td></tr>
<tr><th>cluster</th><td>{{if .S.Cluster.Enabled}}{{.S.Cluster.Check}}{{else}}<span class="none">off</span>{{end}}</td></tr>
</table></section>
<section><h2>Journal</h2><table>
<tr><th>open intents</th><td class="n">{{.S.Pending.OpenIntents}}</td></tr>
<tr><th>unknown outcomes</th><td class="n">{{.S.Pending.Unknown}}</td></tr>
<tr><th>jobs running</th><td class="n">{{.S.Pending.RunningJobs}}</td></tr>
<tr><th>reconciliation</th><td>{{with .S.Reconciliation}}{{.}}{{else}}<span class="none">–</span>{{end}}</td></tr>
</table></section>
</div>
<footer>rendered {{when .Now}} · refreshes every 10 s · <a href="/status.json">/status.json</a> · <a href="/metrics">/metrics</a> · <a href="/">figures</a></footer>
</body>
</html>
`))

// RenderStatusPage writes the status page of st as the daemon sees it at
// now (its uptime is now - st.Started).
func RenderStatusPage(w io.Writer, st Status, now time.Time) error {
	up := "–"
	if !st.Started.IsZero() {
		up = now.Sub(st.Started).Round(time.Second).String()
	}
	var b bytes.Buffer
	if err := statusPageTemplate.Execute(&b, struct {
		S      Status
		Now    time.Time
		Uptime string
	}{st, now, up}); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
