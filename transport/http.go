// Package transport owns how clients reach the daemon: the Streamable HTTP
// listeners with their guards (a per-source request limit, Host and Origin
// allow-lists against DNS rebinding, a real body-size limit, bearer-key
// authentication, timeouts), MCP sessions bound to the caller that opened
// them and capped over the daemon and per key, the unauthenticated
// /healthz and /readyz (its checks run at most once a second, and shown in
// full only on loopback), and stdio for local use.
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
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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
	// Ready answers /readyz. The handler runs it at most once per
	// ReadyCacheTTL, however many ask at once, and shows its checks only
	// to loopback callers; others get ready or not.
	Ready Readiness
	// Refused is told of every refusal (for the journal); may be nil. Once
	// the key has been accepted, r carries the authenticated context.
	Refused func(r *http.Request, status int, reason string)
	// SourceLimiter, when set, bounds the requests of each client address
	// (an IPv6 client by its /64, see SourceKey) before anything else is
	// done for them, on every path; loopback listeners have one source and
	// go without.
	SourceLimiter *Limiter
	// Sessions, when set, binds every MCP session to the caller that
	// opened it and caps them, over every listener and per key: an
	// initialize that would open one too many is refused (503 at the cap,
	// 429 at the key's quota), and a session id used by any other caller
	// is answered 404. The MCP handler must be NewStreamable with the same
	// Sessions.
	Sessions *Sessions
	// SessionOwner tells, from the context Authenticate returned, who the
	// caller is for its sessions; required with Sessions.
	SessionOwner func(ctx context.Context) SessionOwner
	Logger       *slog.Logger
}

// ReadyCacheTTL is how long one run of the readiness checks answers
// /readyz: no answer reflects checks started longer ago than this.
const ReadyCacheTTL = time.Second

// NewHandler builds the listener's handler: /mcp behind the guards and
// authentication, /healthz and /readyz without a key.
func NewHandler(o HTTPOptions) (http.Handler, error) {
	if o.MCP == nil || o.Authenticate == nil {
		return nil, errors.New("transport: an MCP handler and an authenticator are required")
	}
	if len(o.AllowedHosts) == 0 && o.HostAllowed == nil {
		return nil, errors.New("transport: at least one allowed Host is required")
	}
	if o.Sessions != nil && o.SessionOwner == nil {
		return nil, errors.New("transport: Sessions need a SessionOwner to bind each session to its caller")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	g := &guard{o: o, hosts: map[string]bool{}, origins: map[string]bool{}}
	if o.Ready != nil {
		g.ready = newReadyCache(o.Ready, ReadyCacheTTL, 5*time.Second)
	}
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
	mux.HandleFunc("/.well-known/", g.wellKnown)
	// The endpoints an MCP client's OAuth code falls back to when the
	// discovery documents are missing (the 2025-03-26 defaults, at the
	// server's origin): after a 401 for a wrong key, mcp-remote registers
	// a client at /register and shows the person what it answered, so that
	// answer must say what to fix.
	for _, p := range []string{"/register", "/authorize", "/token"} {
		mux.HandleFunc(p, g.wellKnown)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		g.refuse(w, r, http.StatusNotFound, "not found: the MCP endpoint is /mcp")
	})
	return g.sourceLimit(g.hostCheck(mux)), nil
}

// noOAuth is what a client that would try OAuth is told: the key is the
// whole of it.
const noOAuth = "this server takes proxmox-mcp API keys (proxmox-mcp key create), not OAuth: there is nothing to log in to or register with"

// noOAuthHere is the answer of the discovery documents and the OAuth
// fallback endpoints: what a person whose client came here after a 401
// should do.
const noOAuthHere = "not found: " + noOAuth + "; a client that came here after a 401 sent a key that was not accepted (or none): check the key in its Authorization: Bearer header"

// wellKnown answers the OAuth discovery documents clients probe for
// (RFC 8414, RFC 9728, OpenID), and the OAuth endpoints they fall back to,
// with a plain 404 that says why: it is no refusal of a caller, so nothing
// is journaled; the source limit still counts it.
func (g *guard) wellKnown(w http.ResponseWriter, r *http.Request) {
	g.o.Logger.Debug("transport: a discovery probe", "listener", g.o.Listener, "source", r.RemoteAddr, "path", r.URL.Path)
	writeJSON(w, http.StatusNotFound, map[string]string{"error": noOAuthHere})
}

type guard struct {
	o       HTTPOptions
	hosts   map[string]bool
	origins map[string]bool
	ready   *readyCache
}

// sourceLimit bounds the requests of each client address, whatever they
// ask for: /readyz and unknown paths cost a token like /mcp.
func (g *guard) sourceLimit(next http.Handler) http.Handler {
	if g.o.SourceLimiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := SourceKey(r.RemoteAddr)
		if ok, wait := g.o.SourceLimiter.Allow(src); !ok {
			g.tooMany(w, r, wait, "too many requests from "+src)
			return
		}
		next.ServeHTTP(w, r)
	})
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
		g.refuse(w, r, http.StatusUnauthorized, "unauthorized: send Authorization: Bearer <key>, "+noOAuth)
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
		w.Header().Set("WWW-Authenticate", `Bearer realm="proxmox-mcp", error="invalid_token", error_description="the API key was not accepted"`)
		g.refuse(w, r, http.StatusUnauthorized, "unauthorized: the key was not accepted; "+noOAuth)
		return
	}
	// From here on a refusal is recorded with the caller the key made.
	r = r.WithContext(ctx)
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
	if g.o.Sessions != nil && !isModern(r, body) {
		gr, release, ok := g.session(w, r, body)
		if !ok {
			return
		}
		defer release()
		r = r.WithContext(withGrant(r.Context(), gr))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.o.MCP.ServeHTTP(w, r)
}

// session applies the session rules to a request of the protocol versions
// that have sessions (before 2026-07-28): an initialize gets a place
// within the caps or is refused; a request naming a session is served
// only if the session is its caller's; a GET stream or DELETE must name
// one. It returns the grant mcp-go's session-id manager acts on, and what
// to do when the request is done.
func (g *guard) session(w http.ResponseWriter, r *http.Request, body []byte) (*grant, func(), bool) {
	s := g.o.Sessions
	owner := g.o.SessionOwner(r.Context())
	if owner.Key == "" {
		g.refuse(w, r, http.StatusInternalServerError, "the caller has no session owner (a daemon bug); nothing was served")
		return nil, nil, false
	}
	gr := &grant{s: s, owner: owner}
	id := r.Header.Get("Mcp-Session-Id")
	switch {
	case r.Method == http.MethodPost && isInitialize(body):
		// Every initialize opens a session, whatever Mcp-Session-Id it
		// carries, so every one counts against the caps.
		res, err := s.reserve(owner)
		if err != nil {
			var le *sessionLimitError
			if errors.As(err, &le) && le.perKey {
				g.tooMany(w, r, le.retryAfter, err.Error())
				return nil, nil, false
			}
			w.Header().Set("Retry-After", "30")
			g.refuse(w, r, http.StatusServiceUnavailable, err.Error())
			return nil, nil, false
		}
		for _, old := range res.evicted {
			g.endSession(r.Context(), owner, old)
		}
		gr.res = res
		return gr, res.release, true
	case id != "":
		switch s.acquire(id, owner) {
		case sessionLive:
			return gr, func() { s.release(id) }, true
		case sessionEnded:
			g.refuseSession(w, r, body, http.StatusNotFound, sessionEndedMsg, sessionEndedMsg)
		case sessionForeign:
			// The answer is the one for an id never given out: another
			// caller learns nothing of the session; the journal learns
			// who tried.
			g.refuseSession(w, r, body, http.StatusNotFound, sessionNotFoundMsg,
				fmt.Sprintf("session %s is not this caller's (it was opened by another key or Tailnet identity); refused as not found", shortSession(id)))
		default:
			g.refuseSession(w, r, body, http.StatusNotFound, sessionNotFoundMsg, sessionNotFoundMsg)
		}
		return nil, nil, false
	case r.Method == http.MethodPost || r.Method == http.MethodGet || r.Method == http.MethodDelete:
		// mcp-go would answer a POST without an id with a plain-text 404
		// (it looks the empty id up), and open an uncounted session for a
		// GET.
		msg := "bad request: " + r.Method + " /mcp needs the Mcp-Session-Id header of a session this key opened (initialize first)"
		g.refuseSession(w, r, body, http.StatusBadRequest, msg, msg)
		return nil, nil, false
	}
	return gr, func() {}, true
}

// What a caller is told of a session it cannot use.
const (
	sessionEndedMsg    = "session ended (closed, idle past http.session_idle_timeout, or ended to make room): initialize a new one"
	sessionNotFoundMsg = "session not found: initialize a new one"
)

// endSession has mcp-go drop the state of a session the caps ended to
// make room, as the session's own DELETE would.
func (g *guard) endSession(ctx context.Context, owner SessionOwner, id string) {
	req, err := http.NewRequestWithContext(withGrant(context.WithoutCancel(ctx), &grant{s: g.o.Sessions, owner: owner}), http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", id)
	g.o.MCP.ServeHTTP(discardResponse{h: http.Header{}}, req)
	g.o.Logger.Info("transport: ended a session unused for a while to make room for a new one of the same key",
		"listener", g.o.Listener, "key", owner.Key, "session", shortSession(id))
}

// discardResponse takes mcp-go's answer to a DELETE it was handed.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}

// shortSession is enough of a session id to tell it apart in a log.
func shortSession(id string) string {
	if len(id) > len(sessionPrefix)+8 {
		return id[:len(sessionPrefix)+8] + "…"
	}
	return id
}

// isModern reports whether mcp-go serves the request as protocol version
// 2026-07-28 or later, which has no sessions: by its header, or for a
// POST by its _meta, as mcp-go tells.
func isModern(r *http.Request, body []byte) bool {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	var m struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	return json.Unmarshal(body, &m) == nil && mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion())
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

// readyz answers whether the daemon is ready: 200 when every check
// passes, 503 otherwise. The checks' own words go only to loopback callers:
// they name what is wrong inside the host.
func (g *guard) readyz(w http.ResponseWriter, r *http.Request) {
	if g.ready == nil {
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
		return
	}
	checks, err := g.ready.get(r.Context())
	if err != nil {
		return // the client went away
	}
	ready := true
	for _, v := range checks {
		ready = ready && v == "ok"
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	if !isLoopback(r.RemoteAddr) {
		writeJSON(w, status, map[string]any{"ready": ready})
		return
	}
	writeJSON(w, status, map[string]any{"ready": ready, "checks": checks})
}

// isLoopback reports whether a client address is on the host itself.
func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func (g *guard) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	g.refuseRecorded(w, r, status, reason, reason)
}

// refuseRecorded answers a refusal and records it with a reason of its
// own: what the journal may know and the caller may not.
func (g *guard) refuseRecorded(w http.ResponseWriter, r *http.Request, status int, answer, record string) {
	g.record(r, status, record)
	writeJSON(w, status, map[string]string{"error": answer})
}

// record tells the journal and the log of a refusal.
func (g *guard) record(r *http.Request, status int, reason string) {
	if g.o.Refused != nil {
		g.o.Refused(r, status, reason)
	}
	g.o.Logger.Info("transport: refused", "listener", g.o.Listener, "status", status, "source", r.RemoteAddr, "reason", reason)
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
