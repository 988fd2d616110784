package pve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultBaseURL is the local pveproxy.
const DefaultBaseURL = "https://127.0.0.1:8006/api2/json"

// Config configures a Client.
type Config struct {
	// BaseURL is the API root; DefaultBaseURL when empty. Only https.
	BaseURL string
	// Token is the API token the client authenticates with.
	Token Token
	// TLS says how pveproxy's certificate is trusted; at least one source
	// must be set. There is no way to turn verification off.
	TLS TLSTrust
	// Timeout bounds a call whose context has no deadline; 30 s when zero.
	Timeout time.Duration
	// Retry governs retries of GET requests; see RetryPolicy.
	Retry RetryPolicy
	// MaxResponseBytes caps a response body; 64 MiB when zero.
	MaxResponseBytes int64
	// UserAgent is sent with every request.
	UserAgent string
	// Logger receives one debug line per retry; slog.Default() when nil.
	Logger *slog.Logger
	// Observe, when set, is told of every request sent (each attempt of
	// a retried GET): method, the escaped path after the API root, PVE's
	// HTTP status (0 when no answer came) and the time until its body
	// was read. The metrics classify the path; it must not block.
	Observe func(method, path string, status int, d time.Duration)
}

// Token is a PVE API token: USER@REALM!TOKENID and its secret.
type Token struct {
	// ID is user@realm!tokenid.
	ID string
	// Secret is the token's UUID.
	Secret Secret
}

// ParseToken reads "USER@REALM!TOKENID=SECRET" (the header value form).
func ParseToken(s string) (Token, error) {
	at := strings.LastIndexByte(s, '=')
	if at < 0 {
		return Token{}, errors.New("API token must be USER@REALM!TOKENID=SECRET")
	}
	t := Token{ID: s[:at], Secret: Secret(s[at+1:])}
	if err := t.validate(); err != nil {
		return Token{}, err
	}
	return t, nil
}

func (t Token) validate() error {
	user, name, ok := strings.Cut(t.ID, "!")
	if !ok || name == "" || !strings.Contains(user, "@") || strings.ContainsAny(t.ID, " =;") {
		return fmt.Errorf("API token ID %q must be USER@REALM!TOKENID", t.ID)
	}
	if t.Secret == "" {
		return errors.New("API token secret is empty")
	}
	return nil
}

// header is the Authorization header value.
func (t Token) header() string { return "PVEAPIToken=" + t.ID + "=" + t.Secret.Reveal() }

// Secret is a credential that never prints itself.
type Secret string

// Reveal returns the secret itself, for the wire.
func (s Secret) Reveal() string { return string(s) }

// String redacts.
func (s Secret) String() string { return "[redacted]" }

// GoString redacts.
func (s Secret) GoString() string { return "[redacted]" }

// LogValue redacts.
func (s Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalJSON redacts.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// RetryPolicy governs retries. Only GET is ever retried, and only on 429,
// 502, 503 or a connection that failed before a response; every other
// method is sent exactly once.
type RetryPolicy struct {
	// Attempts is the most tries of one GET, the first included; 3 when zero.
	Attempts int
	// Backoff is the first wait, doubled each time with jitter; 200 ms when zero.
	Backoff time.Duration
	// MaxBackoff caps a wait (and a Retry-After); 5 s when zero.
	MaxBackoff time.Duration
	// Budget is how many retries may be outstanding; each success earns back
	// a tenth of one. 10 when zero. It stops retry storms against a sick PVE.
	Budget float64
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 3
	}
	if p.Backoff <= 0 {
		p.Backoff = 200 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 5 * time.Second
	}
	if p.Budget <= 0 {
		p.Budget = 10
	}
	return p
}

// Client calls the PVE API. It is safe for concurrent use and keeps
// connections alive.
type Client struct {
	base    *url.URL
	token   Token
	http    *http.Client
	cfg     Config
	retry   RetryPolicy
	log     *slog.Logger
	budgetM sync.Mutex
	budget  float64
}

// New builds a client; it fails when the configuration cannot work.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimSuffix(cfg.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("pve: base URL: %w", err)
	}
	if base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("pve: base URL %q must be https://HOST:PORT/api2/json", cfg.BaseURL)
	}
	if err := cfg.Token.validate(); err != nil {
		return nil, fmt.Errorf("pve: %w", err)
	}
	tlsConf, err := cfg.TLS.config(base.Hostname())
	if err != nil {
		return nil, fmt.Errorf("pve: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 20
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "proxmox-mcp"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	transport := &http.Transport{
		TLSClientConfig:       tlsConf,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // the call's deadline governs
		ForceAttemptHTTP2:     false,
	}
	c := &Client{
		base:  base,
		token: cfg.Token,
		http:  &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		cfg:   cfg,
		retry: cfg.Retry.withDefaults(),
		log:   cfg.Logger,
	}
	c.budget = c.retry.Budget
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// TokenID is the id (user@realm!name) of the token the client sends: the
// user of the tasks its calls start.
func (c *Client) TokenID() string { return c.token.ID }

// Response is a decoded success envelope.
type Response struct {
	// Status is the HTTP status (200).
	Status int
	// Data is the raw "data" member; "null" when the handler returned nothing.
	Data json.RawMessage
	// Total is the "total" member of list answers, when present.
	Total *int64
	// Changes is the "changes" member, when present.
	Changes json.RawMessage
}

// Decode unmarshals Data into out.
func (r *Response) Decode(out any) error {
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("pve: decode data: %w", err)
	}
	return nil
}

// String returns Data as a string, for handlers that return one (a UPID).
func (r *Response) String() (string, error) {
	var s string
	err := json.Unmarshal(r.Data, &s)
	return s, err
}

// Path joins segments into an API path, escaping each: Path("nodes", "pve1",
// "storage", "local", "content", "local:iso/x.iso").
func Path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// Get calls GET path and decodes data into out (which may be nil).
func (c *Client) Get(ctx context.Context, path string, params url.Values, out any) error {
	resp, err := c.Do(ctx, http.MethodGet, path, params)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return resp.Decode(out)
}

// Do calls the API once (GETs may be retried, see RetryPolicy). path is the
// escaped API path after the base URL, e.g. /nodes/pve1/qemu. GET and DELETE
// send params in the query; POST and PUT as a form body.
func (c *Client) Do(ctx context.Context, method, path string, params url.Values) (*Response, error) {
	method = strings.ToUpper(method)
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		return nil, fmt.Errorf("pve: method %q is not GET, POST, PUT or DELETE", method)
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("pve: path %q must start with '/'", path)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	if method != http.MethodGet {
		return c.once(ctx, method, path, params)
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		resp, retryAfter, err := c.attempt(ctx, method, path, params)
		if err == nil {
			c.earn()
			return resp, nil
		}
		lastErr = err
		if retryAfter < 0 || attempt >= c.retry.Attempts || !c.spend() {
			return nil, lastErr
		}
		wait := c.backoff(attempt, retryAfter)
		c.log.Debug("pve: retrying GET", "path", path, "attempt", attempt+1, "wait", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (gave up retrying: %v)", lastErr, ctx.Err())
		case <-t.C:
		}
	}
}

// once sends a write exactly once.
func (c *Client) once(ctx context.Context, method, path string, params url.Values) (*Response, error) {
	resp, _, err := c.attempt(ctx, method, path, params)
	return resp, err
}

// attempt makes one request. retryAfter is negative when the error must not
// be retried, zero for the default backoff, or the server's Retry-After.
func (c *Client) attempt(ctx context.Context, method, path string, params url.Values) (*Response, time.Duration, error) {
	req, err := c.newRequest(ctx, method, path, params)
	if err != nil {
		return nil, -1, err
	}
	var sent sentTracker
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), sent.trace()))
	status := 0
	if observe := c.cfg.Observe; observe != nil {
		start := time.Now()
		defer func() { observe(method, path, status, time.Since(start)) }()
	}
	hr, err := c.http.Do(req)
	if err != nil {
		if method != http.MethodGet && sent.wrote() {
			return nil, -1, &OutcomeUnknownError{Method: method, Path: path, Err: err}
		}
		if ctx.Err() != nil {
			return nil, -1, fmt.Errorf("pve: %s %s: %w", method, path, err)
		}
		return nil, 0, fmt.Errorf("pve: %s %s: %w", method, path, err)
	}
	defer hr.Body.Close()
	status = hr.StatusCode
	body, readErr := io.ReadAll(io.LimitReader(hr.Body, c.cfg.MaxResponseBytes+1))
	if readErr != nil {
		if method != http.MethodGet {
			return nil, -1, &OutcomeUnknownError{Method: method, Path: path, Err: fmt.Errorf("reading the response: %w", readErr)}
		}
		return nil, 0, fmt.Errorf("pve: %s %s: reading the response: %w", method, path, readErr)
	}
	if int64(len(body)) > c.cfg.MaxResponseBytes {
		return nil, -1, &ResponseError{Method: method, Path: path, Status: hr.StatusCode, Detail: fmt.Sprintf("body over %d bytes", c.cfg.MaxResponseBytes)}
	}
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		apiErr := decodeError(method, path, hr, body)
		if method != http.MethodGet && isGatewayFailure(hr.StatusCode) && !isJSON(hr.Header.Get("Content-Type")) {
			// Something between us and PVE failed; PVE may have acted.
			return nil, -1, &OutcomeUnknownError{Method: method, Path: path, Err: apiErr}
		}
		switch hr.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable:
			return nil, parseRetryAfter(hr.Header.Get("Retry-After")), apiErr
		}
		return nil, -1, apiErr
	}
	resp, err := decodeEnvelope(hr.StatusCode, body)
	if err != nil {
		rerr := &ResponseError{Method: method, Path: path, Status: hr.StatusCode, Detail: err.Error()}
		if method != http.MethodGet {
			return nil, -1, &OutcomeUnknownError{Method: method, Path: path, Err: rerr}
		}
		return nil, -1, rerr
	}
	return resp, -1, nil
}

func (c *Client) newRequest(ctx context.Context, method, path string, params url.Values) (*http.Request, error) {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("pve: path %q: %w", path, err)
	}
	u.Path = unescaped
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		u.RawQuery = params.Encode()
	} else if len(params) > 0 {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("pve: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", c.token.header())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	return req, nil
}

// sentTracker records whether any part of the request reached the wire.
type sentTracker struct {
	mu      sync.Mutex
	written bool
}

func (s *sentTracker) trace() *httptrace.ClientTrace {
	mark := func() { s.mu.Lock(); s.written = true; s.mu.Unlock() }
	return &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { mark() },
		WroteHeaders:     mark,
		WroteRequest:     func(httptrace.WroteRequestInfo) { mark() },
	}
}

func (s *sentTracker) wrote() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// envelope is PVE's JSON answer.
type envelope struct {
	Data    json.RawMessage   `json:"data"`
	Total   json.RawMessage   `json:"total"`
	Changes json.RawMessage   `json:"changes"`
	Errors  map[string]string `json:"errors"`
	Message string            `json:"message"`
}

func decodeEnvelope(status int, body []byte) (*Response, error) {
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("not PVE's JSON envelope: %v (starts %q)", err, snippet(body))
	}
	if env.Data == nil {
		return nil, fmt.Errorf("no \"data\" member (starts %q)", snippet(body))
	}
	resp := &Response{Status: status, Data: env.Data, Changes: env.Changes}
	if len(env.Total) > 0 && string(env.Total) != "null" {
		n, err := strconv.ParseInt(strings.Trim(string(env.Total), `"`), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("\"total\" is not a number: %s", env.Total)
		}
		resp.Total = &n
	}
	return resp, nil
}

// decodeError builds an APIError from a non-2xx answer: PVE's message is the
// status line's reason phrase (all versions) or the body's "message"
// (libpve-http-server 5.2 and later); a 400 carries per-parameter errors.
func decodeError(method, path string, hr *http.Response, body []byte) *APIError {
	e := &APIError{Method: method, Path: path, Status: hr.StatusCode, ContentType: hr.Header.Get("Content-Type")}
	reason := strings.TrimSpace(strings.TrimPrefix(hr.Status, strconv.Itoa(hr.StatusCode)))
	if isJSON(e.ContentType) || (len(body) > 0 && body[0] == '{') {
		var env envelope
		if json.Unmarshal(body, &env) == nil {
			e.Errors = env.Errors
			if msg := strings.TrimSpace(env.Message); msg != "" {
				reason = msg
			}
		}
	} else if len(body) > 0 {
		reason = strings.TrimSpace(reason + " (non-JSON body: " + snippet(body) + ")")
	}
	if reason == "" {
		reason = http.StatusText(hr.StatusCode)
	}
	for k, v := range e.Errors {
		e.Errors[k] = strings.TrimRight(v, "\n")
	}
	e.Message = reason
	return e
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

func isGatewayFailure(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, c.retry.MaxBackoff)
	}
	d := c.retry.Backoff << (attempt - 1)
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) // jitter in [d/2, d]
	return min(d, c.retry.MaxBackoff)
}

// spend takes one retry from the budget.
func (c *Client) spend() bool {
	c.budgetM.Lock()
	defer c.budgetM.Unlock()
	if c.budget < 1 {
		return false
	}
	c.budget--
	return true
}

// earn returns a tenth of a retry to the budget after a success.
func (c *Client) earn() {
	c.budgetM.Lock()
	c.budget = min(c.budget+0.1, c.retry.Budget)
	c.budgetM.Unlock()
}
