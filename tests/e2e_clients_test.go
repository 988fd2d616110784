package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// End-to-end tests of the built binary with the two clients people put in
// front of it besides the SDKs: the MCP Inspector's CLI (npm
// @modelcontextprotocol/inspector-cli, what `mcp-inspector --cli` runs) over
// Streamable HTTP, and mcp-remote, the stdio bridge Claude Desktop users run
// to reach an HTTP server, driven here over its stdio by mcp-go's client as
// Claude Desktop would drive it. Both are pinned in tests/e2e/node.

// What a person is told of a wrong key, whichever client shows it.
const (
	keyNotAccepted = "the key was not accepted"
	takesAPIKeys   = "this server takes proxmox-mcp API keys"
)

// inspectorCLI finds Node and the Inspector's CLI, or skips. The CLI reads
// its own package.json relative to the working directory to name itself,
// so it runs from its build directory.
func inspectorCLI(t *testing.T) (node, dir string) {
	t.Helper()
	node = lookNode(t, 20)
	nm := nodeModules(t, "e2e/node", "@modelcontextprotocol/inspector-cli")
	return node, filepath.Join(nm, "@modelcontextprotocol", "inspector-cli", "build")
}

// inspect runs one Inspector CLI method against url with key and returns
// its stdout, its stderr and whether it succeeded.
func inspect(t *testing.T, url, key string, args ...string) (stdout, stderr string, ok bool) {
	t.Helper()
	node, dir := inspectorCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"index.js", url, "--transport", "http", "--header", "Authorization: Bearer " + key}, args...)
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err == nil
}

// inspectorTool is what the tests read of a tool the Inspector lists.
type inspectorTool struct {
	Name        string `json:"name"`
	Annotations struct {
		ReadOnly *bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// TestInspectorCLI: the Inspector's CLI lists the tools (the read tool
// marked read-only), calls a read, lists the resources, and for a wrong
// key fails with the daemon's words.
func TestInspectorCLI(t *testing.T) {
	inspectorCLI(t)
	d := startDemo(t, "operator")

	out, stderr, ok := inspect(t, d.URL, d.Key, "--method", "tools/list")
	if !ok {
		t.Fatalf("tools/list failed:\n%s", stderr)
	}
	var list struct {
		Tools []inspectorTool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list printed %q: %v", out, err)
	}
	i := slices.IndexFunc(list.Tools, func(tl inspectorTool) bool { return tl.Name == "proxmox_api_get" })
	if i < 0 || list.Tools[i].Annotations.ReadOnly == nil || !*list.Tools[i].Annotations.ReadOnly {
		t.Errorf("tools/list: no proxmox_api_get marked readOnlyHint among %d tools", len(list.Tools))
	}

	out, stderr, ok = inspect(t, d.URL, d.Key, "--method", "tools/call", "--tool-name", "proxmox_guest_status", "--tool-arg", "vmid=101")
	if !ok {
		t.Fatalf("tools/call proxmox_guest_status failed:\n%s", stderr)
	}
	var call struct {
		IsError    bool `json:"isError"`
		Structured struct {
			Data struct {
				VMID   int    `json:"vmid"`
				Status string `json:"status"`
			} `json:"data"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &call); err != nil || call.IsError || call.Structured.Data.VMID != 101 || call.Structured.Data.Status != "stopped" {
		t.Errorf("tools/call proxmox_guest_status vmid=101: %v\n%s", err, out)
	}

	out, stderr, ok = inspect(t, d.URL, d.Key, "--method", "resources/list")
	if !ok {
		t.Fatalf("resources/list failed:\n%s", stderr)
	}
	var res struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	err := json.Unmarshal([]byte(out), &res)
	if err != nil || !slices.ContainsFunc(res.Resources, func(r struct {
		URI string `json:"uri"`
	}) bool {
		return r.URI == "proxmox://jobs"
	}) {
		t.Errorf("resources/list: no proxmox://jobs (%v)\n%s", err, out)
	}

	_, stderr, ok = inspect(t, d.URL, d.Key[:len(d.Key)-4]+"AAAA", "--method", "tools/list")
	if ok || !strings.Contains(stderr, keyNotAccepted) || !strings.Contains(stderr, takesAPIKeys) {
		t.Errorf("a wrong key: succeeded=%v, and the Inspector printed:\n%s\nwant %q and %q", ok, stderr, keyNotAccepted, takesAPIKeys)
	}
}

// mcpRemote finds Node and mcp-remote's bridge, or skips.
func mcpRemote(t *testing.T) (node, proxy string) {
	t.Helper()
	node = lookNode(t, 20)
	nm := nodeModules(t, "e2e/node", "mcp-remote")
	return node, filepath.Join(nm, "mcp-remote", "dist", "proxy.js")
}

// remoteEnv keeps mcp-remote's OAuth state (~/.mcp-auth) and lock files in
// the test's own directory.
func remoteEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{"HOME=" + dir, "MCP_REMOTE_CONFIG_DIR=" + filepath.Join(dir, ".mcp-auth")}
}

// TestMCPRemote: mcp-remote, started as Claude Desktop starts it (the URL
// and an Authorization header), bridges stdio to the daemon's HTTP
// endpoint: initialize, list the tools, call a read.
func TestMCPRemote(t *testing.T) {
	node, proxy := mcpRemote(t)
	d := startDemo(t, "operator")
	c, err := client.NewStdioMCPClient(node, remoteEnv(t), proxy, d.URL, "--header", "Authorization: Bearer "+d.Key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "claude-ai", Version: "0.1.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize through mcp-remote: %v", err)
	}
	if res.ServerInfo.Name != "proxmox-mcp" || res.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize: server %q, protocol %q; want proxmox-mcp, 2025-11-25", res.ServerInfo.Name, res.ProtocolVersion)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list through mcp-remote: %v", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl mcp.Tool) bool { return tl.Name == "proxmox_guest_status" }) {
		t.Errorf("tools/list through mcp-remote: no proxmox_guest_status among %d tools", len(tools.Tools))
	}
	call, out := callJSON(t, c, ctx, "proxmox_guest_status", map[string]any{"vmid": 101})
	data, _ := out["data"].(map[string]any)
	if call.IsError || data["vmid"] != float64(101) || data["status"] != "stopped" {
		t.Errorf("proxmox_guest_status vmid=101 through mcp-remote: %s", mcpText(call))
	}
}

// TestMCPRemoteWrongKey: with a wrong key the daemon answers 401;
// mcp-remote then tries OAuth, finds no discovery documents, registers a
// client at /register and prints what that answered before it exits. The
// person reads there that the server takes API keys and the key was not
// accepted (it read "the MCP endpoint is /mcp" before).
func TestMCPRemoteWrongKey(t *testing.T) {
	node, proxy := mcpRemote(t)
	d := startDemo(t, "operator")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, proxy, d.URL, "--header", "Authorization: Bearer "+d.Key[:len(d.Key)-4]+"AAAA")
	cmd.Env = append(environ(nil), remoteEnv(t)...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}}` + "\n")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("mcp-remote with a wrong key: %v (context %v), want it to exit with an error\n%s", err, ctx.Err(), stderr.String())
	}
	if !strings.Contains(stderr.String(), takesAPIKeys) || !strings.Contains(stderr.String(), "key that was not accepted") {
		t.Errorf("mcp-remote's stderr does not tell the person the key was not accepted:\n%s", stderr.String())
	}
	if strings.Contains(out.String(), `"result"`) {
		t.Errorf("mcp-remote answered initialize with a wrong key: %s", out.String())
	}
}
