// Package transport owns how clients reach the daemon: the Streamable HTTP
// listeners with their guards (Host and Origin allow-lists against DNS
// rebinding, a real body-size limit, bearer-key authentication, timeouts),
// the unauthenticated /healthz and /readyz, and stdio for local use.
package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxBody is the largest request body accepted: 1 MiB.
const DefaultMaxBody = 1 << 20

// ErrRateLimited is returned by an Authenticator for a source that failed too
// often; the listener answers 429 with Retry-After.
var ErrRateLimited = errors.New("too many failed attempts")

// RateLimitError carries how long to wait, and why.
type RateLimitError struct {
	RetryAfter time.Duration
	// Reason says which limit; "too many failed attempts" when empty.
	Reason string
}

func (e *RateLimitError) Error() string {
	if e.Reason != "" {
		return "too many requests: " + e.Reason
	}
	return "too many failed attempts"
}

// Is matches ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// ForbiddenError is returned by an Authenticator for a caller the listener
// will not serve whatever its key: one whose Tailnet identity cannot be
// established. The listener answers 403 with the reason.
type ForbiddenError struct {
	Reason string
	Err    error
}

func (e *ForbiddenError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// Authenticator verifies a bearer key and returns the request context
// carrying the caller. listener names the listener (loopback, lan, tailnet)
// and source the client address.
type Authenticator func(ctx context.Context, key, listener, source string, r *http.Request) (context.Context, error)

// Readiness reports the checks of /readyz: name -> "ok" or what is wrong.
// It must not reveal secrets.
type Readiness func(ctx context.Context) map[string]string

// HTTPOptions configure one HTTP listener's handler.
type HTTPOptions struct {
	// Listener names it in logs and in the caller's principal.
	Listener string
	// MCP is the Streamable HTTP handler, served at /mcp.
	MCP http.Handler
	// Authenticate verifies the bearer key of every /mcp request.
	Authenticate Authenticator
	// AllowedHosts are the Host header values accepted (host or host:port);
	// any other is refused with 403, which stops DNS rebinding.
	AllowedHosts []string
	// HostAllowed, when set, is asked about a Host (lower-cased, as sent)
	// that AllowedHosts does not list: for a listener whose names can
	// change while it runs (the Tailnet node's). One of the two is
	// required.
	HostAllowed func(host string) bool
	// AllowedOrigins are the Origin values accepted; a request without an
	// Origin (every non-browser client) is accepted, any other Origin is 403.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body; DefaultMaxBody when zero.
	MaxBodyBytes int64
	// Ready answers /readyz.
	Ready Readiness
	// Refused is told of every refusal (for the journal); may be nil.
	Refused func(r *http.Request, status int, reason string)
	// SourceLimiter, when set, bounds the requests of each client address
	// before anything else is done for them (the key's check included);
	// loopback listeners have one source and go without.
	SourceLimiter *Limiter
	// Sessions, when set, caps the sessions open over every listener: an
	// initialize that would open one more is refused with 503.
	Sessions *Sessions
	Logger   *slog.Logger
}

// NewHandler builds the listener's handler: /mcp behind the guards and
// authentication, /healthz and /readyz without a key.
func NewHandler(o HTTPOptions) (http.Handler, error) {
	if o.MCP == nil || o.Authenticate == nil {
		return nil, errors.New("transport: an MCP handler and an authenticator are required")
	}
	if len(o.AllowedHosts) == 0 && o.HostAllowed == nil {
		return nil, errors.New("transport: at least one allowed Host is required")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	g := &guard{o: o, hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range o.AllowedHosts {
		g.hosts[strings.ToLower(h)] = true
	}
	for _, or := range o.AllowedOrigins {
		g.origins[strings.ToLower(strings.TrimSuffix(or, "/"))] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", g.healthz)
	mux.HandleFunc("/readyz", g.readyz)
	mux.HandleFunc("/mcp", g.mcp)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		g.refuse(w, r, http.StatusNotFound, "not found: the MCP endpoint is /mcp")
	})
	return g.hostCheck(mux), nil
}

type guard struct {
	o       HTTPOptions
	hosts   map[string]bool
	origins map[string]bool
}

// hostCheck refuses requests whose Host is not the listener's own: a web
// page that rebinds a DNS name to 127.0.0.1 still sends its own name.
func (g *guard) hostCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(strings.ToLower(r.Host)) {
			g.refuse(w, r, http.StatusForbidden, "forbidden: Host "+strconv.Quote(r.Host)+" is not this listener's")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed accepts a listed Host, with or without its port, or one the
// HostAllowed hook accepts.
func (g *guard) hostAllowed(host string) bool {
	if g.hosts[host] {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil && g.hosts[h] {
		return true
	}
	return g.o.HostAllowed != nil && g.o.HostAllowed(host)
}

func (g *guard) mcp(w http.ResponseWriter, r *http.Request) {
	if g.o.SourceLimiter != nil {
		src, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			src = r.RemoteAddr
		}
		if ok, wait := g.o.SourceLimiter.Allow(src); !ok {
			g.tooMany(w, r, wait, "too many requests from "+src)
			return
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.origins[strings.ToLower(strings.TrimSuffix(origin, "/"))] {
		g.refuse(w, r, http.StatusForbidden, "forbidden: Origin "+strconv.Quote(origin)+" is not allowed")
		return
	}
	if r.ContentLength > g.o.MaxBodyBytes {
		g.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is %d bytes, over the %d-byte limit", r.ContentLength, g.o.MaxBodyBytes))
		return
	}
	key, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="proxmox-mcp"`)
		g.refuse(w, r, http.StatusUnauthorized, "unauthorized: send Authorization: Bearer <key>")
		return
	}
	ctx, err := g.o.Authenticate(r.Context(), key, g.o.Listener, r.RemoteAddr, r)
	if err != nil {
		var rl *RateLimitError
		if errors.As(err, &rl) {
			g.tooMany(w, r, rl.RetryAfter, err.Error())
			return
		}
		var fe *ForbiddenError
		if errors.As(err, &fe) {
			g.refuse(w, r, http.StatusForbidden, "forbidden: "+fe.Reason)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="proxmox-mcp", error="invalid_token"`)
		g.refuse(w, r, http.StatusUnauthorized, "unauthorized: the key was not accepted")
		return
	}
	// The body is read here, up to the limit, so that a chunked body over
	// it is refused with 413 like a declared one.
	body, err := io.ReadAll(io.LimitReader(r.Body, g.o.MaxBodyBytes+1))
	if err != nil {
		g.refuse(w, r, http.StatusBadRequest, "unreadable request body: "+err.Error())
		return
	}
	if int64(len(body)) > g.o.MaxBodyBytes {
		g.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the %d-byte limit", g.o.MaxBodyBytes))
		return
	}
	if g.o.Sessions != nil && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" &&
		g.o.Sessions.Full() && isInitialize(body) {
		w.Header().Set("Retry-After", "30")
		g.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("too many sessions: %d are open, the most this daemon keeps (http.max_sessions); close one or wait for an idle one to end", g.o.Sessions.Open()))
		return
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.o.MCP.ServeHTTP(w, r)
}

// tooMany answers 429 with how long to wait.
func (g *guard) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration, reason string) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	g.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("%s; retry after %d s", reason, secs))
}

// isInitialize reports whether a JSON-RPC body (one message, or a batch)
// is an initialize request: the one that opens a session.
func isInitialize(body []byte) bool {
	var one struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &one) == nil {
		return one.Method == "initialize"
	}
	var batch []struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &batch) == nil {
		for _, m := range batch {
			if m.Method == "initialize" {
				return true
			}
		}
	}
	return false
}

func bearer(h string) (string, bool) {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != ""
}

// healthz answers that the process serves; it says nothing else.
func (g *guard) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz runs the readiness checks: 200 when all pass, 503 otherwise.
func (g *guard) readyz(w http.ResponseWriter, r *http.Request) {
	if g.o.Ready == nil {
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := g.o.Ready(ctx)
	ready := true
	for _, v := range checks {
		ready = ready && v == "ok"
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ready": ready, "checks": checks})
}

func (g *guard) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	if g.o.Refused != nil {
		g.o.Refused(r, status, reason)
	}
	g.o.Logger.Info("transport: refused", "listener", g.o.Listener, "status", status, "source", r.RemoteAddr, "reason", reason)
	writeJSON(w, status, map[string]string{"error": reason})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// Timeouts bound how long a client may take; zero fields take the
// defaults shown.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (10 s).
	ReadHeader time.Duration
	// Read bounds reading a whole request (60 s).
	Read time.Duration
	// Idle closes a kept-alive connection that sends nothing (2 min).
	Idle time.Duration
}

// NewServer wraps a handler with the timeouts against slow clients. Writes
// have no deadline: a tool call may wait for a task and stream progress;
// each call's own deadline bounds it.
func NewServer(h http.Handler, t Timeouts) *http.Server {
	if t.ReadHeader <= 0 {
		t.ReadHeader = 10 * time.Second
	}
	if t.Read <= 0 {
		t.Read = 60 * time.Second
	}
	if t.Idle <= 0 {
		t.Idle = 2 * time.Minute
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    64 << 10,
	}
}

// LoopbackHosts are the Host values of a loopback listener on addr.
func LoopbackHosts(addr string) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %q: the loopback listener binds only 127.0.0.0/8 or ::1", addr)
	}
	hosts := []string{net.JoinHostPort(host, port), "localhost:" + port}
	canonical := "127.0.0.1:" + port
	if ip.To4() == nil {
		canonical = "[::1]:" + port
	}
	if hosts[0] != canonical {
		hosts = append(hosts, canonical)
	}
	return hosts, nil
}
