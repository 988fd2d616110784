package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// The host file tools: each is one operation of the root helper.
const (
	ToolHostStat  = "proxmox_host_file_stat"
	ToolHostList  = "proxmox_host_file_list"
	ToolHostRead  = "proxmox_host_file_read"
	ToolHostWrite = "proxmox_host_file_write"
	// ToolHostService is a unit's status.
	ToolHostService = "proxmox_host_service"
	// ToolHostServiceControl is an action on a unit: a tool of its own,
	// so that the status is a read-only tool.
	ToolHostServiceControl = "proxmox_host_service_control"
	// ToolHostExec runs a command on the host, in a sandbox.
	ToolHostExec = "proxmox_host_exec"
)

// hostOps maps the host tools to the helper's operations.
var hostOps = map[string]string{ToolHostStat: "file.stat", ToolHostList: "file.list", ToolHostRead: "file.read", ToolHostWrite: "file.write", ToolHostService: "service.status", ToolHostServiceControl: "service.control", ToolHostExec: "command.exec"}

// HostHelper sends one request to the root helper (host.Call bound to the
// configured socket).
// progress, when not nil, takes a running command's progress frames.
type HostHelper func(ctx context.Context, req host.Request, progress func(host.ExecProgress)) (host.Response, error)

// HostOptions are the daemon's side of host operations: how to reach the
// helper, and the roots and protected paths the helper is configured
// with (the same configuration file), for visibility and early refusals.
// The helper decides again on its own copy of everything.
type HostOptions struct {
	Helper    HostHelper
	Roots     []host.Root
	Protected []string
	// ProtectedVolumes are the protected logical volumes (vg/lv): with
	// Protected, where break-glass applies.
	ProtectedVolumes []string
}

// unitProperty is the unit argument of the service tools.
var unitProperty = map[string]any{"type": "string", "description": "A unit name, such as pveproxy or cron.service (.service is added when there is no suffix)."}

func (s *Server) hostTools() []server.ServerTool {
	if s.opts.Host.Helper == nil {
		return nil
	}
	path := map[string]any{"type": "string", "description": "An absolute, canonical path (no . or .., no trailing /) beneath an allowed root; symbolic links are never followed."}
	tool := func(name, title, desc string, props map[string]any, required []string, h hints) server.ServerTool {
		props["path"] = path
		return server.ServerTool{
			Tool: mcp.NewTool(name, mcp.WithDescription(desc),
				rawSchema(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}),
				annotate(title, h)),
			Handler: s.handleHost,
		}
	}
	read := hints{readOnly: true, idempotent: true}
	return []server.ServerTool{
		tool(ToolHostStat, "Stat a host file", "A host file's type, size, mode, owner and mtime (a symbolic link is described, not followed). Through the root helper, under your key's policy.",
			map[string]any{}, []string{"path"}, read),
		tool(ToolHostList, "List a host directory", "One page of a host directory's entries, sorted by name, each with type, size, mode, owner and mtime; pass next as after for the next page.",
			map[string]any{
				"after": map[string]any{"type": "string", "description": "The last name of the previous page."},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxListLimit, "description": "Entries per page (default 200)."},
			}, []string{"path"}, read),
		tool(ToolHostRead, "Read a host file", "One page of a host file (text as utf-8, else base64) with the file's size and SHA-256; pages never cut a character. Logs are under /var/log.",
			map[string]any{
				"offset": map[string]any{"type": "integer", "minimum": 0, "description": "Byte offset (default 0)."},
				"length": map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxReadLength, "description": "Bytes to read (default 65536)."},
			}, []string{"path"}, read),
		{
			Tool: mcp.NewTool(ToolHostService, mcp.WithDescription("A systemd unit's status on the host: active and sub state, main PID, since when, restarts and the last journal lines. The unit is named as systemd names it (aliases resolved). proxmox_host_service_control starts, stops and restarts units."),
				rawSchema(map[string]any{"type": "object", "properties": map[string]any{
					"unit":  unitProperty,
					"lines": map[string]any{"type": "integer", "minimum": 0, "maximum": host.MaxJournalLines, "description": "Journal lines with the status (default 10)."},
				}, "required": []string{"unit"}, "additionalProperties": false}),
				annotate("A host service's status", hints{readOnly: true, idempotent: true})),
			Handler: s.handleHost,
		},
		{
			Tool: mcp.NewTool(ToolHostServiceControl, mcp.WithDescription("Start, stop, restart, reload, enable or disable a systemd unit on the host, and answer its state after the job. The unit is named as systemd names it (aliases resolved); this server's own units are refused."),
				rawSchema(map[string]any{"type": "object", "properties": map[string]any{
					"unit":    unitProperty,
					"action":  map[string]any{"type": "string", "enum": host.ServiceActions, "description": "What to do."},
					"confirm": confirmProperty,
				}, "required": []string{"unit", "action"}, "additionalProperties": false}),
				annotate("Control a host service", hints{destructive: true})),
			Handler: s.handleHost,
		},
		{
			Tool: mcp.NewTool(ToolHostExec, mcp.WithDescription("Run a command on the host: argv only, never through a shell (a shell, an interpreter or a program that runs others, such as env or find -exec, runs only where your policy names it). The program is found in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin or named by its absolute path. It runs in a transient systemd unit: the file system read-only except the writable paths you ask for and your policy allows, secrets inaccessible, no new privileges, reduced capabilities, private /tmp and process list, killed at its timeout. Answers exit_code (or signal), result, duration_ms, stdout and stderr (each capped at max_output, with bytes and truncated)."),
				rawSchema(map[string]any{"type": "object", "properties": map[string]any{
					"argv":           map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1, "maxItems": host.MaxArgs, "description": "The program and its arguments, such as [\"zpool\", \"status\"]."},
					"cwd":            map[string]any{"type": "string", "description": "Working directory: a canonical path beneath an allowed root (default /)."},
					"stdin":          map[string]any{"type": "string", "description": "Standard input (default none)."},
					"stdin_encoding": map[string]any{"type": "string", "enum": []string{"utf-8", "base64"}, "description": "How stdin is given (default utf-8)."},
					"timeout_sec":    map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxTimeout, "description": "Seconds before the command is killed (default 60)."},
					"max_output":     map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxOutput, "description": "Bytes kept of each of stdout and stderr (default 65536)."},
					"writable":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Paths the command may write, beneath allowed roots that allow writes (default none)."},
					"confirm":        confirmProperty,
				}, "required": []string{"argv"}, "additionalProperties": false}),
				annotate("Run a host command", hints{destructive: true, openWorld: false})),
			Handler: s.handleHost,
		},
		tool(ToolHostWrite, "Write a host file", "Replace or create a whole host file atomically (temporary file, fsync, rename); never through a link. Give the content's sha256; if_sha256 makes it conditional on the current content. Answers the new and the previous hash. A file over 8 MiB goes in chunks, in order: each call gives one chunk as content with its offset, the whole file's size and the whole file's sha256 (and the same other arguments); the last chunk puts the file in place.",
			map[string]any{
				"content":   map[string]any{"type": "string", "description": "The whole new content."},
				"encoding":  map[string]any{"type": "string", "enum": []string{"utf-8", "base64"}, "description": "How content is written (default utf-8)."},
				"sha256":    map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "The SHA-256 of the decoded content, lower-case hex."},
				"if_sha256": map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Write only if the file's current content has this SHA-256."},
				"create":    map[string]any{"type": "string", "enum": []string{"new", "existing"}, "description": "new: only if the file does not exist; existing: only if it does."},
				"mode":      map[string]any{"type": "string", "pattern": "^0?[0-7]{3}$", "description": "Permission bits as chmod takes them (default: the replaced file's, or 0644)."},
				"uid":       map[string]any{"type": "integer", "minimum": 0, "description": "Owner (default: the replaced file's, or root)."},
				"gid":       map[string]any{"type": "integer", "minimum": 0, "description": "Group (default: the replaced file's, or root)."},
				"confirm":   confirmProperty,
				"offset":    map[string]any{"type": "integer", "minimum": 0, "description": "A chunk's offset in the file (with size): the staged bytes so far."},
				"size":      map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxUploadSize, "description": "The whole file's size, for a write in chunks; sha256 is then the whole file's."},
			}, []string{"path", "content", "sha256"}, hints{destructive: true, idempotent: true}),
	}
}

// diagnosticsOnly are the built-in profiles whose host commands are only
// the reviewed diagnostics (policy/rego: host_diagnostic), each a read.
var diagnosticsOnly = []string{"read-only", "operator"}

// annotatedFor is a host tool as the caller is shown it: the command tool
// is read-only for a key of a built-in profile that runs only the
// reviewed diagnostics, so a client that asks a person before anything
// destructive does not ask before each of them. A custom policy's key sees
// it destructive: what its policy lets run is not known here.
func annotatedFor(c Caller, t mcp.Tool) mcp.Tool {
	if t.Name != ToolHostExec || c.Binding.Policy != "" || !slices.Contains(diagnosticsOnly, c.Binding.Profile) {
		return t
	}
	b := func(v bool) *bool { return &v }
	t.Annotations = mcp.ToolAnnotation{Title: "Run a reviewed diagnostic on the host",
		ReadOnlyHint: b(true), DestructiveHint: b(false), IdempotentHint: b(true), OpenWorldHint: b(false)}
	t.Description += " Your key runs only the reviewed diagnostic commands (each a read)."
	return t
}

// hostVisible says whether the caller's policy could allow the tool's
// operation beneath some root (a write beneath a root that allows writes):
// the policy's host_decision is asked about each root itself.
func (s *Server) hostVisible(ctx context.Context, c Caller, name string) bool {
	op := hostOps[name]
	if name == ToolHostExec {
		// Whoever may run one of the reviewed diagnostics, or some
		// program of the system's, sees the tool; each command is
		// decided on its own.
		for _, argv := range host.VisibilityProbes {
			exe, err := host.ResolveExecutable("argv[0]", argv[0], false)
			if err != nil {
				exe = "/usr/bin/" + argv[0]
			}
			in := host.PolicyInput(c.Principal, policy.HostOp{Op: op, Command: &policy.Command{Path: exe, Argv: argv, Cwd: "/", TimeoutSec: host.DefaultTimeout}}, nil)
			if s.opts.Policy.DecideHost(ctx, c.Binding, in).Effect != policy.Deny {
				return true
			}
		}
		return false
	}
	if name == ToolHostService {
		// Whoever may read some unit's status sees the tool.
		in := host.PolicyInput(c.Principal, policy.HostOp{Op: op, Unit: "systemd-journald.service"}, nil)
		return s.opts.Policy.DecideHost(ctx, c.Binding, in).Effect != policy.Deny
	}
	if name == ToolHostServiceControl {
		// Whoever may take some action on one of a few units (PVE's
		// proxy, a system service, the journal) sees the tool; each
		// action is decided on its own.
		for _, unit := range []string{"pveproxy.service", "cron.service", "systemd-journald.service"} {
			for _, action := range host.ServiceActions {
				in := host.PolicyInput(c.Principal, policy.HostOp{Op: op, Unit: unit, Action: action}, nil)
				if s.opts.Policy.DecideHost(ctx, c.Binding, in).Effect != policy.Deny {
					return true
				}
			}
		}
		return false
	}
	for _, r := range s.opts.Host.Roots {
		if op == "file.write" && !r.Write {
			continue
		}
		in := host.PolicyInput(c.Principal, policy.HostOp{Op: op, Path: r.Path, Root: r.Path}, nil)
		if d := s.opts.Policy.DecideHost(ctx, c.Binding, in); d.Effect != policy.Deny {
			return true
		}
	}
	return false
}

// handleHost is every host tool: the daemon checks the path lexically and
// decides with the caller's policy (an early refusal costs the helper
// nothing), journals, and hands the call with the caller's key to the
// helper, which verifies and decides again on its own. A write is never
// retried: an answer lost on the way may hide a write that was done.
func (s *Server) handleHost(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	name := req.Params.Name
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	target, err := s.hostTarget(name, a)
	if err != nil {
		return nil, err
	}
	if c.Key == "" {
		return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: host operations need an API key, which the root helper verifies itself; this session has none (local-root). Nothing was done."}
	}
	op := target.Op
	// A confirmation token goes in the envelope: the helper issued it and
	// checks it.
	confirmToken, err := optString(a, "confirm")
	if err != nil {
		return nil, err
	}
	delete(a, "confirm")

	in := host.PolicyInput(c.Principal, target, s.opts.Host.Protected)
	if in.Risk != schema.RiskRead {
		if why := s.switchRefusal("POST"); why != "" {
			return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: " + why + ". Nothing was done."}
		}
		if s.currentSwitches().PreviewWrites {
			return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: the daemon's preview_writes switch is on, and host writes have no preview yet. Nothing was done."}
		}
	}
	d := s.opts.Policy.DecideHost(ctx, c.Binding, in)
	// The journal's path is a path; a unit is in the arguments.
	call := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: name, ConcretePath: target.Path, Args: hostJournalArgs(a), Risk: in.Risk, Decision: d}
	// A confirmation is the helper's to ask for and to check; the rest of
	// what is not an allow is refused here.
	if d.Effect != policy.Allow && d.Effect != policy.Confirm {
		return s.hostRefused(ctx, call, d)
	}
	args, err := json.Marshal(a)
	if err != nil {
		return nil, argError("arguments", err.Error())
	}
	hreq := host.Request{V: host.WireVersion, ID: "d" + fmt.Sprint(s.opts.Now().UnixNano()), Key: c.Key.Reveal(), Source: c.Principal.Source, Op: op, Args: args, Confirm: confirmToken}
	var progress func(host.ExecProgress)
	if name == ToolHostExec {
		// The call lasts as long as the command may, and a little more:
		// the helper's answer comes once systemd has stopped it.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(target.Command.TimeoutSec)*time.Second+30*time.Second)
		defer cancel()
		progress = s.execProgress(ctx, progressToken(req))
	}
	res, resp := s.helperCall(ctx, call, hreq, progress, hostResult)
	if in.Risk == schema.RiskRead {
		return res, nil
	}
	if we := resp.Error; we != nil && we.Code == "confirm" && we.Token != "" && hreq.Confirm == "" {
		// The helper asks the caller to confirm: where the client can,
		// the person is asked, and their yes sends the token back.
		switch s.askPerson(ctx, fmt.Sprintf("Confirm %s %s? %s", name, hostJournalArgs(a), we.Message)) {
		case personConfirmed:
			hreq.Confirm = we.Token
			call.Time, call.Decision.Reasons = s.opts.Now(), append(slices.Clone(call.Decision.Reasons), "confirmed by the person at the client (elicitation)")
			res, _ = s.helperCall(ctx, call, hreq, progress, hostResult)
		case personDeclined:
			text := "The person at the client did not confirm this host operation. Nothing was done."
			call.Time = s.opts.Now()
			if err := s.audit.Record(journalContext(ctx), call, AuditOutcome{Outcome: journal.OutcomeDenied, Error: text}); err != nil {
				return errorResult("the journal refused the record of this call: " + err.Error()), nil
			}
			return errorResult(text), nil
		}
	}
	return res, nil
}

// helperCall sends one request to the helper, journaled: a read as one
// row once it is answered (an answer the journal did not take is
// withheld), anything else with its intent before and its receipt after,
// never retried. answer makes the tool's result of the helper's answer.
func (s *Server) helperCall(ctx context.Context, call AuditCall, hreq host.Request, progress func(host.ExecProgress),
	answer func(string, host.Response, error) (*mcp.CallToolResult, AuditOutcome)) (*mcp.CallToolResult, host.Response) {
	read := call.Risk == schema.RiskRead
	var id string
	if !read {
		var err error
		if id, err = s.audit.Intent(journalContext(ctx), call); err != nil {
			return errorResult("the journal did not take this call's intent, so nothing was sent to the helper: " + err.Error()), host.Response{}
		}
	}
	start := s.opts.Now()
	resp, err := s.opts.Host.Helper(ctx, hreq, progress)
	res, out := answer(call.Tool, resp, err)
	out.Duration = s.opts.Now().Sub(start)
	if read {
		if rerr := s.audit.Record(journalContext(ctx), call, out); rerr != nil {
			return errorResult("the journal refused the record of this call, so its answer is withheld: " + rerr.Error()), resp
		}
		return res, resp
	}
	if err != nil {
		out.Outcome = journal.OutcomeUncertain
	}
	if rerr := s.audit.Receipt(journalContext(ctx), id, out); rerr != nil {
		s.opts.Logger.Error("tools: journal a helper call's receipt", "call_id", id, "err", rerr)
	}
	return res, resp
}

// hostTarget is a host tool's target as the daemon can check it: a path
// canonical and beneath a configured root, or a unit name systemd would
// take (the helper asks systemd which unit it is, and decides again).
func (s *Server) hostTarget(name string, a map[string]any) (policy.HostOp, error) {
	if name == ToolHostExec {
		return s.execTarget(a)
	}
	if name == ToolHostService || name == ToolHostServiceControl {
		return serviceTarget(name, a)
	}
	p, err := optString(a, "path")
	if err != nil {
		return policy.HostOp{}, err
	}
	if p == "" {
		return policy.HostOp{}, argError("path", "is required")
	}
	if err := s.hostPathCheck("path", p, false); err != nil {
		return policy.HostOp{}, err
	}
	return policy.HostOp{Op: hostOps[name], Path: p, Root: s.hostRoot(p)}, nil
}

// serviceTarget is the unit a service tool names, and for the control
// tool its action.
func serviceTarget(name string, a map[string]any) (policy.HostOp, error) {
	allowed := []string{"unit", "lines"}
	if name == ToolHostServiceControl {
		allowed = []string{"unit", "action", "confirm"}
	}
	if err := onlyKeys(a, allowed...); err != nil {
		return policy.HostOp{}, err
	}
	unit, err := optString(a, "unit")
	if err != nil {
		return policy.HostOp{}, err
	}
	if unit, err = host.CleanUnitName("unit", unit); err != nil {
		return policy.HostOp{}, &toolError{outcome: journal.OutcomeInvalid, text: "argument " + err.Error()}
	}
	if name == ToolHostService {
		return policy.HostOp{Op: "service.status", Unit: unit}, nil
	}
	action, err := optString(a, "action")
	if err != nil {
		return policy.HostOp{}, err
	}
	if !slices.Contains(host.ServiceActions, action) {
		return policy.HostOp{}, argError("action", "is required and must be one of "+strings.Join(host.ServiceActions, ", ")+" (a unit's status is proxmox_host_service)")
	}
	return policy.HostOp{Op: "service.control", Unit: unit, Action: action}, nil
}

// hostRefused journals and answers a call the caller's policy refused.
func (s *Server) hostRefused(ctx context.Context, call AuditCall, d policy.Decision) (*mcp.CallToolResult, error) {
	text := fmt.Sprintf("Denied by %s: %s. Nothing was done.", d.Policy, strings.Join(d.Reasons, "; "))
	if d.Effect != policy.Deny {
		text = fmt.Sprintf("%s by %s: %s; a change to the protected repository goes through break-glass (proxmox_breakglass_request, then a second principal's approval), so nothing was done.", d.Effect, d.Policy, strings.Join(d.Reasons, "; "))
	}
	if err := s.audit.Record(journalContext(ctx), call, AuditOutcome{Outcome: journal.OutcomeDenied, Error: text}); err != nil {
		return errorResult("the journal refused the record of this call: " + err.Error()), nil
	}
	return errorResult(text), nil
}

// hostResult is the helper's answer as a tool result and a journal
// outcome.
func hostResult(name string, resp host.Response, err error) (*mcp.CallToolResult, AuditOutcome) {
	if err != nil {
		msg := "The root helper could not be reached or its answer was lost (" + err.Error() + ")."
		switch name {
		case ToolHostWrite:
			msg += " The write may have been done: read the file (its sha256) before writing again."
		case ToolHostExec:
			msg += " The command may have run, in part or whole: check its effect before running it again."
		}
		return errorResult(msg), AuditOutcome{Outcome: journal.OutcomeError, Error: msg}
	}
	if !resp.OK || resp.Error != nil {
		we := resp.Error
		if we == nil {
			we = &host.WireError{Code: "failed", Message: "the helper answered neither a result nor an error"}
		}
		if we.Code == "confirm" && we.Token != "" {
			return confirmAsked(name, we)
		}
		outcome := journal.OutcomeError
		switch we.Code {
		case "denied", "refused", "unauthenticated":
			outcome = journal.OutcomeDenied
		case "bad_request":
			outcome = journal.OutcomeInvalid
		}
		msg := fmt.Sprintf("The root helper refused (%s): %s. Nothing was done.", we.Code, we.Message)
		if we.Code == "failed" {
			msg = fmt.Sprintf("The root helper failed: %s.", we.Message)
		}
		return errorResult(msg), AuditOutcome{Outcome: outcome, Error: msg}
	}
	var content map[string]any
	if err := json.Unmarshal(resp.Result, &content); err != nil {
		return errorResult("the helper's answer is not an object: " + err.Error()), AuditOutcome{Outcome: journal.OutcomeError, Error: err.Error()}
	}
	if name == ToolHostExec {
		// The output is in the words already: the text does not repeat it
		// as JSON.
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(hostSummary(name, content))}, StructuredContent: content},
			AuditOutcome{Outcome: journal.OutcomeOK}
	}
	return structured(hostSummary(name, content), content), AuditOutcome{Outcome: journal.OutcomeOK}
}

func hostSummary(name string, c map[string]any) string {
	switch name {
	case ToolHostRead:
		return fmt.Sprintf("%v: bytes %v to %v of %v (%v), eof %v, sha256 %v.", c["path"], c["offset"], num(c["offset"])+num(c["length"]), c["size"], c["encoding"], c["eof"], c["sha256"])
	case ToolHostList:
		return fmt.Sprintf("%v: %d of %v entries.", c["path"], len(anySlice(c["entries"])), c["total"])
	case ToolHostWrite:
		if staged, ok := c["staged"]; ok {
			return fmt.Sprintf("Staged %v of %v bytes of %v; send the next chunk at offset %v.", staged, c["size"], c["path"], staged)
		}
		if c["created"] == true {
			return fmt.Sprintf("Created %v (%v bytes, sha256 %v).", c["path"], c["size"], c["sha256"])
		}
		return fmt.Sprintf("Replaced %v (%v bytes, sha256 %v; it was %v).", c["path"], c["size"], c["sha256"], c["previous_sha256"])
	case ToolHostExec:
		return execSummary(c)
	case ToolHostService, ToolHostServiceControl:
		s := fmt.Sprintf("%v: %v (%v), %v.", c["unit"], c["active_state"], c["sub_state"], c["load_state"])
		if job, ok := c["job"].(string); ok && job != "" {
			s = fmt.Sprintf("%v: job %s; now %v (%v).", c["unit"], job, c["active_state"], c["sub_state"])
		}
		return s
	}
	return fmt.Sprintf("%v: %v, %v bytes, mode %v.", c["path"], c["type"], c["size"], c["mode"])
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// hostJournalArgs are the arguments as the journal keeps them: a write's
// content is not kept (its hash and size are).
func hostJournalArgs(a map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		if k == "content" || k == "stdin" {
			if s, ok := v.(string); ok {
				out[k+"_bytes"] = len(s)
			}
			continue
		}
		out[k] = v
	}
	return out
}

// hostRoot is the innermost configured root p lies beneath ("" for none).
func (s *Server) hostRoot(p string) string {
	best := ""
	for _, r := range s.opts.Host.Roots {
		if beneathRoot(p, r.Path) && len(r.Path) > len(best) {
			best = r.Path
		}
	}
	return best
}

// beneathRoot says whether the canonical path p is root or beneath it.
func beneathRoot(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

func (s *Server) hostRootPaths() []string {
	var out []string
	for _, r := range s.opts.Host.Roots {
		out = append(out, r.Path)
	}
	slices.Sort(out)
	return out
}

// execTarget is a command as the daemon can check it: the argument
// vector's rules, the program resolved in the daemon's view (the helper
// resolves it again in the host's, as root, and decides on that), the
// working directory and writable paths beneath the configured roots.
func (s *Server) execTarget(a map[string]any) (policy.HostOp, error) {
	argv, err := stringList(a, "argv")
	if err != nil {
		return policy.HostOp{}, err
	}
	invalid := func(err error) error {
		return &toolError{outcome: journal.OutcomeInvalid, text: "argument " + err.Error()}
	}
	if err := host.CheckArgv("argv", argv); err != nil {
		return policy.HostOp{}, invalid(err)
	}
	exe, err := host.ResolveExecutable("argv[0]", argv[0], false)
	if err != nil {
		return policy.HostOp{}, invalid(err)
	}
	timeout, given, err := optInt(a, "timeout_sec", 1, host.MaxTimeout)
	if err != nil {
		return policy.HostOp{}, err
	}
	if !given {
		timeout = host.DefaultTimeout
	}
	if _, _, err := optInt(a, "max_output", 1, host.MaxOutput); err != nil {
		return policy.HostOp{}, err
	}
	cwd, err := optString(a, "cwd")
	if err != nil {
		return policy.HostOp{}, err
	}
	if cwd == "" {
		cwd = "/"
	}
	if cwd != "/" {
		if err := s.hostPathCheck("cwd", cwd, false); err != nil {
			return policy.HostOp{}, err
		}
	}
	writable, err := stringList(a, "writable")
	if err != nil {
		return policy.HostOp{}, err
	}
	for i, w := range writable {
		if err := s.hostPathCheck(fmt.Sprintf("writable[%d]", i), w, true); err != nil {
			return policy.HostOp{}, err
		}
	}
	slices.Sort(writable)
	writable = slices.Compact(writable)
	return policy.HostOp{Op: "command.exec", Command: &policy.Command{
		Path: exe, Argv: argv, Cwd: cwd, Class: host.Classify(exe, argv), Writable: writable, TimeoutSec: timeout,
	}}, nil
}

// hostPathCheck is the daemon's lexical check of a path: canonical and
// beneath a configured root (one that allows writes, for a write).
func (s *Server) hostPathCheck(field, p string, write bool) error {
	if _, err := host.CleanPath(field, p); err != nil {
		return &toolError{outcome: journal.OutcomeInvalid, text: "argument " + err.Error()}
	}
	for _, r := range s.opts.Host.Roots {
		if beneathRoot(p, r.Path) && (r.Write || !write) {
			return nil
		}
	}
	what := "an allowed root"
	if write {
		what = "an allowed root that allows writes"
	}
	return &toolError{outcome: journal.OutcomeInvalid, text: fmt.Sprintf("argument %s %q: is not beneath %s (%s)", field, p, what, strings.Join(s.hostRootPaths(), ", "))}
}

// stringList is an optional argument that must be a list of strings.
func stringList(a map[string]any, name string) ([]string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, argError(name, "must be a list of strings")
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, argError(fmt.Sprintf("%s[%d]", name, i), "must be a string")
		}
	}
	return out, nil
}

// execProgress sends a running command's progress to the client, when it
// asked for progress.
func (s *Server) execProgress(ctx context.Context, token mcp.ProgressToken) func(host.ExecProgress) {
	srv := server.ServerFromContext(ctx)
	if token == nil || srv == nil {
		return nil
	}
	return func(p host.ExecProgress) {
		msg := fmt.Sprintf("%s running for %s: %d bytes of stdout, %d of stderr", p.Unit, (time.Duration(p.ElapsedMS) * time.Millisecond).Round(time.Second), p.StdoutBytes, p.StderrBytes)
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token, "progress": p.ElapsedMS / 1000, "message": msg,
		})
	}
}

// execSummary is a command's answer in words, its output included (a
// client may show only the text).
func execSummary(c map[string]any) string {
	how := fmt.Sprintf("exit code %v", c["exit_code"])
	switch {
	case c["systemd_status"] != nil:
		how = fmt.Sprintf("not started: the sandbox failed with %v", c["systemd_status"])
	case c["signal"] != nil:
		how = fmt.Sprintf("killed by %v", c["signal"])
	}
	if r, _ := c["result"].(string); r == "timeout" {
		how += ", at its timeout"
	}
	out := func(name string) string {
		o, _ := c[name].(map[string]any)
		if num(o["bytes"]) == 0 {
			return ""
		}
		if o["encoding"] == "base64" {
			return fmt.Sprintf("\n%s (%v bytes, binary, base64 in structured content)", name, o["bytes"])
		}
		return fmt.Sprintf("\n%s (%v bytes):\n%v", name, o["bytes"], o["data"])
	}
	return fmt.Sprintf("%v %v: %s after %v ms (unit %v).%s%s", c["path"], c["argv"], how, c["duration_ms"], c["unit"], out("stdout"), out("stderr"))
}

// confirmProperty is the confirm argument of the host tools that change
// something.
var confirmProperty = map[string]any{"type": "string", "description": "The confirmation token an earlier answer gave, when your policy asks you to confirm: the same call again with it goes ahead, once."}

// confirmAsked is the helper's request for a confirmation, as a tool
// answer: what to confirm, the token, until when. Nothing was done.
func confirmAsked(name string, we *host.WireError) (*mcp.CallToolResult, AuditOutcome) {
	text := fmt.Sprintf("Confirmation needed, nothing was done: %s\nTo go ahead, make the same %s call again with confirm set to the token below, before %s.",
		we.Message, name, we.Expires.UTC().Format(time.RFC3339))
	content := map[string]any{"status": "confirmation_required", "confirm": we.Token, "expires_at": we.Expires.UTC().Format(time.RFC3339), "reason": we.Message}
	return structured(text, content), AuditOutcome{Outcome: journal.OutcomeConfirm, Error: we.Message}
}
