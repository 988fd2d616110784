package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// APIPrefix is where PVE serves the JSON API.
const APIPrefix = "/api2/json"

// Options configures a simulator.
type Options struct {
	// Registry is the API schema to serve; required. Every endpoint of it
	// validates its parameters; the semantic ones also act.
	Registry *schema.Registry
	// Clock drives tasks; RealClock when nil.
	Clock Clock
	// Seed makes UPIDs, MACs, UUIDs and token secrets reproducible.
	Seed uint64
	// TaskDuration scales how long tasks take (1 when zero): a start takes
	// 2 s of clock time, a backup 15 s, a migration 10 s.
	TaskDuration float64
	// Logger receives a debug line per request; discarded when nil.
	Logger *slog.Logger
}

// Sim is the simulator: an http.Handler serving /api2/json.
type Sim struct {
	reg      *schema.Registry
	clock    Clock
	log      *slog.Logger
	taskTime float64
	handlers map[string]handler // "METHOD /template"

	mu     sync.Mutex // guards st
	st     *state
	faults faultSet

	requests atomic.Int64
	writes   atomic.Int64

	// cfgTypes are the JSON types of guest configuration fields, by kind
	// (exact names, then numbered prefixes), read from the schema once.
	cfgTypesOnce sync.Once
	cfgTypes     map[string][2]map[string]string
	gzPool       sync.Pool // *gzip.Writer
}

// Requests counts the HTTP requests served so far.
func (s *Sim) Requests() int64 { return s.requests.Load() }

// Writes counts the requests other than GET served so far: what a client
// sent that could change something.
func (s *Sim) Writes() int64 { return s.writes.Load() }

// handler answers one semantic endpoint. It runs with Sim.mu held and
// returns data (or a result with a total) or an *apiError.
type handler func(r *request) (any, error)

// request is one validated call.
type request struct {
	sim    *Sim
	ep     *schema.Endpoint
	method string
	path   string
	args   url.Values // validated wire values, path variables included
	who    *principal
	now    time.Time
}

// New builds a simulator with the default cluster: nodes pve1 and pve2
// online and pve3 offline, storages local, local-lvm and backup (NFS,
// shared), VMs 100, 101, 102 and the template 9000, containers 200 and 201,
// pool "prod", and the user mcp@pve with one privilege-separated token per
// tier (see Tokens).
func New(opts Options) (*Sim, error) {
	if opts.Registry == nil {
		return nil, errors.New("sim: a schema registry is required")
	}
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.TaskDuration <= 0 {
		opts.TaskDuration = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Sim{
		reg:      opts.Registry,
		clock:    opts.Clock,
		log:      opts.Logger,
		taskTime: opts.TaskDuration,
	}
	s.st = defaultState(opts.Clock.Now(), rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed)))
	s.handlers = s.routes()
	for key := range s.handlers {
		method, path, _ := strings.Cut(key, " ")
		if s.reg.Lookup(method, path) == nil {
			// A handler for an endpoint the schema lacks would never run;
			// with an older schema that is expected, so it is only logged.
			s.log.Debug("sim: handler for an endpoint the schema does not have", "endpoint", key)
		}
	}
	return s, nil
}

// ServeHTTP answers like pveproxy.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Method != http.MethodGet {
		s.writes.Add(1)
	}
	apiPath, ok := strings.CutPrefix(r.URL.EscapedPath(), APIPrefix)
	if !ok {
		writeError(w, failStatus(http.StatusNotImplemented, "Method '%s %s' not implemented", r.Method, r.URL.Path))
		return
	}
	if apiPath == "" {
		apiPath = "/"
	}
	f := s.matchFault(r.Method, apiPath)
	if f != nil && f.before(w, r) {
		return
	}
	body, apiErr := s.serve(r, apiPath)
	if f != nil && f.after(w, r) {
		return
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	writeData(w, r, body, &s.gzPool)
}

// serve routes, authenticates, checks permissions, validates and runs the
// handler, in pveproxy's order, all under the lock.
func (s *Sim) serve(r *http.Request, apiPath string) (result, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.finishTasks(now)

	ep, vars, err := s.reg.Match(r.Method, apiPath)
	if err != nil {
		unescaped, _ := url.PathUnescape(apiPath)
		return result{}, failStatus(http.StatusNotImplemented, "Method '%s %s' not implemented", r.Method, unescaped)
	}
	who, apiErr := s.authenticate(r)
	if apiErr != nil {
		return result{}, apiErr
	}
	if !ep.AllowToken {
		return result{}, failStatus(http.StatusForbidden, "Permission check failed (URI '%s' not available with API token, need proper ticket.)", APIPrefix+apiPath)
	}
	args, apiErr := readArgs(r, ep, vars)
	if apiErr != nil {
		return result{}, apiErr
	}
	// pveproxy checks permissions with the raw parameters before the
	// handler validates them: a token without the privilege gets 403 even
	// for malformed arguments.
	var perms []byte
	if ep.Permissions != nil {
		perms, _ = json.Marshal(ep.Permissions)
	}
	flat := make(map[string]string, len(args))
	for k, v := range args {
		flat[k] = fmt.Sprint(v)
	}
	if apiErr := s.checkPermission(who, perms, flat); apiErr != nil {
		return result{}, apiErr
	}
	wire, verr := ep.Validate(args)
	if verr != nil {
		var ve *schema.ValidationError
		if errors.As(verr, &ve) {
			return result{}, paramError(ve.Errors)
		}
		return result{}, fail("%v", verr)
	}
	if n := wire.Get("node"); n != "" && slices.Contains(ep.PathParams, "node") && ep.ProxyTo == "node" {
		if nd := s.st.node(n); nd == nil {
			return result{}, fail("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", n, n)
		} else if !nd.online {
			return result{}, failStatus(595, "Errors during connection establishment, proxy handler: No route to host")
		}
	}
	h := s.handlers[ep.Key()]
	if h == nil {
		h = s.directoryHandler(ep)
	}
	if h == nil {
		return result{}, failStatus(http.StatusNotImplemented, "Method '%s %s' is not simulated (the schema has it; the simulator has no handler for it)", ep.Method, ep.Path)
	}
	req := &request{sim: s, ep: ep, method: ep.Method, path: apiPath, args: wire, who: who, now: now}
	data, herr := h(req)
	if herr != nil {
		var ae *apiError
		if errors.As(herr, &ae) {
			return result{}, ae
		}
		return result{}, fail("%v", herr)
	}
	s.log.Debug("sim: request", "method", ep.Method, "path", apiPath, "token", who.tokenid)
	if res, ok := data.(result); ok {
		return res, nil
	}
	return result{data: data}, nil
}

// readArgs gathers the call's parameters: the query for GET and DELETE, a
// form or JSON body for POST and PUT, and the path variables. A body value
// that contradicts the path is refused as PVE refuses it.
func readArgs(r *http.Request, ep *schema.Endpoint, vars map[string]string) (map[string]any, *apiError) {
	values := r.URL.Query()
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			return nil, fail("unable to read request body: %v", err)
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case len(body) == 0:
		case ct == "application/json":
			var obj map[string]any
			if err := json.Unmarshal(body, &obj); err != nil {
				return nil, failStatus(http.StatusBadRequest, "Parameter verification failed.")
			}
			for k, v := range obj {
				values[k] = append(values[k], jsonText(v)...)
			}
		default:
			form, err := url.ParseQuery(string(body))
			if err != nil {
				return nil, failStatus(http.StatusBadRequest, "Parameter verification failed.")
			}
			for k, v := range form {
				values[k] = append(values[k], v...)
			}
		}
	}
	args := make(map[string]any, len(values)+len(vars))
	for k, v := range values {
		p := ep.Param(k)
		if p != nil && p.Type == "array" {
			items := make([]any, len(v))
			for i, s := range v {
				items[i] = s
			}
			args[k] = items
			continue
		}
		args[k] = v[len(v)-1]
	}
	for k, v := range vars {
		if prev, ok := args[k]; ok && prev != v {
			return nil, failStatus(http.StatusBadRequest, "duplicate parameter (already defined in URI) with conflicting values!")
		}
		args[k] = v
	}
	return args, nil
}

// jsonText turns a JSON body value into the strings PVE would see.
func jsonText(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case bool:
		if x {
			return []string{"1"}
		}
		return []string{"0"}
	case float64:
		return []string{strconv.FormatFloat(x, 'f', -1, 64)}
	case []any:
		var out []string
		for _, item := range x {
			out = append(out, jsonText(item)...)
		}
		return out
	case nil:
		return nil
	}
	b, _ := json.Marshal(v)
	return []string{string(b)}
}

// Argument helpers for handlers.
func (r *request) str(name string) string { return r.args.Get(name) }
func (r *request) has(name string) bool   { return r.args.Has(name) }
func (r *request) flag(name string) bool  { return r.args.Get(name) == "1" }
func (r *request) num(name string, def int) int {
	if v, err := strconv.Atoi(r.args.Get(name)); err == nil {
		return v
	}
	return def
}

// vmid is the request's guest ID.
func (r *request) vmid() int { return r.num("vmid", 0) }

// Coverage says how much of the loaded schema the simulator serves.
type Coverage struct {
	Endpoints int `json:"endpoints"`
	// Semantic endpoints have a handler that reads or changes state.
	Semantic int `json:"semantic"`
	// Directory endpoints list their children, as PVE's index methods do.
	Directory int `json:"directory"`
	// NotSimulated endpoints validate their parameters, then answer 501.
	NotSimulated int      `json:"not_simulated"`
	Handled      []string `json:"handled"`
}

// Coverage counts the endpoints with handlers.
func (s *Sim) Coverage() Coverage {
	c := Coverage{Endpoints: s.reg.Methods()}
	for _, ep := range s.reg.Endpoints() {
		switch {
		case s.handlers[ep.Key()] != nil:
			c.Semantic++
			c.Handled = append(c.Handled, ep.Key())
		case s.directoryHandler(ep) != nil:
			c.Directory++
			c.Handled = append(c.Handled, ep.Key())
		default:
			c.NotSimulated++
		}
	}
	sort.Strings(c.Handled)
	return c
}

// Token is an API token the simulator accepts.
type Token struct {
	// ID is user@realm!name.
	ID string `json:"id"`
	// Secret is the token's UUID.
	Secret string `json:"secret"`
	// Role is what the token was granted on / at start.
	Role string `json:"role"`
}

// Header is the Authorization header value for the token.
func (t Token) Header() string { return "PVEAPIToken=" + t.ID + "=" + t.Secret }

// Tokens lists the tokens of the default setup: root@pam!sim (not
// privilege-separated, everything) and mcp@pve!read-only, !operator, !admin
// and !root, privilege-separated, granted on / the roles PVEAuditor;
// PVEAuditor and PMCPOperator (guest power, backups and snapshots);
// Administrator; Administrator: what proxmox-mcp install grants.
func (s *Sim) Tokens() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Token
	for _, uid := range []string{"root@pam", "mcp@pve"} {
		u := s.st.users[uid]
		if u == nil {
			continue
		}
		names := make([]string, 0, len(u.tokens))
		for n := range u.tokens {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			id := uid + "!" + n
			var roles []string
			for _, e := range s.st.acl {
				if e.ugid == id || (e.ugid == uid && !u.tokens[n].privsep) {
					roles = append(roles, e.role)
				}
			}
			if uid == "root@pam" {
				roles = []string{"Administrator"}
			}
			out = append(out, Token{ID: id, Secret: u.tokens[n].secret, Role: strings.Join(roles, ",")})
		}
	}
	return out
}

// Token returns the default token with the given ID (e.g. mcp@pve!operator).
func (s *Sim) Token(id string) (Token, bool) {
	for _, t := range s.Tokens() {
		if t.ID == id {
			return t, true
		}
	}
	return Token{}, false
}

// AddToken creates a token for an existing or new user (user@realm) and
// returns its secret. A privilege-separated token has only what Grant gives
// it; another has its user's privileges.
func (s *Sim) AddToken(tokenID string, privsep bool) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	userid, name, ok := strings.Cut(tokenID, "!")
	if !ok || !strings.Contains(userid, "@") || name == "" {
		return Token{}, fmt.Errorf("sim: token ID %q must be user@realm!name", tokenID)
	}
	u := s.st.users[userid]
	if u == nil {
		u = &user{id: userid, enabled: true, tokens: map[string]*apiToken{}}
		s.st.users[userid] = u
	}
	if u.tokens[name] != nil {
		return Token{}, fmt.Errorf("sim: token %q exists", tokenID)
	}
	t := &apiToken{name: name, secret: s.st.secret(), privsep: privsep}
	u.tokens[name] = t
	return Token{ID: tokenID, Secret: t.secret}, nil
}

// Grant adds an ACL entry: role on path for a user, @group or token.
func (s *Sim) Grant(path, ugid, role string, propagate bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.grant(path, ugid, role, propagate)
}

// RevokeToken deletes a token; requests with it then get 401.
func (s *Sim) RevokeToken(tokenID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	userid, name, _ := strings.Cut(tokenID, "!")
	if u := s.st.users[userid]; u != nil {
		delete(u.tokens, name)
	}
}
