package installer

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// Re-running install is an upgrade: a new binary is copied, the units are
// rendered again and the daemon restarted (not enabled --now); tokens,
// keys, the configuration and the initial key are kept, nothing is
// created twice.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLAN))
	h.takeCommands()
	config := h.read(ConfigFile)
	keyFile := h.read(InitialKeyFile)
	keysJSON := h.read("/var/lib/proxmox-mcp/keys.json")
	secrets := map[string]string{}
	for _, tr := range TierRoles() {
		secrets[tr.Tier] = h.read(tokenFile(tr.Tier))
	}
	h.write("/tmp/proxmox-mcp", "#!proxmox-mcp test binary v2\n", 0o755)
	h.now = h.now.Add(24 * 60 * 60e9)

	out := h.mustInstall(Options{Version: "1.1.0-test"}) // no mode: the installed one
	cmds := strings.Join(h.cmds, "\n")
	golden(t, "upgrade", h.transcript("proxmox-mcp install (upgrade, mode lan)", out, InstallStateFile))
	for _, want := range []string{"systemctl restart proxmox-mcp.service", "systemctl enable proxmox-mcp.service"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("no %q", want)
		}
	}
	for _, never := range []string{"token add", "token remove", "user add", "role add", "acl modify", "enable --now proxmox-mcp.service", "systemd-sysusers"} {
		if strings.Contains(cmds, never) {
			t.Errorf("an upgrade ran %q", never)
		}
	}
	if h.read(ConfigFile) != config || h.read(InitialKeyFile) != keyFile || h.read("/var/lib/proxmox-mcp/keys.json") != keysJSON {
		t.Error("the configuration, the initial key or keys.json changed")
	}
	for tier, s := range secrets {
		if h.read(tokenFile(tier)) != s {
			t.Errorf("the %s token's secret changed", tier)
		}
	}
	if h.read(LocalBinary) != "#!proxmox-mcp test binary v2\n" {
		t.Error("the new binary was not copied")
	}
	if backups, _ := os.ReadDir(h.hostPath(ConfigDir)); slices.ContainsFunc(backups, func(e os.DirEntry) bool { return strings.Contains(e.Name(), ".bak-") }) {
		t.Error("an unchanged configuration was backed up")
	}
}

// A token whose secret file is gone is removed and created again (PVE
// shows a secret only once); the others are kept.
func TestUpgradeRecreatesTokenWithoutSecret(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	old := h.read(tokenFile("operator"))
	if err := os.Remove(h.hostPath(tokenFile("operator"))); err != nil {
		t.Fatal(err)
	}
	rep := h.doctor()
	if !strings.Contains(rep.text(), "the secret of proxmox-mcp@pve!operator (/etc/proxmox-mcp/tokens/operator) is missing or empty") {
		t.Errorf("doctor:\n%s", rep.text())
	}
	h.takeCommands()
	out := h.mustInstall(Options{})
	if !strings.Contains(out, "removed the token proxmox-mcp@pve!operator: its secret file /etc/proxmox-mcp/tokens/operator is gone, and PVE shows a secret only once; creating it again") {
		t.Errorf("output:\n%s", out)
	}
	if n := h.count("pveum user token add"); n != 1 {
		t.Errorf("%d token adds, want 1", n)
	}
	if s := h.read(tokenFile("operator")); s == old || !strings.Contains(h.read(pveTokenStore), "proxmox-mcp@pve!operator "+strings.TrimSpace(s)) {
		t.Error("the new secret is not the new token's")
	}
	// Its ACL came back: the fake, like PVE, keeps a removed token's ACLs,
	// and install makes sure of them either way.
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// A token that is not privilege-separated (made by hand) is replaced.
func TestUpgradeReplacesUnseparatedToken(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.users[PVEUser].tokens["admin"] = false
	if !strings.Contains(h.doctor().text(), "proxmox-mcp@pve!admin is not privilege-separated") {
		t.Error("doctor does not see it")
	}
	out := h.mustInstall(Options{})
	if !strings.Contains(out, "it is not privilege-separated, so it would have all of proxmox-mcp@pve's privileges") || !h.users[PVEUser].tokens["admin"] {
		t.Errorf("not replaced:\n%s", out)
	}
}

// Changing the mode rewrites only the listeners, keeping the operator's
// edits and comments, backing the old file up and saying what changed;
// the renewal timer comes and goes with the LAN listener.
func TestModeChange(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	edited := strings.Replace(h.read(ConfigFile), `"allow_mutations": false,`, `"allow_mutations": true, // turned on by alice`, 1)
	h.write(ConfigFile, edited, 0o640)
	h.takeCommands()

	out := h.mustInstall(Options{Mode: ModeLAN, LANAddress: "10.1.2.3:9443", LANNames: []string{"mcp.example.lan"}})
	golden(t, "mode-local-to-lan", h.transcript("proxmox-mcp install --mode lan (from local)", out, ConfigFile))
	cfg := h.read(ConfigFile)
	if !strings.Contains(cfg, `"allow_mutations": true, // turned on by alice`) || !strings.Contains(cfg, "// A fresh install only reads.") {
		t.Error("the operator's edit or a comment was lost")
	}
	backup := ConfigFile + ".bak-20260310T120000Z"
	if got := h.read(backup); got != edited {
		t.Errorf("the backup is not the old configuration:\n%s", got)
	}
	if !h.system().exists("/etc/systemd/system/proxmox-mcp-pki-renew.timer") || !h.enabled["proxmox-mcp-pki-renew.timer"] {
		t.Error("no renewal timer")
	}

	h.now = h.now.Add(3600e9)
	out = h.mustInstall(Options{Mode: ModeLocal})
	golden(t, "mode-lan-to-local", h.transcript("proxmox-mcp install --mode local (from lan)", out, ConfigFile))
	if h.system().exists("/etc/systemd/system/proxmox-mcp-pki-renew.timer") || h.enabled["proxmox-mcp-pki-renew.timer"] {
		t.Error("the renewal timer stayed")
	}
	if strings.Contains(h.read(ConfigFile), `"lan"`) {
		t.Error("listen.lan stayed")
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// A failure midway is recorded with its step; the state stays consistent
// (the token made before the failure is kept, its secret on disk) and a
// re-run resumes without making anything twice.
func TestFailureAndResume(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.failNext("pveum user token add proxmox-mcp@pve operator", 1, 255, "generating token failed: unable to open file '/etc/pve/priv/token.cfg.tmp.1234' - Permission denied\n")
	out, err := h.install(freshOptions(h, ModeLocal))
	var se *StepError
	if !errors.As(err, &se) || se.Step != "pve-identity" {
		t.Fatalf("error %v, want a pve-identity StepError", err)
	}
	for _, want := range []string{"step pve-identity failed: pveum user token add proxmox-mcp@pve operator", "exit status 255: generating token failed",
		"steps done: preflight, user, directories, binary, pve-trust", "re-run `proxmox-mcp install` to resume"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	var st State
	if err := json.Unmarshal([]byte(h.read(InstallStateFile)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Failed == nil || st.Failed.Step != "pve-identity" || !strings.Contains(st.Failed.Error, "generating token failed") || !st.Completed.IsZero() {
		t.Errorf("install.json: %+v", st)
	}
	if !strings.Contains(h.doctor().text(), "the last install failed at step pve-identity") {
		t.Error("doctor does not report the failed step")
	}
	first := h.transcript("proxmox-mcp install --mode local (pveum token add fails)", out+"\n## error\n"+err.Error()+"\n", InstallStateFile)

	out = h.mustInstall(Options{})
	golden(t, "fail-resume", first+"\n"+h.transcript("proxmox-mcp install (resume)", out, InstallStateFile))
	if n := len(h.users[PVEUser].tokens); n != 4 {
		t.Errorf("%d tokens, want 4", n)
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// The daemon not starting shows its log; after the cause is fixed, a
// re-run starts it and makes the first key once.
func TestServiceStartFailure(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.failNext("systemctl enable --now proxmox-mcp.service", 1, 1,
		"Job for proxmox-mcp.service failed because the control process exited with error code.\nSee \"systemctl status proxmox-mcp.service\" and \"journalctl -xeu proxmox-mcp.service\" for details.\n")
	out, err := h.install(freshOptions(h, ModeLocal))
	var se *StepError
	if !errors.As(err, &se) || se.Step != "service" {
		t.Fatalf("error %v, want a service StepError", err)
	}
	if !strings.Contains(out, "journalctl -u proxmox-mcp.service -n 50 --no-pager") || !strings.Contains(out, `msg="daemon: start failed"`) {
		t.Errorf("the daemon's log is not shown:\n%s", out)
	}
	if h.system().exists(InitialKeyFile) {
		t.Error("the key was made although the daemon did not start")
	}
	h.takeCommands()
	out = h.mustInstall(Options{})
	if !strings.Contains(strings.Join(h.cmds, "\n"), "systemctl enable --now proxmox-mcp.service") {
		t.Error("a resumed first install does not enable --now")
	}
	if !strings.Contains(out, "made the key initial-root") {
		t.Errorf("no key:\n%s", out)
	}
}

// An interrupted run that made the initial key but not its file: the key
// is revoked (its secret is lost) and another made.
func TestInitialKeyWithoutFile(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	var st State
	if err := json.Unmarshal([]byte(h.read(InstallStateFile)), &st); err != nil {
		t.Fatal(err)
	}
	st.InitialKey = ""
	data, _ := json.Marshal(st)
	h.write(InstallStateFile, string(data), 0o600)
	if err := os.Remove(h.hostPath(InitialKeyFile)); err != nil {
		t.Fatal(err)
	}
	out := h.mustInstall(Options{})
	if !strings.Contains(out, "revoked the key initial-root") || !strings.Contains(out, "made the key initial-root") {
		t.Errorf("output:\n%s", out)
	}
	if !h.system().exists(InitialKeyFile) {
		t.Error("no key file")
	}
}

// pveproxy with a custom certificate: its fingerprint is pinned; after a
// renewal doctor says so, and a re-run pins the new one.
func TestCustomCertificatePinned(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	certPEM, cert, _ := selfSigned(t, "pve1.example.com", false, nil, nil)
	h.write(pveProxyCert, string(certPEM), 0o640)
	out := h.mustInstall(freshOptions(h, ModeLocal))
	if !strings.Contains(h.read(ConfigFile), `"fingerprint": "`+fingerprint(cert)+`"`) || !strings.Contains(out, "pinned its SHA-256") {
		t.Fatalf("not pinned:\n%s", h.read(ConfigFile))
	}
	renewed, cert2, _ := selfSigned(t, "pve1.example.com", false, nil, nil)
	h.write(pveProxyCert, string(renewed), 0o640)
	if !strings.Contains(h.doctor().text(), "pveproxy's certificate changed (renewed?)") {
		t.Errorf("doctor:\n%s", h.doctor().text())
	}
	out = h.mustInstall(Options{})
	if !strings.Contains(out, "pve.fingerprint: \""+fingerprint(cert)+"\" -> \""+fingerprint(cert2)+"\"") {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(strings.Join(h.cmds, "\n"), "systemctl restart proxmox-mcp.service") {
		t.Error("the daemon was not restarted to use the new pin")
	}
	// The custom certificate removed again: the pin goes, ca_file stays.
	if err := os.Remove(h.hostPath(pveProxyCert)); err != nil {
		t.Fatal(err)
	}
	out = h.mustInstall(Options{})
	if strings.Contains(h.read(ConfigFile), `"fingerprint":`) || !strings.Contains(out, "pve.fingerprint: ") {
		t.Errorf("the pin stayed:\n%s", out)
	}
}

// An existing configuration that is not valid stops install before it
// changes anything.
func TestInvalidExistingConfig(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.write(ConfigFile, `{"version": 1, "tools": {"mode": "all"}}`, 0o640)
	before := h.snapshot()
	_, err := h.install(Options{Mode: ModeLocal})
	if err == nil || !strings.Contains(err.Error(), `field "tools.mode": "all" is not compact, expanded or search`) || !strings.Contains(err.Error(), "install leaves everything alone") {
		t.Fatalf("error %v", err)
	}
	if h.snapshot() != before || len(h.takeCommands()) > 0 {
		t.Error("something changed")
	}
}

// A configuration written by hand (the manual setup of
// docs/configuration.md) is taken over: install's fields are set, the
// rest kept.
func TestTakeOverHandWrittenConfig(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mkdir(ConfigDir, 0o755)
	h.write(ConfigFile, `// pve1, by hand
{
  "version": 1,
  "tools": {"mode": "expanded"}, // we like it
  "pve": {"cert_file": "/etc/pve/local/pve-ssl.pem", "tokens": {"root": {"id": "mcp@pve!root", "secret_file": "/etc/mcp/root"}}},
  "protected": {"paths": ["/srv/models"]},
}
`, 0o644)
	out := h.mustInstall(Options{})
	cfg := h.read(ConfigFile)
	for _, want := range []string{`"mode": "expanded"`, "// we like it", `"/srv/models"`, `"ca_file": "/etc/proxmox-mcp/pve-root-ca.pem"`, `"proxmox-mcp@pve!operator"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("configuration lacks %s:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "cert_file") || !strings.Contains(out, "pve.cert_file: \"/etc/pve/local/pve-ssl.pem\" removed (the daemon's user cannot read /etc/pve") {
		t.Errorf("cert_file:\n%s\n%s", cfg, out)
	}
	var st State
	_ = json.Unmarshal([]byte(h.read(InstallStateFile)), &st)
	if slices.Contains(st.Created.Dirs, ConfigDir) || slices.Contains(st.Created.Files, ConfigFile) {
		t.Error("install claims the configuration it found")
	}
	if !slices.Contains(st.Created.Files, ConfigFile+".bak-20260310T120000Z") {
		t.Errorf("the backup is not recorded: %+v", st.Created)
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
	// Purge leaves what install found.
	if _, err := h.uninstall(true); err != nil {
		t.Fatal(err)
	}
	if h.read(ConfigFile) != cfg {
		t.Error("purge removed the configuration install found")
	}
}

// uninstall stops, disables and removes the units, the sysusers entry and
// the copied binary, and keeps the configuration, the state, the PVE
// identity and the system user; run again, it finds nothing to do.
func TestUninstall(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLAN))
	h.takeCommands()
	out, err := h.uninstall(false)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "uninstall", h.transcript("proxmox-mcp uninstall", out, InstallStateFile))
	if h.active["proxmox-mcp.service"] || h.enabled["proxmox-mcp.service"] || h.enabled["proxmox-mcp-pki-renew.timer"] {
		t.Error("a unit is still enabled or running")
	}
	for _, kept := range []string{ConfigFile, tokenFile("root"), "/var/lib/proxmox-mcp/keys.json", InitialKeyFile, signingKeyPath("/var/lib/proxmox-mcp")} {
		if !h.system().exists(kept) {
			t.Errorf("%s was removed", kept)
		}
	}
	if h.users[PVEUser] == nil {
		t.Error("the PVE user was removed")
	}
	if !strings.Contains(h.doctor().text(), "proxmox-mcp was uninstalled") {
		t.Errorf("doctor after uninstall:\n%s", h.doctor().text())
	}
	out, err = h.uninstall(false)
	if err != nil {
		t.Fatal(err)
	}
	if cmds := h.takeCommands(); len(cmds) > 0 {
		t.Errorf("a second uninstall ran %v\n%s", cmds, out)
	}
	// install brings it back as it was: same tokens, same key.
	out = h.mustInstall(Options{})
	if h.count("pveum user token add") > 0 || strings.Contains(out, "made the key") {
		t.Errorf("reinstall made tokens or keys:\n%s", out)
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// uninstall --purge removes everything install made: PVE user, tokens,
// their ACLs and the role; configuration, state, key file; the system
// user. The host is as it was; a second purge has nothing to do.
func TestUninstallPurge(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	pristine := h.snapshot()
	pveBefore := h.pve()
	h.mustInstall(freshOptions(h, ModeBoth))
	h.takeCommands()
	out, err := h.uninstall(true)
	if err != nil {
		t.Fatal(err)
	}
	// The Tailscale auth key file the operator gave stays (install copied it).
	if err := os.Remove(h.hostPath("/root/tskey")); err != nil {
		t.Fatal(err)
	}
	golden(t, "uninstall-purge", h.transcript("proxmox-mcp uninstall --purge", out))
	if got := h.snapshot(); got != pristine {
		t.Errorf("the host is not as it was before install:\n%s", diffLines(pristine, got))
	}
	if got := h.pve(); got != pveBefore {
		t.Errorf("PVE is not as it was:\n%s\nwant\n%s", got, pveBefore)
	}
	out, err = h.uninstall(true)
	if err != nil || !strings.Contains(out, "nothing to uninstall") || len(h.takeCommands()) > 0 {
		t.Errorf("second purge: %v\n%s", err, out)
	}
}

// A purge that fails midway (pveum) keeps install.json, so a re-run
// finishes it.
func TestUninstallPurgeResume(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	h.failNext("pveum user delete", 1, 255, "delete user failed: cfs-lock 'file-user_cfg' error: got lock request timeout\n")
	_, err := h.uninstall(true)
	if err == nil || !strings.Contains(err.Error(), "re-run `proxmox-mcp uninstall --purge`") {
		t.Fatalf("error %v", err)
	}
	if !h.system().exists(InstallStateFile) || h.users[PVEUser] == nil {
		t.Fatal("the state or the PVE user went before the failure was resolved")
	}
	if _, err := h.uninstall(true); err != nil {
		t.Fatal(err)
	}
	if h.users[PVEUser] != nil || h.system().exists("/var/lib/proxmox-mcp") || h.system().exists(ConfigDir) {
		t.Error("the resumed purge left something")
	}
	for _, e := range h.acl {
		if strings.HasPrefix(e.UGID, PVEUser) {
			t.Errorf("ACL left: %+v", e)
		}
	}
}

// Uninstall never removes what install found: a PVE user, a system user
// and a state directory that were there before.
func TestUninstallKeepsWhatItFound(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.users[PVEUser] = &fakePVEUser{comment: "made by hand", tokens: map[string]bool{}}
	h.write("/etc/passwd", h.read("/etc/passwd")+"proxmox-mcp:x:990:990::/var/lib/proxmox-mcp:/usr/sbin/nologin\n", 0o644)
	h.write("/etc/group", h.read("/etc/group")+"proxmox-mcp:x:990:\n", 0o644)
	h.mkdir("/var/lib/proxmox-mcp", 0o750)
	h.mustInstall(freshOptions(h, ModeLocal))
	if _, err := h.uninstall(true); err != nil {
		t.Fatal(err)
	}
	if h.users[PVEUser] == nil || len(h.users[PVEUser].tokens) != 0 {
		t.Errorf("the PVE user install found: %+v", h.users[PVEUser])
	}
	if !strings.Contains(h.read("/etc/passwd"), "proxmox-mcp:x:990") || !h.system().exists("/var/lib/proxmox-mcp") {
		t.Error("the system user or the state directory install found was removed")
	}
	if h.system().exists(InstallStateFile) || h.system().exists(ConfigDir) {
		t.Error("what install made stayed")
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}

// Another process creating the PVE user or role between install's look
// and its add: pveum's "already exists" is taken as done, and the run
// goes on (without claiming what it did not create).
func TestPVEUserCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mu.Lock()
	h.fails = append(h.fails,
		&failRule{match: "pveum user add", times: 1, code: 255, stderr: "create user failed: user 'proxmox-mcp@pve' already exists\n",
			before: func() { h.users[PVEUser] = &fakePVEUser{tokens: map[string]bool{}} }},
		&failRule{match: "pveum role add", times: 1, code: 255, stderr: "create role failed: role 'PMCPOperator' already exists\n",
			before: func() { h.roles[OperatorRole] = strings.Join(OperatorPrivileges(), ",") }})
	h.mu.Unlock()
	out := h.mustInstall(freshOptions(h, ModeLocal))
	if strings.Contains(out, "created the PVE user") || strings.Contains(out, "created the PVE role") {
		t.Errorf("install claims what another made:\n%s", out)
	}
	var st State
	_ = json.Unmarshal([]byte(h.read(InstallStateFile)), &st)
	if st.Created.PVEUser != "" || st.Created.PVERole != "" || len(st.Created.PVETokens) != 4 {
		t.Errorf("created: %+v", st.Created)
	}
	if rep := h.doctor(); !rep.OK {
		t.Errorf("doctor:\n%s", rep.text())
	}
}

// Installed from a copied binary, then from the Debian package: uninstall
// leaves the files the package owns (dpkg-query -S) to the package.
func TestUninstallKeepsWhatTheDebianPackageOwns(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t)
	h.mustInstall(freshOptions(h, ModeLocal))
	sysusers := "/usr/lib/sysusers.d/proxmox-mcp.conf"
	h.mu.Lock()
	h.dpkgOwned = map[string]bool{sysusers: true, "/usr/bin/proxmox-mcp": true}
	h.mu.Unlock()
	out, err := h.uninstall(false)
	if err != nil {
		t.Fatal(err)
	}
	if !h.system().exists(sysusers) || !strings.Contains(out, "kept "+sysusers+": the Debian package proxmox-mcp owns it") {
		t.Errorf("the package's sysusers file was not kept:\n%s", out)
	}
	if h.system().exists("/etc/systemd/system/proxmox-mcp.service") {
		t.Errorf("the installer's own unit was kept:\n%s", out)
	}
}
