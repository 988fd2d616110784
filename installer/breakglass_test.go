package installer

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// The key is where the break-glass service reads it.
func TestSigningKeyPath(t *testing.T) {
	want := host.BreakglassDir("/var/lib/proxmox-mcp") + "/" + breakglass.KeyFile
	if got := signingKeyPath("/var/lib/proxmox-mcp"); got != want {
		t.Errorf("signingKeyPath = %s, want %s", got, want)
	}
}

// Install makes the break-glass directories and the signing key once,
// enables the runner's path unit, and keeps the key on every later run;
// doctor finds a missing or exposed key and a path unit that no longer
// watches, and install repairs what it can.
func TestBreakglassKeyAndPathUnit(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	out := h.mustInstall(freshOptions(h, ModeLocal))
	key := signingKeyPath("/var/lib/proxmox-mcp")
	if !strings.Contains(out, "created the break-glass signing key "+key) {
		t.Errorf("install does not say it made the key:\n%s", out)
	}
	if _, err := pki.ReadSigningKey(h.hostPath(key)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{host.HelperDir("/var/lib/proxmox-mcp"), host.BreakglassDir("/var/lib/proxmox-mcp")} {
		fi, err := os.Stat(h.hostPath(d))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, mode %v, want 0700", d, err, fi.Mode())
		}
	}
	if !h.enabled[systemd.BreakglassPath] || !h.active[systemd.BreakglassPath] {
		t.Errorf("%s is not enabled and started", systemd.BreakglassPath)
	}
	if h.enabled[systemd.BreakglassService] {
		t.Errorf("%s is enabled: its path unit starts it", systemd.BreakglassService)
	}
	if rep := h.doctor(); !rep.OK {
		t.Fatalf("doctor:\n%s", rep.text())
	}
	first := h.read(key)

	// Again: the key stays (a new one would void what was signed).
	out = h.mustInstall(Options{})
	if h.read(key) != first || !strings.Contains(out, "kept the break-glass signing key "+key) {
		t.Errorf("a second install did not keep the key:\n%s", out)
	}

	// The path unit failed (its runner failed too often): doctor says so,
	// install starts it again.
	h.active[systemd.BreakglassPath] = false
	if text := h.doctor().text(); !strings.Contains(text, systemd.BreakglassPath+" is inactive: it no longer watches the break-glass queue") ||
		!strings.Contains(text, "systemctl restart "+systemd.BreakglassPath) {
		t.Errorf("doctor with the path unit stopped:\n%s", text)
	}
	h.enabled[systemd.BreakglassPath] = false
	if text := h.doctor().text(); !strings.Contains(text, systemd.BreakglassPath+" is disabled, so no approved break-glass request is run") ||
		!strings.Contains(text, "systemctl enable --now "+systemd.BreakglassPath) {
		t.Errorf("doctor with the path unit disabled:\n%s", text)
	}
	h.mustInstall(Options{})
	if !h.enabled[systemd.BreakglassPath] || !h.active[systemd.BreakglassPath] {
		t.Errorf("install did not enable and start %s again", systemd.BreakglassPath)
	}

	// A key others can read is refused by doctor and by install, which
	// neither widens nor silently replaces it.
	if err := os.Chmod(h.hostPath(key), 0o644); err != nil {
		t.Fatal(err)
	}
	if text := h.doctor().text(); !strings.Contains(text, key+" is root:root 0644, want root:root 0600") {
		t.Errorf("doctor with the key 0644:\n%s", text)
	}
	out, err := h.install(Options{})
	if err == nil || !strings.Contains(err.Error(), "the break-glass signing key "+key) || !strings.Contains(err.Error(), "breakglass rotate-key") {
		t.Errorf("install with the key 0644: %v\n%s", err, out)
	}
	if h.read(key) != first {
		t.Error("install replaced the key")
	}

	// A key that is no key: doctor and install say to make a new one.
	h.write(key, "not a key\n", 0o600)
	if text := h.doctor().text(); !strings.Contains(text, "holds no PEM private key") || !strings.Contains(text, "proxmox-mcp breakglass rotate-key") {
		t.Errorf("doctor with a broken key:\n%s", text)
	}
	if _, err := h.install(Options{}); err == nil || !strings.Contains(err.Error(), "breakglass rotate-key") {
		t.Errorf("install with a broken key: %v", err)
	}

	// A key gone: doctor says so, install makes a new one.
	if err := os.Remove(h.hostPath(key)); err != nil {
		t.Fatal(err)
	}
	if text := h.doctor().text(); !strings.Contains(text, "there is no break-glass signing key "+key) {
		t.Errorf("doctor without the key:\n%s", text)
	}
	out = h.mustInstall(Options{})
	if !strings.Contains(out, "created the break-glass signing key "+key) || h.read(key) == first {
		t.Errorf("install did not make a new key:\n%s", out)
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// The runner's service writes what the configuration protects: its paths,
// and with LVs (vg/lv, not PVE volume ids) what lvremove needs.
func TestBreakglassUnitsFromConfig(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	svcPath := "/etc/systemd/system/" + systemd.BreakglassService
	if svc := h.read(svcPath); strings.Contains(svc, "\nReadWritePaths=") || strings.Contains(svc, "CAP_SYS_ADMIN") {
		t.Fatalf("without a protected repository the runner writes something:\n%s", svc)
	}
	cfg := h.read(ConfigFile)
	edited := strings.Replace(cfg, "\t\"log\": {\"level\": \"info\"},\n",
		"\t\"log\": {\"level\": \"info\"},\n\t\"protected\": {\"paths\": [\"/srv/models\", \"/var/lib/vz/models\"], \"volumes\": [\"pve/models\", \"local-lvm:vm-100-disk-0\"]},\n", 1)
	if edited == cfg {
		t.Fatalf("no log line in the configuration:\n%s", cfg)
	}
	h.write(ConfigFile, edited, 0o640)

	out := h.mustInstall(Options{})
	if !strings.Contains(out, "updated "+svcPath) {
		t.Errorf("install did not render the runner's service again:\n%s", out)
	}
	if h.read(ConfigFile) != edited {
		t.Error("install changed the edited configuration")
	}
	svc := strings.Split(h.read(svcPath), "\n")
	for _, want := range []string{
		"ReadWritePaths=-/srv/models -/var/lib/vz/models",
		"ReadWritePaths=-/run/lvm -/run/lock/lvm -/etc/lvm/archive -/etc/lvm/backup",
		"CapabilityBoundingSet=CAP_CHOWN CAP_FOWNER CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_SYS_ADMIN",
		"PrivateDevices=no",
	} {
		if !slices.Contains(svc, want) {
			t.Errorf("the runner's service lacks %q:\n%s", want, strings.Join(svc, "\n"))
		}
	}
	if strings.Contains(strings.Join(svc, "\n"), "local-lvm") {
		t.Error("a PVE volume id reached the unit")
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}
