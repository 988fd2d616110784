package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// One configuration runs loopback, LAN TLS and the Tailnet listener
// together (the installer's "both" mode): the same key works on each, the
// journal names each transport, and the status line lists all three.
func TestAllListenersTogether(t *testing.T) {
	t.Parallel()
	lan := config.LAN{Address: "10.77.0.1:8443", Names: []string{lanName}}
	pkiDir := filepath.Join(t.TempDir(), "pki")
	hostname, _ := os.Hostname()
	names, err := pki.NamesFor([]config.LAN{lan}, hostname)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pki.New(pki.Options{Dir: pkiDir, Hostname: hostname, KeyGroup: pki.OwnerOnly})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Init(context.Background(), names, false)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(res.CA)

	lc := &recordedLifecycle{}
	tr := newTailnetRig(t, tailnetOptions{lifecycle: lc, lanOnLoopback: true, edit: func(cfg map[string]any) {
		cfg["pki"] = map[string]any{"dir": pkiDir}
		cfg["listen"].(map[string]any)["lan"] = []any{map[string]any{"address": lan.Address, "names": lan.Names}}
	}})
	addrs := tr.d.Addresses()
	for _, name := range []string{"loopback", "lan", "tailnet"} {
		if addrs[name] == "" {
			t.Fatalf("no %s listener: %v", name, addrs)
		}
	}
	key := tr.key("read-only")

	// Loopback.
	c, ctx := tr.client(key)
	if res, _ := callTool(t, c, ctx, tools.ToolCall, statusArgs); res.IsError {
		t.Fatalf("loopback: %s", resultText(res))
	}
	// LAN TLS, by its name.
	_, port, _ := net.SplitHostPort(addrs["lan"])
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addrs["lan"])
		},
	}}
	lc2, lanCtx := connectMCP(t, "https://"+lanName+":"+port+"/mcp", key, hc, "LAN TLS")
	if res, _ := callTool(t, lc2, lanCtx, tools.ToolCall, statusArgs); res.IsError {
		t.Fatalf("lan: %s", resultText(res))
	}
	// The Tailnet, from another node.
	laptop := startTailnetClient(t, tr.control, "laptop")
	tc, tctx := tr.mcpClient(t, laptop, key)
	if res, _ := callTool(t, tc, tctx, tools.ToolCall, statusArgs); res.IsError {
		t.Fatalf("tailnet: %s", resultText(res))
	}

	events, err := tr.d.jrnl.Tail(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range events {
		if ev.Kind == journal.KindCall && ev.PathTemplate == "/nodes/{node}/qemu/{vmid}/status/current" {
			seen[ev.Principal.Transport] = true
		}
	}
	if !seen["loopback"] || !seen["lan"] || !seen["tailnet"] {
		t.Errorf("journalled transports %v", seen)
	}
	status := tr.d.StatusLine()
	for _, want := range []string{"lan 127.0.0.1:", "loopback 127.0.0.1:", "tailnet 100."} {
		if !strings.Contains(status, want) {
			t.Errorf("status %q lacks %q", status, want)
		}
	}
}
