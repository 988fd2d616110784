package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// argsOf reads a request's arguments as an object.
func argsOf(req mcp.CallToolRequest) (map[string]any, error) {
	switch a := req.Params.Arguments.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	}
	if len(req.Params.RawArguments) > 0 {
		var m map[string]any
		if err := json.Unmarshal(req.Params.RawArguments, &m); err != nil {
			return nil, &toolError{outcome: journal.OutcomeInvalid, text: "arguments must be a JSON object: " + err.Error()}
		}
		return m, nil
	}
	return nil, &toolError{outcome: journal.OutcomeInvalid, text: "arguments must be a JSON object"}
}

// toolError is a refusal a handler returns before any call is planned (an
// argument of our own tools, an unauthenticated caller): the middleware
// answers it as a tool result the model can read, and journals it with its
// outcome.
type toolError struct {
	outcome journal.Outcome
	text    string
}

func (e *toolError) Error() string { return e.text }

// argError is a clear answer about a bad argument of our own tools.
func argError(name, rule string) error {
	return &toolError{outcome: journal.OutcomeInvalid, text: fmt.Sprintf("argument %s: %s", name, rule)}
}

func optString(a map[string]any, name string) (string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", argError(name, "must be a string")
	}
	return s, nil
}

func optBool(a map[string]any, name string) (bool, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, argError(name, "must be true or false")
	}
	return b, nil
}

func optInt(a map[string]any, name string, lo, hi int) (int, bool, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false, argError(name, "must be an integer")
		}
	case string:
		n, err := strconv.Atoi(x)
		if err != nil {
			return 0, false, argError(name, "must be an integer")
		}
		f = float64(n)
	default:
		return 0, false, argError(name, "must be an integer")
	}
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false, argError(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return int(f), true, nil
}

// maxShapeKeys bounds fields and omit: a few hundred keys cover any PVE
// object, and a longer list is only work for the daemon.
const (
	maxShapeKeys   = 256
	maxShapeKeyLen = 128
)

// optKeySet reads fields or omit: an array of at most maxShapeKeys
// strings, each at most maxShapeKeyLen bytes, as a set.
func optKeySet(a map[string]any, name string) (map[string]bool, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, argError(name, "must be an array of strings")
	}
	if len(list) > maxShapeKeys {
		return nil, argError(name, fmt.Sprintf("has %d keys; at most %d are taken", len(list), maxShapeKeys))
	}
	out := make(map[string]bool, len(list))
	for _, it := range list {
		s, ok := it.(string)
		if !ok {
			return nil, argError(name, "must be an array of strings")
		}
		if len(s) > maxShapeKeyLen {
			return nil, argError(name, fmt.Sprintf("a key is %d bytes long; keys are at most %d", len(s), maxShapeKeyLen))
		}
		out[s] = true
	}
	return out, nil
}

// onlyKeys refuses arguments a tool does not take.
func onlyKeys(a map[string]any, allowed ...string) error {
	for k := range a {
		if !slices.Contains(allowed, k) {
			return argError(k, "is not an argument of this tool (it takes: "+strings.Join(allowed, ", ")+")")
		}
	}
	return nil
}

// shaping are the shaping arguments every calling tool takes.
type shaping struct {
	shape        Shape
	wait         time.Duration
	confirm      string
	dryRun       bool
	operationKey string
	change       string
	keepPlan     bool
}

// shapingArgs reads fields, omit, limit, offset, wait, confirm, dry_run,
// named with prefix ("" or "_"). A dry_run that is present must be true or
// false: null is not "absent", because taking it so would send the call.
func shapingArgs(a map[string]any, prefix string) (shaping, error) {
	var sh shaping
	var err error
	if sh.shape.Fields, err = optKeySet(a, prefix+"fields"); err != nil {
		return sh, err
	}
	if sh.shape.Omit, err = optKeySet(a, prefix+"omit"); err != nil {
		return sh, err
	}
	if sh.shape.Limit, _, err = optInt(a, prefix+"limit", 1, 5000); err != nil {
		return sh, err
	}
	if sh.shape.Offset, _, err = optInt(a, prefix+"offset", 0, math.MaxInt32); err != nil {
		return sh, err
	}
	wait, _, err := optInt(a, prefix+"wait", 0, 600)
	if err != nil {
		return sh, err
	}
	sh.wait = time.Duration(wait) * time.Second
	if sh.confirm, err = optString(a, prefix+"confirm"); err != nil {
		return sh, err
	}
	if v, ok := a[prefix+"dry_run"]; ok {
		b, ok := v.(bool)
		if !ok {
			return sh, argError(prefix+"dry_run", "must be true or false (null is not accepted: nothing was sent)")
		}
		sh.dryRun = b
	}
	if sh.operationKey, err = optString(a, prefix+"operation_key"); err != nil {
		return sh, err
	}
	if _, given := a[prefix+"operation_key"]; given {
		if err := journal.CheckOperationKey(sh.operationKey); err != nil {
			return sh, argError(prefix+"operation_key", strings.TrimPrefix(err.Error(), "operation_key "))
		}
	}
	if sh.change, err = optString(a, prefix+"change"); err != nil {
		return sh, err
	}
	if _, given := a[prefix+"change"]; given {
		if err := journal.CheckOperationKey(sh.change); err != nil {
			return sh, argError(prefix+"change", strings.TrimPrefix(err.Error(), "operation_key "))
		}
	}
	if v, ok := a[prefix+"keep_plan"]; ok {
		b, ok := v.(bool)
		if !ok {
			return sh, argError(prefix+"keep_plan", "must be true or false")
		}
		sh.keepPlan = b
	}
	return sh, nil
}

func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta != nil {
		return req.Params.Meta.ProgressToken
	}
	return nil
}

// caller is the request's caller as it is now: a session that outlives
// one request is checked again before every call.
func (s *Server) caller(ctx context.Context) (Caller, error) {
	c, ok := CallerFrom(ctx)
	if !ok {
		return Caller{}, &toolError{outcome: journal.OutcomeDenied, text: "no authenticated caller"}
	}
	if c.Recheck != nil {
		fresh, err := c.Recheck(ctx)
		if err != nil {
			return Caller{}, &toolError{outcome: journal.OutcomeDenied, text: "Refused: your key is no longer accepted (" + err.Error() + "). Nothing was sent."}
		}
		c = fresh
	}
	return c, nil
}

// callerArgs is the prologue of a tool: the caller as it is now, and the
// arguments as an object holding only the keys allowed.
func (s *Server) callerArgs(ctx context.Context, req mcp.CallToolRequest, allowed ...string) (Caller, map[string]any, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return Caller{}, nil, err
	}
	a, err := argsOf(req)
	if err != nil {
		return Caller{}, nil, err
	}
	if err := onlyKeys(a, allowed...); err != nil {
		return Caller{}, nil, err
	}
	return c, a, nil
}

// handleCall is proxmox_api_call.
func (s *Server) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	if _, ok := a["approve"]; ok && s.opts.Mode == ModeSearch {
		return s.approveFromCall(ctx, req, a)
	}
	if err := onlyKeys(a, "method", "path", "params", "fields", "omit", "limit", "offset", "wait", "confirm", "dry_run", "operation_key", "change", "keep_plan"); err != nil {
		return nil, err
	}
	method, err := optString(a, "method")
	if err != nil {
		return nil, err
	}
	switch strings.ToUpper(method) {
	case "GET", "POST", "PUT", "DELETE":
	default:
		return nil, argError("method", "must be GET, POST, PUT or DELETE")
	}
	path, params, err := pathAndParams(a)
	if err != nil {
		return nil, err
	}
	sh, err := shapingArgs(a, "")
	if err != nil {
		return nil, err
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ToolCall, method: method, path: path, args: params, shape: sh.shape,
		wait: sh.wait, confirm: sh.confirm, dryRun: sh.dryRun, operationKey: sh.operationKey, change: sh.change, keepPlan: sh.keepPlan, progressToken: progressToken(req)}), nil
}

// pathAndParams are the path and params arguments of proxmox_api_call and
// proxmox_api_get.
func pathAndParams(a map[string]any) (string, map[string]any, error) {
	path, err := optString(a, "path")
	if err != nil {
		return "", nil, err
	}
	if !strings.HasPrefix(path, "/") {
		return "", nil, argError("path", "must be a concrete API path starting with '/', such as /nodes/pve1/qemu")
	}
	params := map[string]any{}
	if v, ok := a["params"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil, argError("params", "must be an object of the endpoint's parameters")
		}
		params = m
	}
	return path, params, nil
}

// handleGet is proxmox_api_get: proxmox_api_call with GET and only the
// arguments a read takes.
func (s *Server) handleGet(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, getArgs...)
	if err != nil {
		return nil, err
	}
	path, params, err := pathAndParams(a)
	if err != nil {
		return nil, err
	}
	sh, err := shapingArgs(a, "")
	if err != nil {
		return nil, err
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ToolGet, method: "GET", path: path, args: params, shape: sh.shape,
		confirm: sh.confirm, progressToken: progressToken(req)}), nil
}

// handleEndpoint is an expanded-mode tool: its name picks the endpoint,
// its arguments are the endpoint's parameters (path variables included)
// plus _-prefixed shaping.
func (s *Server) handleEndpoint(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	ep := s.registry().Tool(req.Params.Name)
	if ep == nil {
		return errorResult(fmt.Sprintf("tool %s no longer exists: the API schema changed; list the tools again", req.Params.Name)), nil
	}
	sh, err := shapingArgs(a, "_")
	if err != nil {
		return nil, err
	}
	params := make(map[string]any, len(a))
	for k, v := range a {
		if !strings.HasPrefix(k, "_") {
			params[k] = v
		}
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ep.Tool, method: ep.Method, endpoint: ep, args: params,
		shape: sh.shape, wait: sh.wait, confirm: sh.confirm, dryRun: sh.dryRun, operationKey: sh.operationKey, change: sh.change, keepPlan: sh.keepPlan, progressToken: progressToken(req)}), nil
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		if x == math.Trunc(x) {
			return strconv.FormatInt(int64(x), 10), true
		}
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

// handleSearch is proxmox_api_search, over the endpoints the caller may use.
func (s *Server) handleSearch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	if s.opts.Mode == ModeSearch {
		if _, ok := a["describe"]; ok {
			return s.describeFromSearch(ctx, req, a)
		}
	}
	if err := onlyKeys(a, "query", "method", "max_risk", "limit"); err != nil {
		return nil, err
	}
	query, err := optString(a, "query")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, argError("query", "is required and must not be empty")
	}
	method, err := optString(a, "method")
	if err != nil {
		return nil, err
	}
	limit, set, err := optInt(a, "limit", 1, 50)
	if err != nil {
		return nil, err
	}
	if !set {
		limit = searchDefaultLimit
	}
	opts := schema.SearchOptions{Limit: limit, Method: method}
	if mr, err := optString(a, "max_risk"); err != nil {
		return nil, err
	} else if mr != "" {
		r, err := schema.ParseRisk(mr)
		if err != nil {
			return nil, argError("max_risk", "must be read, write or destructive")
		}
		opts.MaxRisk = &r
	}
	visible, err := s.visible(ctx, c)
	if err != nil {
		return errorResult("the policy could not be evaluated: " + err.Error()), nil
	}
	opts.Filter = func(ep *schema.Endpoint) bool { return visible[ep.Tool] != nil }
	hits := s.registry().Search(query, opts)
	results := make([]any, 0, len(hits))
	var lines []string
	for _, h := range hits {
		ep := h.Endpoint
		results = append(results, map[string]any{
			"tool": ep.Tool, "method": ep.Method, "path": ep.Path, "risk": ep.Risk.String(),
			"summary": firstSentence(ep.Description),
		})
		lines = append(lines, fmt.Sprintf("%s %s (%s)", ep.Method, ep.Path, ep.Risk))
	}
	summary := fmt.Sprintf("%d endpoints for %q of the %d your key may use", len(results), query, len(visible))
	if len(lines) > 0 {
		summary += ": " + strings.Join(lines[:min(3, len(lines))], "; ")
	}
	return structured(summary+".", map[string]any{"query": query, "results": results, "visible_endpoints": len(visible)}), nil
}

// searchDefaultLimit is how many endpoints a search returns unless asked
// for more: the best few are what an agent describes next, and a search
// should not cost more than the describe that follows it.
const searchDefaultLimit = 5

func firstSentence(s string) string {
	s = strings.TrimSpace(strings.Join(strings.Fields(s), " "))
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	if len(s) > 200 {
		s = strings.TrimSpace(s[:197]) + "..."
	}
	return s
}

// handleSchemaStatus is proxmox_schema_status.
func (s *Server) handleSchemaStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, err := s.caller(ctx); err != nil {
		return nil, err
	}
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	if err := onlyKeys(a); err != nil {
		return nil, err
	}
	st := s.opts.Registry.Status()
	b, _ := json.Marshal(st)
	var content map[string]any
	json.Unmarshal(b, &content) //nolint:errcheck // our own struct
	content["healthy"] = st.Healthy()
	summary := fmt.Sprintf("Schema from %s (%s): %d paths, %d methods, sha256 %s.", st.Source, st.Origin, st.Paths, st.Methods, short(st.SHA256))
	if st.LastError != "" {
		summary += " Last error: " + st.LastError
	}
	return structured(summary, content), nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// handleTaskWait is proxmox_task_wait: it reads the task's status as the
// caller (policy and all) and follows it.
func (s *Server) handleTaskWait(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "upid", "timeout_seconds")
	if err != nil {
		return nil, err
	}
	upid, err := optString(a, "upid")
	if err != nil {
		return nil, err
	}
	u, err := pve.ParseUPID(upid)
	if err != nil {
		return nil, argError("upid", err.Error())
	}
	timeout, set, err := optInt(a, "timeout_seconds", 1, 600)
	if err != nil {
		return nil, err
	}
	if !set {
		timeout = 60
	}
	path := pve.Path("nodes", u.Node, "tasks", upid, "status")
	pr, refusal := s.prepare(ctx, c, callRequest{tool: ToolTaskWait, method: "GET", path: path, args: map[string]any{}})
	if refusal != nil {
		return refusal, nil
	}
	p := pr.plan
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return s.refuse(ctx, pr.audit, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error()), nil
	}
	task, werr := s.follow(ctx, client, upid, time.Duration(timeout)*time.Second, progressToken(req))
	out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(p.Time), UPID: upid}
	if werr != nil && task["status"] == "unknown" {
		return s.callFailed(ctx, pr.audit, "", out, p.Endpoint, werr), nil
	}
	switch {
	case task["status"] == "stopped" && task["ok"] == false:
		out.Outcome = journal.OutcomeTaskFailed
		out.Error = fmt.Sprint(task["exitstatus"])
	case task["status"] != "stopped":
		out.Outcome = journal.OutcomeTaskRunning
	}
	if err := s.audit.Record(journalContext(ctx), pr.audit, out); err != nil {
		return errorResult("the journal refused the record: " + err.Error()), nil
	}
	res := structured(taskSummary(p.Endpoint, p.Path, task), map[string]any{"task": task})
	res.IsError = task["status"] == "stopped" && task["ok"] == false
	return res, nil
}

// handleResources is proxmox_cluster_resources.
func (s *Server) handleResources(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "type", "fields", "omit", "limit", "offset")
	if err != nil {
		return nil, err
	}
	types, err := resourceTypes(a)
	if err != nil {
		return nil, err
	}
	if ep := s.registry().Lookup("GET", "/cluster/resources"); len(types) > 1 && ep != nil && ep.Param("type") != nil {
		for _, t := range types {
			if kinds := ep.Param("type").Enum; !slices.Contains(kinds, t) {
				return nil, argError("type", fmt.Sprintf("%q is not a kind of resource; the kinds are %s", t, strings.Join(kinds, ", ")))
			}
		}
	}
	sh, err := shapingArgs(a, "")
	if err != nil {
		return nil, err
	}
	cr := callRequest{tool: ToolResources, method: "GET", path: "/cluster/resources", args: map[string]any{}, shape: sh.shape}
	switch len(types) {
	case 0:
	case 1:
		cr.args["type"] = types[0] // PVE filters one type itself
	default:
		cr.transform = func(data any) any { return keepResourceTypes(data, types) }
	}
	return s.callEndpoint(ctx, c, cr), nil
}

// resourceTypes reads proxmox_cluster_resources' type: a list of kinds,
// or one as a string. Each is checked by PVE's own schema of type, on the
// call (one) or by the handler against its values (several).
func resourceTypes(a map[string]any) ([]string, error) {
	switch v := a["type"].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, it := range v {
			t, ok := it.(string)
			if !ok {
				return nil, argError("type", "must be an array of resource kinds (strings)")
			}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		return out, nil
	}
	return nil, argError("type", "must be an array of resource kinds, such as [\"vm\", \"node\"]")
}

// keepResourceTypes keeps the resources of the kinds asked for (vm is
// qemu and lxc, as PVE's own filter has it).
func keepResourceTypes(data any, types []string) any {
	list, ok := data.([]any)
	if !ok {
		return data
	}
	out := make([]any, 0, len(list))
	for _, it := range list {
		r, _ := it.(map[string]any)
		t, _ := r["type"].(string)
		if t == "qemu" || t == "lxc" || t == "openvz" {
			t = "vm"
		}
		if slices.Contains(types, t) {
			out = append(out, it)
		}
	}
	return out
}

// locateGuest finds where a VM ID lives, through the caller's own view of
// /cluster/resources (policy and journal included).
func (s *Server) locateGuest(ctx context.Context, c Caller, tool string, vmid int) (node, kind string, bad *mcp.CallToolResult) {
	req := callRequest{tool: tool, method: "GET", path: "/cluster/resources", args: map[string]any{"type": "vm"}}
	pr, refusal := s.prepare(ctx, c, req)
	if refusal != nil {
		return "", "", refusal
	}
	p := pr.plan
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return "", "", s.refuse(ctx, pr.audit, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error())
	}
	var list []map[string]any
	err = client.Get(ctx, p.Path, p.Wire(), &list)
	out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(p.Time)}
	if err != nil {
		return "", "", s.callFailed(ctx, pr.audit, "", out, p.Endpoint, err)
	}
	if err := s.audit.Record(journalContext(ctx), pr.audit, out); err != nil {
		return "", "", errorResult("the journal refused the record: " + err.Error())
	}
	for _, g := range list {
		if id, _ := scalarText(g["vmid"]); id == strconv.Itoa(vmid) {
			n, _ := g["node"].(string)
			k, _ := g["type"].(string)
			return n, k, nil
		}
	}
	// Journaled as the tool's refusal: the lookup's own row says only
	// that the list was read.
	notFound := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: tool, Args: map[string]any{"vmid": vmid}}
	return "", "", s.refuse(ctx, notFound, journal.OutcomeInvalid, fmt.Sprintf("argument vmid: no VM or container %d is visible to your key", vmid))
}

// handleGuestStatus is proxmox_guest_status.
func (s *Server) handleGuestStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "vmid", "fields", "omit", "all")
	if err != nil {
		return nil, err
	}
	all, err := optBool(a, "all")
	if err != nil {
		return nil, err
	}
	vmid, set, err := optInt(a, "vmid", 100, 999999999)
	if err != nil {
		return nil, err
	}
	if !set {
		return nil, argError("vmid", "is required")
	}
	sh, err := shapingArgs(a, "")
	if err != nil {
		return nil, err
	}
	if !all && sh.shape.Fields == nil && sh.shape.Omit == nil {
		sh.shape.Fields = map[string]bool{}
		for _, f := range guestStatusFields {
			sh.shape.Fields[f] = true
		}
	}
	node, kind, bad := s.locateGuest(ctx, c, ToolGuestStatus, vmid)
	if bad != nil {
		return bad, nil
	}
	path := pve.Path("nodes", node, kind, strconv.Itoa(vmid), "status", "current")
	return s.callEndpoint(ctx, c, callRequest{tool: ToolGuestStatus, method: "GET", path: path, args: map[string]any{}, shape: sh.shape}), nil
}

// handleGuestPower is proxmox_guest_power.
func (s *Server) handleGuestPower(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "vmid", "action", "wait", "confirm", "operation_key")
	if err != nil {
		return nil, err
	}
	vmid, set, err := optInt(a, "vmid", 100, 999999999)
	if err != nil {
		return nil, err
	}
	if !set {
		return nil, argError("vmid", "is required")
	}
	action, err := optString(a, "action")
	if err != nil {
		return nil, err
	}
	valid := false
	for _, x := range powerActions {
		valid = valid || x == action
	}
	if !valid {
		return nil, argError("action", "must be one of "+strings.Join(powerActions, ", "))
	}
	// wait, confirm and operation_key, read and checked as every
	// calling tool reads them.
	sh, err := shapingArgs(a, "")
	if err != nil {
		return nil, err
	}
	node, kind, bad := s.locateGuest(ctx, c, ToolGuestPower, vmid)
	if bad != nil {
		return bad, nil
	}
	if kind == "lxc" && action == "reset" {
		return nil, argError("action", "reset exists for VMs only; a container has stop")
	}
	path := pve.Path("nodes", node, kind, strconv.Itoa(vmid), "status", action)
	return s.callEndpoint(ctx, c, callRequest{tool: ToolGuestPower, method: "POST", path: path, args: map[string]any{},
		wait: sh.wait, confirm: sh.confirm, operationKey: sh.operationKey, progressToken: progressToken(req)}), nil
}

// describeFromSearch is proxmox_api_search with describe, in search mode
// (which has no describe tool): the describe tool's answer for that
// endpoint.
func (s *Server) describeFromSearch(ctx context.Context, req mcp.CallToolRequest, a map[string]any) (*mcp.CallToolResult, error) {
	if err := onlyKeys(a, "describe", "section", "param", "offset"); err != nil {
		return nil, err
	}
	tool, err := optString(a, "describe")
	if err != nil {
		return nil, err
	}
	if tool == "" {
		return nil, argError("describe", "must be an endpoint's tool name, as a search gives it")
	}
	args := map[string]any{"tool": tool}
	for _, k := range []string{"section", "param", "offset"} {
		if v, ok := a[k]; ok {
			args[k] = v
		}
	}
	req.Params.Arguments = args
	return s.handleDescribe(ctx, req)
}

// approveFromCall is proxmox_api_call with approve, in search mode (which
// has no approve tool): the approve tool's answer.
func (s *Server) approveFromCall(ctx context.Context, req mcp.CallToolRequest, a map[string]any) (*mcp.CallToolResult, error) {
	if err := onlyKeys(a, "approve"); err != nil {
		return nil, err
	}
	args, ok := a["approve"].(map[string]any)
	if !ok {
		return nil, argError("approve", "must be an object: {\"token\": ..., \"approve\": true}")
	}
	req.Params.Arguments = args
	return s.handleApprove(ctx, req)
}
