package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// The break-glass tools (docs/breakglass.md): each is one step of the
// root helper's protocol, which verifies the caller's key and decides
// with its policy again.
const (
	ToolBreakglassStage   = "proxmox_breakglass_stage"
	ToolBreakglassRequest = "proxmox_breakglass_request"
	ToolBreakglassConfirm = "proxmox_breakglass_confirm"
	ToolBreakglassApprove = "proxmox_breakglass_approve"
	ToolBreakglassDeny    = "proxmox_breakglass_deny"
	ToolBreakglassStatus  = "proxmox_breakglass_status"
)

// breakglassOps maps the tools to the helper's steps.
var breakglassOps = map[string]string{
	ToolBreakglassStage: host.OpBreakglassStage, ToolBreakglassRequest: host.OpBreakglassRequest,
	ToolBreakglassConfirm: "breakglass.confirm", ToolBreakglassApprove: host.OpBreakglassApprove,
	ToolBreakglassDeny: "breakglass.deny", ToolBreakglassStatus: host.OpBreakglassStatus,
}

// protectedAnything says whether the configuration protects something,
// which is when break-glass exists.
func (s *Server) protectedAnything() bool {
	return len(s.opts.Host.Protected) > 0 || len(s.opts.Host.ProtectedVolumes) > 0
}

func (s *Server) breakglassTools() []server.ServerTool {
	if s.opts.Host.Helper == nil || !s.protectedAnything() {
		return nil
	}
	id := map[string]any{"type": "string", "pattern": "^bg-[0-9a-f]{16}$", "description": "The request's id (bg- and 16 hex digits)."}
	tool := func(name, title, desc string, props map[string]any, required []string, h hints) server.ServerTool {
		return server.ServerTool{
			Tool: mcp.NewTool(name, mcp.WithDescription(desc),
				rawSchema(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}),
				annotate(title, h)),
			Handler: s.handleBreakglass,
		}
	}
	path := map[string]any{"type": "string", "description": "An absolute, canonical path strictly inside the protected repository; links are never followed."}
	return []server.ServerTool{
		tool(ToolBreakglassStage, "Stage break-glass content", "Stage the content a put_file request will write into the protected repository: in order, chunks of at most 8 MiB (base64), each with its offset, the whole content's size and SHA-256; the last chunk is checked against the hash. Staging changes nothing in the repository.",
			map[string]any{
				"sha256":  map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "The whole content's SHA-256, lower-case hex."},
				"size":    map[string]any{"type": "integer", "minimum": 0, "maximum": breakglass.MaxPutSize, "description": "The whole content's size in bytes."},
				"offset":  map[string]any{"type": "integer", "minimum": 0, "description": "This chunk's offset: the bytes staged so far (0 starts again)."},
				"content": map[string]any{"type": "string", "contentEncoding": "base64", "description": "This chunk, base64."},
			}, []string{"sha256", "size", "offset", "content"}, hints{idempotent: true}),
		tool(ToolBreakglassRequest, "Request a break-glass change", "Ask for one exact change to the protected repository, which every other tool refuses: put_file (staged content), move, delete_file, delete_directory or delete_volume. The root helper resolves the targets on the host and answers a preview (targets with their identity, what changes, digest, expiry in at most 5 minutes). Then the requester confirms with the phrase (the person is asked directly where the client supports elicitation), and a different principal approves with proxmox_breakglass_approve or `proxmox-mcp breakglass approve` on the host; the runner then executes it once. Answers id, state, digest, preview, next.",
			map[string]any{"operation": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"kind"},
				"description": "kind and its fields: put_file {path, sha256, size, mode}, move {path, to}, delete_file {path}, delete_directory {path}, delete_volume {volume}.",
				"properties": map[string]any{
					"kind":   map[string]any{"type": "string", "enum": breakglass.Kinds},
					"path":   path,
					"to":     path,
					"sha256": map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "put_file: the staged content's SHA-256."},
					"size":   map[string]any{"type": "integer", "minimum": 0, "description": "put_file: the staged content's size."},
					"mode":   map[string]any{"type": "string", "pattern": "^0?[0-7]{3}$", "description": "put_file: permission bits (default: the replaced file's, or 0644)."},
					"volume": map[string]any{"type": "string", "description": "delete_volume: a protected logical volume as vg/lv."},
				}}}, []string{"operation"}, hints{destructive: true}),
		tool(ToolBreakglassConfirm, "Confirm a break-glass request", "The requester's confirmation of its own request: the phrase its preview gave, which binds the preview's digest. Only the requesting key (or its rotation) confirms; it can never be the approver.",
			map[string]any{"id": id, "phrase": map[string]any{"type": "string", "description": "The confirmation phrase the request answered: break glass <id> <code>."}}, []string{"id", "phrase"}, hints{destructive: true}),
		tool(ToolBreakglassApprove, "Approve a break-glass request", "The second confirmation, by a principal other than the requester whose policy allows break-glass approval. Without digest it shows the preview to read; with the digest of that preview it approves exactly it, and the request is signed and queued for the runner.",
			map[string]any{"id": id, "digest": map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "The preview's digest, as shown: you approve exactly that."}}, []string{"id"}, hints{destructive: true}),
		tool(ToolBreakglassDeny, "Deny a break-glass request", "Refuse a request that has not run (the requester withdraws its own); a queued one is taken out of the queue.",
			map[string]any{"id": id, "reason": map[string]any{"type": "string", "maxLength": 1024, "description": "Why, for the requester and the journal."}}, []string{"id"}, hints{destructive: false}),
		tool(ToolBreakglassStatus, "Break-glass status", "One request (by id) with its preview, confirmations, state and the runner's result, or without id the latest requests. States: awaiting_confirmation, awaiting_approval, queued, denied, expired, done, refused, failed.",
			map[string]any{"id": id, "limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "description": "Requests listed without id (default 20)."}}, nil, hints{readOnly: true, idempotent: true}),
	}
}

// breakglassInput is the daemon's view of a step for its policy: the
// helper decides again on what it resolved.
func (s *Server) breakglassInput(c Caller, name string, a map[string]any) *policy.Input {
	op := breakglassOps[name]
	switch name {
	case ToolBreakglassRequest, ToolBreakglassConfirm:
		var targets []breakglass.Target
		if m, ok := a["operation"].(map[string]any); ok {
			for _, k := range []string{"path", "to"} {
				if p, ok := m[k].(string); ok && p != "" {
					targets = append(targets, breakglass.Target{Role: k, Path: p})
				}
			}
			if v, ok := m["volume"].(string); ok && v != "" {
				targets = append(targets, breakglass.Target{Role: "volume", Volume: v})
			}
		}
		if len(targets) == 0 {
			targets = s.someProtected()
		}
		return host.BreakglassInput(c.Principal, policy.HostOp{Op: host.OpBreakglassRequest}, name, targets, true)
	case ToolBreakglassDeny:
		op = host.OpBreakglassApprove
	}
	return host.BreakglassInput(c.Principal, policy.HostOp{Op: op}, name, nil, false)
}

// someProtected is a target inside the protected repository, for the
// policy's view of a step whose targets the helper holds.
func (s *Server) someProtected() []breakglass.Target {
	if len(s.opts.Host.Protected) > 0 {
		return []breakglass.Target{{Role: "file", Path: strings.TrimSuffix(s.opts.Host.Protected[0], "/") + "/file"}}
	}
	return []breakglass.Target{{Role: "volume", Volume: s.opts.Host.ProtectedVolumes[0]}}
}

// breakglassWants is the effect a step needs, as the helper has it.
func breakglassWants(name string) policy.Effect {
	if name == ToolBreakglassRequest || name == ToolBreakglassConfirm {
		return policy.Breakglass
	}
	return policy.Allow
}

// breakglassVisible: a requester sees the request, confirm, stage, deny
// and status tools; an approver the approve, deny and status tools.
func (s *Server) breakglassVisible(ctx context.Context, c Caller, name string) bool {
	requester := s.opts.Policy.DecideHost(ctx, c.Binding, s.breakglassInput(c, ToolBreakglassRequest, nil)).Effect == policy.Breakglass
	approver := s.opts.Policy.DecideHost(ctx, c.Binding, s.breakglassInput(c, ToolBreakglassApprove, nil)).Effect == policy.Allow
	switch name {
	case ToolBreakglassRequest, ToolBreakglassConfirm:
		return requester
	case ToolBreakglassStage:
		return requester && s.opts.Policy.DecideHost(ctx, c.Binding, s.breakglassInput(c, name, nil)).Effect == policy.Allow
	case ToolBreakglassApprove:
		return approver
	}
	return requester || approver
}

// handleBreakglass is every break-glass tool: an early decision with the
// caller's policy, the journal, then the helper with the caller's key.
func (s *Server) handleBreakglass(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	name := req.Params.Name
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	if c.Key == "" {
		return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: break-glass steps need an API key, which the root helper verifies itself; this session has none (local-root). Nothing was done."}
	}
	if name == ToolBreakglassApprove {
		if d, _ := a["digest"].(string); d == "" {
			// Read first: the preview, and its digest to approve with.
			name, a = ToolBreakglassStatus, map[string]any{"id": a["id"]}
		}
	}
	in := s.breakglassInput(c, name, a)
	risk := host.Risk(*in.Host)
	if name == ToolBreakglassDeny || name == ToolBreakglassConfirm {
		risk = schema.RiskWrite
	}
	if risk != schema.RiskRead {
		if why := s.switchRefusal("POST"); why != "" {
			return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: " + why + ". Nothing was done."}
		}
	}
	d := s.opts.Policy.DecideHost(ctx, c.Binding, in)
	ok := d.Effect == breakglassWants(name)
	if name == ToolBreakglassDeny && !ok {
		// The daemon does not know whether the caller asked for the
		// request: a requester withdraws its own as it asked for it
		// (the helper, which knows, decides again).
		if rd := s.opts.Policy.DecideHost(ctx, c.Binding, s.breakglassInput(c, ToolBreakglassRequest, nil)); rd.Effect == policy.Breakglass {
			d, ok = rd, true
		}
	}
	call := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: name, Args: breakglassJournalArgs(name, a), Risk: risk, Decision: d}
	if !ok {
		text := fmt.Sprintf("Denied by %s (%s): %s. A break-glass request needs a policy that asks for break-glass on the protected repository; an approval one that allows host operation breakglass.approve. Nothing was done.", d.Policy, d.Effect, strings.Join(d.Reasons, "; "))
		if err := s.audit.Record(journalContext(ctx), call, AuditOutcome{Outcome: journal.OutcomeDenied, Error: text}); err != nil {
			return errorResult("the journal refused the record of this call: " + err.Error()), nil
		}
		return errorResult(text), nil
	}
	res, content, err := s.breakglassStep(ctx, c, call, breakglassOps[name], a)
	if err != nil || res.IsError || name != ToolBreakglassRequest {
		return res, err
	}
	return s.elicitConfirmation(ctx, c, content, res)
}

// breakglassStep sends one step to the helper, journaled: a read once it
// is answered, a write with its intent before and receipt after.
func (s *Server) breakglassStep(ctx context.Context, c Caller, call AuditCall, op string, a map[string]any) (*mcp.CallToolResult, map[string]any, error) {
	args, err := json.Marshal(a)
	if err != nil {
		return nil, nil, argError("arguments", err.Error())
	}
	hreq := host.Request{V: host.WireVersion, ID: "d" + fmt.Sprint(s.opts.Now().UnixNano()), Key: c.Key.Reveal(), Source: c.Principal.Source, Op: op, Args: args}
	var content map[string]any
	res, _ := s.helperCall(ctx, call, hreq, nil, func(tool string, resp host.Response, err error) (*mcp.CallToolResult, AuditOutcome) {
		res, c, out := breakglassResult(tool, resp, err)
		content = c
		return res, out
	})
	return res, content, nil
}

// breakglassJournalArgs are a step's arguments without staged content
// (its hash and size are the evidence).
func breakglassJournalArgs(name string, a map[string]any) map[string]any {
	if name != ToolBreakglassStage {
		return a
	}
	out := map[string]any{}
	for k, v := range a {
		if k == "content" {
			s, _ := v.(string)
			out["content_base64_bytes"] = len(s)
			continue
		}
		out[k] = v
	}
	return out
}

// breakglassResult is the helper's answer as a tool result.
func breakglassResult(name string, resp host.Response, err error) (*mcp.CallToolResult, map[string]any, AuditOutcome) {
	if err != nil {
		msg := "The root helper could not be reached or its answer was lost (" + err.Error() + "). The step may have been taken: read the request with proxmox_breakglass_status before repeating it."
		return errorResult(msg), nil, AuditOutcome{Outcome: journal.OutcomeError, Error: msg}
	}
	if !resp.OK || resp.Error != nil {
		res, out := hostResult(name, resp, nil)
		return res, nil, out
	}
	var content map[string]any
	if err := json.Unmarshal(resp.Result, &content); err != nil {
		return errorResult("the helper's answer is not an object: " + err.Error()), nil, AuditOutcome{Outcome: journal.OutcomeError, Error: err.Error()}
	}
	out := AuditOutcome{Outcome: journal.OutcomeOK}
	if p, ok := content["preview"].(map[string]any); ok {
		id, _ := p["id"].(string)
		digest, _ := content["digest"].(string)
		out.JobID, out.Detail = id, &journal.Detail{Digest: digest}
	}
	return structured(breakglassSummary(name, content), content), content, out
}

func breakglassSummary(name string, c map[string]any) string {
	if name == ToolBreakglassStage {
		if c["complete"] == true {
			return fmt.Sprintf("Staged all %v bytes (sha256 %v): name it in a put_file request.", c["size"], c["sha256"])
		}
		return fmt.Sprintf("Staged %v of %v bytes; send the next chunk at offset %v.", c["received"], c["size"], c["received"])
	}
	if reqs, ok := c["requests"].([]any); ok {
		return fmt.Sprintf("%d of %v break-glass requests, the newest first.", len(reqs), c["total"])
	}
	p, _ := c["preview"].(map[string]any)
	op, _ := p["operation"].(map[string]any)
	text := fmt.Sprintf("Break-glass request %v (%v %v): %v. Digest %v. Next: %v.", p["id"], op["kind"], firstOf(op["path"], op["volume"]), c["state"], c["digest"], c["next"])
	if ph, ok := c["phrase"].(string); ok && ph != "" {
		text += fmt.Sprintf(" The requester confirms with the phrase %q.", ph)
	}
	return text
}

func firstOf(vs ...any) any {
	for _, v := range vs {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// elicitConfirmation asks the person, not the model, for the requester's
// confirmation, where the client supports elicitation: the phrase is
// shown to them alone, and what they type confirms the request. Without
// elicitation the answer carries the phrase (docs/breakglass.md says what
// that means).
func (s *Server) elicitConfirmation(ctx context.Context, c Caller, content map[string]any, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	p, _ := content["preview"].(map[string]any)
	id, _ := p["id"].(string)
	phrase, _ := content["phrase"].(string)
	if id == "" || phrase == "" {
		return res, nil
	}
	changes, _ := json.Marshal(p["changes"])
	msg := fmt.Sprintf("Break-glass request %s by %s will change the protected repository: %s. Digest %v; it expires at %v. To confirm it as its requester, type: %s",
		id, c.Principal.Name, changes, content["digest"], p["expires"], phrase)
	answer, typed := s.elicit(ctx, msg, "phrase", map[string]any{"type": "string", "title": "Confirmation phrase", "description": "Type the phrase shown above to confirm, or decline."})
	if answer == notAsked {
		return res, nil
	}
	// The phrase was the person's to type: the model does not get it.
	delete(content, "phrase")
	if answer == personDeclined {
		content["next"] = "the person did not confirm: the request waits unconfirmed until it expires; proxmox_breakglass_confirm takes the phrase from them"
		return structured(breakglassSummary(ToolBreakglassRequest, content), content), nil
	}
	given, _ := typed["phrase"].(string)
	call := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: ToolBreakglassConfirm, Args: map[string]any{"id": id, "via": "elicitation"}, Risk: schema.RiskWrite,
		Decision: s.opts.Policy.DecideHost(ctx, c.Binding, s.breakglassInput(c, ToolBreakglassConfirm, nil))}
	res, _, err := s.breakglassStep(ctx, c, call, "breakglass.confirm", map[string]any{"id": id, "phrase": given})
	return res, err
}
