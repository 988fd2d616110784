package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// stream is one of stdout and stderr in an answer.
func stream(t *testing.T, content map[string]any, name string) map[string]any {
	t.Helper()
	o, ok := content[name].(map[string]any)
	if !ok {
		t.Fatalf("no %s in %v", name, content)
	}
	return o
}

// lastGuestExec is the journal's last intent and receipt (or record) of
// proxmox_guest_exec.
func (h *harness) lastGuestExec(t *testing.T) (AuditCall, AuditOutcome) {
	t.Helper()
	h.audit.mu.Lock()
	defer h.audit.mu.Unlock()
	for id := len(h.audit.intents); id > 0; id-- {
		key := "call-" + strconv.Itoa(id)
		if c := h.audit.intents[key]; c.Tool == ToolGuestExec {
			return c, h.audit.receipts[key]
		}
	}
	for i := len(h.audit.records) - 1; i >= 0; i-- {
		if r := h.audit.records[i]; r.call.Tool == ToolGuestExec && r.call.Method == "POST" {
			return r.call, r.out
		}
	}
	t.Fatal("no journal row of proxmox_guest_exec")
	return AuditCall{}, AuditOutcome{}
}

// A command in a VM through the guest agent: its output and exit code, a
// non-zero exit (an answer, not an error), stdin, the node found from the
// VM ID, the intent journalled before and the receipt after.
func TestGuestExecInAVM(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	if !slices.Contains(toolNames(t, c, ctx), ToolGuestExec) {
		t.Fatalf("admin does not see %s", ToolGuestExec)
	}
	res, content := call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"echo", "hello", "world"}})
	if res.IsError {
		t.Fatalf("echo: %s", text(res))
	}
	out := stream(t, content, "stdout")
	if content["exit_code"] != float64(0) || content["node"] != "pve1" || content["type"] != "qemu" || content["timed_out"] != false ||
		out["data"] != "hello world\n" || out["encoding"] != "utf-8" || out["bytes"] != float64(12) || out["truncated"] != nil {
		t.Errorf("echo: %v", content)
	}
	if !strings.Contains(text(res), "VM 100 on pve1") || !strings.Contains(text(res), "exit code 0") || !strings.Contains(text(res), "hello world") {
		t.Errorf("echo's text: %s", text(res))
	}
	called, receipt := h.lastGuestExec(t)
	if called.ConcretePath != "/nodes/pve1/qemu/100/agent/exec" || called.Endpoint != "post_nodes_qemu_agent_exec" || called.Decision.Effect != policy.Allow || receipt.Outcome != journal.OutcomeOK {
		t.Errorf("journal: %+v %+v", called, receipt)
	}

	res, content = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"false"}})
	if res.IsError || content["exit_code"] != float64(1) || !strings.Contains(text(res), "exit code 1") {
		t.Errorf("false: %s", text(res))
	}
	res, content = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 102, "node": "pve2", "argv": []any{"cat"}, "stdin": "from stdin\n"})
	if res.IsError || stream(t, content, "stdout")["data"] != "from stdin\n" {
		t.Errorf("cat of stdin: %s", text(res))
	}
	called, _ = h.lastGuestExec(t)
	if called.Args["stdin_bytes"] != 11 || called.Args["stdin"] != nil {
		t.Errorf("the journal keeps stdin: %v", called.Args)
	}
	// Bytes beyond ASCII pass both ways unchanged (PVE carries them as one
	// character per byte).
	res, content = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"cat"}, "stdin": "é●\n"})
	if out := stream(t, content, "stdout"); res.IsError || out["data"] != "é●\n" || out["bytes"] != float64(6) {
		t.Errorf("UTF-8 through the agent: %s", text(res))
	}
	res, content = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"echo", "-n", "Grüße"}})
	if out := stream(t, content, "stdout"); res.IsError || out["data"] != "Grüße" {
		t.Errorf("UTF-8 output: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "node": "pve2", "argv": []any{"true"}})
	if !res.IsError || !strings.Contains(text(res), "guest 100 is on pve1, not on pve2") {
		t.Errorf("a wrong node: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{}})
	if !res.IsError || !strings.Contains(text(res), "argv") {
		t.Errorf("an empty argv: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"nosuch"}})
	if !res.IsError || !strings.Contains(text(res), "Failed to execute child process") || !strings.Contains(text(res), "name one in the guest's PATH") {
		t.Errorf("a program the guest lacks: %s", text(res))
	}
}

// The agent must be configured and the VM running: PVE's refusal is
// passed on with what to do about it.
func TestGuestExecAgentRequirements(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	res, _ := call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 101, "argv": []any{"true"}})
	if !res.IsError || !strings.Contains(text(res), "VM 101 is not running") || !strings.Contains(text(res), "start it first") {
		t.Errorf("a stopped VM: %s", text(res))
	}
	if res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config", "params": map[string]any{"delete": "agent"}}); res.IsError {
		t.Fatalf("delete agent: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 101, "argv": []any{"true"}})
	if !res.IsError || !strings.Contains(text(res), "No QEMU guest agent configured") || !strings.Contains(text(res), "agent: 1") {
		t.Errorf("no agent: %s", text(res))
	}
	if _, receipt := h.lastGuestExec(t); receipt.Outcome != journal.OutcomeError {
		t.Errorf("journal outcome %+v", receipt)
	}
}

// A command still running at its timeout is answered as such: no exit
// code, and the journal says it runs on.
func TestGuestExecTimeout(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	start := time.Now()
	res, content := call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"sleep", "600"}, "timeout_sec": 1})
	if took := time.Since(start); took < time.Second || took > 5*time.Second {
		t.Errorf("a timeout of 1 s took %s", took)
	}
	if res.IsError || content["timed_out"] != true || content["exit_code"] != nil || !strings.Contains(text(res), "still running at its timeout") {
		t.Errorf("timeout: %s", text(res))
	}
	if _, receipt := h.lastGuestExec(t); receipt.Outcome != journal.OutcomeTaskRunning {
		t.Errorf("journal outcome %+v", receipt)
	}
}

// Each stream is cut at max_output, with the host commands' marker.
func TestGuestExecTruncates(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	res, content := call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"seq", "1000"}, "max_output": 10})
	out := stream(t, content, "stdout")
	want := "1\n2\n3\n4\n5\n\n[proxmox-mcp: output truncated: 10 of 3893 bytes shown]\n"
	if res.IsError || out["truncated"] != true || out["bytes"] != float64(3893) || out["data"] != want {
		t.Errorf("truncation: %v", out)
	}
	// A character the cap cuts is dropped; binary output is base64.
	if o := capStream("aé", false, 2); o.Data != "a\n[proxmox-mcp: output truncated: 1 of 3 bytes shown]\n" || !o.Truncated {
		t.Errorf("a cut character: %+v", o)
	}
	if o := capStream("\xff\xfe", false, 10); o.Encoding != "base64" || o.Data != "//4=" || o.Truncated {
		t.Errorf("binary: %+v", o)
	}
}

// Progress notifications come while a command runs, when the client asks.
func TestGuestExecProgress(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	got := make(chan mcp.JSONRPCNotification, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			got <- n
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolGuestExec
	req.Params.Arguments = map[string]any{"vmid": 100, "argv": []any{"sleep", "600"}, "timeout_sec": 1}
	req.Params.Meta = &mcp.Meta{ProgressToken: "g1"}
	if _, err := c.CallTool(ctx, req); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if !strings.Contains(n.Params.AdditionalFields["message"].(string), "VM 100: sleep running") {
			t.Errorf("progress %v", n.Params.AdditionalFields)
		}
	case <-time.After(2 * time.Second):
		t.Error("no progress notification")
	}
}

// read-only never runs a command in a guest, and does not see the tool;
// operator does with its confirmation, a token used once and bound to the
// exact command; a shell runs only where a policy names it.
func TestGuestExecPolicy(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ro, roCtx := h.as("read-only")
	if slices.Contains(toolNames(t, ro, roCtx), ToolGuestExec) {
		t.Errorf("read-only sees %s", ToolGuestExec)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolGuestExec
	req.Params.Arguments = map[string]any{"vmid": 100, "argv": []any{"true"}}
	if res, err := ro.CallTool(roCtx, req); err == nil && !res.IsError {
		t.Errorf("read-only ran a command: %s", text(res))
	}
	// The handler itself refuses too, should the tool be reached.
	d := h.engine.DecideHost(context.Background(), policy.Binding{Profile: "read-only"}, guestExecInput(Caller{}, policy.GuestRef{VMID: 100, Type: "qemu", Node: "pve1"}, []string{"true"}, 60, nil))
	if d.Effect != policy.Deny {
		t.Errorf("read-only's decision %+v", d)
	}

	op, opCtx := h.as("operator")
	if !slices.Contains(toolNames(t, op, opCtx), ToolGuestExec) {
		t.Fatalf("operator does not see %s", ToolGuestExec)
	}
	writes := h.sim.Writes()
	args := map[string]any{"vmid": 100, "argv": []any{"hostname"}}
	res, content := call(t, op, opCtx, ToolGuestExec, args)
	token, _ := content["confirm"].(string)
	if content["status"] != "confirmation_required" || token == "" || !strings.Contains(text(res), "Nothing was run") || h.sim.Writes() != writes {
		t.Fatalf("operator without confirmation: %s", text(res))
	}
	res, _ = call(t, op, opCtx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"uname", "-a"}, "confirm": token})
	if !res.IsError || !strings.Contains(text(res), "issued for a different call") || h.sim.Writes() != writes {
		t.Errorf("a token for another command: %s", text(res))
	}
	args["confirm"] = token
	res, content = call(t, op, opCtx, ToolGuestExec, args)
	if res.IsError || stream(t, content, "stdout")["data"] != "web01\n" {
		t.Fatalf("operator with confirmation: %s", text(res))
	}
	res, _ = call(t, op, opCtx, ToolGuestExec, args)
	if !res.IsError || !strings.Contains(text(res), "already used") {
		t.Errorf("a token used twice: %s", text(res))
	}

	admin, adminCtx := h.as("admin")
	// A program that runs others is named by its absolute path inside a
	// guest: a bare name such as at is a word inside many a reason
	// ("confirmation"), which the engine would take for the policy naming it.
	for _, argv0 := range []string{"at", "sh", "env"} {
		res, _ = call(t, op, opCtx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{argv0, "now"}})
		if !res.IsError || !strings.Contains(text(res), "inside a guest, name it by its absolute path (such as /usr/bin/"+argv0+")") {
			t.Errorf("%s by its bare name: %s", argv0, text(res))
		}
	}
	res, content = call(t, op, opCtx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"/usr/bin/at", "now"}})
	if !res.IsError || content["status"] == "confirmation_required" || !strings.Contains(text(res), "runs only when a policy names it") {
		t.Errorf("at by its path, for operator: %s", text(res))
	}
	res, _ = call(t, admin, adminCtx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"/bin/sh", "-c", "id"}})
	if !res.IsError || !strings.Contains(text(res), "runs only when a policy names it") {
		t.Errorf("a shell, unnamed: %s", text(res))
	}
	h.activate("guest-shell", `package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision

default host_decision := {"effect": "deny", "reasons": ["no"], "obligations": []}

host_decision := {"effect": "allow", "reasons": ["this key may run any command in VM 100, /bin/sh included"], "obligations": []} if {
	input.host.op == "guest.exec"
	input.host.guest.vmid == 100
}
`)
	custom, customCtx := h.as("", "guest-shell")
	res, _ = call(t, custom, customCtx, ToolGuestExec, map[string]any{"vmid": 100, "argv": []any{"/bin/sh", "-c", "id"}})
	// The simulated guest has no shell: the call got past the policy and
	// the engine, to the guest agent.
	if !res.IsError || !strings.Contains(text(res), "Failed to execute child process \u201c/bin/sh\u201d") {
		t.Errorf("a shell the policy names: %s", text(res))
	}
}

// A container's command goes to the root helper's guest.exec with the
// caller's key; without a helper it is refused.
func TestGuestExecInAContainer(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	res, _ := call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"true"}})
	if !res.IsError || !strings.Contains(text(res), "guest exec in containers needs the root helper (installed with proxmox-mcp install)") {
		t.Errorf("no helper: %s", text(res))
	}

	var mu sync.Mutex
	var sent []host.Request
	answer := host.Response{OK: false, Error: &host.WireError{Code: "bad_request", Field: "op", Message: `op "guest.exec": the helper knows command.exec, file.list`}}
	h = newHarness(t, harnessOpts{host: HostOptions{Helper: func(_ context.Context, req host.Request, _ func(host.ExecProgress)) (host.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, req)
		return answer, nil
	}}})
	c, ctx = asKey(t, h, "admin", "pmcp_kadmin_secret")
	res, _ = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"cat"}, "stdin": "x", "timeout_sec": 5})
	if !res.IsError || !strings.Contains(text(res), "The root helper refused (bad_request): op \"guest.exec\"") {
		t.Errorf("a helper without guest.exec: %s", text(res))
	}
	if len(sent) != 1 || sent[0].Op != "guest.exec" || sent[0].Key != "pmcp_kadmin_secret" || string(sent[0].Args) != `{"argv":["cat"],"max_output":65536,"stdin":"x","timeout_sec":5,"vmid":200}` {
		t.Fatalf("sent %+v", sent)
	}

	// An operator's command in a container: the helper asks for the
	// confirmation and checks its own token.
	answer = host.Response{Error: &host.WireError{Code: "confirm", Message: "running a command inside lxc guest 200 needs confirmation", Token: "hc1", Expires: time.Now().Add(5 * time.Minute)}}
	op, opCtx := asKey(t, h, "operator", "pmcp_koperator_secret")
	res, content := call(t, op, opCtx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"true"}})
	if content["status"] != "confirmation_required" || content["confirm"] != "hc1" || !strings.Contains(text(res), "make the same proxmox_guest_exec call again") {
		t.Errorf("the helper's confirmation: %s", text(res))
	}
	call(t, op, opCtx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"true"}, "confirm": "hc1"})
	if last := sent[len(sent)-1]; sent[len(sent)-2].Confirm != "" || last.Confirm != "hc1" || last.Key != "pmcp_koperator_secret" {
		t.Errorf("confirm in the envelope: %+v", sent[len(sent)-2:])
	}

	code := 3
	result, _ := json.Marshal(host.ExecResult{Unit: "pmcp-exec-1.service", Argv: []string{"cat"}, Result: "exit-code", ExitCode: &code, DurationMS: 12,
		Stdout: host.Output{Data: "x", Encoding: "utf-8", Bytes: 1}, Stderr: host.Output{Encoding: "utf-8"}})
	answer = host.Response{OK: true, Result: result}
	res, content = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"cat"}, "stdin": "x"})
	if res.IsError || content["exit_code"] != float64(3) || content["type"] != "lxc" || content["node"] != "pve1" || stream(t, content, "stdout")["data"] != "x" ||
		!strings.Contains(text(res), "container 200 on pve1") {
		t.Errorf("a container's answer: %s", text(res))
	}
}

// asKey is a session of a key bound to a profile, the key presented (the
// helper verifies it).
func asKey(t *testing.T, h *harness, profile, key string, opts ...client.ClientOption) (*client.Client, context.Context) {
	t.Helper()
	caller := Caller{
		Principal: policy.Principal{KeyID: "k" + profile, Name: profile, Profile: profile, Transport: "loopback", Source: "127.0.0.1"},
		Binding:   policy.Binding{Profile: profile}, Tier: Tier(profile), Key: keys.Secret(key),
	}
	ctx := WithCaller(context.Background(), caller)
	c, err := client.NewInProcessClientWithOptions(h.srv.MCP(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "guest-exec-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// Against the real helper (as root): the container's command reaches it
// with arguments it decodes strictly, and it verifies the key and answers
// on its own (this helper has no systemd, so it refuses to run it).
func TestGuestExecReachesTheHelper(t *testing.T) {
	b := newHostBed(t)
	c, ctx := b.as(t, "admin", "")
	res, _ := call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"hostname"}, "stdin": "x"})
	if !res.IsError || !strings.Contains(text(res), "The root helper refused (refused): service operations are not configured in this helper") {
		t.Errorf("a container's command at the helper: %s", text(res))
	}
	c, ctx = b.as(t, "admin", "pmcp_kadmin_forged")
	res, _ = call(t, c, ctx, ToolGuestExec, map[string]any{"vmid": 200, "argv": []any{"hostname"}})
	if !res.IsError || !strings.Contains(text(res), "The root helper refused (unauthenticated)") {
		t.Errorf("a forged key at the helper: %s", text(res))
	}
}
