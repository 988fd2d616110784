package booted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// sandboxPolicy allows every command and names each one: the sandbox
// test's key may run shells, interpreters and launchers, to show that the
// sandbox, not the policy, is what holds.
const sandboxPolicy = `package proxmox_mcp.policy

import rego.v1

default decision := {"effect": "deny", "reasons": ["this key only runs commands"], "obligations": []}

default host_decision := {"effect": "deny", "reasons": ["this key only runs commands"], "obligations": []}

host_decision := {"effect": "allow", "reasons": [sprintf("the sandbox test may run %s", [input.host.command.path])], "obligations": []} if {
	input.host.op == "command.exec"
}
`

const sandboxPolicyTests = `package proxmox_mcp.policy_test

import rego.v1

import data.proxmox_mcp.policy

test_commands_are_allowed if {
	policy.host_decision.effect == "allow" with input as {"host": {"op": "command.exec", "command": {"path": "/usr/bin/dash"}}}
}

test_files_are_denied if {
	policy.host_decision.effect == "deny" with input as {"host": {"op": "file.read", "path": "/etc/hostname"}}
}
`

// execResult is proxmox_host_exec's structured answer.
type execResult struct {
	Unit          string `json:"unit"`
	Path          string `json:"path"`
	Result        string `json:"result"`
	ExitCode      *int   `json:"exit_code"`
	Signal        string `json:"signal"`
	SystemdStatus string `json:"systemd_status"`
	DurationMS    int64  `json:"duration_ms"`
	Stdout        struct {
		Data      string `json:"data"`
		Encoding  string `json:"encoding"`
		Bytes     int64  `json:"bytes"`
		Truncated bool   `json:"truncated"`
	} `json:"stdout"`
	Stderr struct {
		Data  string `json:"data"`
		Bytes int64  `json:"bytes"`
	} `json:"stderr"`
}

// exit is how the command ended, for a failure's message: its exit
// status, else its signal, else that it has neither (and systemd's
// result).
func (r execResult) exit() string {
	switch {
	case r.ExitCode != nil && r.SystemdStatus != "":
		return fmt.Sprintf("exit %d (%s, result %s)", *r.ExitCode, r.SystemdStatus, r.Result)
	case r.ExitCode != nil:
		return fmt.Sprintf("exit %d", *r.ExitCode)
	case r.Signal != "":
		return fmt.Sprintf("no exit code: signal %s (result %s)", r.Signal, r.Result)
	}
	return fmt.Sprintf("no exit code and no signal (result %q)", r.Result)
}

// exited says whether the command ended with exit status code: a result
// without an exit status (a signal, or none recorded) never has.
func (r execResult) exited(code int) bool { return r.ExitCode != nil && *r.ExitCode == code }

// execCall runs proxmox_host_exec and decodes its answer (isErr and the
// text when the call was refused).
func execCall(t *testing.T, mc *client.Client, ctx context.Context, args map[string]any) (execResult, bool, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "proxmox_host_exec"
	req.Params.Arguments = args
	res, err := mc.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("proxmox_host_exec %v: %v", args["argv"], err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	var r execResult
	if !res.IsError {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("the structured answer: %v: %s", err, raw)
		}
	}
	return r, res.IsError, b.String()
}

// TestBootedExec: commands through the daemon, the root helper and a
// transient unit of systemd 257, as installed. The sandbox holds whatever
// the policy allows: a key whose policy lets it run anything, shells
// included, still reads none of the refused files (directly, through
// find -exec, env, a shell, /proc/1/root), writes only where it asked
// and was allowed, cannot mount, make namespaces, reach systemd over
// D-Bus or start a unit with systemd-run, gains nothing from a setuid
// bit, and is killed at its timeout. The root profile runs programs but
// no shell; a read-only key runs only the reviewed diagnostics. Then
// `true` through all of it against a bare systemd-run --wait --pipe true.
func TestBootedExec(t *testing.T) {
	t.Parallel()
	c, b := node(t)
	installHost(t, c, b, `"host": {"roots": [{"path": "/var/log"}, {"path": "/srv", "write": true}, {"path": "/mnt", "write": true}]},
	"protected": {"paths": ["/mnt/model-repo"]},`)
	c.MustIn(t, "mkdir", "-p", "/mnt/model-repo", "/srv/app/data", "/srv/ro")
	c.WriteFile("/mnt/model-repo/weights.bin", []byte("model"), 0o644)
	c.MustIn(t, "ln", "-s", "/etc", "/srv/app/etc-link")
	c.MustIn(t, "systemctl", "restart", unit)

	var key InitialKeyFile
	raw, err := c.ReadFile("/root/proxmox-mcp-initial-key.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		t.Fatal(err)
	}
	c.WriteFile("/root/sandbox.rego", []byte(sandboxPolicy), 0o644)
	c.WriteFile("/root/sandbox_test.rego", []byte(sandboxPolicyTests), 0o644)
	var draft struct{ ID, Digest string }
	if err := json.Unmarshal([]byte(c.MustIn(t, "proxmox-mcp", "policy", "draft", "/root/sandbox.rego", "--json")), &draft); err != nil {
		t.Fatal(err)
	}
	c.MustIn(t, "proxmox-mcp", "policy", "activate", draft.ID, "--digest", draft.Digest)
	newKey := func(args ...string) string {
		var k struct {
			Key string `json:"key"`
		}
		out := c.MustIn(t, append([]string{"proxmox-mcp", "key", "create", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &k); err != nil || k.Key == "" {
			t.Fatalf("key create %v: %v: %s", args, err, out)
		}
		return k.Key
	}
	tester, viewer := newKey("--name", "tester", "--policy", draft.ID), newKey("--name", "viewer", "--profile", "read-only")
	c.MustIn(t, "systemctl", "reload", unit)
	tc, tctx := mcpClient(t, c, key.Endpoints.Loopback, tester)
	rc, rctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
	vc, vctx := mcpClient(t, c, key.Endpoints.Loopback, viewer)

	run := func(args map[string]any) execResult {
		t.Helper()
		r, isErr, text := execCall(t, tc, tctx, args)
		if isErr {
			t.Fatalf("the sandbox test's %v was refused: %s\nhelper:\n%s", args["argv"], text, c.Journal("-u", "proxmox-mcp-helper", "-n", "30"))
		}
		return r
	}
	argv := func(a ...string) map[string]any { return map[string]any{"argv": a} }

	t.Run("runs", func(t *testing.T) {
		r := run(argv("true"))
		if !r.exited(0) || r.Result != "success" || r.Path != "/usr/bin/true" {
			t.Errorf("true: %s, result %q, path %q", r.exit(), r.Result, r.Path)
		}
		if r := run(argv("false")); !r.exited(1) || r.Result != "exit-code" {
			t.Errorf("false: %s, result %q", r.exit(), r.Result)
		}
		if r := run(map[string]any{"argv": []string{"cat"}, "stdin": "hello from stdin\n"}); r.Stdout.Data != "hello from stdin\n" {
			t.Errorf("cat with stdin: %+v", r)
		}
		if r := run(map[string]any{"argv": []string{"pwd"}, "cwd": "/srv/app"}); r.Stdout.Data != "/srv/app\n" {
			t.Errorf("pwd in /srv/app: %+v", r)
		}
		r = run(map[string]any{"argv": []string{"seq", "1", "100000"}, "max_output": 1000})
		if !r.Stdout.Truncated || r.Stdout.Bytes != 588895 || !strings.Contains(r.Stdout.Data, "[proxmox-mcp: output truncated: 1000 of 588895 bytes shown]") {
			t.Errorf("seq 1 100000 capped at 1000 bytes: truncated %v, bytes %d, ends %q", r.Stdout.Truncated, r.Stdout.Bytes, tailOf(r.Stdout.Data, 80))
		}
		if r := run(argv("sh", "-c", "echo out; echo err >&2; exit 3")); !r.exited(3) || r.Stdout.Data != "out\n" || r.Stderr.Data != "err\n" {
			t.Errorf("sh -c with both streams: %s, stdout %q, stderr %q; want exit 3, out and err", r.exit(), r.Stdout.Data, r.Stderr.Data)
		}
	})

	t.Run("refused files stay out of reach", func(t *testing.T) {
		c.WriteFile("/etc/proxmox-mcp/secret-probe", []byte("SECRET-PROBE"), 0o600)
		// What is not refused is read: the checks below can see a leak.
		if r := run(argv("cat", "/etc/passwd")); !strings.Contains(r.Stdout.Data, "root:") {
			t.Fatalf("cat /etc/passwd: %+v", r)
		}
		for _, a := range [][]string{
			{"cat", "/etc/shadow"},
			{"cat", "/etc/proxmox-mcp/config.hujson"},
			{"cat", "/etc/proxmox-mcp/secret-probe"},
			{"cat", "/var/lib/proxmox-mcp/keys.json"},
			{"cat", "/var/lib/proxmox-mcp-helper/journal.db"},
			{"find", "/etc", "-maxdepth", "1", "-name", "shadow", "-exec", "cat", "{}", ";"},
			{"env", "cat", "/etc/shadow"},
			{"sh", "-c", "cat /etc/shadow; cat /etc/proxmox-mcp/*; ls -la /etc/proxmox-mcp"},
			{"cat", "/proc/1/root/etc/shadow"},
			{"sh", "-c", "for p in /proc/[0-9]*; do cat $p/root/etc/shadow; done 2>/dev/null"},
			{"grep", "-r", "SECRET-PROBE", "/etc", "/var/lib"},
		} {
			r := run(argv(a...))
			if strings.Contains(r.Stdout.Data, "root:") || strings.Contains(r.Stdout.Data, "SECRET-PROBE") || strings.Contains(r.Stdout.Data, "listen") || strings.Contains(r.Stdout.Data, "config.hujson") {
				t.Errorf("%v read a refused file (%s): %q", a, r.exit(), tailOf(r.Stdout.Data, 300))
			}
		}
	})

	t.Run("writes only where asked and allowed", func(t *testing.T) {
		for _, a := range [][]string{
			{"touch", "/usr/planted"},
			{"touch", "/etc/planted"},
			{"touch", "/srv/app/planted"},
			{"sh", "-c", "echo x > /var/log/planted"},
		} {
			if r := run(argv(a...)); r.ExitCode == nil || *r.ExitCode == 0 {
				t.Errorf("%v without a writable path: %s", a, r.exit())
			}
		}
		for _, p := range []string{"/usr/planted", "/etc/planted", "/srv/app/planted", "/var/log/planted"} {
			if c.Exists(p) {
				t.Errorf("%s was written", p)
			}
		}
		r := run(map[string]any{"argv": []string{"sh", "-c", "echo hi > /srv/app/data/out; touch /srv/app/elsewhere"}, "writable": []string{"/srv/app/data"}})
		if got, _ := c.ReadFile("/srv/app/data/out"); string(got) != "hi\n" {
			t.Errorf("a write to the writable /srv/app/data: %s, the file holds %q", r.exit(), got)
		}
		if c.Exists("/srv/app/elsewhere") {
			t.Error("a command with /srv/app/data writable wrote /srv/app/elsewhere")
		}
		// /tmp is the command's own.
		run(argv("sh", "-c", "echo x > /tmp/planted"))
		if c.Exists("/tmp/planted") {
			t.Error("a command's /tmp is the host's")
		}
		// The protected repository: read, never written.
		if r := run(argv("cat", "/mnt/model-repo/weights.bin")); r.Stdout.Data != "model" {
			t.Errorf("reading the repository: %+v", r)
		}
		for _, w := range [][]string{{"/mnt/model-repo"}, {"/mnt"}} {
			_, isErr, text := execCall(t, tc, tctx, map[string]any{"argv": []string{"rm", "/mnt/model-repo/weights.bin"}, "writable": w})
			if !isErr || !strings.Contains(text, "protected repository") {
				t.Errorf("writable %v over the repository: %s", w, text)
			}
		}
		if got, _ := c.ReadFile("/mnt/model-repo/weights.bin"); string(got) != "model" {
			t.Error("the repository's file changed")
		}
		// A writable path or a working directory through a link.
		for _, args := range []map[string]any{
			{"argv": []string{"pwd"}, "cwd": "/srv/app/etc-link"},
			{"argv": []string{"touch", "/srv/app/etc-link/planted"}, "writable": []string{"/srv/app/etc-link"}},
			{"argv": []string{"pwd"}, "cwd": "/etc"},
			{"argv": []string{"pwd"}, "cwd": "/srv/app/../../etc"},
		} {
			if _, isErr, text := execCall(t, tc, tctx, args); !isErr {
				t.Errorf("%v was run: %s", args, text)
			}
		}
		if c.Exists("/etc/planted") {
			t.Error("a write through a link reached /etc")
		}
	})

	t.Run("no way out", func(t *testing.T) {
		c.WriteFile("/etc/systemd/system/pmcp-probe.service", []byte("[Service]\nExecStart=/bin/sh -c 'touch /root/escaped'\n"), 0o644)
		c.MustIn(t, "systemctl", "daemon-reload")
		for _, a := range [][]string{
			{"mount", "-t", "tmpfs", "none", "/srv/app"},
			{"unshare", "-m", "true"},
			{"nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "true"},
			{"systemd-run", "--wait", "--pipe", "touch", "/root/escaped"},
			{"systemctl", "start", "pmcp-probe.service"},
			{"busctl", "--system", "list"},
			{"chroot", "/", "true"},
			{"sh", "-c", "echo 1 > /proc/sys/kernel/sysrq"},
		} {
			if r := run(argv(a...)); r.ExitCode == nil || *r.ExitCode == 0 {
				t.Errorf("%v succeeded (%s): %s", a, r.exit(), r.Stdout.Data)
			}
		}
		if c.Exists("/root/escaped") {
			t.Error("a command started a unit outside its sandbox")
		}
		status := run(argv("grep", "-E", "^(NoNewPrivs|CapBnd|CapEff)", "/proc/self/status")).Stdout.Data
		if !strings.Contains(status, "NoNewPrivs:\t1") || strings.Contains(status, "CapBnd:\t000001ffffffffff") {
			t.Errorf("the command's privileges:\n%s", status)
		}
		// A setuid bit is neither made nor honoured.
		if r := run(map[string]any{"argv": []string{"sh", "-c", "cp /usr/bin/id /srv/app/data/suid-id && chmod u+s /srv/app/data/suid-id"}, "writable": []string{"/srv/app/data"}}); r.ExitCode == nil || *r.ExitCode == 0 {
			t.Errorf("making a setuid file in a writable path: %s; want a non-zero exit status", r.exit())
		}
		if r := run(argv("ps", "-e", "-o", "pid=")); len(strings.Fields(r.Stdout.Data)) > 3 {
			t.Errorf("the command sees the host's processes:\n%s", r.Stdout.Data)
		}
	})

	t.Run("killed at its timeout", func(t *testing.T) {
		start := time.Now()
		r := run(map[string]any{"argv": []string{"sh", "-c", "trap '' TERM; sleep 60"}, "timeout_sec": 2})
		took := time.Since(start)
		if r.Result != "timeout" || r.Signal == "" || took > 20*time.Second {
			t.Errorf("a command past its timeout: %+v after %s", r, took.Round(time.Millisecond))
		}
		t.Logf("a command ignoring SIGTERM with timeout_sec 2 ended after %s: %s, %s", took.Round(time.Millisecond), r.Result, r.Signal)
		if out := c.Run(context.Background(), "systemctl", "list-units", "--all", "--no-legend", "proxmox-mcp-exec-*"); strings.TrimSpace(out.Stdout) != "" {
			t.Errorf("transient units are left behind:\n%s", out.Stdout)
		}
	})

	t.Run("the profiles", func(t *testing.T) {
		if r, isErr, text := execCall(t, rc, rctx, argv("df", "-h")); isErr || !r.exited(0) || !strings.Contains(r.Stdout.Data, "Filesystem") {
			t.Errorf("root's df -h: %s: %s", r.exit(), text)
		}
		for _, a := range [][]string{{"sh", "-c", "id"}, {"bash"}, {"env", "id"}, {"find", "/", "-exec", "id", ";"}, {"python3", "-c", "1"}} {
			if _, isErr, text := execCall(t, rc, rctx, argv(a...)); !isErr || !strings.Contains(text, "runs only when a policy names it") && !strings.Contains(text, "not an executable") {
				t.Errorf("root's %v: %s; want it refused as a program that runs others", a, text)
			}
		}
		if r, isErr, text := execCall(t, vc, vctx, argv("lsblk", "-J")); isErr || !r.exited(0) || !strings.Contains(r.Stdout.Data, "blockdevices") {
			t.Errorf("the read-only key's lsblk -J: %s: %s", r.exit(), text)
		}
		for _, a := range [][]string{{"lsblk"}, {"touch", "/srv/x"}, {"df", "-h", "--output=source"}} {
			if a[0] == "lsblk" {
				continue // a reviewed shape too
			}
			if _, isErr, text := execCall(t, vc, vctx, argv(a...)); !isErr || !strings.Contains(text, "reviewed diagnostic") {
				t.Errorf("the read-only key's %v: %s", a, text)
			}
		}
		tail := c.MustIn(t, "proxmox-mcp", "audit", "tail", "--journal", "/var/lib/proxmox-mcp-helper/journal.db", "--json", "-n", "200")
		if !strings.Contains(tail, `"tool":"proxmox_host_exec"`) || !strings.Contains(tail, `"/usr/bin/seq"`) {
			t.Errorf("the helper's journal lacks the commands:\n%s", tailOf(tail, 2000))
		}
	})

	t.Run("progress", func(t *testing.T) {
		var mu sync.Mutex
		var msgs []string
		tc.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				mu.Lock()
				msgs = append(msgs, fmt.Sprint(n.Params.AdditionalFields["message"]))
				mu.Unlock()
			}
		})
		req := mcp.CallToolRequest{}
		req.Params.Name = "proxmox_host_exec"
		req.Params.Arguments = map[string]any{"argv": []string{"sh", "-c", "echo a; sleep 3; echo b"}}
		req.Params.Meta = &mcp.Meta{ProgressToken: "exec-1"}
		res, err := tc.CallTool(tctx, req)
		if err != nil || res.IsError {
			t.Fatalf("a command with a progress token: %v %v", err, res)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(msgs) < 2 || !strings.Contains(msgs[0], "running for") {
			t.Errorf("progress while a 3 s command ran: %q", msgs)
		}
	})

	t.Run("inside a container", func(t *testing.T) {
		// Container 200 is the simulator's, on pve1; pct is fakepve's,
		// which runs the command on the node itself when the container's
		// configuration exists, as pct exec does after lxc-attach.
		c.MustIn(t, "mkdir", "-p", "/etc/pve/lxc")
		c.WriteFile("/etc/pve/lxc/200.conf", []byte("hostname: dns01\n"), 0o640)
		operator := newKey("--name", "carol", "--profile", "operator")
		c.MustIn(t, "systemctl", "reload", unit)
		oc, octx := mcpClient(t, c, key.Endpoints.Loopback, operator)
		guest := func(mc *client.Client, ctx context.Context, args map[string]any) (map[string]any, bool, string) {
			t.Helper()
			req := mcp.CallToolRequest{}
			req.Params.Name = "proxmox_guest_exec"
			req.Params.Arguments = args
			res, err := mc.CallTool(ctx, req)
			if err != nil {
				var names []string
				if lt, lerr := mc.ListTools(ctx, mcp.ListToolsRequest{}); lerr == nil {
					for _, tl := range lt.Tools {
						names = append(names, tl.Name)
					}
				}
				t.Fatalf("proxmox_guest_exec %v: %v (the session lists %v)\ndaemon:\n%s", args, err, names, c.Journal("-u", unit, "-n", "30"))
			}
			var b strings.Builder
			for _, ct := range res.Content {
				if tc, ok := ct.(mcp.TextContent); ok {
					b.WriteString(tc.Text)
				}
			}
			sc, _ := res.StructuredContent.(map[string]any)
			return sc, res.IsError, b.String()
		}
		args := map[string]any{"vmid": 200, "argv": []string{"printenv", "PMCP_FAKEPVE_CT"}}
		sc, isErr, text := guest(oc, octx, args)
		token, _ := sc["confirm"].(string)
		if isErr || sc["status"] != "confirmation_required" || !strings.HasPrefix(token, "pmhc_") {
			t.Fatalf("the operator's command in container 200: %s; want the helper's confirmation token\nhelper:\n%s", text, c.Journal("-u", "proxmox-mcp-helper", "-n", "20"))
		}
		args["confirm"] = token
		sc, isErr, text = guest(oc, octx, args)
		out, _ := sc["stdout"].(map[string]any)
		if isErr || out["data"] != "200\n" {
			t.Fatalf("the confirmed command in container 200: %s", text)
		}
		if _, isErr, text := guest(oc, octx, args); !isErr || !strings.Contains(text, "used already") {
			t.Errorf("the same token again: %s", text)
		}
		// Root runs it without confirmation; a shell stays refused.
		if sc, isErr, text := guest(rc, rctx, map[string]any{"vmid": 200, "argv": []string{"hostname"}}); isErr || sc["exit_code"] != float64(0) {
			t.Errorf("root's hostname in container 200: %s", text)
		}
		if _, isErr, text := guest(rc, rctx, map[string]any{"vmid": 200, "argv": []string{"/bin/sh", "-c", "id"}}); !isErr || !strings.Contains(text, "names it") {
			t.Errorf("root's shell in container 200: %s", text)
		}
		// The read-only key has no such tool at all.
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "proxmox_guest_exec", map[string]any{"vmid": 200, "argv": []string{"hostname"}}
		if res, err := vc.CallTool(vctx, req); err == nil && !res.IsError {
			t.Errorf("the read-only key ran a command in container 200: %+v", res)
		}
	})

	t.Run("paged read through the tool", func(t *testing.T) {
		// 64 MiB of random bytes read in pages of 1 MiB (base64 on the
		// wire) through MCP, the daemon and the helper, by an MCP client
		// outside the test binary: under the race detector, the test
		// binary decoded the answers at under 1 MB/s.
		c.MustIn(t, "sh", "-c", "head -c 67108864 /dev/urandom > /srv/big.bin")
		cmd := c.Net.Command(rctx, pagedread.path(t), "-url", key.Endpoints.Loopback, "-path", "/srv/big.bin", "-page", strconv.Itoa(1<<20))
		cmd.Env = append(os.Environ(), "PMCP_KEY="+key.Key)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pagedread: %v\n%s", err, stderrOf(err))
		}
		var rep struct {
			Pages      int     `json:"pages"`
			Bytes      int64   `json:"bytes"`
			SHA256     string  `json:"sha256"`
			ToolSHA256 string  `json:"tool_sha256"`
			Seconds    float64 `json:"seconds"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("pagedread printed %q: %v", out, err)
		}
		want := strings.Fields(c.MustIn(t, "sha256sum", "/srv/big.bin"))[0]
		if rep.Pages != 64 || rep.Bytes != 64<<20 || rep.SHA256 != want || rep.ToolSHA256 != want {
			t.Errorf("read %d pages, %d bytes, sha256 %s, the tool's %s; want 64 pages, %d bytes, sha256sum's %s",
				rep.Pages, rep.Bytes, rep.SHA256, rep.ToolSHA256, 64<<20, want)
		}
		t.Logf("64 MiB read through proxmox_host_file_read in %d pages of 1 MiB: %.1f s, %.1f MB/s", rep.Pages, rep.Seconds, float64(rep.Bytes)/1e6/rep.Seconds)
	})

	t.Run("true against systemd-run", func(t *testing.T) {
		const n = 25
		ours := make([]time.Duration, 0, n)
		unitPart := make([]time.Duration, 0, n)
		bare := make([]time.Duration, 0, n)
		sandboxed := make([]time.Duration, 0, n)
		// Our unit's sandbox as systemd-run -p lines (the refused paths
		// as the helper lists them are about as many).
		sandbox := []string{"-p", "ProtectSystem=strict", "-p", "PrivatePIDs=yes", "-p", "PrivateTmp=yes", "-p", "NoNewPrivileges=yes",
			"-p", "ProtectKernelTunables=yes", "-p", "ProtectKernelModules=yes", "-p", "ProtectKernelLogs=yes", "-p", "ProtectControlGroups=yes",
			"-p", "ProtectClock=yes", "-p", "ProtectHostname=yes", "-p", "RestrictNamespaces=yes", "-p", "RestrictSUIDSGID=yes", "-p", "LockPersonality=yes",
			"-p", "RestrictRealtime=yes", "-p", "SystemCallArchitectures=native", "-p", "MemoryMax=1G", "-p", "TasksMax=256", "-p", "RuntimeMaxSec=60",
			"-p", "CapabilityBoundingSet=CAP_CHOWN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_FSETID CAP_KILL CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_NET_RAW CAP_IPC_LOCK CAP_SYS_RAWIO CAP_SYS_NICE CAP_SYS_RESOURCE",
			"-p", "InaccessiblePaths=-/etc/shadow -/etc/shadow- -/etc/gshadow -/etc/gshadow- -/root/.ssh -/run/dbus -/run/systemd/private -/etc/proxmox-mcp -/var/lib/proxmox-mcp -/var/lib/proxmox-mcp-helper -/var/lib/proxmox-mcp-authority -/etc/pve/priv -/run/proxmox-mcp-helper"}
		for i := range n {
			start := time.Now()
			r, isErr, text := execCall(t, rc, rctx, argv("true"))
			if isErr || !r.exited(0) {
				unit := regexp.MustCompile(`proxmox-mcp-exec-[0-9a-f]+\.service`).FindString(r.Unit + " " + text)
				journal := "(no unit named)"
				if unit != "" {
					journal = c.Journal("-u", unit, "-o", "short-precise")
				}
				t.Fatalf("true, run %d of %d: error answer %v, %s: %s\njournal of %s:\n%s", i+1, n, isErr, r.exit(), text, unit, journal)
			}
			ours = append(ours, time.Since(start))
			unitPart = append(unitPart, time.Duration(r.DurationMS)*time.Millisecond)
			start = time.Now()
			if res := c.Run(context.Background(), "systemd-run", "--quiet", "--wait", "--pipe", "true"); !res.OK() {
				t.Fatalf("systemd-run: %s", res)
			}
			bare = append(bare, time.Since(start))
			start = time.Now()
			if res := c.Run(context.Background(), append(append([]string{"systemd-run", "--quiet", "--wait", "--pipe"}, sandbox...), "true")...); !res.OK() {
				t.Fatalf("systemd-run with the sandbox: %s", res)
			}
			sandboxed = append(sandboxed, time.Since(start))
		}
		// The bare systemd-run is timed from the host through nsenter;
		// so is nothing of ours, which goes over the container's
		// loopback. nsenter alone is measured to subtract it.
		enter := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			c.Run(context.Background(), "true")
			enter = append(enter, time.Since(start))
		}
		q := func(d []time.Duration, p float64) time.Duration {
			s := slices.Clone(d)
			sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
			return s[int(p*float64(len(s)-1))].Round(100 * time.Microsecond)
		}
		bareNet := q(bare, 0.5) - q(enter, 0.5)
		sandboxedNet := q(sandboxed, 0.5) - q(enter, 0.5)
		t.Logf("true, %d runs each: through daemon, helper and sandbox p50 %s p90 %s (the unit from its start to its exit read: p50 %s); systemd-run --wait --pipe true p50 %s p90 %s, with our sandbox as -p lines p50 %s p90 %s (nsenter alone p50 %s, so systemd-run itself p50 %s bare, %s sandboxed); ratio to bare %.2f, to sandboxed %.2f",
			n, q(ours, 0.5), q(ours, 0.9), q(unitPart, 0.5), q(bare, 0.5), q(bare, 0.9), q(sandboxed, 0.5), q(sandboxed, 0.9), q(enter, 0.5), bareNet, sandboxedNet,
			float64(q(ours, 0.5))/float64(bareNet), float64(q(ours, 0.5))/float64(sandboxedNet))
	})
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// pagedread is tests/booted/pagedread, a program of the host run in a
// container's network namespace.
var pagedread = &program{pkg: "./tests/booted/pagedread"}

// stderrOf is what a program that failed wrote to its standard error.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
