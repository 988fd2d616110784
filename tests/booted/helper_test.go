package booted

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestBootedHelper: the root helper under systemd 257 as the installer
// sets it up. Its socket listens (root's, the daemon's group, 0660); the
// daemon, in its own sandbox (PrivateUsers, ProtectSystem=strict), reaches
// it; the first host operation starts the helper by socket activation; it
// reads under /var/log and writes only under the configured write root,
// journals in its own root-only directory, and scores at most 2.0.
func TestBootedHelper(t *testing.T) {
	t.Parallel()
	c, b := node(t)
	installHost(t, c, b, `"host": {"roots": [{"path": "/var/log"}, {"path": "/srv/app", "write": true}]},`)
	svc := c.MustIn(t, "systemctl", "cat", "proxmox-mcp-helper.service")
	if !strings.Contains(svc, "ReadWritePaths=/srv/app\n") {
		t.Errorf("the helper's unit does not make /srv/app writable:\n%s", svc)
	}

	if p := c.show(t, "proxmox-mcp-helper.socket", "ActiveState", "SubState", "UnitFileState"); p["ActiveState"] != "active" || p["SubState"] != "listening" || p["UnitFileState"] != "enabled" {
		t.Errorf("the helper's socket: %v; want active, listening, enabled", p)
	}
	if got := strings.TrimSpace(c.MustIn(t, "stat", "-c", "%U:%G %a", "/run/proxmox-mcp-helper/helper.sock")); got != "root:proxmox-mcp 660" {
		t.Errorf("the socket is %s; want root:proxmox-mcp 660", got)
	}
	if p := c.show(t, "proxmox-mcp-helper.service", "ActiveState"); p["ActiveState"] == "active" {
		t.Errorf("the helper runs before anyone asked: %v", p)
	}

	var key InitialKeyFile
	raw, err := c.ReadFile("/root/proxmox-mcp-initial-key.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		t.Fatal(err)
	}
	mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)

	start := time.Now()
	isErr, text := callText(t, mc, ctx, "proxmox_host_file_read", map[string]any{"path": "/var/log/dpkg.log", "length": 4096})
	first := time.Since(start)
	if isErr || !strings.Contains(text, "install") {
		t.Fatalf("read /var/log/dpkg.log through the helper: %s\nhelper's journal:\n%s", text, c.Journal("-u", "proxmox-mcp-helper", "-n", "50"))
	}
	start = time.Now()
	if isErr, text := callText(t, mc, ctx, "proxmox_host_file_stat", map[string]any{"path": "/var/log/dpkg.log"}); isErr {
		t.Errorf("stat: %s", text)
	}
	t.Logf("first host operation (the helper started by its socket) %s, the next %s", first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if p := c.show(t, "proxmox-mcp-helper.service", "ActiveState", "SubState", "User"); p["ActiveState"] != "active" {
		t.Errorf("the helper after a call: %v; want active (started by its socket)", p)
	}

	content := "listen = 8080\n"
	sum := sha256.Sum256([]byte(content))
	if isErr, text := callText(t, mc, ctx, "proxmox_host_file_write", map[string]any{"path": "/srv/app/app.conf", "content": content, "sha256": hex.EncodeToString(sum[:]), "create": "new"}); isErr || !strings.Contains(text, "Created /srv/app/app.conf") {
		t.Fatalf("write under the write root: %s", text)
	}
	if got, _ := c.ReadFile("/srv/app/app.conf"); string(got) != content {
		t.Errorf("/srv/app/app.conf holds %q", got)
	}
	for _, p := range []string{"/var/log/planted", "/etc/proxmox-mcp/config.hujson", "/var/lib/proxmox-mcp/keys.json"} {
		if isErr, text := callText(t, mc, ctx, "proxmox_host_file_write", map[string]any{"path": p, "content": "x", "sha256": hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte("x")); return s[:] }())}); !isErr {
			t.Errorf("a write to %s was allowed: %s", p, text)
		}
	}
	if c.Exists("/var/log/planted") {
		t.Error("a refused write left /var/log/planted")
	}

	// Services, through systemd's D-Bus API, named as systemd names them.
	c.WriteFile("/etc/systemd/system/pmcp-demo.service", []byte("[Unit]\nDescription=a demo service\n[Service]\nExecStart=/bin/sleep infinity\n"), 0o644)
	c.MustIn(t, "ln", "-s", "/etc/systemd/system/proxmox-mcp.service", "/etc/systemd/system/mcpalias.service")
	c.MustIn(t, "systemctl", "daemon-reload")
	service := func(args map[string]any) (bool, string) {
		t.Helper()
		if _, control := args["action"]; control {
			return callText(t, mc, ctx, "proxmox_host_service_control", args)
		}
		return callText(t, mc, ctx, "proxmox_host_service", args)
	}
	if isErr, text := service(map[string]any{"unit": "pmcp-demo"}); isErr || !strings.Contains(text, "pmcp-demo.service: inactive (dead)") {
		t.Errorf("status of pmcp-demo: %s", text)
	}
	if isErr, text := service(map[string]any{"unit": "pmcp-demo", "action": "start"}); isErr || !strings.Contains(text, "job done; now active (running)") {
		t.Fatalf("start pmcp-demo: %s", text)
	}
	pid := c.show(t, "pmcp-demo.service", "MainPID")["MainPID"]
	if isErr, text := service(map[string]any{"unit": "pmcp-demo.service", "action": "restart"}); isErr || !strings.Contains(text, "active (running)") {
		t.Errorf("restart pmcp-demo: %s", text)
	}
	if again := c.show(t, "pmcp-demo.service", "MainPID")["MainPID"]; again == pid || again == "0" {
		t.Errorf("MainPID %s before the restart, %s after", pid, again)
	}
	isErr, text = service(map[string]any{"unit": "pmcp-demo", "lines": 5})
	if isErr || !strings.Contains(text, `"main_pid"`) || !strings.Contains(text, "Started pmcp-demo.service") {
		t.Errorf("status with journal lines: %s", text)
	}
	if isErr, text := service(map[string]any{"unit": "pmcp-demo", "action": "stop"}); isErr || !strings.Contains(text, "inactive (dead)") {
		t.Errorf("stop pmcp-demo: %s", text)
	}
	// This install's own units, under every name they can be given.
	for _, u := range []string{"proxmox-mcp", "proxmox-mcp.service", "proxmox-mcp-helper.socket", "proxmox-mcp@x", "mcpalias"} {
		isErr, text := service(map[string]any{"unit": u, "action": "stop"})
		if !isErr || !strings.Contains(text, "own units") {
			t.Errorf("stop %s: %s; want it refused as one of this install's units", u, text)
		}
	}
	if p := c.show(t, unit, "ActiveState"); p["ActiveState"] != "active" {
		t.Errorf("the daemon after the refused stops: %v", p)
	}
	out := c.MustIn(t, "proxmox-mcp", "key", "create", "--name", "viewer", "--profile", "read-only", "--json")
	var viewer struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &viewer); err != nil {
		t.Fatal(err)
	}
	vc, vctx := mcpClient(t, c, key.Endpoints.Loopback, viewer.Key)
	if isErr, text := callText(t, vc, vctx, "proxmox_host_service", map[string]any{"unit": "systemd-journald"}); isErr {
		t.Errorf("a read-only key's status of systemd-journald: %s", text)
	}
	if isErr, text := callText(t, vc, vctx, "proxmox_host_service", map[string]any{"unit": "pmcp-demo", "action": "start"}); !isErr || !strings.Contains(text, "not an argument") {
		t.Errorf("a read-only key starting pmcp-demo: %s", text)
	}
	if list, err := vc.ListTools(vctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	} else {
		for _, tool := range list.Tools {
			if tool.Name == "proxmox_host_service_control" {
				t.Error("a read-only key is shown proxmox_host_service_control")
			}
		}
	}

	// The helper's journal is root's, beside the state directory.
	if got := strings.TrimSpace(c.MustIn(t, "stat", "-c", "%U:%G %a", "/var/lib/proxmox-mcp-helper")); got != "root:root 700" {
		t.Errorf("the helper's directory is %s; want root:root 700", got)
	}
	tail := c.MustIn(t, "proxmox-mcp", "audit", "tail", "--journal", "/var/lib/proxmox-mcp-helper/journal.db", "--json")
	for _, want := range []string{`"tool":"proxmox_host_file_read"`, `"tool":"proxmox_host_file_write"`, `"transport":"helper"`} {
		if !strings.Contains(tail, want) {
			t.Errorf("the helper's journal lacks %s:\n%s", want, tail)
		}
	}
	res := c.Run(context.Background(), "systemd-analyze", "security", "--no-pager", "proxmox-mcp-helper.service")
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindStringSubmatch(res.Stdout)
	if m == nil {
		t.Fatalf("no exposure level for the helper: %s", res)
	}
	t.Logf("systemd-analyze security proxmox-mcp-helper.service (online): %s", m[1])
	if score, _ := strconv.ParseFloat(m[1], 64); score > 2.0 {
		t.Errorf("the helper's exposure is %s; want at most 2.0", m[1])
	}
}

// installHost installs the package and the daemon in local mode, allows
// writes, adds the configuration's lines extra (its host section), makes
// /srv/app, installs again and restarts the daemon.
func installHost(t *testing.T, c *Container, b built, extra string) {
	t.Helper()
	deb := "/root/" + filepath.Base(b.Deb)
	if res := c.Run(context.Background(), "apt-get", "install", "-y", "--no-install-recommends", deb); !res.OK() {
		t.Fatalf("apt-get install: %s", res)
	}
	if res := c.Run(context.Background(), "proxmox-mcp", "install", "--mode", "local", "--yes"); !res.OK() {
		t.Fatalf("install --mode local: %s", res)
	}
	const cfg = "/etc/proxmox-mcp/config.hujson"
	data, err := c.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.MustIn(t, "mkdir", "-p", "/srv/app")
	// Writes allowed (a fresh install only reads), and the host roots.
	edited := regexp.MustCompile(`"allow_mutations":\s*false,`).ReplaceAllString(string(data), `"allow_mutations": true,
	`+extra)
	if !strings.Contains(edited, extra) {
		t.Fatalf("no allow_mutations line in %s:\n%s", cfg, data)
	}
	c.WriteFile(cfg, []byte(edited), 0o640)
	c.MustIn(t, "chgrp", "proxmox-mcp", cfg)
	if res := c.Run(context.Background(), "proxmox-mcp", "install", "--yes"); !res.OK() {
		t.Fatalf("install again with the host roots: %s", res)
	}
	c.MustIn(t, "systemctl", "restart", unit)
}
