package booted

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/tests/internal/gobuild"
)

// built is what the tests install: the Debian package `make deb` makes,
// the proxmox-mcp binary in it (also the node's simulated pveproxy) and
// fakepve, built once per test binary.
type built struct {
	Deb, Binary, FakePVE string
	err                  error
}

var (
	buildOnce sync.Once
	builds    built
	buildDir  string
)

// parallel is how many of the tests run at once unless -test.parallel
// says otherwise. Each boots containers of its own and spends most of its
// time waiting on them (apt, systemd's timeouts, a 30 s watchdog), not on
// a CPU: go test's default, GOMAXPROCS, is 2 on a 2-CPU runner.
const parallel = 4

// TestMain runs up to parallel tests at once and removes what the builds
// left.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(parallel)) //nolint:errcheck // the testing package's own flag
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// repoRoot is the module's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// build makes the package, the binary and fakepve.
func build(t *testing.T) built {
	t.Helper()
	root := repoRoot(t)
	buildOnce.Do(func() {
		var err error
		if buildDir, err = os.MkdirTemp("", "pmcp-booted-build-"); err != nil {
			builds.err = err
			return
		}
		builds.Binary = filepath.Join(buildDir, "proxmox-mcp")
		builds.FakePVE = filepath.Join(buildDir, "fakepve")
		for _, b := range [][]string{
			{"go", "build", "-trimpath", "-o", builds.Binary, "./cmd/proxmox-mcp"},
			{"go", "build", "-trimpath", "-o", builds.FakePVE, "./tests/booted/fakepve"},
		} {
			cmd := exec.Command(b[0], b[1:]...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := gobuild.CombinedOutput(cmd); err != nil {
				builds.err = &buildError{strings.Join(b, " "), err, out}
				return
			}
		}
		dist := filepath.Join(buildDir, "dist")
		cmd := exec.Command("make", "--no-print-directory", "deb", "DIST="+dist)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "DEB_BINARY="+builds.Binary, "DEB_COMPRESS=gzip")
		out, err := cmd.CombinedOutput()
		if err != nil {
			builds.err = &buildError{"make deb", err, out}
			return
		}
		debs, _ := filepath.Glob(filepath.Join(dist, "proxmox-mcp_*.deb"))
		if len(debs) != 1 {
			builds.err = &buildError{"make deb", nil, append(out, []byte("\nno single proxmox-mcp_*.deb in "+dist)...)}
			return
		}
		builds.Deb = debs[0]
	})
	if builds.err != nil {
		if _, err := exec.LookPath("dpkg-deb"); err != nil {
			Unavailable(t, "dpkg-deb is not installed: %v", builds.err)
		}
		t.Fatal(builds.err)
	}
	return builds
}

type buildError struct {
	what string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return e.what + ": " + strings.TrimSpace(tail(e.out, 30)) + " (" + errString(e.err) + ")"
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// apidoc is PVE 9.1's apidoc.js from the shared fixtures beside the
// repository.
func apidoc(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(repoRoot(t), "..", "shared", "fixtures", "pve-9.1", "apidoc.js")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("the real PVE 9.1 schema is not here (../shared/fixtures must sit beside the repository): %v", err)
	}
	return data
}

// node boots a PVE node with the package copied to /root.
func node(t *testing.T) (*Container, built) {
	t.Helper()
	dir := rootfs(t)
	b := build(t)
	n := &PVENode{SimBinary: b.Binary, FakePVE: b.FakePVE, APIDoc: apidoc(t)}
	c := Boot(t, dir, Options{Prepare: n.Prepare})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPVE(ctx); err != nil {
		t.Fatal(err)
	}
	c.CopyFile(b.Deb, "/root/"+filepath.Base(b.Deb), 0o644)
	return c, b
}

// show is `systemctl show unit` as a map of the properties asked for.
func (c *Container) show(t testing.TB, unit string, props ...string) map[string]string {
	t.Helper()
	out := c.MustIn(t, "systemctl", "show", unit, "--property="+strings.Join(props, ","))
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// mcpClient is an MCP session from the host to the daemon's loopback
// listener inside the container (through its network namespace).
func mcpClient(t *testing.T, c *Container, url, key string) (*client.Client, context.Context) {
	t.Helper()
	return mcpSession(t, url, key, &http.Client{Transport: &http.Transport{DialContext: c.Net.DialContext}}, "booted")
}

// mcpSession is an initialized MCP session to url with a bearer key over
// hc, closed when the test ends.
func mcpSession(t *testing.T, url, key string, hc *http.Client, name string) (*client.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	mc, err := client.NewStreamableHttpClient(url,
		mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}),
		mcptransport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize %s (%s): %v", url, name, err)
	}
	t.Cleanup(func() { mc.Close() })
	return mc, ctx
}

func callText(t *testing.T, mc *client.Client, ctx context.Context, name string, args map[string]any) (bool, string) {
	t.Helper()
	res, text := callTool(t, mc, ctx, name, args)
	return res.IsError, text
}

// callTool calls a tool and returns its result with its text parts.
func callTool(t *testing.T, mc *client.Client, ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := mc.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

const unit = "proxmox-mcp.service"

// TestBootedInstall: the package and the installer on a booted Debian 13
// with systemd 257, in one container, as an operator goes: apt install
// (the user is made, nothing starts), proxmox-mcp install --mode local
// (the unit runs, READY and its status reported to systemd), a tool call
// with the initial root key, the sandbox holding, and apt purge with
// proxmox-mcp uninstall leaving nothing.
func TestBootedInstall(t *testing.T) {
	t.Parallel()
	c, b := node(t)
	deb := "/root/" + filepath.Base(b.Deb)

	t.Run("apt install", func(t *testing.T) {
		res := c.Run(context.Background(), "apt-get", "install", "-y", "--no-install-recommends", deb)
		if !res.OK() {
			t.Fatalf("apt-get install %s: %s", deb, res)
		}
		t.Logf("apt-get install took %s", res.Took.Round(time.Millisecond))
		if !strings.Contains(res.Stdout, "nothing is enabled or started") {
			t.Errorf("postinst did not say that nothing was started:\n%s", res.Stdout)
		}
		pw := c.MustIn(t, "getent", "passwd", "proxmox-mcp")
		if f := strings.Split(strings.TrimSpace(pw), ":"); len(f) < 7 || f[6] != "/usr/sbin/nologin" && f[6] != "/sbin/nologin" {
			t.Errorf("the service user: %q, want a system user without a shell", pw)
		}
		p := c.show(t, unit, "LoadState", "ActiveState", "UnitFileState")
		if p["LoadState"] != "loaded" || p["ActiveState"] != "inactive" || p["UnitFileState"] == "enabled" {
			t.Errorf("after apt install, %s is %v: want loaded, inactive, not enabled", unit, p)
		}
		if res := c.Run(context.Background(), "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8765"); res.OK() {
			t.Errorf("something listens on 127.0.0.1:8765 after apt install")
		}
	})
	if t.Failed() {
		return
	}

	var key InitialKeyFile
	t.Run("install local", func(t *testing.T) {
		res := c.Run(context.Background(), "proxmox-mcp", "install", "--mode", "local", "--yes")
		if !res.OK() {
			t.Fatalf("proxmox-mcp install --mode local --yes: %s\nstatus:\n%s", res, c.Run(context.Background(), "systemctl", "status", "--no-pager", unit).Stdout)
		}
		t.Logf("proxmox-mcp install --mode local took %s", res.Took.Round(time.Millisecond))
		p := c.show(t, unit, "ActiveState", "SubState", "StatusText", "NRestarts", "UnitFileState", "Type", "MainPID", "User")
		if p["ActiveState"] != "active" || p["SubState"] != "running" || p["NRestarts"] != "0" || p["UnitFileState"] != "enabled" || p["Type"] != "notify" {
			t.Errorf("systemctl show %s: %v; want active, running, enabled, Type=notify, NRestarts=0", unit, p)
		}
		if p["StatusText"] == "" {
			t.Errorf("the daemon set no STATUS=: %v", p)
		}
		t.Logf("%s: %v", unit, p)
		data, err := c.ReadFile("/root/proxmox-mcp-initial-key.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &key); err != nil || key.Key == "" || key.Endpoints.Loopback == "" {
			t.Fatalf("initial key file: %v: %s", err, data)
		}
		if st, _ := c.root.Lstat("/root/proxmox-mcp-initial-key.json"); st == nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("the initial key file is readable by others: %v", st)
		}
		if pid, _ := strconv.Atoi(p["MainPID"]); pid > 0 {
			if rss := c.rss(pid); rss > 0 {
				t.Logf("RSS of the running daemon: %.1f MiB", float64(rss)/(1<<20))
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("tool call", func(t *testing.T) {
		mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
		if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr || !strings.Contains(text, "9.1") {
			t.Fatalf("GET /version with the initial root key: error=%v %s", isErr, text)
		}
	})

	t.Run("reload", func(t *testing.T) {
		// A key made while the daemon runs, then systemctl reload: the
		// reload goes through RELOADING=1 and READY=1 (systemctl waits for
		// it) and the new key works; its policy denies a write, and the
		// journal has the denial with its fields.
		out := c.MustIn(t, "proxmox-mcp", "key", "create", "--name", "alice", "--profile", "read-only", "--json")
		var alice struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal([]byte(out), &alice); err != nil || alice.Key == "" {
			t.Fatalf("key create --json: %v: %s", err, out)
		}
		// And a changed switch: writes allowed, so that alice's write is
		// refused by her policy, not by the switch.
		const cfg = "/etc/proxmox-mcp/config.hujson"
		data, err := c.ReadFile(cfg)
		if err != nil || !strings.Contains(string(data), `"allow_mutations": false`) {
			t.Fatalf("%s has no \"allow_mutations\": false (%v):\n%s", cfg, err, data)
		}
		st, _ := c.root.Lstat(cfg)
		c.WriteFile(cfg, []byte(strings.Replace(string(data), `"allow_mutations": false`, `"allow_mutations": true`, 1)), st.Mode().Perm())
		res := c.Run(context.Background(), "systemctl", "reload", unit)
		if !res.OK() {
			t.Fatalf("systemctl reload: %s", res)
		}
		t.Logf("systemctl reload took %s", res.Took.Round(time.Millisecond))
		p := c.show(t, unit, "ActiveState", "SubState", "StatusText", "NRestarts")
		if p["ActiveState"] != "active" || p["NRestarts"] != "0" {
			t.Errorf("after reload: %v", p)
		}
		mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, alice.Key)
		if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr {
			t.Fatalf("alice's read after the reload: %s", text)
		}
		isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
		if !isErr {
			t.Fatalf("a read-only key started a VM: %s", text)
		}
		t.Logf("alice's write: %s", text)
		// Her two calls; journald stores the daemon's lines a moment after
		// they are sent.
		jr, _ := c.JournalUntil(func(out string) bool { return strings.Count(out, "\n") >= 2 },
			"-u", unit, "PMCP_KEY_NAME=alice", "-o", "json") // the rows are checked below
		var rows []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(jr), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				rows = append(rows, m)
			}
		}
		if len(rows) < 2 {
			t.Fatalf("journalctl -u %s PMCP_KEY_NAME=alice: %d rows, want her two calls: %s", unit, len(rows), jr)
		}
		var denied map[string]any
		for _, r := range rows {
			if r["PMCP_METHOD"] == "POST" {
				denied = r
			}
		}
		t.Logf("the journal's row of the refused write: %v", denied)
		if denied == nil || denied["PMCP_PATH"] != "/nodes/pve1/qemu/101/status/start" || denied["PMCP_TRANSPORT"] != "loopback" || denied["PMCP_TOOL"] != "proxmox_api_call" {
			t.Errorf("no row of alice's POST with its path, transport and tool in the journal: %v", rows)
		}
		if denied == nil || denied["PMCP_DECISION"] != "deny" || denied["PMCP_OUTCOME"] != "denied" {
			t.Errorf("alice's write after the reload was not a policy denial: %v", denied)
		} else {
			if out := c.Journal("-u", unit, "PMCP_DECISION=deny", "-o", "cat"); !strings.Contains(out, "alice") {
				t.Errorf("journalctl PMCP_DECISION=deny has not alice's call:\n%s", out)
			}
		}
		for _, r := range rows {
			for k, v := range r {
				if s, ok := v.(string); ok && strings.Contains(s, alice.Key) {
					t.Errorf("the journal field %s holds alice's secret", k)
				}
			}
		}
	})

	t.Run("reload with a new policy", func(t *testing.T) {
		// A custom policy drafted, tested and activated while the daemon
		// runs, a key bound to it, then systemctl reload: the key's calls
		// are decided by that policy, in its own words.
		root := repoRoot(t)
		for _, f := range []string{"vm-100-199.rego", "vm-100-199_test.rego"} {
			c.CopyFile(filepath.Join(root, "policy", "examples", f), "/root/"+f, 0o644)
		}
		var draft struct {
			ID, Digest string
		}
		out := c.MustIn(t, "proxmox-mcp", "policy", "draft", "/root/vm-100-199.rego", "--json")
		if err := json.Unmarshal([]byte(out), &draft); err != nil || draft.Digest == "" {
			t.Fatalf("policy draft --json: %v: %s", err, out)
		}
		c.MustIn(t, "proxmox-mcp", "policy", "activate", draft.ID, "--digest", draft.Digest)
		out = c.MustIn(t, "proxmox-mcp", "key", "create", "--name", "bob", "--policy", draft.ID, "--json")
		var bob struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal([]byte(out), &bob); err != nil || bob.Key == "" {
			t.Fatalf("key create --policy: %v: %s", err, out)
		}
		if res := c.Run(context.Background(), "systemctl", "reload", unit); !res.OK() {
			t.Fatalf("systemctl reload: %s", res)
		}
		mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, bob.Key)
		if isErr, text := callText(t, mc, ctx, "proxmox_api_get", map[string]any{"path": "/nodes/pve1/qemu/101/config"}); isErr {
			t.Errorf("bob's read of guest 101, which his policy allows: %s", text)
		}
		isErr, text := callText(t, mc, ctx, "proxmox_api_get", map[string]any{"path": "/nodes/pve1/qemu/250/config"})
		if !isErr || !strings.Contains(text, "only guests 100-199") {
			t.Errorf("bob's read of guest 250: %s; want his policy's own refusal", text)
		}
		bobDenied := func(out string) bool {
			return strings.Contains(out, `"PMCP_PATH":"/nodes/pve1/qemu/250/config"`) && strings.Contains(out, "only guests 100-199")
		}
		if jr, ok := c.JournalUntil(bobDenied, "-u", unit, "PMCP_KEY_NAME=bob", "PMCP_DECISION=deny", "-o", "json"); !ok {
			t.Errorf("the journal has no denial of bob's read of guest 250 in his policy's words:\n%s", jr)
		}
	})

	t.Run("failed reload", func(t *testing.T) {
		const cfg = "/etc/proxmox-mcp/config.hujson"
		good, err := c.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := c.root.Lstat(cfg)
		c.WriteFile(cfg, append([]byte("{ this is not hujson\n"), good...), st.Mode().Perm())
		res := c.Run(context.Background(), "systemctl", "reload", unit)
		status := c.Run(context.Background(), "systemctl", "status", "--no-pager", "-n", "5", unit).Stdout
		c.WriteFile(cfg, good, st.Mode().Perm())
		t.Logf("systemctl reload of a broken configuration: exit %d; status:\n%s", res.Code, status)
		p := c.show(t, unit, "ActiveState", "SubState", "StatusText", "NRestarts")
		if p["ActiveState"] != "active" || p["SubState"] != "running" || p["NRestarts"] != "0" {
			t.Errorf("a failed reload changed the service: %v", p)
		}
		if !strings.Contains(p["StatusText"], "reload") || !strings.Contains(p["StatusText"], "not applied") {
			t.Errorf("StatusText does not say the reload failed: %q", p["StatusText"])
		}
		mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
		if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr {
			t.Fatalf("after a failed reload the old state is gone: %s", text)
		}
		if res := c.Run(context.Background(), "systemctl", "reload", unit); !res.OK() {
			t.Errorf("reload of the restored configuration: %s", res)
		}
	})

	t.Run("hardening", func(t *testing.T) {
		units := strings.Fields(c.MustIn(t, "systemctl", "list-unit-files", "--no-legend", "--type=service", "proxmox-mcp*"))
		for _, u := range units {
			if !strings.HasSuffix(u, ".service") || strings.Contains(u, "@") {
				continue
			}
			out := c.Run(context.Background(), "systemd-analyze", "security", "--no-pager", u)
			m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindStringSubmatch(out.Stdout)
			if m == nil {
				t.Errorf("systemd-analyze security %s: %s", u, out)
				continue
			}
			t.Logf("systemd-analyze security %s (online): %s", u, m[1])
			if v, _ := strconv.ParseFloat(m[1], 64); v > 2.0 {
				t.Errorf("systemd-analyze security %s: %s, want at most 2.0", u, m[1])
			}
		}
		// From inside the running service's sandbox, as its user: nsenter
		// into every namespace of its main process and drop to its uid.
		if r := c.Run(context.Background(), "proxmox-mcp", "pki", "init"); !r.OK() {
			t.Logf("proxmox-mcp pki init (for a CA key to try): %s", r)
		}
		pid := c.show(t, unit, "MainPID")["MainPID"]
		secrets := []string{"/etc/shadow", "/root/proxmox-mcp-initial-key.json", EtcPVE + "/priv/pve-root-ca.key", EtcPVE + "/priv/token.cfg", EtcPVE + "/local/pve-ssl.key"}
		if c.Exists("/etc/proxmox-mcp/pki/ca-key.pem") {
			secrets = append(secrets, "/etc/proxmox-mcp/pki/ca-key.pem")
		} else {
			t.Logf("no CA key in /etc/proxmox-mcp/pki to try (local mode)")
		}
		if r := c.Run(context.Background(), "nsenter", "-t", pid, "-a", "-S", "follow", "-G", "follow", "--", "cat", "/usr/share/pve-docs/api-viewer/apidoc.js"); !r.OK() {
			t.Fatalf("the sandbox probe cannot read what the daemon reads (apidoc.js): %s", r)
		}
		for _, f := range secrets {
			if !c.Exists(f) {
				t.Errorf("%s is not in the container to try", f)
				continue
			}
			r := c.Run(context.Background(), "nsenter", "-t", pid, "-a", "-S", "follow", "-G", "follow", "--", "cat", f)
			if r.OK() || r.Code < 0 {
				t.Errorf("from the service's sandbox, %s was read (or the probe did not run): %s", f, r)
				continue
			}
			t.Logf("sandbox: cat %s: %s", f, strings.TrimSpace(r.Stderr))
		}
	})

	t.Run("stop and start", func(t *testing.T) {
		res := c.Run(context.Background(), "systemctl", "stop", unit)
		if !res.OK() {
			t.Fatalf("systemctl stop: %s", res)
		}
		t.Logf("systemctl stop took %s", res.Took.Round(time.Millisecond))
		p := c.show(t, unit, "ActiveState", "Result", "ExecMainStatus", "ExecMainCode")
		// ExecMainCode 1 is CLD_EXITED: it exited by itself, not killed.
		if p["ActiveState"] != "inactive" || p["Result"] != "success" || p["ExecMainStatus"] != "0" || p["ExecMainCode"] != "1" {
			t.Errorf("after stop: %v; want inactive, success, exited 0", p)
		}
		if res.Took > 45*time.Second {
			t.Errorf("stop took %s, more than TimeoutStopSec", res.Took)
		}
		res = c.Run(context.Background(), "systemctl", "start", unit)
		if !res.OK() {
			t.Fatalf("systemctl start: %s", res)
		}
		// Type=notify: systemctl start returns when the daemon sent READY=1.
		t.Logf("systemctl start to active (READY=1) took %s", res.Took.Round(time.Millisecond))
		p = c.show(t, unit, "ActiveState", "SubState", "NRestarts", "StatusText")
		if p["ActiveState"] != "active" || p["SubState"] != "running" || !strings.HasPrefix(p["StatusText"], "serving") {
			t.Errorf("after start: %v", p)
		}
	})

	t.Run("uninstall and purge", func(t *testing.T) {
		res := c.Run(context.Background(), "proxmox-mcp", "uninstall", "--purge", "--yes")
		if !res.OK() {
			t.Fatalf("proxmox-mcp uninstall --purge --yes: %s", res)
		}
		if res := c.Run(context.Background(), "apt-get", "purge", "-y", "proxmox-mcp"); !res.OK() {
			t.Fatalf("apt-get purge proxmox-mcp: %s", res)
		}
		// systemd forgets a unit whose file is gone once nothing refers to
		// it (its garbage collection, on a later turn of its event loop);
		// until then `list-units --all` shows it as not-found, inactive.
		// One that stays loaded, or active, is a unit the purge left.
		var left string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			left = strings.TrimSpace(c.MustIn(t, "systemctl", "list-units", "--all", "--no-legend", "--plain", "proxmox-mcp*"))
			if left == "" || time.Now().After(deadline) {
				break
			}
		}
		if left != "" {
			t.Errorf("systemctl list-units 'proxmox-mcp*' 10 s after the purge:\n%s", left)
		}
		// list-unit-files exits 1 when no file matches.
		if out := c.Run(context.Background(), "systemctl", "list-unit-files", "--no-legend", "proxmox-mcp*"); strings.TrimSpace(out.Stdout) != "" {
			t.Errorf("unit files left after the purge:\n%s", out.Stdout)
		}
		for _, f := range []string{"/usr/bin/proxmox-mcp", "/etc/proxmox-mcp", "/var/lib/proxmox-mcp", "/etc/systemd/system/proxmox-mcp.service", "/usr/lib/sysusers.d/proxmox-mcp.conf"} {
			if c.Exists(f) {
				t.Errorf("%s is left after uninstall --purge and apt purge", f)
			}
		}
		// The package made the system user, so it stays, as Debian packages
		// leave system users (docs/packaging.md): uninstall removes only a
		// user it made itself.
		if res := c.Run(context.Background(), "getent", "passwd", "proxmox-mcp"); !res.OK() {
			t.Errorf("the system user the package made is gone: %s", res)
		}
		if data, _ := c.ReadFile(EtcPVE + "/user.cfg"); strings.Contains(string(data), "proxmox-mcp") {
			t.Errorf("the PVE user or its tokens are left in user.cfg:\n%s", data)
		}
		if c.Exists("/root/proxmox-mcp-initial-key.json") {
			t.Logf("the initial root key file is kept (uninstall leaves the operator's copy)")
		}
	})
}

// InitialKeyFile is the part of /root/proxmox-mcp-initial-key.json the
// tests use.
type InitialKeyFile struct {
	Key       string `json:"key"`
	Name      string `json:"name"`
	Endpoints struct {
		Loopback string `json:"loopback"`
	} `json:"endpoints"`
}

var vmRSS = regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`)

// rss is the resident set of a process of the container (by its pid
// there), in bytes, or 0.
func (c *Container) rss(pid int) int64 {
	res := c.Run(context.Background(), "cat", "/proc/"+strconv.Itoa(pid)+"/status")
	m := vmRSS.FindStringSubmatch(res.Stdout)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseInt(m[1], 10, 64)
	return kb << 10
}
