package installer

import (
	"path/filepath"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/pki"
)

// summary tells the operator what runs where and what to do next. It
// never contains a key: it points at the file that has it.
func (r *run) summary() {
	p := r.plan
	e := r.endpoints()
	r.say("")
	r.say("proxmox-mcp is installed and running on %s (mode %s).", p.hostname, p.mode)
	r.say("")
	r.say("Endpoints (MCP over Streamable HTTP, Authorization: Bearer <key>):")
	r.say("  loopback  %s", e.Loopback)
	for _, u := range e.LAN {
		r.say("  LAN       %s", u)
	}
	if e.Tailnet != "" {
		r.say("  Tailnet   %s", e.Tailnet)
		switch {
		case r.loginURL != "":
			r.say("")
			r.say("The Tailnet node needs a login: open %s", r.loginURL)
			r.say("and add it to your tailnet (or re-run install with --tailscale-authkey-file).")
		case p.existing != nil && p.existing.Listen.Tailnet != nil && p.existing.Listen.Tailnet.AuthKeyFile == "":
			r.say("")
			r.say("The Tailnet node needs a login: its URL appears in the daemon's status and log:")
			r.say("  systemctl status proxmox-mcp   (or: journalctl -u proxmox-mcp | grep -i 'login')")
		}
	}
	if p.mode.LAN() && r.caFingerprint != "" {
		host := p.hostname
		caPath := filepath.Join(p.pkiDir, pki.CAFile)
		r.say("")
		r.say("LAN clients must trust the local CA once (SHA-256 %s):", r.caFingerprint)
		url := ""
		if len(e.LAN) > 0 {
			url = strings.TrimSuffix(e.LAN[0], "/mcp")
		}
		for _, st := range pki.TrustSteps(pki.TrustFor{Host: host, CAPath: caPath, Fingerprint: r.caFingerprint, URL: url}) {
			r.say("  %s:", st.For)
			for _, c := range st.Commands {
				r.say("    %s", c)
			}
		}
		r.say("  (proxmox-mcp pki show prints these again)")
	}
	r.say("")
	if r.initialCreated {
		r.say("The first key (profile root) is in %s, readable by root only. It is shown", InitialKeyFile)
		r.say("nowhere else: move it to a password manager and delete the file.")
	} else if r.state != nil && r.state.InitialKey != "" {
		r.say("The first root key (id %s) was made by an earlier install.", r.state.InitialKey)
	}
	r.say("")
	r.say("An MCP client configuration (Cursor ~/.cursor/mcp.json, Claude Code .mcp.json):")
	r.say("  %s", indentJSON(mcpClient(r.clientURL(), "Bearer <the key in "+InitialKeyFile+">"), "  "))
	r.say("")
	r.say("More keys, one per person or agent, each with the narrowest profile that does the job:")
	r.say("  proxmox-mcp key create --name alice --profile read-only")
	r.say("  proxmox-mcp key create --name ci-agent --profile operator --expires 90d")
	r.say("")
	r.say("Writes are off: set \"allow_mutations\": true in %s, then systemctl reload proxmox-mcp.", p.configFile)
	r.say("Check the installation at any time with: proxmox-mcp doctor")
}
