package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// A console's ticket and VNC password go to the caller and nowhere else:
// not into the journal's files on disk (the database, its WAL and shared
// memory, read as bytes after the calls), not into the logs, the calls
// being journaled all the same.
func TestConsoleTicketNeverReachesJournalOrLogs(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, harnessOpts{journal: true, journalDir: dir, logger: logger})
	c, ctx := h.as("admin")
	schemas := outputSchemas(t, c, ctx)
	var secrets []string
	for _, tc := range []struct {
		tool     string
		args     map[string]any
		password bool
	}{
		{ToolGuestVNC, map[string]any{"vmid": 100, "websocket": true, "generate-password": true}, true},
		{ToolGuestVNC, map[string]any{"vmid": 200, "websocket": true}, true},
		{ToolGuestTerminal, map[string]any{"vmid": 100, "serial": "serial0"}, false},
		{ToolGuestTerminal, map[string]any{"vmid": 201}, false},
	} {
		res, content := call(t, c, ctx, tc.tool, tc.args)
		if res.IsError {
			t.Fatalf("%s %v: %s", tc.tool, tc.args, text(res))
		}
		checkOutput(t, schemas, tc.tool, res)
		data, _ := content["data"].(map[string]any)
		ticket, _ := data["ticket"].(string)
		pw, hasPW := data["password"].(string)
		if !strings.Contains(ticket, "PVEVNC:") || hasPW != tc.password {
			t.Fatalf("%s %v: the caller does not get the ticket (and password): %v", tc.tool, tc.args, data)
		}
		if ws, _ := data["websocket_path"].(string); !strings.HasPrefix(ws, "/api2/json/nodes/") || !strings.Contains(ws, "/vncwebsocket?port=") || strings.Contains(ws, "PVEVNC") {
			t.Errorf("%s: websocket_path %q", tc.tool, ws)
		}
		_, sig, _ := strings.Cut(ticket, "::")
		secrets = append(secrets, ticket, sig)
		if hasPW {
			secrets = append(secrets, pw)
		}
	}
	rc, rctx := h.as("root")
	res, content := call(t, rc, rctx, ToolNodeTerminal, map[string]any{"node": "pve2"})
	data, _ := content["data"].(map[string]any)
	ticket, _ := data["ticket"].(string)
	if res.IsError || !strings.HasPrefix(ticket, "PVEVNC:") {
		t.Fatalf("root's node terminal: %s", text(res))
	}
	_, sig, _ := strings.Cut(ticket, "::")
	secrets = append(secrets, ticket, sig)
	if err := h.journal.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "journal.db*"))
	if len(files) == 0 {
		t.Fatal("no journal file on disk")
	}
	var disk []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		disk = append(disk, b...)
	}
	for _, name := range []string{ToolGuestVNC, ToolGuestTerminal, ToolNodeTerminal, "/nodes/pve1/qemu/100/vncproxy", "/nodes/pve2/lxc/201/termproxy", "/nodes/pve2/termproxy"} {
		if !bytes.Contains(disk, []byte(name)) {
			t.Errorf("the journal on disk does not record %s: the check below would prove nothing", name)
		}
	}
	for _, secret := range secrets {
		if bytes.Contains(disk, []byte(secret)) {
			t.Errorf("the journal's files hold a console secret %.12q…", secret)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the logs hold a console secret %.12q…", secret)
		}
	}
}

// The console tools are shown to a key whose policy may open a console
// (read-only and operator keys refuse endpoints that return tickets);
// a dry run and a confirmation asked for answer in the output schema,
// and neither opens a proxy.
func TestConsoleVisibilityAndAnswers(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, prof := range []string{"read-only", "operator"} {
		c, ctx := h.as(prof)
		names := toolNames(t, c, ctx)
		if slices.Contains(names, ToolGuestVNC) || slices.Contains(names, ToolGuestTerminal) {
			t.Errorf("%s sees the console tools: %v", prof, names)
		}
	}
	c, ctx := h.as("admin")
	names := toolNames(t, c, ctx)
	for _, n := range []string{ToolGuestVNC, ToolGuestTerminal, ToolStorageDownload, ToolStorageOCIPull} {
		if !slices.Contains(names, n) {
			t.Errorf("admin does not see %s", n)
		}
	}
	if slices.Contains(names, ToolNodeTerminal) {
		t.Error("admin sees the node terminal, which the admin profile refuses (a host shell)")
	}
	rc, rctx := h.as("root")
	res, content := call(t, rc, rctx, ToolNodeTerminal, map[string]any{"node": "pve1"})
	data, _ := content["data"].(map[string]any)
	if res.IsError || data["ticket"] == nil || data["websocket_path"] != "/api2/json/nodes/pve1/vncwebsocket?port="+fmt.Sprint(data["port"]) {
		t.Fatalf("root's node terminal: %s", text(res))
	}
	checkOutput(t, outputSchemas(t, rc, rctx), ToolNodeTerminal, res)
	schemas := outputSchemas(t, c, ctx)
	writes := h.sim.Writes()
	res, content = call(t, c, ctx, ToolGuestVNC, map[string]any{"vmid": 100, "dry_run": true})
	if res.IsError || content["dry_run"] != true {
		t.Fatalf("dry run: %s", text(res))
	}
	checkOutput(t, schemas, ToolGuestVNC, res)
	res, _ = call(t, c, ctx, ToolGuestTerminal, map[string]any{"vmid": 100, "serial": "serial9"})
	if !res.IsError || !strings.Contains(text(res), "serial") {
		t.Errorf("a serial port PVE does not have: %s", text(res))
	}
	h.activate("confirm-consoles", `package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision if not console

decision := {"effect": "confirm", "reasons": ["consoles are confirmed"], "obligations": [{"type": "confirm", "approver": "self"}]} if console

console if endswith(input.path, "proxy")
`)
	cc, cctx := h.as("", "confirm-consoles")
	cschemas := outputSchemas(t, cc, cctx)
	res, content = call(t, cc, cctx, ToolGuestTerminal, map[string]any{"vmid": 201})
	if res.IsError || content["status"] != "confirmation_required" {
		t.Fatalf("confirmation: %s", text(res))
	}
	checkOutput(t, cschemas, ToolGuestTerminal, res)
	if n := h.sim.Writes(); n != writes {
		t.Errorf("a dry run or a confirmation asked for sent %d writes to PVE", n-writes)
	}
	res, content = call(t, cc, cctx, ToolGuestTerminal, map[string]any{"vmid": 201, "confirm": content["confirm"]})
	if data, _ := content["data"].(map[string]any); res.IsError || data["ticket"] == nil {
		t.Fatalf("confirmed: %s", text(res))
	}
	checkOutput(t, cschemas, ToolGuestTerminal, res)
}

// tableResolver answers from a table; other names do not resolve.
type tableResolver map[string][]string

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	names, ok := r[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, n := range names {
		out = append(out, netip.MustParseAddr(n))
	}
	return out, nil
}

// A download from a place that is not public is refused by the built-in
// profiles, naming the url argument, the host, its class and the rule;
// nothing is sent and the refusal is journaled. From a public place the
// file lands in the storage. A custom policy may allow a private mirror.
func TestStorageDownloadRefusesPrivateTargets(t *testing.T) {
	res := tableResolver{
		"mirror.example":   {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"rebind.example":   {"93.184.215.14", "127.0.0.1"},
		"mirror.lan":       {"192.168.10.20"},
		"registry.example": {"fd00::5"},
	}
	h := newHarness(t, harnessOpts{resolver: res, clock: true})
	c, ctx := h.as("root")
	schemas := outputSchemas(t, c, ctx)
	writes := h.sim.Writes()
	for _, tc := range []struct {
		tool, param, value, class string
	}{
		{ToolStorageDownload, "url", "http://127.0.0.1:8006/api2/json/access/ticket.iso", "loopback"},
		{ToolStorageDownload, "url", "http://169.254.169.254/latest/meta-data.iso", "link_local"},
		{ToolStorageDownload, "url", "http://[::ffff:10.1.2.3]/x.iso", "private"},
		{ToolStorageDownload, "url", "https://rebind.example/x.iso", "loopback"},
		{ToolStorageDownload, "url", "https://mirror.lan/x.iso", "private"},
		{ToolStorageDownload, "url", "http://100.64.1.1/x.iso", "cgnat"},
		{ToolStorageDownload, "url", "http://0.0.0.0/x.iso", "unspecified"},
		{ToolStorageDownload, "url", "https://nowhere.example/x.iso", "unresolved"},
		{ToolStorageOCIPull, "reference", "registry.example/library/debian:13", "unique_local"},
	} {
		args := map[string]any{"node": "pve1", "storage": "local", tc.param: tc.value}
		if tc.tool == ToolStorageDownload {
			args["content"] = "iso"
		}
		r, content := call(t, c, ctx, tc.tool, args)
		checkRefusalOutput(t, schemas, tc.tool, r)
		got := text(r)
		if !r.IsError || content["status"] != "denied" || !strings.Contains(got, tc.param+" "+tc.value) || !strings.Contains(got, tc.class) ||
			!strings.Contains(got, "public addresses") {
			t.Errorf("%s %s: %s", tc.tool, tc.value, got)
		}
	}
	// The check is the call plan's: the generic call tool is refused too.
	r, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/storage/local/download-url",
		"params": map[string]any{"url": "http://[::1]:8006/x.iso", "content": "iso", "filename": "x.iso"}})
	if !r.IsError || !strings.Contains(text(r), "url http://[::1]:8006/x.iso (host ::1, loopback)") {
		t.Errorf("proxmox_api_call to a loopback URL: %s", text(r))
	}
	if n := h.sim.Writes(); n != writes {
		t.Fatalf("refused downloads sent %d writes to PVE", n-writes)
	}
	denied := 0
	for _, o := range h.audit.outcomes() {
		if o == journal.OutcomeDenied {
			denied++
		}
	}
	if denied != 10 {
		t.Errorf("%d refusals journaled as denied, want 10", denied)
	}
	r, content := call(t, c, ctx, ToolStorageDownload, map[string]any{"node": "pve1", "storage": "local", "content": "iso",
		"url": "https://mirror.example/debian-13.2.0-amd64-netinst.iso", "dry_run": true})
	if r.IsError || content["dry_run"] != true {
		t.Fatalf("a dry run: %s", text(r))
	}
	checkOutput(t, schemas, ToolStorageDownload, r)
	r, content = call(t, c, ctx, ToolStorageDownload, map[string]any{"node": "pve1", "storage": "local", "content": "iso",
		"url": "https://mirror.example/debian-13.2.0-amd64-netinst.iso"})
	if r.IsError || content["upid"] == nil {
		t.Fatalf("a public mirror: %s", text(r))
	}
	checkOutput(t, schemas, ToolStorageDownload, r)
	h.clock.Advance(time.Minute)
	r, _ = call(t, c, ctx, ToolStorageContent, map[string]any{"node": "pve1", "storage": "local", "content": "iso"})
	if !strings.Contains(text(r), "local:iso/debian-13.2.0-amd64-netinst.iso") {
		t.Errorf("the downloaded ISO is not in the storage: %s", text(r))
	}
	h.activate("lan-mirror", `package proxmox_mcp.policy

import data.proxmox_mcp.lib
import data.proxmox_mcp.profiles.admin

decision := lib.allow("downloads from the LAN mirror") if lan_mirror

decision := admin.decision if not lan_mirror

lan_mirror if {
	input.path == "/nodes/{node}/storage/{storage}/download-url"
	every t in input.outside {
		t.class in {"public", "private"}
		t.host == "mirror.lan"
	}
}
`)
	lc, lctx := h.as("", "lan-mirror")
	r, _ = call(t, lc, lctx, ToolStorageDownload, map[string]any{"node": "pve1", "storage": "local", "content": "iso", "url": "https://mirror.lan/x.iso"})
	if r.IsError {
		t.Errorf("a policy that allows the LAN mirror: %s", text(r))
	}
	r, _ = call(t, lc, lctx, ToolStorageDownload, map[string]any{"node": "pve1", "storage": "local", "content": "iso", "url": "http://127.0.0.1/x.iso"})
	if !r.IsError {
		t.Errorf("the LAN-mirror policy let loopback through: %s", text(r))
	}
}

// checkRefusalOutput validates a refusal's structuredContent too: the
// TypeScript SDK validates structuredContent whenever an answer has it.
func checkRefusalOutput(t *testing.T, schemas map[string]*jsonschema.Schema, name string, res *mcp.CallToolResult) {
	t.Helper()
	if res.StructuredContent == nil {
		return
	}
	b, _ := json.Marshal(res.StructuredContent)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas[name].Validate(v); err != nil {
		t.Errorf("%s: a refusal's structuredContent does not match the output schema: %v\n%s", name, err, b)
	}
}
