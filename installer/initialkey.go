package installer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// The first root key goes to a file only root can read, never to the
// terminal or a log: the summary points at the file.

// InitialKey is the content of /root/proxmox-mcp-initial-key.json.
type InitialKey struct {
	Comment   string    `json:"comment"`
	Key       string    `json:"key"`
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Profile   string    `json:"profile"`
	Created   time.Time `json:"created"`
	Endpoints Endpoints `json:"endpoints"`
	// MCPClient is a client configuration (Cursor's mcp.json, Claude
	// Code's .mcp.json) with the key in its Authorization header.
	MCPClient MCPClientConfig `json:"mcp_client_config"`
}

// Endpoints are where MCP clients reach the daemon.
type Endpoints struct {
	Loopback string   `json:"loopback"`
	LAN      []string `json:"lan,omitempty"`
	Tailnet  string   `json:"tailnet,omitempty"`
}

// endpoints lists the URLs of the plan's listeners.
func (r *run) endpoints() Endpoints {
	p := r.plan
	e := Endpoints{Loopback: "http://" + p.loopback + "/mcp"}
	if p.mode.LAN() {
		ap, err := netip.ParseAddrPort(p.lanAddress)
		if err == nil {
			port := strconv.Itoa(int(ap.Port()))
			for _, n := range p.lanNames {
				e.LAN = append(e.LAN, "https://"+net.JoinHostPort(n, port)+"/mcp")
			}
			e.LAN = append(e.LAN, "https://"+net.JoinHostPort(p.hostname, port)+"/mcp", "https://"+p.lanAddress+"/mcp")
		}
	}
	if p.mode.Tailnet() {
		e.Tailnet = "https://" + p.tsHostname + ".<your tailnet>.ts.net/mcp (http://" + p.tsHostname + "/mcp when the tailnet has no HTTPS certificates)"
	}
	return e
}

// clientURL is the URL a client on another machine uses: the LAN name,
// else the Tailnet name, else loopback.
func (r *run) clientURL() string {
	e := r.endpoints()
	switch {
	case len(e.LAN) > 0:
		return e.LAN[0]
	case e.Tailnet != "":
		return "https://" + r.plan.tsHostname + ".<your tailnet>.ts.net/mcp"
	}
	return e.Loopback
}

// MCPClientConfig is an MCP client's server list (the mcpServers file
// Cursor, Claude Code and others read).
type MCPClientConfig struct {
	MCPServers map[string]MCPServer `json:"mcpServers"`
}

// MCPServer is one Streamable HTTP server with its headers.
type MCPServer struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// mcpClient is a client configuration with an Authorization header.
func mcpClient(url, auth string) MCPClientConfig {
	return MCPClientConfig{MCPServers: map[string]MCPServer{"proxmox": {URL: url, Headers: map[string]string{"Authorization": auth}}}}
}

// indentJSON is v as indented JSON without HTML escaping.
func indentJSON(v any, prefix string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// openKeys is the key store; the initial key is made in root's copy of
// the keys (package authority), which the root helper trusts, and
// mirrored into the state directory.
func (r *run) openKeys() (*keys.Store, error) {
	stateDir := r.sys.path(r.plan.stateDir)
	return keys.Open(stateDir, keys.Options{Rand: r.sys.Rand, Now: r.sys.Now, Params: r.sys.KeyParams, Logger: r.sys.logger(),
		Shared: authority.New(stateDir, r.sys.logger(), r.sys.Now)})
}

func applyInitialKey(ctx context.Context, r *run) error {
	if id := r.state.InitialKey; id != "" {
		r.say("  an earlier install made the first root key (id %s); no new one (more keys: proxmox-mcp key create)", id)
		return nil
	}
	store, err := r.openKeys()
	if err != nil {
		return err
	}
	// A key made by a run that failed before recording it: kept when its
	// file is there, else revoked, since its secret is lost.
	if rec, err := store.Get(InitialKeyName); err == nil {
		var f InitialKey
		data, rerr := r.sys.readFile(InitialKeyFile)
		if rerr == nil && json.Unmarshal(data, &f) == nil && f.ID == rec.ID {
			r.state.InitialKey = rec.ID
			r.say("  the first root key (id %s) is in %s", rec.ID, InitialKeyFile)
			return r.persist()
		}
		if _, err := store.Revoke(ctx, rec.ID); err != nil {
			return err
		}
		r.say("  revoked the key %s (id %s): an interrupted install made it, and its file is gone", InitialKeyName, rec.ID)
	}
	k, err := store.Create(ctx, keys.CreateRequest{Name: InitialKeyName, Binding: keys.Binding{Profile: "root"}})
	if err != nil {
		return err
	}
	// keys.json belongs to the daemon's user, as `proxmox-mcp key` keeps it.
	for _, name := range []string{keys.FileName, "keys.lock"} {
		if _, err := r.sys.ensureAttrs(filepath.Join(r.plan.stateDir, name), 0o600, svcOwner); err != nil {
			return err
		}
	}
	e := r.endpoints()
	f := InitialKey{
		Comment: fmt.Sprintf("The first root key of proxmox-mcp on %s. It can do everything: keep it secret, move it to a password manager, "+
			"and delete this file. Make narrower keys with `proxmox-mcp key create`; revoke this one with `proxmox-mcp key revoke %s`.", r.plan.hostname, InitialKeyName),
		Key: k.Key.Reveal(), ID: k.Record.ID, Name: k.Record.Name, Profile: k.Record.Profile, Created: k.Record.Created,
		Endpoints: e, MCPClient: mcpClient(r.clientURL(), "Bearer "+k.Key.Reveal()),
	}
	data := indentJSON(f, "")
	if !r.sys.exists("/root") {
		if _, err := r.sys.ensureDir("/root", 0o700, rootOwner); err != nil {
			return err
		}
	}
	if _, err := r.sys.writeFile(InitialKeyFile, append(data, '\n'), 0o600, rootOwner); err != nil {
		return fmt.Errorf("the key %s (id %s) was made but its file could not be written (%w); re-run install: it revokes that key and makes another",
			InitialKeyName, k.Record.ID, err)
	}
	if err := r.createdFile(InitialKeyFile); err != nil {
		return err
	}
	r.state.InitialKey = k.Record.ID
	r.initialCreated = true
	r.say("  made the key %s (id %s, profile root); it is in %s (root 0600), and nowhere else", InitialKeyName, k.Record.ID, InitialKeyFile)
	return r.persist()
}

func checkInitialKey(_ context.Context, r *run) []Problem {
	if !r.sys.exists(InitialKeyFile) {
		return nil // moved to a password manager, as it says
	}
	return r.sys.checkAttrs(InitialKeyFile, false, 0o600, rootOwner, "chmod 0600 "+InitialKeyFile+" (better: move the key to a password manager and delete the file)")
}
