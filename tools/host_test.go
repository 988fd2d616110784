package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// hostBed is a root helper serving a socket, with keys made through
// root's copy, and a tool server that reaches it.
type hostBed struct {
	h        *harness
	root     string
	keys     map[string]string // profile -> key
	hjournal *journal.Journal
	repo     string
	bg       *breakglass.Service
	elicit   client.ElicitationHandler
}

func newHostBed(t testing.TB) *hostBed { return newHostBedWith(t, hostBedOpts{}) }

// hostBedOpts add to the bed: more keys (name -> profile), a protected
// repository with break-glass, an elicitation handler for the clients.
type hostBedOpts struct {
	keys      map[string]string
	protected bool
	elicit    client.ElicitationHandler
}

func newHostBedWith(t testing.TB, o hostBedOpts) *hostBed {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the helper and root's copy of the keys are root's")
	}
	ctx := context.Background()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state, root := filepath.Join(dir, "state"), filepath.Join(dir, "srv")
	for _, d := range []string{state, root} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "app.conf"), []byte("port = 8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	auth := authority.New(state, log, nil)
	ks, err := keys.Open(state, keys.Options{Params: keys.Params{N: 1 << 10, R: 8, P: 1}, Shared: auth})
	if err != nil {
		t.Fatal(err)
	}
	b := &hostBed{root: root, keys: map[string]string{}, elicit: o.elicit}
	names := map[string]string{"read-only": "read-only", "admin": "admin"}
	maps.Copy(names, o.keys)
	for name, p := range names {
		c, err := ks.Create(ctx, keys.CreateRequest{Name: name, Binding: keys.Binding{Profile: p}})
		if err != nil {
			t.Fatal(err)
		}
		b.keys[name] = c.Key.Reveal()
	}
	var bg *breakglass.Service
	var protected []string
	if o.protected {
		b.repo = filepath.Join(dir, "model-repo")
		protected = []string{b.repo}
		if err := os.Mkdir(b.repo, 0o755); err != nil {
			t.Fatal(err)
		}
		bgDir := filepath.Join(dir, "helper", "breakglass")
		if err := os.MkdirAll(filepath.Dir(bgDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if bg, err = breakglass.OpenService(breakglass.ServiceOptions{Dir: bgDir, Repository: breakglass.Repository{Paths: protected}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bg.Close() })
		if _, err := pki.CreateSigningKey(filepath.Join(bgDir, breakglass.KeyFile)); err != nil {
			t.Fatal(err)
		}
		b.bg = bg
	}
	roots := []host.Root{{Path: "/var/log"}, {Path: root, Write: true}}
	tree, err := host.OpenTree(roots, host.DefaultRefused(host.SecretPaths{StateDir: state}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	rootKeys, err := keys.Open(auth.Dir(), keys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := keys.NewVerifier(rootKeys, keys.VerifierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := policy.NewStore(auth.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := policy.NewEngine(ctx, ps, engineOptions(t, policy.EngineOptions{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	b.hjournal, err = journal.Open(ctx, filepath.Join(dir, "helper.db"), journal.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.hjournal.Close() })
	srv, err := host.NewServer(host.ServerOptions{Tree: tree, Keys: v, Policies: eng, Journal: b.hjournal, PeerUIDs: []int{0}, Logger: log,
		Protected: protected, Breakglass: bg, Lineage: host.Lineage(rootKeys)})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "helper.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { srv.Serve(sctx, l, 0); close(done) }() //nolint:errcheck // ended by the test
	t.Cleanup(func() { stop(); l.Close(); <-done })
	b.h = newHarness(t, harnessOpts{host: HostOptions{
		Helper: func(ctx context.Context, req host.Request, progress func(host.ExecProgress)) (host.Response, error) {
			return host.Call(ctx, sock, req, progress)
		},
		Roots: roots, Protected: protected,
	}})
	return b
}

// as is a session of the key made for profile; key replaces the key the
// caller presents (a daemon lying about whom it calls for).
func (b *hostBed) as(t testing.TB, profile, key string) (*client.Client, context.Context) {
	t.Helper()
	if key == "" {
		key = b.keys[profile]
	}
	caller := Caller{
		Principal: policy.Principal{KeyID: "k" + profile, Name: profile, Profile: profile, Transport: "loopback", Source: "127.0.0.1"},
		Binding:   policy.Binding{Profile: profile}, Tier: Tier(profile), Key: keys.Secret(key),
	}
	ctx := WithCaller(context.Background(), caller)
	var opts []client.ClientOption
	if b.elicit != nil {
		opts = append(opts, client.WithElicitationHandler(b.elicit))
	}
	c, err := client.NewInProcessClientWithOptions(b.h.srv.MCP(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "host-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

func hostTools(names []string) []string { return withPrefix(names, "proxmox_host_") }

// withPrefix are the names that start with prefix, in order.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func TestHostToolsThroughTheHelper(t *testing.T) {
	b := newHostBed(t)
	ro, roCtx := b.as(t, "read-only", "")
	admin, adminCtx := b.as(t, "admin", "")

	// Visibility asks each profile's host_decision about each root.
	if got := strings.Join(hostTools(toolNames(t, ro, roCtx)), " "); got != "proxmox_host_exec proxmox_host_file_list proxmox_host_file_read proxmox_host_file_stat proxmox_host_service" {
		t.Errorf("read-only sees %q; want the reviewed commands, the three reads (under /var/log) and the services' status, no write", got)
	}
	if got := hostTools(toolNames(t, admin, adminCtx)); !slices.Contains(got, ToolHostWrite) || !slices.Contains(got, ToolHostServiceControl) || len(got) != 7 {
		t.Errorf("admin sees %v; want the seven host tools", got)
	}
	// The command tool is read-only for the read-only key, which runs
	// only the reviewed diagnostics, and destructive for admin.
	for _, tc := range []struct {
		c        *client.Client
		ctx      context.Context
		readOnly bool
	}{{ro, roCtx, true}, {admin, adminCtx, false}} {
		list, err := tc.c.ListTools(tc.ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			a := tool.Annotations
			if tool.Name == ToolHostExec && (*a.ReadOnlyHint != tc.readOnly || *a.DestructiveHint == tc.readOnly) {
				t.Errorf("%s annotations %+v; want readOnlyHint %v", tool.Name, a, tc.readOnly)
			}
			if tool.Name == ToolHostService && (!*a.ReadOnlyHint || *a.DestructiveHint) {
				t.Errorf("%s (a status) annotations %+v", tool.Name, a)
			}
		}
	}
	// Commands: the daemon refuses early what the policy refuses on the
	// program as it resolves it, and what breaks the argument rules.
	for _, tc := range []struct {
		args map[string]any
		says string
	}{
		{map[string]any{"argv": []any{"rm", "-rf", "/"}}, "reviewed diagnostic"},
		{map[string]any{"argv": []any{"sh", "-c", "df"}}, "reviewed diagnostic"},
		{map[string]any{"argv": []any{}}, "argument argv"},
		{map[string]any{"argv": []any{"df", 7}}, "argv[1]"},
		{map[string]any{"argv": []any{"df"}, "writable": []any{"/var/log"}}, "allows writes"},
		{map[string]any{"argv": []any{"df"}, "cwd": "/var/log/../.."}, "argument cwd"},
		{map[string]any{"argv": []any{"no-such-program-anywhere"}}, "not an executable"},
	} {
		before, _ := b.hjournal.Tail(context.Background(), 100)
		res, _ := call(t, ro, roCtx, ToolHostExec, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.says) {
			t.Errorf("read-only's command %v: %s; want a refusal saying %q", tc.args, text(res), tc.says)
		}
		if after, _ := b.hjournal.Tail(context.Background(), 100); len(after) != len(before) {
			t.Errorf("the helper heard of %v, which the daemon refused", tc.args)
		}
	}
	// A reviewed diagnostic goes on to the helper, which decides again
	// (and here, without systemd, refuses to run commands at all).
	if res, _ := call(t, ro, roCtx, ToolHostExec, map[string]any{"argv": []any{"df", "-h"}}); !res.IsError || !strings.Contains(text(res), "root helper refused (refused)") {
		t.Errorf("read-only's df -h: %s; want the helper's own refusal", text(res))
	}
	// A read-only key may read a service's status, not restart it: the
	// status tool takes no action, and the control tool is not its.
	res, _ := call(t, ro, roCtx, ToolHostService, map[string]any{"unit": "cron", "action": "restart"})
	if !res.IsError || !strings.Contains(text(res), "argument action: is not an argument of this tool") {
		t.Errorf("read-only restarting cron: %s", text(res))
	}
	if _, err := ro.CallTool(roCtx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: ToolHostServiceControl, Arguments: map[string]any{"unit": "cron", "action": "restart"}}}); err == nil {
		t.Error("read-only called the service control tool, which it is not shown")
	}
	res, _ = call(t, ro, roCtx, ToolHostService, map[string]any{"unit": "cron;reboot"})
	if !res.IsError || !strings.Contains(text(res), "argument unit") {
		t.Errorf("a unit name with ;: %s", text(res))
	}

	res, c := call(t, admin, adminCtx, ToolHostRead, map[string]any{"path": b.root + "/app.conf"})
	if res.IsError || c["data"] != "port = 8080\n" || c["encoding"] != "utf-8" {
		t.Fatalf("admin's read: %v %v", text(res), c)
	}
	content := "port = 9090\n"
	sum := sha256.Sum256([]byte(content))
	res, c = call(t, admin, adminCtx, ToolHostWrite, map[string]any{"path": b.root + "/app.conf", "content": content,
		"sha256": hex.EncodeToString(sum[:]), "if_sha256": c["sha256"], "mode": "0640"})
	if res.IsError || c["created"] != false || c["mode"] != "0640" {
		t.Fatalf("admin's write: %v %v", text(res), c)
	}
	if got, _ := os.ReadFile(b.root + "/app.conf"); string(got) != content {
		t.Errorf("the file holds %q", got)
	}
	if !strings.Contains(text(res), "Replaced "+b.root+"/app.conf") {
		t.Errorf("summary %q", text(res))
	}

	// A file over one request's limit, in chunks through the tool.
	big := make([]byte, 10<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	bigSum := sha256.Sum256(big)
	const chunk = 4 << 20
	for off := 0; off < len(big); off += chunk {
		part := big[off:min(off+chunk, len(big))]
		res, c := call(t, admin, adminCtx, ToolHostWrite, map[string]any{"path": b.root + "/big.bin", "content": base64.StdEncoding.EncodeToString(part), "encoding": "base64",
			"sha256": hex.EncodeToString(bigSum[:]), "offset": off, "size": len(big)})
		last := off+chunk >= len(big)
		switch {
		case res.IsError:
			t.Fatalf("the chunk at %d: %s", off, text(res))
		case !last && (num(c["staged"]) != int64(off+chunk) || !strings.Contains(text(res), "send the next chunk")):
			t.Fatalf("the chunk at %d: %s", off, text(res))
		case last && (c["created"] != true || num(c["size"]) != int64(len(big))):
			t.Fatalf("the last chunk: %s", text(res))
		}
	}
	if got, _ := os.ReadFile(b.root + "/big.bin"); !bytes.Equal(got, big) {
		t.Error("the file written in chunks is not the data")
	}

	// The daemon refuses early what the caller's policy refuses: the
	// helper never hears of it.
	before, _ := b.hjournal.Tail(context.Background(), 100)
	res, _ = call(t, ro, roCtx, ToolHostRead, map[string]any{"path": b.root + "/app.conf"})
	if !res.IsError || !strings.Contains(text(res), "only read files under /var/log") {
		t.Errorf("read-only's read outside /var/log: %s", text(res))
	}
	after, _ := b.hjournal.Tail(context.Background(), 100)
	if len(after) != len(before) {
		t.Errorf("the helper journaled %d rows for a call the daemon refused", len(after)-len(before))
	}

	// A daemon that says a read-only key is admin is caught by the
	// helper, which verifies the key and decides on root's copy.
	liar, liarCtx := b.as(t, "admin", b.keys["read-only"])
	res, _ = call(t, liar, liarCtx, ToolHostWrite, map[string]any{"path": b.root + "/app.conf", "content": "x", "sha256": hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte("x")); return s[:] }())})
	if !res.IsError || !strings.Contains(text(res), "root helper refused (denied)") {
		t.Errorf("a write for a read-only key presented as admin: %s", text(res))
	}
	forged, forgedCtx := b.as(t, "admin", "pmcp_aaaaaaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	res, _ = call(t, forged, forgedCtx, ToolHostRead, map[string]any{"path": b.root + "/app.conf"})
	if !res.IsError || !strings.Contains(text(res), "unauthenticated") {
		t.Errorf("a read with a key root's copy does not hold: %s", text(res))
	}
	if got, _ := os.ReadFile(b.root + "/app.conf"); string(got) != content {
		t.Errorf("a refused write changed the file: %q", got)
	}
	// The daemon-wide switches hold for host writes too.
	b.h.srv.SetSwitches(Switches{ReadOnly: true})
	res, _ = call(t, admin, adminCtx, ToolHostWrite, map[string]any{"path": b.root + "/app.conf", "content": "x", "sha256": hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte("x")); return s[:] }())})
	if !res.IsError || !strings.Contains(text(res), "read_only switch") {
		t.Errorf("a host write under read_only: %s", text(res))
	}
	b.h.srv.SetSwitches(Switches{AllowMutations: true})

	// The daemon's journal holds every call: the two service refusals,
	// the read, the write's receipt, the three refusals, and the write
	// the switch refused.
	got := b.h.audit.outcomes()
	slices.Sort(got)
	want := []journal.Outcome{journal.OutcomeInvalid, journal.OutcomeDenied, journal.OutcomeDenied, journal.OutcomeDenied, journal.OutcomeDenied, journal.OutcomeInvalid, journal.OutcomeOK, journal.OutcomeOK}
	// And the commands: two denied by the policy, five invalid, one the
	// helper refused (its receipt, after the intent).
	want = append(want, journal.OutcomeDenied, journal.OutcomeDenied, journal.OutcomeInvalid, journal.OutcomeInvalid, journal.OutcomeInvalid, journal.OutcomeInvalid, journal.OutcomeInvalid, journal.OutcomeDenied)
	// And the three chunks.
	want = append(want, journal.OutcomeOK, journal.OutcomeOK, journal.OutcomeOK)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the daemon journaled %v; want %v", got, want)
	}
}
