package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// ToolUndo takes one of the caller's operations back, or every operation
// of one of its changes (docs/changes.md#undo).
const ToolUndo = "proxmox_undo"

// undoWait is how long an undo that starts a task (deleting a snapshot)
// waits for it when the caller does not say.
const undoWait = 120 * time.Second

func undoTool() mcp.Tool {
	return mcp.NewTool(ToolUndo,
		mcp.WithDescription("Take back one of your writes (operation id or operation_key) or every write of one of your changes (change), field by field. "+
			"A field is set back to its value before the write (or deleted, if the write added it) only if its value now is the one the write left "+
			"and nothing the journal or PVE's task index saw since shows anyone changed it; otherwise it is a conflict, explained with the evidence, "+
			"and nothing is sent (there is no force). A snapshot the write made is deleted, if it is still the one it made. Deletes, migrations, "+
			"disk resizes, creates and power actions cannot be undone and say so. preview (the default) shows the plan; preview: false sends it, "+
			"as a new write with its own operation key, conditional on the configuration's digest. A change is undone newest first; a second call "+
			"continues where the first stopped."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"operation":     map[string]any{"type": "string", "minLength": 1, "description": "The operation id (evidence.operation of the write's answer)."},
				"operation_key": map[string]any{"type": "string", "minLength": 1, "description": "Your operation key of the write, instead of its id."},
				"change":        map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$", "description": "Undo every write of this change of yours, newest first."},
				"preview":       map[string]any{"type": "boolean", "description": "Only show what undo would do (default true)."},
				"confirm":       map[string]any{"type": "string", "description": "The confirmation token, when the undo asked for one."},
				"wait":          map[string]any{"type": "integer", "minimum": 0, "maximum": 600, "description": "Seconds to wait for a task the undo starts (default 120)."},
				"undo_key": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$",
					"description": "Your operation key for the undo itself (one operation only); by default one is derived from the operation undone, so a repeated undo returns the recorded one."},
			},
			"additionalProperties": false,
		}),
		annotate("Undo a write", hints{destructive: true}),
	)
}

// undoArgs are proxmox_undo's arguments, decoded.
type undoArgs struct {
	operation, operationKey, change string
	preview                         bool
	confirm, undoKey                string
	wait                            time.Duration
}

func decodeUndoArgs(a map[string]any) (undoArgs, error) {
	u := undoArgs{preview: true, wait: undoWait}
	if err := onlyKeys(a, "operation", "operation_key", "change", "preview", "confirm", "wait", "undo_key"); err != nil {
		return u, err
	}
	var err error
	for name, dst := range map[string]*string{"operation": &u.operation, "operation_key": &u.operationKey, "change": &u.change, "confirm": &u.confirm, "undo_key": &u.undoKey} {
		if *dst, err = optString(a, name); err != nil {
			return u, err
		}
	}
	given := 0
	for _, v := range []string{u.operation, u.operationKey, u.change} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return u, argError("operation", "give exactly one of operation (an id), operation_key, or change")
	}
	for name, v := range map[string]string{"change": u.change, "undo_key": u.undoKey} {
		if _, ok := a[name]; ok {
			if err := journal.CheckOperationKey(v); err != nil {
				return u, argError(name, strings.TrimPrefix(err.Error(), "operation_key "))
			}
		}
	}
	if u.undoKey != "" && u.change != "" {
		return u, argError("undo_key", "a change's undo names each of its operations' undo itself; give undo_key only with one operation")
	}
	if v, ok := a["preview"]; ok {
		b, ok := v.(bool)
		if !ok {
			return u, argError("preview", "must be true or false")
		}
		u.preview = b
	}
	if w, set, err := optInt(a, "wait", 0, 600); err != nil {
		return u, err
	} else if set {
		u.wait = time.Duration(w) * time.Second
	}
	return u, nil
}

// handleUndo is proxmox_undo.
func (s *Server) handleUndo(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := argsOf(req)
	if err != nil {
		return nil, err
	}
	ua, err := decodeUndoArgs(a)
	if err != nil {
		return nil, err
	}
	u, err := s.undoer(c)
	if err != nil {
		return errorResult("undo cannot read PVE: " + err.Error() + ". Nothing was sent."), nil
	}
	if ua.change != "" {
		return s.undoChange(ctx, c, u, ua, progressToken(req)), nil
	}
	id := ua.operation
	if ua.operationKey != "" {
		found, _, ok, err := s.opts.Ledger.OperationByKey(ctx, c.Principal.KeyID, ua.operationKey)
		if err != nil {
			return errorResult("the journal could not be read: " + err.Error() + ". Nothing was sent."), nil
		}
		if !ok {
			return nil, argError("operation_key", fmt.Sprintf("your key has made no write with operation key %q", ua.operationKey))
		}
		id = found
	}
	owner, err := u.Owner(ctx, id)
	if errors.Is(err, journal.ErrInvalid) || errors.Is(err, changes.ErrNotOperation) || err == nil && !mayReadOperation(c, owner) {
		// Another key's operation is answered as none at all.
		return nil, argError("operation", changes.ErrNotOperation.Error()+" of your key")
	}
	if err != nil {
		return errorResult("the journal could not be read: " + err.Error() + ". Nothing was sent."), nil
	}
	p, err := u.Preview(ctx, id)
	if err != nil {
		return errorResult("undo could not read its evidence: " + err.Error() + ". Nothing was sent."), nil
	}
	if err := s.observeUndo(ctx, c, p, map[string]bool{}); err != nil {
		return errorResult("the journal refused the observation undo made: " + err.Error() + ". Nothing was sent."), nil
	}
	view := planView(p)
	if ua.preview {
		return structured(previewSummary(p), view), nil
	}
	if p.Status == changes.UndoDone {
		view["replayed"] = true
		return structured(fmt.Sprintf("Operation %s was undone already, by operation %s; nothing was sent.", id, p.UndoneBy), view), nil
	}
	if !p.Runnable() {
		res := structured(previewSummary(p)+" Nothing was sent.", view)
		res.IsError = true
		return res, nil
	}
	key := ua.undoKey
	if key == "" {
		key = undoKeyOf(p)
	}
	res, done := s.sendUndo(ctx, c, p, key, ua.confirm, ua.wait, progressToken(req))
	content := contentOf(res)
	content["undo_of"] = id
	content["undo"] = view
	summary := firstLine(text(res))
	if done.ok && done.stopped == "" {
		summary = undoneSummary(p, done.operation) + " " + summary
	}
	out := structured(summary, content)
	// A confirmation asked for, or a preview the switches made, is an
	// answer to act on, not an error; an undo that was refused, or had
	// been made before and failed, is.
	out.IsError = res.IsError || !done.ok && done.confirm == "" && content["dry_run"] != true
	return out, nil
}

// observeUndo journals the configuration undo read (once per digest in
// one call): what undo saw is evidence for the next undo, like any read.
func (s *Server) observeUndo(ctx context.Context, c Caller, p *changes.UndoPlan, seen map[string]bool) error {
	d, _ := p.Config["digest"].(string)
	if p.Config == nil || seen[p.Path+"\x00"+d] {
		return nil
	}
	seen[p.Path+"\x00"+d] = true
	_, err := s.opts.Ledger.Observe(journalContext(ctx), journal.Observation{Time: s.opts.Now(), Principal: journalPrincipal(c.Principal), Tool: ToolUndo,
		PathTemplate: p.Template, Path: p.Path, Digest: d, Config: p.Config})
	return err
}

// undoer builds the undo engine for a caller: the journal, PVE read with
// the caller's tier's token, the journal's redaction and the schema's
// facts about which fields an edit can set back.
func (s *Server) undoer(c Caller) (*changes.Undoer, error) {
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return nil, fmt.Errorf("no PVE token for tier %s: %w", c.Tier, err)
	}
	redact := func(_ string, v any) any { return v }
	if r, ok := s.opts.Ledger.(interface{ Redactor() *journal.Redactor }); ok {
		redact = r.Redactor().Value
	}
	return changes.NewUndoer(changes.UndoOptions{Journal: s.opts.Ledger, PVE: changes.NewPVEReader(client), Redact: redact, Restorable: s.restorable})
}

// restorable says why a field of the configuration at template cannot be
// set back through its edit.
func (s *Server) restorable(template, field string) string {
	reg := s.registry()
	ep := reg.Lookup("PUT", template)
	if ep == nil {
		if ep = reg.Lookup("POST", template); ep == nil {
			return "no endpoint of the API schema edits " + template
		}
	}
	if ep.ParamFor(field) == nil {
		return fmt.Sprintf("%s is not a parameter of %s %s: PVE sets it itself, so undo cannot set it back", field, ep.Method, ep.Path)
	}
	if ep.Secret(field) {
		return field + " is a secret, which the journal keeps only as a marker: undo cannot write it back"
	}
	if k, ok := ep.TargetKind(field); ok && (k == schema.TargetDisk || k == schema.TargetVolume) || strings.HasPrefix(field, "unused") {
		return field + " holds a disk: setting it back would attach, detach or free a volume, not restore a value, and undo leaves disks to you"
	}
	return ""
}

// undoKeyOf is the operation key of an undo when the caller gives none: one
// per operation and attempt, so that the same undo asked again (or by
// several clients at once) is sent once and returns the recorded one.
func undoKeyOf(p *changes.UndoPlan) string {
	return "undo." + p.Operation + "." + strconv.Itoa(p.Attempts+1)
}

// sent is what became of one undo sent through the call path.
type sent struct {
	ok        bool   // PVE did it (or it had been done: a replay)
	operation string // the undo's operation id
	stopped   string // why it did not go through: a confirmation asked for, a preview, an error
	confirm   string // the token, when a confirmation was asked for
}

// sendUndo sends an undo as any write is sent: planned, decided, switched
// and guarded, journalled with its own operation key and what it undoes.
func (s *Server) sendUndo(ctx context.Context, c Caller, p *changes.UndoPlan, key, confirm string, wait time.Duration, progress mcp.ProgressToken) (*mcp.CallToolResult, sent) {
	r := p.Request
	res := s.callEndpoint(ctx, c, callRequest{tool: ToolUndo, method: r.Method, path: r.Path, args: r.Params, operationKey: key, undoOf: p.Operation,
		confirm: confirm, wait: wait, progressToken: progress})
	content := contentOf(res)
	switch {
	case content["status"] == "confirmation_required":
		tok, _ := content["confirm"].(string)
		return res, sent{stopped: "the undo needs your confirmation: call again with confirm set to the token", confirm: tok}
	case content["status"] == "approval_required":
		tok, _ := content["confirm"].(string)
		return res, sent{stopped: "the undo needs another principal's approval (proxmox_approve with the token); then call again with confirm set to the token", confirm: tok}
	case content["dry_run"] == true:
		return res, sent{stopped: "the daemon answers every write as a preview now (or your policy allows only previews): nothing was sent"}
	case res.IsError:
		return res, sent{stopped: firstLine(text(res))}
	}
	if content["replayed"] == true {
		id, _ := content["operation"].(string)
		ok := content["state"] == string(journal.OutcomeOK) || content["state"] == journal.StateApplied
		if content["state"] == "pending" {
			return res, sent{operation: id, stopped: fmt.Sprintf("the same undo is under way as operation %s (another call of yours sent it); ask %s for its outcome", id, ToolOperation)}
		}
		if !ok {
			return res, sent{operation: id, stopped: fmt.Sprintf("this undo was made before as operation %s, which ended %v", id, content["state"])}
		}
		return res, sent{ok: true, operation: id}
	}
	id := ""
	if ev, ok := content["evidence"].(map[string]any); ok {
		id, _ = ev["operation"].(string)
	}
	return res, sent{ok: true, operation: id}
}

// undoChange undoes the operations of one of the caller's changes, newest
// first: each is planned as if the later ones were undone already (so a
// field the change set twice is set back through both), sent in turn,
// and the first that cannot be undone stops the rest, with what was done
// so far. Operations undone already are passed over, so a second call
// continues where the first stopped.
func (s *Server) undoChange(ctx context.Context, c Caller, u *changes.Undoer, ua undoArgs, progress mcp.ProgressToken) *mcp.CallToolResult {
	intents, err := s.opts.Ledger.ChangeEvents(ctx, c.Principal.KeyID, ua.change)
	if err != nil {
		return errorResult("the journal could not be read: " + err.Error() + ". Nothing was sent.")
	}
	var ops []string
	for i := len(intents) - 1; i >= 0; i-- {
		if d, err := intents[i].DetailOf(); err == nil && d.UndoOf == "" {
			ops = append(ops, intents[i].CallID)
		}
	}
	if len(ops) == 0 {
		return errorResult(fmt.Sprintf("argument change: your key has made no write in change %q. Nothing was sent.", ua.change))
	}
	seen := map[string]bool{}
	content := map[string]any{"change": ua.change, "preview": ua.preview, "order": "newest first"}
	var (
		steps    []any
		assumed  []string
		done     int
		stopped  string
		stopID   string
		confirm  = ua.confirm
		anyError bool
	)
	for _, id := range ops {
		p, err := u.Preview(ctx, id, assumed...)
		if err == nil {
			err = s.observeUndo(ctx, c, p, seen)
		}
		if err != nil {
			stopped, stopID, anyError = "undo could not read or record its evidence: "+err.Error(), id, true
			break
		}
		step := planView(p)
		steps = append(steps, step)
		switch p.Status {
		case changes.UndoDone, changes.UndoNothing:
			step["result"] = "passed over: " + p.Reason
			continue
		case changes.UndoReady:
		default:
			stopped, stopID, anyError = previewSummary(p), id, true
		}
		if stopped != "" {
			break
		}
		if ua.preview {
			step["result"] = "would be undone"
			assumed = append(assumed, id)
			continue
		}
		res, out := s.sendUndo(ctx, c, p, undoKeyOf(p), confirm, ua.wait, progress)
		confirm = "" // a token confirms one call
		step["answer"] = contentOf(res)
		if !out.ok {
			step["result"] = "not undone: " + out.stopped
			stopped, stopID = out.stopped, id
			if out.confirm != "" {
				content["confirm"] = out.confirm
			} else {
				anyError = true
			}
			break
		}
		step["result"], step["undone_by"] = "undone", out.operation
		done++
	}
	complete := stopped == ""
	content["operations"], content["complete"], content["undone_now"] = steps, complete, done
	var summary string
	switch {
	case complete && ua.preview:
		summary = fmt.Sprintf("Change %q: every one of its %d operations can be undone (or needs none); nothing was sent. Call again with preview: false to undo it.", ua.change, len(ops))
	case complete:
		summary = fmt.Sprintf("Change %q is undone: %d operations undone now, the others undone before or changed nothing.", ua.change, done)
	default:
		content["stopped_at"], content["stopped_because"] = stopID, stopped
		content["next"] = "The operations before it (older) were not undone. Settle or resolve what stopped it, then call again: undo continues where it stopped."
		summary = fmt.Sprintf("Change %q: undo stopped at operation %s after undoing %d now: %s", ua.change, stopID, done, stopped)
	}
	res := structured(summary, content)
	res.IsError = anyError
	return res
}

// planView is an undo plan as the caller reads it: its status and
// whether it can run, each field's plan (restore to a value, delete, or
// conflict with the evidence; a secret field's values are not repeated),
// and the request it would send.
func planView(p *changes.UndoPlan) map[string]any {
	v := map[string]any{"operation": p.Operation, "request": map[string]any{"method": p.Method, "path": p.Path},
		"status": string(p.Status), "runnable": p.Runnable()}
	if p.Reason != "" {
		v["reason"] = p.Reason
	}
	if p.Change != "" {
		v["change"] = p.Change
	}
	if p.UndoneBy != "" {
		v["undone_by"] = p.UndoneBy
	}
	if len(p.Fields) > 0 {
		fields := map[string]any{}
		for _, f := range p.Fields {
			e := map[string]any{"action": string(f.Action)}
			if f.Secret {
				e["secret"] = true
			} else {
				e["before"], e["left"], e["now"] = f.Before, f.Left, f.Current
			}
			switch f.Action {
			case changes.FieldRestore:
				if !f.Secret {
					e["plan"] = "restore to " + fmt.Sprint(f.Before)
				}
			case changes.FieldDelete:
				e["plan"] = "delete (the operation added it)"
			case changes.FieldConflict:
				e["why"] = f.Why
				if len(f.Evidence) > 0 {
					e["evidence"] = f.Evidence
				}
			}
			fields[f.Field] = e
		}
		v["fields"] = fields
	}
	if len(p.Evidence) > 0 {
		v["evidence"] = p.Evidence
	}
	if r := p.Request; r != nil {
		v["undo"] = map[string]any{"method": r.Method, "path": r.Path, "params": r.Params}
	}
	if p.Rollback != nil {
		v["rollback_offer"] = p.Rollback
	}
	return v
}

func previewSummary(p *changes.UndoPlan) string {
	switch p.Status {
	case changes.UndoReady:
		if p.Request.Method == "DELETE" {
			return fmt.Sprintf("Undo of %s is ready: %s %s deletes the snapshot it made.", p.Operation, p.Request.Method, p.Request.Path)
		}
		var names []string
		for _, f := range p.Fields {
			names = append(names, f.Field)
		}
		slices.Sort(names)
		return fmt.Sprintf("Undo of %s is ready: %s set back on %s (digest %s).", p.Operation, strings.Join(names, ", "), p.Path, short(p.Request.Digest))
	case changes.UndoDone:
		return fmt.Sprintf("Operation %s is undone already, by %s.", p.Operation, p.UndoneBy)
	}
	return fmt.Sprintf("Operation %s cannot be undone (%s): %s", p.Operation, p.Status, p.Reason)
}

// undoneSummary says what an undo that went through did.
func undoneSummary(p *changes.UndoPlan, by string) string {
	if p.Request.Method == "DELETE" {
		return fmt.Sprintf("Operation %s undone by operation %s: the snapshot it made is deleted.", p.Operation, by)
	}
	var names []string
	for _, f := range p.Fields {
		names = append(names, f.Field)
	}
	slices.Sort(names)
	return fmt.Sprintf("Operation %s undone by operation %s: %s set back on %s.", p.Operation, by, strings.Join(names, ", "), p.Path)
}

// contentOf is a result's structured content as a map.
func contentOf(res *mcp.CallToolResult) map[string]any {
	switch c := res.StructuredContent.(type) {
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, v := range c {
			out[k] = v
		}
		return out
	case nil:
		return map[string]any{"error": text(res)}
	default:
		b, err := json.Marshal(c)
		var out map[string]any
		if err != nil || json.Unmarshal(b, &out) != nil {
			return map[string]any{"error": text(res)}
		}
		return out
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
