package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// args reads a request's arguments as an object.
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
			return nil, fmt.Errorf("arguments must be a JSON object: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("arguments must be a JSON object")
}

// argError is a clear answer about a bad argument of our own tools.
func argError(name, rule string) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("argument %s: %s", name, rule))
}

func optString(a map[string]any, name string) (string, *mcp.CallToolResult) {
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

func optBool(a map[string]any, name string) (bool, *mcp.CallToolResult) {
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

func optInt(a map[string]any, name string, lo, hi int) (int, bool, *mcp.CallToolResult) {
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

func optStrings(a map[string]any, name string) ([]string, *mcp.CallToolResult) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, argError(name, "must be an array of strings")
	}
	out := make([]string, 0, len(list))
	for _, it := range list {
		s, ok := it.(string)
		if !ok {
			return nil, argError(name, "must be an array of strings")
		}
		out = append(out, s)
	}
	return out, nil
}

// onlyKeys refuses arguments a tool does not take.
func onlyKeys(a map[string]any, allowed ...string) *mcp.CallToolResult {
	for k := range a {
		found := false
		for _, x := range allowed {
			found = found || k == x
		}
		if !found {
			return argError(k, "is not an argument of this tool (it takes: "+strings.Join(allowed, ", ")+")")
		}
	}
	return nil
}

// shapingArgs reads fields, omit, limit, offset, wait, confirm, dry_run,
// named with prefix ("" or "_").
func shapingArgs(a map[string]any, prefix string) (Shape, time.Duration, string, bool, *mcp.CallToolResult) {
	var sh Shape
	var bad *mcp.CallToolResult
	if sh.Fields, bad = optStrings(a, prefix+"fields"); bad != nil {
		return sh, 0, "", false, bad
	}
	if sh.Omit, bad = optStrings(a, prefix+"omit"); bad != nil {
		return sh, 0, "", false, bad
	}
	if sh.Limit, _, bad = optInt(a, prefix+"limit", 1, 5000); bad != nil {
		return sh, 0, "", false, bad
	}
	if sh.Offset, _, bad = optInt(a, prefix+"offset", 0, math.MaxInt32); bad != nil {
		return sh, 0, "", false, bad
	}
	wait, _, bad := optInt(a, prefix+"wait", 0, 600)
	if bad != nil {
		return sh, 0, "", false, bad
	}
	confirm, bad := optString(a, prefix+"confirm")
	if bad != nil {
		return sh, 0, "", false, bad
	}
	dry := false
	if v, ok := a[prefix+"dry_run"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return sh, 0, "", false, argError(prefix+"dry_run", "must be true or false")
		}
		dry = b
	}
	return sh, time.Duration(wait) * time.Second, confirm, dry, nil
}

func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta != nil {
		return req.Params.Meta.ProgressToken
	}
	return nil
}

func (s *Server) caller(ctx context.Context) (Caller, *mcp.CallToolResult) {
	c, ok := CallerFrom(ctx)
	if !ok {
		return Caller{}, errorResult("no authenticated caller")
	}
	if c.Recheck != nil {
		fresh, err := c.Recheck(ctx)
		if err != nil {
			return Caller{}, errorResult("Refused: your key is no longer accepted (" + err.Error() + "). Nothing was sent.")
		}
		c = fresh
	}
	return c, nil
}

// handleCall is proxmox_api_call.
func (s *Server) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if _, ok := a["approve"]; ok && s.opts.Mode == ModeSearch {
		return s.approveFromCall(ctx, req, a)
	}
	if bad := onlyKeys(a, "method", "path", "params", "fields", "omit", "limit", "offset", "wait", "confirm", "dry_run"); bad != nil {
		return bad, nil
	}
	method, bad := optString(a, "method")
	if bad != nil {
		return bad, nil
	}
	switch strings.ToUpper(method) {
	case "GET", "POST", "PUT", "DELETE":
	default:
		return argError("method", "must be GET, POST, PUT or DELETE"), nil
	}
	path, bad := optString(a, "path")
	if bad != nil {
		return bad, nil
	}
	if !strings.HasPrefix(path, "/") {
		return argError("path", "must be a concrete API path starting with '/', such as /nodes/pve1/qemu"), nil
	}
	params := map[string]any{}
	if v, ok := a["params"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return argError("params", "must be an object of the endpoint's parameters"), nil
		}
		params = m
	}
	sh, wait, confirm, dry, bad := shapingArgs(a, "")
	if bad != nil {
		return bad, nil
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ToolCall, method: method, path: path, args: params, shape: sh,
		wait: wait, confirm: confirm, dryRun: dry, progressToken: progressToken(req)}), nil
}

// handleEndpoint is an expanded-mode tool: its name picks the endpoint,
// its arguments are the endpoint's parameters plus _-prefixed shaping.
func (s *Server) handleEndpoint(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	ep := s.registry().Tool(req.Params.Name)
	if ep == nil {
		return errorResult(fmt.Sprintf("tool %s no longer exists: the API schema changed; list the tools again", req.Params.Name)), nil
	}
	sh, wait, confirm, dry, bad := shapingArgs(a, "_")
	if bad != nil {
		return bad, nil
	}
	params := map[string]any{}
	vars := map[string]string{}
	for k, v := range a {
		if strings.HasPrefix(k, "_") {
			continue
		}
		params[k] = v
	}
	for _, name := range ep.PathParams {
		v, ok := params[name]
		if !ok {
			return argError(name, "is required: it is part of the path "+ep.Path), nil
		}
		text, ok := scalarText(v)
		if !ok || text == "" {
			return argError(name, "must be a string or a number"), nil
		}
		vars[name] = text
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ep.Tool, method: ep.Method, path: concretePath(ep.Path, vars), args: params,
		shape: sh, wait: wait, confirm: confirm, dryRun: dry, progressToken: progressToken(req)}), nil
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
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if s.opts.Mode == ModeSearch {
		if _, ok := a["describe"]; ok {
			return s.describeFromSearch(ctx, req, a)
		}
	}
	if bad := onlyKeys(a, "query", "method", "max_risk", "limit"); bad != nil {
		return bad, nil
	}
	query, bad := optString(a, "query")
	if bad != nil {
		return bad, nil
	}
	if strings.TrimSpace(query) == "" {
		return argError("query", "is required and must not be empty"), nil
	}
	method, bad := optString(a, "method")
	if bad != nil {
		return bad, nil
	}
	limit, set, bad := optInt(a, "limit", 1, 50)
	if bad != nil {
		return bad, nil
	}
	if !set {
		limit = 10
	}
	opts := schema.SearchOptions{Limit: limit, Method: method}
	if mr, bad := optString(a, "max_risk"); bad != nil {
		return bad, nil
	} else if mr != "" {
		r, err := schema.ParseRisk(mr)
		if err != nil {
			return argError("max_risk", "must be read, write or destructive"), nil
		}
		opts.MaxRisk = &r
	}
	visible, err := s.visible(ctx, c, true)
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
			"summary": firstSentence(ep.Description), "score": math.Round(h.Score*100) / 100,
		})
		lines = append(lines, fmt.Sprintf("%s %s (%s)", ep.Method, ep.Path, ep.Risk))
	}
	summary := fmt.Sprintf("%d endpoints for %q of the %d your key may use", len(results), query, len(visible))
	if len(lines) > 0 {
		summary += ": " + strings.Join(lines[:min(3, len(lines))], "; ")
	}
	return structured(summary+".", map[string]any{"query": query, "results": results, "visible_endpoints": len(visible)}), nil
}

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
	if _, bad := s.caller(ctx); bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if bad := onlyKeys(a); bad != nil {
		return bad, nil
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
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if bad := onlyKeys(a, "upid", "timeout_seconds"); bad != nil {
		return bad, nil
	}
	upid, bad := optString(a, "upid")
	if bad != nil {
		return bad, nil
	}
	u, err := pve.ParseUPID(upid)
	if err != nil {
		return argError("upid", err.Error()), nil
	}
	timeout, set, bad := optInt(a, "timeout_seconds", 1, 600)
	if bad != nil {
		return bad, nil
	}
	if !set {
		timeout = 60
	}
	start := s.opts.Now()
	path := pve.Path("nodes", u.Node, "tasks", upid, "status")
	p, refusal := s.prepare(ctx, c, callRequest{tool: ToolTaskWait, method: "GET", path: path, args: map[string]any{}}, start)
	if refusal != nil {
		return refusal, nil
	}
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return s.refuse(ctx, p.audit, OutcomeError, start, "no PVE token for tier "+string(c.Tier)+": "+err.Error()), nil
	}
	task, werr := s.follow(ctx, client, upid, time.Duration(timeout)*time.Second, progressToken(req))
	out := AuditOutcome{Outcome: OutcomeOK, Duration: s.opts.Now().Sub(start), UPID: upid}
	if werr != nil && task["status"] == "unknown" {
		return s.callFailed(ctx, p.audit, "", out, p.ep, werr), nil
	}
	switch {
	case task["status"] == "stopped" && task["ok"] == false:
		out.Outcome = OutcomeTaskFailed
		out.Error = fmt.Sprint(task["exitstatus"])
	case task["status"] != "stopped":
		out.Outcome = OutcomeTaskRunning
	}
	if err := s.audit.Record(journalContext(ctx), p.audit, out); err != nil {
		return errorResult("the journal refused the record: " + err.Error()), nil
	}
	res := structured(taskSummary(p.ep, path, task), map[string]any{"task": task})
	res.IsError = task["status"] == "stopped" && task["ok"] == false
	return res, nil
}

// handleResources is proxmox_cluster_resources.
func (s *Server) handleResources(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if bad := onlyKeys(a, "type", "fields", "omit", "limit", "offset"); bad != nil {
		return bad, nil
	}
	params := map[string]any{}
	if t, bad := optString(a, "type"); bad != nil {
		return bad, nil
	} else if t != "" {
		params["type"] = t
	}
	sh, _, _, _, bad := shapingArgs(a, "")
	if bad != nil {
		return bad, nil
	}
	return s.callEndpoint(ctx, c, callRequest{tool: ToolResources, method: "GET", path: "/cluster/resources", args: params, shape: sh}), nil
}

// locateGuest finds where a VM ID lives, through the caller's own view of
// /cluster/resources (policy and journal included).
func (s *Server) locateGuest(ctx context.Context, c Caller, tool string, vmid int) (node, kind string, bad *mcp.CallToolResult) {
	start := s.opts.Now()
	req := callRequest{tool: tool, method: "GET", path: "/cluster/resources", args: map[string]any{"type": "vm"}}
	p, refusal := s.prepare(ctx, c, req, start)
	if refusal != nil {
		return "", "", refusal
	}
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return "", "", s.refuse(ctx, p.audit, OutcomeError, start, "no PVE token for tier "+string(c.Tier)+": "+err.Error())
	}
	var list []map[string]any
	err = client.Get(ctx, "/cluster/resources", p.wire, &list)
	out := AuditOutcome{Outcome: OutcomeOK, Duration: s.opts.Now().Sub(start)}
	if err != nil {
		return "", "", s.callFailed(ctx, p.audit, "", out, p.ep, err)
	}
	if err := s.audit.Record(journalContext(ctx), p.audit, out); err != nil {
		return "", "", errorResult("the journal refused the record: " + err.Error())
	}
	for _, g := range list {
		if id, _ := scalarText(g["vmid"]); id == strconv.Itoa(vmid) {
			n, _ := g["node"].(string)
			k, _ := g["type"].(string)
			return n, k, nil
		}
	}
	return "", "", errorResult(fmt.Sprintf("no VM or container %d is visible to your key", vmid))
}

// handleGuestStatus is proxmox_guest_status.
func (s *Server) handleGuestStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if bad := onlyKeys(a, "vmid"); bad != nil {
		return bad, nil
	}
	vmid, set, bad := optInt(a, "vmid", 100, 999999999)
	if bad != nil {
		return bad, nil
	}
	if !set {
		return argError("vmid", "is required"), nil
	}
	node, kind, bad := s.locateGuest(ctx, c, ToolGuestStatus, vmid)
	if bad != nil {
		return bad, nil
	}
	path := pve.Path("nodes", node, kind, strconv.Itoa(vmid), "status", "current")
	return s.callEndpoint(ctx, c, callRequest{tool: ToolGuestStatus, method: "GET", path: path, args: map[string]any{}}), nil
}

// handleGuestPower is proxmox_guest_power.
func (s *Server) handleGuestPower(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, bad := s.caller(ctx)
	if bad != nil {
		return bad, nil
	}
	a, err := argsOf(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	if bad := onlyKeys(a, "vmid", "action", "wait", "confirm"); bad != nil {
		return bad, nil
	}
	vmid, set, bad := optInt(a, "vmid", 100, 999999999)
	if bad != nil {
		return bad, nil
	}
	if !set {
		return argError("vmid", "is required"), nil
	}
	action, bad := optString(a, "action")
	if bad != nil {
		return bad, nil
	}
	valid := false
	for _, x := range powerActions {
		valid = valid || x == action
	}
	if !valid {
		return argError("action", "must be one of "+strings.Join(powerActions, ", ")), nil
	}
	wait, _, bad := optInt(a, "wait", 0, 600)
	if bad != nil {
		return bad, nil
	}
	confirm, bad := optString(a, "confirm")
	if bad != nil {
		return bad, nil
	}
	node, kind, bad := s.locateGuest(ctx, c, ToolGuestPower, vmid)
	if bad != nil {
		return bad, nil
	}
	if kind == "lxc" && action == "reset" {
		return argError("action", "reset exists for VMs only; a container has stop"), nil
	}
	path := pve.Path("nodes", node, kind, strconv.Itoa(vmid), "status", action)
	return s.callEndpoint(ctx, c, callRequest{tool: ToolGuestPower, method: "POST", path: path, args: map[string]any{},
		wait: time.Duration(wait) * time.Second, confirm: confirm, progressToken: progressToken(req)}), nil
}

// describeFromSearch is proxmox_api_search with describe, in search mode
// (which has no describe tool): the describe tool's answer for that
// endpoint.
func (s *Server) describeFromSearch(ctx context.Context, req mcp.CallToolRequest, a map[string]any) (*mcp.CallToolResult, error) {
	if bad := onlyKeys(a, "describe", "section", "param", "offset"); bad != nil {
		return bad, nil
	}
	tool, bad := optString(a, "describe")
	if bad != nil {
		return bad, nil
	}
	if tool == "" {
		return argError("describe", "must be an endpoint's tool name, as a search gives it"), nil
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
	if bad := onlyKeys(a, "approve"); bad != nil {
		return bad, nil
	}
	args, ok := a["approve"].(map[string]any)
	if !ok {
		return argError("approve", "must be an object: {\"token\": ..., \"approve\": true}"), nil
	}
	req.Params.Arguments = args
	return s.handleApprove(ctx, req)
}
