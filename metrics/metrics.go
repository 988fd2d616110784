// Package metrics owns the daemon's Prometheus metrics: a registry of its
// own (never the process-wide default), the series the daemon's parts
// report into (calls, PVE requests, journal commits, schema loads, key
// failures and HTTP refusals), the figures read when Prometheus scrapes
// (sessions, the schema in use, listeners, open intents, unknown outcomes,
// running jobs), and the handler of the metrics listener.
//
// Every label comes from a bounded set: tool names from the schema's
// catalog (anything else is "other"), outcomes and decisions from their
// enumerations, listeners from the daemon's own names, PVE endpoints by
// class, never by path. No label carries a key, a secret, a path or a
// caller's text. docs/metrics.md lists the series.
package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// namespace prefixes every series of ours.
const namespace = "proxmox_mcp"

// Schema is the schema in use, as the scrape reports it.
type Schema struct {
	// Origin is file (apidoc.js) or cache (the last-known-good copy).
	Origin string
	// SHA256 identifies the bytes the registry was built from.
	SHA256 string
	// Endpoints counts the registry's endpoints.
	Endpoints int
	// Healthy: the registry is the current apidoc.js.
	Healthy bool
}

// Options are what the scrape reads and how labels are bounded. Every
// function may be nil: its series is then absent.
type Options struct {
	// Version is the build's version (proxmox_mcp_build_info).
	Version string
	// KnownTool reports whether a tool name is one the daemon serves; a
	// call of any other name is counted as tool "other".
	KnownTool func(name string) bool
	// Sessions is the number of MCP sessions open.
	Sessions func() int
	// Schema is the schema in use.
	Schema func() Schema
	// Listeners are the listeners' addresses by name.
	Listeners func() map[string]string
	// Pending counts the journal's open intents, unknown outcomes and
	// running jobs. It scans the journal, so a scrape reuses an answer
	// younger than PendingTTL.
	Pending    func(ctx context.Context) (journal.Pending, error)
	PendingTTL time.Duration
	// Journal returns the journal's write counters.
	Journal func() journal.Stats
	// Status, when set, is the daemon's state as one JSON value, served at
	// /status.json (what `proxmox-mcp status` reads). It must hold nothing
	// /metrics would not show: counts, addresses and states, no key names.
	Status func(context.Context) any
	// StatusPage, when set, renders the daemon's state (the same value as
	// Status) as an HTML page, served at /status; the handler adds the
	// headers. It must hold what Status holds and nothing more.
	StatusPage func(ctx context.Context, w io.Writer) error
	// Logger receives scrape errors.
	Logger *slog.Logger
	// Now is the clock of the Pending cache (time.Now).
	Now func() time.Time
}

// Metrics are the daemon's series. The methods are safe for concurrent
// use and cost a map lookup and an atomic add (docs/benchmarks.md).
type Metrics struct {
	o   Options
	reg *prometheus.Registry

	calls         *prometheus.CounterVec
	callDuration  *prometheus.HistogramVec
	pveDuration   *prometheus.HistogramVec
	pveRequests   *prometheus.CounterVec
	commit        prometheus.Histogram
	schemaLoads   *prometheus.CounterVec
	keyFailures   *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	rateLimited   *prometheus.CounterVec
	scrapeFailure *prometheus.CounterVec

	// open holds the writes between their intent and their receipt, so
	// that a receipt is counted with its call's tool and decision.
	openMu sync.Mutex
	open   map[string]openCall
}

// openCall is a write whose receipt has not come.
type openCall struct {
	tool, method string
	decision     policy.Effect
	start        time.Time
}

// maxOpen bounds the writes remembered between intent and receipt; past
// it the oldest is not dropped but the newest is counted without one
// (tool "other"), which only a bug that loses receipts could reach.
const maxOpen = 10000

// Buckets of request durations: 1 ms to 30 s.
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Buckets of journal commits (an fsync each): 0.1 ms to 5 s.
var commitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}

// New builds the registry with every series, the Go runtime's and the
// process's among them.
func New(o Options) (*Metrics, error) {
	if o.Logger == nil {
		return nil, errors.New("metrics: a logger is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PendingTTL <= 0 {
		o.PendingTTL = 30 * time.Second
	}
	m := &Metrics{o: o, reg: prometheus.NewRegistry(), open: map[string]openCall{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "tool_calls_total",
		Help: "MCP tool calls, by tool, journal outcome and policy decision (none: decided by nothing, such as search).",
	}, []string{"tool", "outcome", "decision"})
	m.callDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "tool_call_duration_seconds",
		Help:    "Time from a tool call's start to its journal row, by the PVE method it used (none for tools that call no endpoint).",
		Buckets: durationBuckets,
	}, []string{"method"})
	m.pveDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "pve_request_duration_seconds",
		Help:    "PVE API requests (each attempt, retries included), by endpoint class and method.",
		Buckets: durationBuckets,
	}, []string{"class", "method"})
	m.pveRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "pve_requests_total",
		Help: "PVE API requests (each attempt), by endpoint class, method and status class (error: no HTTP answer).",
	}, []string{"class", "method", "code"})
	m.commit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "journal_commit_duration_seconds",
		Help:    "Journal transactions, from begin to a durable (fsynced) commit; each holds one or more rows.",
		Buckets: commitBuckets,
	})
	m.schemaLoads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "schema_loads_total",
		Help: "Reads of apidoc.js, by result: loaded (first), reloaded (a new registry swapped in), unchanged, rejected (the old one kept).",
	}, []string{"result"})
	m.keyFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "key_failures_total",
		Help: "Bearer keys that were not accepted (unknown, wrong secret, revoked, expired, malformed), by listener.",
	}, []string{"listener"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "http_refusals_total",
		Help: "HTTP requests refused before any tool ran, by listener and status code.",
	}, []string{"listener", "code"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "rate_limited_total",
		Help: "HTTP requests refused by a rate limit or a session quota (429), by listener.",
	}, []string{"listener"})
	m.scrapeFailure = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "scrape_errors_total",
		Help: "Figures a scrape could not read, by figure.",
	}, []string{"figure"})
	for _, c := range []prometheus.Collector{
		m.calls, m.callDuration, m.pveDuration, m.pveRequests, m.commit, m.schemaLoads,
		m.keyFailures, m.refusals, m.rateLimited, m.scrapeFailure,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: namespace}),
		&stateCollector{m: m},
	} {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	// The series that every dashboard panel reads exist from the start,
	// at zero, rather than appearing with the first event.
	for _, r := range []schema.EventKind{schema.EventLoaded, schema.EventReloaded, schema.EventUnchanged, schema.EventRejected} {
		m.schemaLoads.WithLabelValues(string(r))
	}
	return m, nil
}

// Registry is the registry the handler serves (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Call counts one tool call: its tool, outcome and decision, and how long
// it took; method is the PVE method it used ("" for none).
func (m *Metrics) Call(tool string, outcome journal.Outcome, decision policy.Effect, method string, d time.Duration) {
	if m.o.KnownTool == nil || !m.o.KnownTool(tool) {
		tool = "other"
	}
	m.calls.WithLabelValues(tool, outcomeLabel(outcome), decisionLabel(decision)).Inc()
	m.callDuration.WithLabelValues(methodLabel(method)).Observe(d.Seconds())
}

// Intent remembers a write whose intent was journalled; its Receipt
// counts it.
func (m *Metrics) Intent(id, tool string, decision policy.Effect, method string, start time.Time) {
	if start.IsZero() {
		start = m.o.Now()
	}
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if len(m.open) < maxOpen {
		m.open[id] = openCall{tool: tool, method: method, decision: decision, start: start}
	}
}

// Receipt counts the write of an intent by how it ended, its duration
// measured from the intent's call time.
func (m *Metrics) Receipt(id string, outcome journal.Outcome) {
	m.openMu.Lock()
	c, ok := m.open[id]
	delete(m.open, id)
	m.openMu.Unlock()
	if !ok {
		m.Call("", outcome, "", "", 0)
		return
	}
	m.Call(c.tool, outcome, c.decision, c.method, m.o.Now().Sub(c.start))
}

// PVERequest records one request to PVE: method, the escaped path after
// the API root (only its class is kept), the HTTP status (0 when none
// came) and its duration.
func (m *Metrics) PVERequest(method, path string, status int, d time.Duration) {
	class, meth := PVEClass(path), methodLabel(method)
	m.pveDuration.WithLabelValues(class, meth).Observe(d.Seconds())
	m.pveRequests.WithLabelValues(class, meth, statusClass(status)).Inc()
}

// JournalCommit records one journal transaction's duration.
func (m *Metrics) JournalCommit(rows int, d time.Duration) { m.commit.Observe(d.Seconds()) }

// SchemaEvent counts one read of apidoc.js by its result.
func (m *Metrics) SchemaEvent(kind schema.EventKind) {
	switch kind {
	case schema.EventLoaded, schema.EventReloaded, schema.EventUnchanged, schema.EventRejected:
		m.schemaLoads.WithLabelValues(string(kind)).Inc()
	}
}

// KeyFailure counts a bearer key a listener did not accept.
func (m *Metrics) KeyFailure(listener string) {
	m.keyFailures.WithLabelValues(listenerLabel(listener)).Inc()
}

// Refusal counts an HTTP refusal of a listener; a 429 is also a
// rate-limit refusal.
func (m *Metrics) Refusal(listener string, status int) {
	l := listenerLabel(listener)
	code := "other"
	if status >= 100 && status <= 599 {
		code = strconv.Itoa(status)
	}
	m.refusals.WithLabelValues(l, code).Inc()
	if status == http.StatusTooManyRequests {
		m.rateLimited.WithLabelValues(l).Inc()
	}
}

// outcomeLabel bounds an outcome to the journal's.
func outcomeLabel(o journal.Outcome) string {
	switch o {
	case journal.OutcomeOK, journal.OutcomeError, journal.OutcomeDenied, journal.OutcomeUncertain, journal.OutcomeDryRun,
		journal.OutcomeConfirm, journal.OutcomeInvalid, journal.OutcomeTaskFailed, journal.OutcomeTaskRunning, journal.OutcomePending:
		return string(o)
	}
	return "other"
}

// decisionLabel bounds a decision to the policy's effects.
func decisionLabel(e policy.Effect) string {
	switch e {
	case policy.Allow, policy.Deny, policy.Confirm, policy.DryRun, policy.Breakglass:
		return string(e)
	case "":
		return "none"
	}
	return "other"
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
		return m
	case "":
		return "none"
	}
	return "other"
}

// listenerLabel bounds a listener to the daemon's names.
func listenerLabel(l string) string {
	switch l {
	case "loopback", "lan", "tailnet", "stdio":
		return l
	}
	return "other"
}

func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "error"
	}
	return strconv.Itoa(status/100) + "xx"
}

// PVEClass is the class of a PVE API path, its label in the PVE request
// series: guests (qemu, lxc), storage, tasks, the node's other endpoints,
// cluster, access, pools, version, other. Classes are few; paths are not.
func PVEClass(path string) string {
	path, _, _ = strings.Cut(path, "?")
	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch seg[0] {
	case "nodes":
		if len(seg) < 3 {
			return "nodes"
		}
		switch seg[2] {
		case "qemu", "lxc", "storage", "tasks":
			return seg[2]
		}
		return "node"
	case "cluster", "access", "pools", "version":
		return seg[0]
	case "storage":
		return "storage"
	}
	return "other"
}

// Handler serves /metrics in the Prometheus text format (and OpenMetrics
// when asked) to the hosts given, the figures as tables at /, the
// daemon's status page at /status and its state at /status.json (when
// Options has them), and refuses any other Host (DNS rebinding): hosts
// are what a Host header may say.
func (m *Metrics) Handler(hosts []string) http.Handler {
	allowed := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		allowed[strings.ToLower(h)] = true
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(m.o.Logger.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
		EnableOpenMetrics:   true,
	}))
	mux.HandleFunc("GET /{$}", m.statusPage)
	if m.o.Status != nil {
		mux.HandleFunc("GET /status.json", m.statusJSON)
	}
	if m.o.StatusPage != nil {
		mux.HandleFunc("GET /status", m.daemonStatusPage)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[strings.ToLower(r.Host)] {
			http.Error(w, "forbidden: Host "+strconv.Quote(r.Host)+" is not this listener's", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// statusJSON serves Options.Status.
func (m *Metrics) statusJSON(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	b, err := json.Marshal(m.o.Status(ctx))
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n')) //nolint:errcheck // the client's own failure
}

// daemonStatusPage serves Options.StatusPage: rendered whole before a
// byte is sent, so that a failure is a 500, not half a page.
func (m *Metrics) daemonStatusPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var b bytes.Buffer
	if err := m.o.StatusPage(ctx, &b); err != nil {
		m.o.Logger.Warn("metrics: /status page", "err", err)
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	pageHeaders(w)
	w.Write(b.Bytes()) //nolint:errcheck // the client's own failure
}

// pageHeaders are the headers of an HTML page of this listener: no
// script, no outside resource, no sniffing, no framing, no caching.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// Counts are the counters a person reads on the status page and in
// `proxmox-mcp status`, summed from the series since the daemon started.
type Counts struct {
	// Calls are the tool calls journalled; Denied those the policy
	// refused; Errors those that failed (error, task_failed, uncertain).
	Calls  int `json:"tool_calls"`
	Denied int `json:"denied"`
	Errors int `json:"errors"`
	// KeyFailures are bearer keys not accepted; Refusals HTTP requests
	// refused before any tool ran; RateLimited the 429s among them.
	KeyFailures int `json:"key_failures"`
	Refusals    int `json:"http_refusals"`
	RateLimited int `json:"rate_limited"`
}

// Counts sums the call and refusal counters now.
func (m *Metrics) Counts() Counts {
	var c Counts
	each(m.calls, func(labels map[string]string, v float64) {
		c.Calls += int(v)
		switch labels["outcome"] {
		case string(journal.OutcomeDenied):
			c.Denied += int(v)
		case string(journal.OutcomeError), string(journal.OutcomeTaskFailed), string(journal.OutcomeUncertain):
			c.Errors += int(v)
		}
	})
	each(m.keyFailures, func(_ map[string]string, v float64) { c.KeyFailures += int(v) })
	each(m.refusals, func(_ map[string]string, v float64) { c.Refusals += int(v) })
	each(m.rateLimited, func(_ map[string]string, v float64) { c.RateLimited += int(v) })
	return c
}

// each reads a counter vector's series: their labels and values.
func each(c prometheus.Collector, f func(labels map[string]string, v float64)) {
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	for pm := range ch {
		var d dto.Metric
		if pm.Write(&d) != nil || d.Counter == nil {
			continue
		}
		labels := make(map[string]string, len(d.Label))
		for _, l := range d.Label {
			labels[l.GetName()] = l.GetValue()
		}
		f(labels, d.Counter.GetValue())
	}
}

// stateCollector reads, at each scrape, what the daemon is: sessions, the
// schema, the listeners, the journal's pending counts.
type stateCollector struct {
	m *Metrics

	mu      sync.Mutex
	pending journal.Pending
	readAt  time.Time
	pendErr error
}

var (
	descBuild = prometheus.NewDesc(namespace+"_build_info", "The build: version and Go version (always 1).",
		[]string{"version", "goversion"}, nil)
	descSessions = prometheus.NewDesc(namespace+"_sessions_open", "MCP sessions open, over every listener.", nil, nil)
	descSchema   = prometheus.NewDesc(namespace+"_schema_info", "The API schema in use: origin (file or cache) and the SHA-256 of its bytes (always 1).",
		[]string{"origin", "sha256"}, nil)
	descEndpoints = prometheus.NewDesc(namespace+"_schema_endpoints", "Endpoints of the schema in use.", nil, nil)
	descHealthy   = prometheus.NewDesc(namespace+"_schema_healthy", "1 when the schema in use is the current apidoc.js, 0 otherwise (the last-known-good copy, or the last read rejected).", nil, nil)
	descListener  = prometheus.NewDesc(namespace+"_listener_info", "A listener the daemon serves on, with its address (always 1).",
		[]string{"listener", "address"}, nil)
	descOpen     = prometheus.NewDesc(namespace+"_journal_open_intents", "Writes whose intent has no receipt yet (in flight, or left by a crash for reconciliation).", nil, nil)
	descUnknown  = prometheus.NewDesc(namespace+"_journal_unknown_outcomes", "Writes whose outcome is uncertain or unknown and that no resolution has settled.", nil, nil)
	descRunning  = prometheus.NewDesc(namespace+"_jobs_running", "Writes whose PVE task was still running when last seen, not settled since.", nil, nil)
	descRows     = prometheus.NewDesc(namespace+"_journal_rows_total", "Rows written to the journal since the daemon started.", nil, nil)
	descCommits  = prometheus.NewDesc(namespace+"_journal_commits_total", "Journal transactions committed since the daemon started.", nil, nil)
	descFailures = prometheus.NewDesc(namespace+"_journal_write_failures_total", "Journal writes that failed since the daemon started.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuild, descSessions, descSchema, descEndpoints, descHealthy, descListener,
		descOpen, descUnknown, descRunning, descRows, descCommits, descFailures} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	o := c.m.o
	ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, o.Version, runtime.Version())
	if o.Sessions != nil {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(o.Sessions()))
	}
	if o.Schema != nil {
		s := o.Schema()
		ch <- prometheus.MustNewConstMetric(descSchema, prometheus.GaugeValue, 1, s.Origin, s.SHA256)
		ch <- prometheus.MustNewConstMetric(descEndpoints, prometheus.GaugeValue, float64(s.Endpoints))
		healthy := 0.0
		if s.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(descHealthy, prometheus.GaugeValue, healthy)
	}
	if o.Listeners != nil {
		for name, addr := range o.Listeners() {
			ch <- prometheus.MustNewConstMetric(descListener, prometheus.GaugeValue, 1, name, addr)
		}
	}
	if o.Pending != nil {
		if p, err := c.readPending(); err == nil {
			ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(p.OpenIntents))
			ch <- prometheus.MustNewConstMetric(descUnknown, prometheus.GaugeValue, float64(p.Unknown))
			ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(p.RunningJobs))
		}
	}
	if o.Journal != nil {
		st := o.Journal()
		ch <- prometheus.MustNewConstMetric(descRows, prometheus.CounterValue, float64(st.Rows))
		ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(st.Commits))
		ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(st.Failures))
	}
}

// readPending answers from the cache while it is younger than PendingTTL;
// a failed read is counted, logged and leaves the series out of this
// scrape (absent, not a made-up zero).
func (c *stateCollector) readPending() (journal.Pending, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.m.o.Now()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < c.m.o.PendingTTL {
		return c.pending, c.pendErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.pending, c.pendErr = c.m.o.Pending(ctx)
	c.readAt = now
	if c.pendErr != nil {
		c.m.scrapeFailure.WithLabelValues("journal_pending").Inc()
		c.m.o.Logger.Warn("metrics: the journal's pending counts could not be read", "err", c.pendErr)
	}
	return c.pending, c.pendErr
}
