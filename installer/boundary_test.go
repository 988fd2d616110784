package installer

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

// The service user (the daemon's uid) can write the state directory; these
// tests plant in it what a compromised daemon could, and check that the
// installer, run as root, acts on none of it. They need root, as on a
// host: the fake state directory really belongs to another uid (65534),
// which is what makes the kernel and the installer treat it as another
// user's. They skip otherwise, and fail under PMCP_REQUIRE_E2E.

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("PMCP_REQUIRE_E2E") != "" {
		t.Fatal("this test needs root (PMCP_REQUIRE_E2E is set): it models the installer in a directory the service user owns")
	}
	t.Skip("needs root: it models the installer in a directory the service user owns")
}

// giveStateDir really gives the fake state directory to uid 65534, as the
// directories step gives it to the service user on a host.
func (h *fakeHost) giveStateDir() {
	h.t.Helper()
	if err := os.Chown(h.hostPath("/var/lib/proxmox-mcp"), 65534, 65534); err != nil {
		h.t.Fatal(err)
	}
}

// The service user replaced keys.json with a link to /etc/passwd: the
// directories step, which gives keys.json back to the service user, must
// not chmod (or chown) the link's target. The old step chmodded through
// the link, and /etc/passwd became 0600.
func TestKeysFileLinkNotChmodded(t *testing.T) {
	needRoot(t)
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.giveStateDir()
	keysFile := h.hostPath("/var/lib/proxmox-mcp/keys.json")
	if err := os.Remove(keysFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.hostPath("/etc/passwd"), keysFile); err != nil {
		t.Fatal(err)
	}
	out, err := h.install(Options{})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("install with keys.json a link to /etc/passwd: %v, want a refusal naming the link\n%s", err, out)
	}
	fi, err := os.Stat(h.hostPath("/etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("/etc/passwd is %04o after install, want 0644", fi.Mode().Perm())
	}
	if uid, gid, _ := h.owners.Owner(fi); uid != 0 || gid != 0 {
		t.Errorf("/etc/passwd was given to %d:%d", uid, gid)
	}
}

// legacyState is where installs before this one kept install.json.
const legacyState = "/var/lib/proxmox-mcp/install.json"

// readState reads the install state install wrote.
func (h *fakeHost) readState() State {
	h.t.Helper()
	var st State
	if err := json.Unmarshal([]byte(h.read(InstallStateFile)), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

// toLegacy puts the install state where an older install kept it (in the
// state directory, root 0600), as st says, and removes the new one: the
// host as an older version left it, or as the daemon's user forged it.
func (h *fakeHost) toLegacy(st State) {
	h.t.Helper()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		h.t.Fatal(err)
	}
	h.write(legacyState, string(data)+"\n", 0o600)
	if err := os.RemoveAll(h.hostPath(InstallStateDir)); err != nil {
		h.t.Fatal(err)
	}
}

// victims are files and directories outside what install owns, the kind
// a forged install state names.
func (h *fakeHost) plantVictims() {
	h.write("/etc/shadow", "root:*:20000:0:99999:7:::\n", 0o640)
	h.write("/usr/sbin/important", "#!binary\n", 0o755)
	h.write("/srv/data/vm-100-disk-0.raw", "disk\n", 0o644)
}

func (h *fakeHost) checkVictims() {
	h.t.Helper()
	for _, p := range []string{"/etc/shadow", "/usr/sbin/important", "/srv/data/vm-100-disk-0.raw", "/etc/passwd", "/etc/group", APIDoc} {
		if !h.system().exists(p) {
			h.t.Errorf("%s was removed", p)
		}
	}
	for _, c := range h.cmds {
		if c == "userdel root" || c == "groupdel root" || strings.Contains(c, "root@pam") {
			h.t.Errorf("ran %q", c)
		}
	}
}

// forge is an install state naming, besides what install made, what a
// compromised daemon wants root to remove.
func forge(st State) State {
	c := &st.Created
	c.Files = append(c.Files, "/etc/shadow")
	c.Dirs = append(c.Dirs, "/srv/data", "/etc", "/")
	c.Units = append(c.Units, "/usr/sbin/important")
	c.Binary = "/usr/sbin/important"
	c.User, c.Group, c.PVEUser = "root", "root", "root@pam"
	st.Binary = "/usr/sbin/important"
	return st
}

// install.json used to live in the state directory, which the service
// user owns: a compromised daemon could rename a forged one over it, and
// `uninstall --purge` removed, as root, whatever it listed (/etc/shadow).
// A state found there is taken only where install could have made what it
// names; the purge removes install's own files and nothing else.
func TestPurgeIgnoresForgedLegacyState(t *testing.T) {
	needRoot(t)
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.giveStateDir()
	h.plantVictims()
	h.toLegacy(forge(h.readState()))
	h.takeCommands()
	out, err := h.uninstall(true)
	h.checkVictims()
	if err != nil {
		t.Fatalf("purge: %v\n%s", err, out)
	}
	if !strings.Contains(out, "so it is ignored") || !strings.Contains(out, `created.files "/etc/shadow"`) {
		t.Errorf("the purge did not say what it ignored:\n%s", out)
	}
	// What install made and the forged state still records goes (the
	// entries it overwrote are lost with it: the binary, the users).
	for _, p := range []string{ConfigDir, "/var/lib/proxmox-mcp", InitialKeyFile, InstallStateDir} {
		if h.system().exists(p) {
			t.Errorf("%s, which install made, is still there", p)
		}
	}
}

// The same forged state, owned by the service user (what a rename of its
// own file over install.json gives): it is refused outright, and the
// purge changes nothing.
func TestPurgeRefusesLegacyStateNotRoots(t *testing.T) {
	needRoot(t)
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.giveStateDir()
	h.plantVictims()
	h.toLegacy(forge(h.readState()))
	if err := h.chown(legacyState, 999, 999); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot()
	_, err := h.uninstall(true)
	if err == nil || !strings.Contains(err.Error(), "not root's alone") {
		t.Fatalf("purge with the daemon's install.json: %v", err)
	}
	if after := h.snapshot(); after != before {
		t.Errorf("the refused purge changed the host:\n%s", diffLines(before, after))
	}
}

// A re-install with a forged legacy state does not remove the "copied
// binary" it names (the old installer removed it as an earlier copy), and
// moves the state to its root-only place without the forged entries.
func TestReinstallIgnoresForgedLegacyState(t *testing.T) {
	needRoot(t)
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.giveStateDir()
	h.plantVictims()
	h.toLegacy(forge(h.readState()))
	out, err := h.install(Options{})
	if err != nil {
		t.Fatalf("re-install: %v\n%s", err, out)
	}
	h.checkVictims()
	if h.system().exists(legacyState) {
		t.Error("the old install.json is still in the state directory")
	}
	st := h.readState()
	if c := st.Created; slices.Contains(c.Files, "/etc/shadow") || slices.Contains(c.Dirs, "/etc") || c.User == "root" || c.Binary == "/usr/sbin/important" {
		t.Errorf("the forged entries reached the new install state: %+v", c)
	}
}

// An install.json an older install left in the state directory is moved
// to the root-only place by the next install, keeping what it recorded;
// doctor says it is still in the old place until then.
func TestLegacyStateMoves(t *testing.T) {
	needRoot(t)
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.giveStateDir()
	want := h.readState()
	h.toLegacy(want)
	if got := h.doctor().text(); !strings.Contains(got, "the install state is still in "+legacyState) {
		t.Errorf("doctor does not report the old place:\n%s", got)
	}
	out := h.mustInstall(Options{})
	if !strings.Contains(out, "moved the install state from "+legacyState+" to "+InstallStateFile) {
		t.Errorf("install did not say it moved the state:\n%s", out)
	}
	if h.system().exists(legacyState) {
		t.Error("the old install.json stayed")
	}
	got := h.readState()
	if !slices.Equal(got.Created.Dirs, want.Created.Dirs) || !slices.Equal(got.Created.Units, want.Created.Units) ||
		got.Created.User != want.Created.User || got.InitialKey != want.InitialKey || !got.FirstCompleted.Equal(want.FirstCompleted) {
		t.Errorf("the moved state lost what it recorded:\n got %+v\nwant %+v", got, want)
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor after the move:\n%s", rep.text())
	}
}

// Whatever an install state says, uninstall removes only install's own
// files and what is in its directories.
func TestOwns(t *testing.T) {
	p := &plan{stateDir: "/var/lib/proxmox-mcp", pkiDir: "/etc/proxmox-mcp/pki", configFile: ConfigFile}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/etc/proxmox-mcp", true},
		{"/etc/proxmox-mcp/config.hujson.bak-20260310T120000Z", true},
		{"/var/lib/proxmox-mcp", true},
		{"/var/lib/proxmox-mcp/keys.json", true},
		{InstallStateDir, true},
		{LocalBinary, true},
		{InitialKeyFile, true},
		{"/etc/systemd/system/proxmox-mcp.service", true},
		{sysusersPath, true},
		{"/etc/shadow", false},
		{"/etc/proxmox-mcp/../shadow", false},
		{"/etc/proxmox-mcp-other", false},
		{"/var/lib/proxmox-mcpx/keys.json", false},
		{"/etc/systemd/system/ssh.service", false},
		{"/usr/bin/proxmox-mcp", false}, // the package's
		{"/root", false},
		{"/", false},
		{"relative", false},
	} {
		if err := p.owns(tc.path); (err == nil) != tc.ok {
			t.Errorf("owns(%q) = %v, want ok=%v", tc.path, err, tc.ok)
		}
	}
	if err := (&plan{stateDir: "/", pkiDir: config.DefaultPKIDir}).owns("/etc/shadow"); err == nil {
		t.Error("a state directory of / made everything install's")
	}
}
