package installer

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

// Doctor on a healthy installation: every check passes.
func TestDoctorHealthy(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeBoth))
	h.takeCommands()
	rep := h.doctor()
	if !rep.OK || rep.Problems() != 0 || rep.Mode != ModeBoth {
		t.Fatalf("doctor:\n%s", rep.text())
	}
	golden(t, "doctor-healthy", rep.text())
	// Doctor only asks: pveversion, pveum ... list, systemctl is-*/show.
	for _, c := range h.takeCommands() {
		f := strings.Fields(c)
		ok := c == "pveversion" ||
			f[0] == "pveum" && slices.Contains(f, "list") ||
			f[0] == "systemctl" && (f[1] == "is-active" || f[1] == "is-enabled" || f[1] == "show")
		if !ok {
			t.Errorf("doctor ran %q, which may change something", c)
		}
	}
}

// Doctor on a broken installation names each problem with its fix, and a
// re-run of install fixes what it says install fixes.
func TestDoctorBroken(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLAN))
	s := h.system()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Files: a token secret others can read, keys.json given to root, an
	// edited unit, a missing CA copy, a readable server key.
	must(os.Chmod(h.hostPath(tokenFile("operator")), 0o644))
	must(h.chown("/var/lib/proxmox-mcp/keys.json", 0, 0))
	h.write("/etc/systemd/system/proxmox-mcp.service", h.read("/etc/systemd/system/proxmox-mcp.service")+"\n# edited\n", 0o644)
	must(os.Remove(h.hostPath(PVECAFile)))
	must(os.Chmod(h.hostPath("/etc/proxmox-mcp/pki/server-key.pem"), 0o644))
	// PVE: a token gone, a role narrowed, a token given more.
	delete(h.users[PVEUser].tokens, "admin")
	h.roles[OperatorRole] = "VM.PowerMgmt"
	h.acl = append(h.acl, pveACLEntry{Path: "/", RoleID: "Administrator", Type: "token", UGID: "proxmox-mcp@pve!read-only", Propagate: ptr(flexBool(true))})
	h.write("/etc/proxmox-mcp/tokens/root", "00000000-0000-4000-8000-999999999999\n", 0o600)
	// systemd: the service stopped, the timer disabled.
	h.active["proxmox-mcp.service"] = false
	h.enabled["proxmox-mcp-pki-renew.timer"] = false
	// Time: the LAN certificate is past two thirds of its life.
	h.now = h.now.Add(70 * 24 * time.Hour)

	rep := h.doctor()
	if rep.OK {
		t.Fatal("doctor found nothing")
	}
	text := rep.text()
	golden(t, "doctor-broken", redact(text))
	for _, want := range []string{
		"/etc/proxmox-mcp/tokens/operator is proxmox-mcp:proxmox-mcp 0644, want proxmox-mcp:proxmox-mcp 0600",
		"/var/lib/proxmox-mcp/keys.json is root:root 0600, want proxmox-mcp:proxmox-mcp 0600",
		"/etc/systemd/system/proxmox-mcp.service differs from what this binary renders",
		"/etc/proxmox-mcp/pve-root-ca.pem is missing",
		"/etc/proxmox-mcp/pki/server-key.pem is root:proxmox-mcp 0644, want root:proxmox-mcp 0640",
		"the PVE token proxmox-mcp@pve!admin does not exist",
		"the PVE role PMCPOperator has VM.PowerMgmt",
		"the token proxmox-mcp@pve!read-only holds [Administrator PVEAuditor] on /, want [PVEAuditor]",
		"/etc/proxmox-mcp/tokens/root does not hold the secret of proxmox-mcp@pve!root",
		"proxmox-mcp.service is inactive",
		"proxmox-mcp-pki-renew.timer is disabled, so the LAN certificate is not renewed",
		"the LAN server certificate is due for renewal",
		"the daemon cannot use what /etc/proxmox-mcp/config.hujson names: field \"pve.ca_file\"",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor does not say %q", want)
		}
	}
	// Every problem has a fix.
	for _, c := range rep.Checks {
		for _, p := range c.Problems {
			if p.Fix == "" {
				t.Errorf("%s: %q has no fix", c.Step, p.What)
			}
		}
	}
	// JSON is what --json prints.
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"ok":false`) || !strings.Contains(string(b), `"step":"pve-identity"`) {
		t.Errorf("json: %s %v", b, err)
	}

	// install fixes everything but the secret that matches no token,
	// which doctor says to remove first.
	must(os.Remove(h.hostPath(tokenFile("root"))))
	h.mustInstall(Options{})
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor after install:\n%s", rep.text())
	}
	_ = s
}

// Doctor where nothing is installed says so, once.
func TestDoctorNotInstalled(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	rep, err := Doctor(context.Background(), h.system())
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Checks) != 1 || !strings.Contains(rep.text(), "proxmox-mcp is not installed here") {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// A configuration whose listeners do not match the installed mode (an
// operator added a Tailnet node by hand: the units still deny it the
// network) is named with the install command that fixes it.
func TestDoctorModeMismatch(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	cfg := strings.Replace(h.read(ConfigFile), `"loopback": {"address": "127.0.0.1:8765"},`, `"loopback": {"address": "127.0.0.1:8765"}, "tailnet": {"hostname": "mcp"},`, 1)
	h.write(ConfigFile, cfg, 0o640)
	if text := h.doctor().text(); !strings.Contains(text, "amount to mode tailscale, but the units were installed for mode local") ||
		!strings.Contains(text, "fix: proxmox-mcp install --mode tailscale") {
		t.Errorf("doctor:\n%s", text)
	}
}

// A Tailnet node that waits for a login: install shows the URL from the
// file only root reads (the daemon writes it there, never in its status
// line), and doctor reports it until the login is done.
func TestTailnetLoginURL(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	const url = "https://login.tailscale.com/a/1a2b3c4d5e6f"
	loginFile := (&config.Config{StateDir: config.DefaultStateDir}).TailnetLoginURLFile()
	h.write(loginFile, url+"\n", 0o600)
	h.statusText = "ready; tailnet: needs a login: the login URL is in " + loginFile + " (root only; proxmox-mcp doctor shows it)"
	out := h.mustInstall(Options{Mode: ModeTailscale, TailscaleHostname: "pve1-mcp"})
	if !strings.Contains(out, "The Tailnet node needs a login: open "+url) {
		t.Errorf("output:\n%s", out)
	}
	if text := h.doctor().text(); !strings.Contains(text, "the Tailnet node waits for a login") || !strings.Contains(text, "open "+url) {
		t.Errorf("doctor:\n%s", text)
	}
	if cfg := h.read(ConfigFile); strings.Contains(cfg, "auth_key_file") || !strings.Contains(cfg, `"hostname": "pve1-mcp"`) {
		t.Errorf("config:\n%s", cfg)
	}
	// The daemon removes the file once the node runs.
	if err := os.Remove(h.hostPath(loginFile)); err != nil {
		t.Fatal(err)
	}
	h.statusText = "ready"
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor after login:\n%s", rep.text())
	}
}

// PVE's API schema gone: both the preflight and the configuration's check
// name it, and neither sends the operator to install, which does not put
// it back (it refuses to run without it): the fix is the package that
// ships it.
func TestDoctorSchemaMissing(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	data := h.read(APIDoc)
	if err := os.Remove(h.hostPath(APIDoc)); err != nil {
		t.Fatal(err)
	}
	rep := h.doctor()
	if rep.OK {
		t.Fatalf("doctor found nothing without %s", APIDoc)
	}
	var failing []string
	for _, c := range rep.Checks {
		for _, p := range c.Problems {
			failing = append(failing, c.Step)
			if !strings.Contains(p.What, APIDoc) || !strings.HasPrefix(p.Fix, "apt install --reinstall pve-docs") {
				t.Errorf("%s: %q, fix %q: want the schema named and pve-docs reinstalled", c.Step, p.What, p.Fix)
			}
		}
	}
	if !slices.Equal(failing, []string{"preflight", "validate"}) {
		t.Errorf("problems in %v, want preflight and validate:\n%s", failing, rep.text())
	}
	h.write(APIDoc, data, 0o644)
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor with the schema back:\n%s", rep.text())
	}
}
