package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// ToolGuestExec runs a command inside a guest: in a VM through its QEMU
// guest agent (PVE's agent/exec and agent/exec-status), in a container
// through the root helper (pct exec).
const ToolGuestExec = "proxmox_guest_exec"

// Guest exec limits beyond the host's (host.MaxArgs, host.MaxTimeout,
// host.MaxOutput, host.MaxStdin).
const (
	// agentMaxStdin is PVE's bound on input-data (maxLength 64 KiB).
	agentMaxStdin = 64 << 10
	// The exec-status polls start at the first interval and grow to the
	// last.
	agentPollFirst = 200 * time.Millisecond
	agentPollMax   = 2 * time.Second
)

// The endpoints of the VM path.
const (
	agentExecPath   = "/nodes/{node}/qemu/{vmid}/agent/exec"
	agentStatusPath = "/nodes/{node}/qemu/{vmid}/agent/exec-status"
)

// guestExecConfirm is what a confirmation token of guest exec is bound to
// (confirmations take an endpoint and wire values; this is neither an
// endpoint of PVE's nor of the helper's alone).
var guestExecConfirm = &schema.Endpoint{Method: "POST", Path: ToolGuestExec}

func guestExecTool() mcp.Tool {
	return mcp.NewTool(ToolGuestExec,
		mcp.WithDescription("Run a command inside a VM or container by VM ID, wherever it runs (finds its node and type): argv only, never through a shell (a shell, an interpreter or a program that runs others runs only where your policy names it). "+
			"In a VM it runs through the QEMU guest agent, which must be enabled in the VM's configuration (agent: 1) and running in the guest; in a container through pct exec, by the root helper. "+
			"Answers exit_code (or signal), duration_ms, stdout and stderr (each capped at max_output, with bytes and truncated) and timed_out; a VM's command still running at the timeout keeps running in the guest."),
		rawSchema(map[string]any{"type": "object", "properties": map[string]any{
			"vmid":        map[string]any{"type": "integer", "minimum": 100, "maximum": 999999999},
			"node":        map[string]any{"type": "string", "description": "The node the guest is on (default: found from the VM ID); a guest elsewhere is refused."},
			"argv":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1, "maxItems": host.MaxArgs, "description": "The program and its arguments, such as [\"systemctl\", \"status\", \"nginx\"]; the guest finds a program named without a slash in its PATH."},
			"stdin":       map[string]any{"type": "string", "description": "Standard input (default none; at most 65536 bytes in a VM)."},
			"timeout_sec": map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxTimeout, "description": "Seconds to wait for the command (default 60)."},
			"max_output":  map[string]any{"type": "integer", "minimum": 1, "maximum": host.MaxOutput, "description": "Bytes kept of each of stdout and stderr (default 65536)."},
			"confirm":     map[string]any{"type": "string", "description": "The token an answer asking for confirmation gave."},
		}, "required": []string{"vmid", "argv"}, "additionalProperties": false}),
		annotate("Run a command in a guest", hints{destructive: true}))
}

// guestExecProbes are the commands the daemon asks a key's policy about,
// in each guest it knows, to decide whether it shows the tool.
var guestExecProbes = [][]string{{"true"}, {"uname", "-a"}}

// guestExecMaxProbed bounds the guests visibility asks about.
const guestExecMaxProbed = 64

// guestExecVisible says whether the caller's policy could allow a command
// in some guest: the probes in each guest of the cluster (up to
// guestExecMaxProbed), or in a VM 100 when the guests cannot be read. The
// switches that refuse writes hide it.
func (s *Server) guestExecVisible(ctx context.Context, c Caller) bool {
	if s.switchRefusal("POST") != "" {
		return false
	}
	var guests []policy.GuestRef
	if known, err := s.guests.lookup(ctx, false); err == nil {
		for id, g := range known {
			if g.kind == "qemu" || g.kind == "lxc" && s.opts.Host.Helper != nil {
				guests = append(guests, policy.GuestRef{VMID: id, Type: g.kind, Node: g.node})
			}
		}
	}
	if len(guests) == 0 {
		guests = []policy.GuestRef{{VMID: 100, Type: "qemu"}}
	}
	slices.SortFunc(guests, func(a, b policy.GuestRef) int { return a.VMID - b.VMID })
	for i, g := range guests {
		if i == guestExecMaxProbed {
			break
		}
		for _, argv := range guestExecProbes {
			in := guestExecInput(c, g, argv, host.DefaultTimeout, nil)
			if s.opts.Policy.DecideHost(ctx, c.Binding, in).Effect != policy.Deny {
				return true
			}
		}
	}
	return false
}

// guestExecInput is the policy's input for a command in a guest.
func guestExecInput(c Caller, g policy.GuestRef, argv []string, timeout int, protected []string) *policy.Input {
	return host.PolicyInput(c.Principal, policy.HostOp{Op: "guest.exec", Guest: &g, Command: &policy.Command{
		Path: argv[0], Argv: argv, Cwd: "/", Class: host.Classify(argv[0], argv), TimeoutSec: timeout,
	}}, protected)
}

// guestExec is one command to run in a guest, as checked.
type guestExec struct {
	guest     policy.GuestRef
	argv      []string
	stdin     string
	hasStdin  bool
	timeout   int
	maxOutput int
}

// handleGuestExec is proxmox_guest_exec: the arguments checked by the
// host's argv rules, the guest found in the cluster's resources, the
// caller's policy decided on input.host (op guest.exec, the guest, the
// command), a confirmation asked for or redeemed, then the VM path (the
// guest agent through PVE) or the container path (the root helper).
func (s *Server) handleGuestExec(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "vmid", "node", "argv", "stdin", "timeout_sec", "max_output", "confirm")
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
	node, err := optString(a, "node")
	if err != nil {
		return nil, err
	}
	argv, err := stringList(a, "argv")
	if err != nil {
		return nil, err
	}
	if err := host.CheckGuestArgv("argv", argv); err != nil {
		return nil, &toolError{outcome: journal.OutcomeInvalid, text: "argument " + err.Error()}
	}
	x := guestExec{argv: argv, timeout: host.DefaultTimeout, maxOutput: host.DefaultMaxOutput}
	if x.stdin, err = optString(a, "stdin"); err != nil {
		return nil, err
	}
	_, x.hasStdin = a["stdin"]
	if n, given, err := optInt(a, "timeout_sec", 1, host.MaxTimeout); err != nil {
		return nil, err
	} else if given {
		x.timeout = n
	}
	if n, given, err := optInt(a, "max_output", 1, host.MaxOutput); err != nil {
		return nil, err
	} else if given {
		x.maxOutput = n
	}
	confirm, err := optString(a, "confirm")
	if err != nil {
		return nil, err
	}
	if why := s.switchRefusal("POST"); why != "" {
		return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: " + why + ". Nothing was done."}
	}
	if s.currentSwitches().PreviewWrites {
		return nil, &toolError{outcome: journal.OutcomeDenied, text: "Refused: the daemon's preview_writes switch is on, and a command in a guest has no preview. Nothing was done."}
	}
	located, kind, bad := s.locateGuest(ctx, c, ToolGuestExec, vmid)
	if bad != nil {
		return bad, nil
	}
	x.guest = policy.GuestRef{VMID: vmid, Type: kind, Node: located}
	in := guestExecInput(c, x.guest, argv, x.timeout, s.opts.Host.Protected)
	journalArgs := hostJournalArgs(a)
	delete(journalArgs, "confirm")
	journalArgs["node"], journalArgs["type"] = located, kind
	// A container's command is the helper's operation, not an API call:
	// no method or path, as the host tools.
	call := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: ToolGuestExec, Args: journalArgs, Risk: in.Risk}
	if kind == "qemu" {
		call.Method = "POST"
		call.Endpoint, call.Path = schema.ToolName("POST", agentExecPath), agentExecPath
		call.ConcretePath = pve.Path("nodes", located, "qemu", strconv.Itoa(vmid), "agent", "exec")
	}
	// The guest's read is journalled already: the refusals from here on
	// write their own rows.
	invalid := func(field, rule string) *mcp.CallToolResult {
		return s.refuse(ctx, call, journal.OutcomeInvalid, fmt.Sprintf("argument %s: %s. Nothing was done.", field, rule))
	}
	switch {
	case node != "" && node != located:
		return invalid("node", fmt.Sprintf("guest %d is on %s, not on %s", vmid, located, node)), nil
	case kind != "qemu" && kind != "lxc":
		return invalid("vmid", fmt.Sprintf("guest %d is a %q, neither a VM nor a container", vmid, kind)), nil
	case kind == "qemu" && len(x.stdin) > agentMaxStdin:
		return invalid("stdin", fmt.Sprintf("is %d bytes; PVE's guest agent takes at most %d", len(x.stdin), agentMaxStdin)), nil
	case len(x.stdin) > host.MaxStdin:
		return invalid("stdin", fmt.Sprintf("is %d bytes; at most %d", len(x.stdin), host.MaxStdin)), nil
	}
	d := s.opts.Policy.DecideHost(ctx, c.Binding, in)
	call.Decision = d
	switch {
	case d.Effect == policy.Allow:
	case d.Effect == policy.Confirm && kind == "lxc":
		// In a container the helper asks for the confirmation and checks
		// it, with a token of its own (the daemon cannot make one).
	case d.Effect == policy.Confirm && approverOf(d) == "self" && confirm == "":
		switch s.askPerson(ctx, fmt.Sprintf("Confirm running %q in %s %d on %s? %s", x.argv, guestLabel(x.guest.Type), x.guest.VMID, x.guest.Node, reasonsText(d))) {
		case personConfirmed:
			call.Decision.Reasons = append(slices.Clone(d.Reasons), "confirmed by the person at the client (elicitation)")
		case personDeclined:
			return s.refuse(ctx, call, journal.OutcomeDenied, "The person at the client did not confirm this command. Nothing was run."), nil
		default:
			return s.askGuestExecConfirmation(ctx, call, c, x, d), nil
		}
	case d.Effect == policy.Confirm && approverOf(d) == "self":
		if err := s.confirm.redeem(confirm, c, guestExecConfirm, x.confirmWire(), "self"); err != nil {
			return s.refuse(ctx, call, journal.OutcomeDenied, "Confirmation refused: "+err.Error()+". Nothing was done."), nil
		}
	case d.Effect == policy.Deny:
		return s.refuse(ctx, call, journal.OutcomeDenied, fmt.Sprintf("Denied by %s: %s. Nothing was done.", d.Policy, strings.Join(d.Reasons, "; "))), nil
	default:
		return s.refuse(ctx, call, journal.OutcomeDenied, fmt.Sprintf("%s by %s (%s): %s; %s takes the caller's own confirmation only (no second principal's approval, dry run or break-glass), so nothing was done.",
			d.Effect, d.Policy, approverOf(d), strings.Join(d.Reasons, "; "), ToolGuestExec)), nil
	}
	if kind == "lxc" {
		return s.guestExecContainer(ctx, c, call, x, confirm, progressToken(req)), nil
	}
	return s.guestExecVM(ctx, c, call, x, progressToken(req)), nil
}

// confirmWire is the call a confirmation token is bound to: the guest, the
// whole argument vector (as one JSON value, so that no two vectors read
// alike), the stdin's hash, the timeout and the output bound.
func (x guestExec) confirmWire() url.Values {
	argv, _ := json.Marshal(x.argv)
	sum := sha256.Sum256([]byte(x.stdin))
	return url.Values{
		"vmid": {strconv.Itoa(x.guest.VMID)}, "node": {x.guest.Node}, "type": {x.guest.Type}, "argv": {string(argv)},
		"stdin":       {strconv.FormatBool(x.hasStdin) + ":" + hex.EncodeToString(sum[:])},
		"timeout_sec": {strconv.Itoa(x.timeout)}, "max_output": {strconv.Itoa(x.maxOutput)},
	}
}

// askGuestExecConfirmation answers a command the policy wants confirmed:
// nothing runs, and the answer carries a token bound to this exact call.
func (s *Server) askGuestExecConfirmation(ctx context.Context, call AuditCall, c Caller, x guestExec, d policy.Decision) *mcp.CallToolResult {
	token, expiry := s.confirm.issue(c, guestExecConfirm, x.confirmWire())
	content := map[string]any{
		"status": "confirmation_required", "tool": ToolGuestExec, "vmid": x.guest.VMID, "node": x.guest.Node, "type": x.guest.Type,
		"argv": x.argv, "risk": call.Risk.String(), "reasons": d.Reasons, "approver": "self",
		"confirm": token, "expires_at": expiry.UTC().Format(time.RFC3339),
	}
	text := fmt.Sprintf("Confirmation required before running %q in %s %d on %s (%s). Nothing was run.\n%s\n"+
		"To go ahead, make the same call again with confirm set to the token below, within 5 minutes.",
		x.argv, guestLabel(x.guest.Type), x.guest.VMID, x.guest.Node, call.Risk, reasonsText(d))
	if err := s.audit.Record(journalContext(ctx), call, AuditOutcome{Outcome: journal.OutcomeConfirm, Duration: s.opts.Now().Sub(call.Time)}); err != nil {
		return errorResult("the journal refused the record; nothing was run: " + err.Error())
	}
	return structured(text, content)
}

func guestLabel(kind string) string {
	if kind == "lxc" {
		return "container"
	}
	return "VM"
}

// guestExecVM runs the command through the guest agent: the intent
// journalled, one POST agent/exec (never retried), then exec-status polled
// from 200 ms growing to 2 s until the command exits or the timeout
// passes, with progress notifications when the client asked for them.
func (s *Server) guestExecVM(ctx context.Context, c Caller, call AuditCall, x guestExec, token mcp.ProgressToken) *mcp.CallToolResult {
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return s.refuse(ctx, call, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error()+"; nothing was sent")
	}
	call.Detail = &journal.Detail{Token: client.TokenID()}
	id, err := s.audit.Intent(journalContext(ctx), call)
	if err != nil {
		return errorResult("the journal could not record the intent; nothing was sent: " + err.Error())
	}
	wire := url.Values{"command": x.argv}
	if x.hasStdin {
		wire.Set("input-data", agentInput(x.stdin))
	}
	start := time.Now()
	// The command goes through to PVE's answer even if the client hangs
	// up, so that the receipt says whether it started.
	resp, err := client.Do(context.WithoutCancel(ctx), "POST", call.ConcretePath, wire)
	out := AuditOutcome{Duration: time.Since(start)}
	if err != nil {
		res := s.callFailed(ctx, call, id, out, guestExecConfirm, err)
		return withHint(res, agentHint(err))
	}
	var started struct {
		PID *int `json:"pid"`
	}
	if err := json.Unmarshal(resp.Data, &started); err != nil || started.PID == nil {
		out.Outcome, out.Error = journal.OutcomeUncertain, fmt.Sprintf("PVE answered agent/exec without a PID: %s", resp.Data)
		s.receipt(ctx, id, out)
		return errorResult(out.Error + ". The command may have started in the guest; check before running it again.")
	}
	pid := *started.PID
	status := pve.Path("nodes", x.guest.Node, "qemu", strconv.Itoa(x.guest.VMID), "agent", "exec-status")
	st, timedOut, werr := s.pollAgent(ctx, client, status, pid, x, start, token)
	out.Duration = time.Since(start)
	content := map[string]any{
		"vmid": x.guest.VMID, "node": x.guest.Node, "type": "qemu", "argv": x.argv, "pid": pid,
		"duration_ms": out.Duration.Milliseconds(), "timed_out": timedOut,
	}
	if werr != nil {
		out.Outcome, out.Error = journal.OutcomeUncertain, werr.Error()
		s.receipt(ctx, id, out)
		res := structured(fmt.Sprintf("The command started in VM %d (pid %d in the guest), then its status could not be read: %v. It may still be running or have ended; nothing was retried.", x.guest.VMID, pid, werr), content)
		res.IsError = true
		return res
	}
	content["exit_code"] = nil
	if code, ok := agentInt(st["exitcode"]); ok {
		content["exit_code"] = code
	}
	if sig, ok := agentInt(st["signal"]); ok {
		content["signal"] = sig
	}
	stdout := capStream(agentText(st["out-data"]), agentBool(st["out-truncated"]), x.maxOutput)
	stderr := capStream(agentText(st["err-data"]), agentBool(st["err-truncated"]), x.maxOutput)
	content["stdout"], content["stderr"] = stdout, stderr
	out.Outcome = journal.OutcomeOK
	if timedOut {
		out.Outcome = journal.OutcomeTaskRunning
		out.Error = fmt.Sprintf("still running after %d s (pid %d in the guest)", x.timeout, pid)
	}
	s.receipt(ctx, id, out)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(guestExecSummary(content))}, StructuredContent: content}
}

// pollAgent reads exec-status until the command has exited, the timeout
// passes (timedOut), the client goes or the daemon stops (an error).
func (s *Server) pollAgent(ctx context.Context, client *pve.Client, path string, pid int, x guestExec, start time.Time, token mcp.ProgressToken) (map[string]any, bool, error) {
	deadline := start.Add(time.Duration(x.timeout) * time.Second)
	srv := server.ServerFromContext(ctx)
	interval := agentPollFirst
	for polls := 1; ; polls++ {
		wait := min(interval, time.Until(deadline))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, false, fmt.Errorf("the client went away while the command ran: %w", ctx.Err())
			case <-s.waitsEnded:
				t.Stop()
				return nil, false, errors.New("the daemon is stopping, so it waits no longer")
			case <-t.C:
			}
		}
		var st map[string]any
		if err := client.Get(ctx, path, url.Values{"pid": {strconv.Itoa(pid)}}, &st); err != nil {
			return nil, false, err
		}
		if agentBool(st["exited"]) {
			return st, false, nil
		}
		if !time.Now().Before(deadline) {
			return st, true, nil
		}
		if token != nil && srv != nil {
			msg := fmt.Sprintf("VM %d: %s running for %s (pid %d in the guest)", x.guest.VMID, x.argv[0], time.Since(start).Round(time.Second), pid)
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": polls, "message": msg,
			})
		}
		interval = min(interval*3/2, agentPollMax)
	}
}

// receipt journals how a command ended; a refused receipt is logged (the
// command ran: its answer still goes to the caller).
func (s *Server) receipt(ctx context.Context, id string, out AuditOutcome) {
	if err := s.audit.Receipt(journalContext(ctx), id, out); err != nil {
		s.opts.Logger.Error("tools: journal a guest command's receipt", "call_id", id, "err", err)
	}
}

// agentHint explains PVE's refusals of agent/exec that a caller can act on.
func agentHint(err error) string {
	var apiErr *pve.APIError
	if !errors.As(err, &apiErr) {
		return ""
	}
	switch m := apiErr.Message; {
	case strings.Contains(m, "No QEMU guest agent configured"):
		return "\nThe VM's configuration enables no guest agent: set agent: 1 (then restart the VM) and install qemu-guest-agent in the guest."
	case strings.Contains(m, "guest agent is not running"):
		return "\nThe guest agent does not answer: it is disabled in the configuration (agent: 0), not installed or not running in the guest, or the VM is paused."
	case strings.Contains(m, "is not running"):
		return "\nThe VM is not running: start it first."
	case strings.Contains(m, "Failed to execute child process"):
		return "\nThe guest could not start the program: name one in the guest's PATH, or give its absolute path."
	}
	return ""
}

func withHint(res *mcp.CallToolResult, hint string) *mcp.CallToolResult {
	if hint != "" {
		res.Content = []mcp.Content{mcp.NewTextContent(text(res) + hint)}
	}
	return res
}

// agentBool reads PVE's answer of a boolean: 1 and 0 (what PVE sends), or
// JSON's true and false.
func agentBool(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case float64:
		return b != 0
	case string:
		return b == "1" || b == "true"
	}
	return false
}

func agentInt(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok
}

// PVE 9 passes bytes to and from the guest agent one character per
// byte: qemu_exec base64-encodes input-data as the characters PVE decoded
// from the request (each up to U+00FF one byte, a wider one refused), and
// qemu_exec_status decodes the agent's base64 output into bytes that its
// JSON encoder writes as the characters of those numbers. So the daemon
// sends each byte of stdin as that character, and reads the output back
// the same way: the guest gets and gives exactly its bytes.

// agentInput is stdin as input-data: each byte as the character U+00XX.
func agentInput(stdin string) string {
	r := make([]rune, len(stdin))
	for i := 0; i < len(stdin); i++ {
		r[i] = rune(stdin[i])
	}
	return string(r)
}

// agentText is out-data or err-data as the guest wrote it: the bytes
// the characters stand for, when none is beyond U+00FF (as PVE 9 sends
// them); otherwise the text as it came.
func agentText(v any) string {
	s, _ := v.(string)
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return s
		}
		b = append(b, byte(r))
	}
	return string(b)
}

// capStream is a guest command's stream as the host's commands answer
// theirs (host.Output): the first limit bytes, text as utf-8 (a character
// the cap cut dropped) else base64, the bytes received, and a cut stream
// flagged with the same marker at the end of its text. agentCut is the
// guest agent's own flag that it kept only part (bytes then counts what
// it kept).
func capStream(data string, agentCut bool, limit int) host.Output {
	b := []byte(data)
	return host.OutputOf(b[:min(limit, len(b))], int64(len(b)), agentCut)
}

// guestExecContainer runs the command in a container through the root
// helper's guest.exec (pct exec), exactly as the host tools reach it: the
// caller's key, which the helper verifies and decides on again, the
// intent journalled before, the helper's progress passed on, and confirm,
// the token of the helper's own request for a confirmation.
func (s *Server) guestExecContainer(ctx context.Context, c Caller, call AuditCall, x guestExec, confirm string, token mcp.ProgressToken) *mcp.CallToolResult {
	if s.opts.Host.Helper == nil {
		return s.refuse(ctx, call, journal.OutcomeDenied, "Refused: guest exec in containers needs the root helper (installed with proxmox-mcp install). Nothing was done.")
	}
	if c.Key == "" {
		return s.refuse(ctx, call, journal.OutcomeDenied, "Refused: guest exec in containers goes through the root helper, which verifies an API key itself; this session has none (local-root). Nothing was done.")
	}
	helperArgs := map[string]any{"vmid": x.guest.VMID, "argv": x.argv, "timeout_sec": x.timeout, "max_output": x.maxOutput}
	if x.hasStdin {
		helperArgs["stdin"] = x.stdin
	}
	args, err := json.Marshal(helperArgs)
	if err != nil {
		return s.refuse(ctx, call, journal.OutcomeInvalid, "the arguments cannot be encoded: "+err.Error())
	}
	hreq := host.Request{V: host.WireVersion, ID: "d" + strconv.FormatInt(s.opts.Now().UnixNano(), 10), Key: c.Key.Reveal(), Source: c.Principal.Source, Op: "guest.exec", Args: args, Confirm: confirm}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(x.timeout)*time.Second+30*time.Second)
	defer cancel()
	id, err := s.audit.Intent(journalContext(ctx), call)
	if err != nil {
		return errorResult("the journal did not take this command's intent, so nothing was sent to the helper: " + err.Error())
	}
	start := s.opts.Now()
	resp, err := s.opts.Host.Helper(ctx, hreq, s.execProgress(ctx, token))
	if err != nil || !resp.OK || resp.Error != nil {
		// A request to confirm is the helper's own, with its token.
		res, out := hostResult(ToolGuestExec, resp, err)
		out.Duration = s.opts.Now().Sub(start)
		if err != nil {
			out.Outcome = journal.OutcomeUncertain
			res = withHint(res, " The command may have run, in part or whole: check its effect in the container before running it again.")
		}
		s.receipt(ctx, id, out)
		if we := resp.Error; err == nil && we != nil && we.Code == "confirm" && we.Token != "" && confirm == "" {
			// The helper asks the caller to confirm: where the client
			// can, the person is asked, and their yes sends its token.
			switch s.askPerson(ctx, fmt.Sprintf("Confirm running %q in container %d on %s? %s", x.argv, x.guest.VMID, x.guest.Node, we.Message)) {
			case personConfirmed:
				call.Time, call.Decision.Reasons = s.opts.Now(), append(slices.Clone(call.Decision.Reasons), "confirmed by the person at the client (elicitation)")
				return s.guestExecContainer(ctx, c, call, x, we.Token, token)
			case personDeclined:
				call.Time = s.opts.Now()
				return s.refuse(ctx, call, journal.OutcomeDenied, "The person at the client did not confirm this command. Nothing was run.")
			}
		}
		return res
	}
	var r host.ExecResult
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		out := AuditOutcome{Outcome: journal.OutcomeError, Error: "the helper's answer is not a command's result: " + err.Error(), Duration: s.opts.Now().Sub(start)}
		s.receipt(ctx, id, out)
		return errorResult(out.Error)
	}
	content := map[string]any{
		"vmid": x.guest.VMID, "node": x.guest.Node, "type": "lxc", "argv": x.argv, "exit_code": nil,
		"duration_ms": r.DurationMS, "stdout": r.Stdout, "stderr": r.Stderr, "timed_out": r.Result == "timeout",
	}
	if r.ExitCode != nil {
		content["exit_code"] = *r.ExitCode
	}
	if r.Signal != "" {
		content["signal"] = r.Signal
	}
	if r.Unit != "" {
		content["unit"] = r.Unit
	}
	s.receipt(ctx, id, AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(start)})
	b, _ := json.Marshal(content)
	var m map[string]any
	json.Unmarshal(b, &m) //nolint:errcheck // our own content
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(guestExecSummary(m))}, StructuredContent: m}
}

// guestExecSummary is a guest command's answer in words, its output
// included (a client may show only the text).
func guestExecSummary(c map[string]any) string {
	how := fmt.Sprintf("exit code %v", c["exit_code"])
	if c["signal"] != nil {
		how = fmt.Sprintf("killed by signal %v", c["signal"])
	}
	if c["timed_out"] == true {
		how = "still running at its timeout"
		if c["type"] == "qemu" {
			how += fmt.Sprintf(" (pid %v in the guest: the guest agent cannot stop it, so it keeps running; check it in the guest before running it again)", c["pid"])
		}
	}
	stream := func(name string) string {
		var o map[string]any
		switch v := c[name].(type) {
		case host.Output:
			o = map[string]any{"bytes": float64(v.Bytes), "encoding": v.Encoding, "data": v.Data}
		case map[string]any:
			o = v
		}
		if num(o["bytes"]) == 0 {
			return ""
		}
		if o["encoding"] == "base64" {
			return fmt.Sprintf("\n%s (%v bytes, binary, base64 in structured content)", name, o["bytes"])
		}
		return fmt.Sprintf("\n%s (%v bytes):\n%v", name, o["bytes"], o["data"])
	}
	kind := guestLabel(fmt.Sprint(c["type"]))
	return fmt.Sprintf("%s %v on %v: %q: %s after %v ms.%s%s", kind, c["vmid"], c["node"], c["argv"], how, c["duration_ms"], stream("stdout"), stream("stderr"))
}
