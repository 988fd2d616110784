package tests

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The package test builds the Debian package with the script `make deb`
// runs (packaging/build-deb.sh), once, and checks it with dpkg-deb: the
// control fields, every file with its mode, owner and time, the units and
// the manual page, the maintainer scripts run against fake systemctl and
// systemd-sysusers, lintian, and a second build that must be identical.
// Without dpkg-deb or lintian it skips, saying so; under PMCP_REQUIRE_E2E
// (CI) it fails instead.

const (
	debVersion  = "1.2.3-rc1" // VERSION given to the build
	debUpstream = "1.2.3~rc1" // what it maps to
	debEpoch    = 1767225600  // SOURCE_DATE_EPOCH: 2026-01-01T00:00:00Z
	debFull     = debUpstream + "-1"
	debCommit   = "0123abc"
	buildScript = "../packaging/build-deb.sh"
)

// requireTool returns the path of a tool the package test needs, or skips
// (fails under PMCP_REQUIRE_E2E).
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not installed (%s): the Debian package is not checked", name, install)
	if os.Getenv("PMCP_REQUIRE_E2E") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// debArch is the Debian architecture of a GOARCH, as build-deb.sh maps it.
func debArch(goarch string) string {
	switch goarch {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	case "ppc64le":
		return "ppc64el"
	case "mips64le":
		return "mips64el"
	}
	return goarch
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

var (
	debOnce sync.Once
	debPath string
	debErr  error
)

// buildDeb runs build-deb.sh into dir with the test's version and time;
// extra adds to the environment.
func buildDeb(dir string, extra ...string) (string, error) {
	cmd := exec.Command("sh", buildScript, dir)
	cmd.Env = append(os.Environ(),
		"VERSION="+debVersion, "DEB_REVISION=1",
		fmt.Sprintf("SOURCE_DATE_EPOCH=%d", debEpoch),
		// gzip, not xz: several times faster, and the contents are the same.
		"DEB_COMPRESS=gzip",
		// The changelog names this commit, not the tree's state, which
		// others may change while the test runs.
		"DEB_COMMIT="+debCommit)
	cmd.Env = append(cmd.Env, extra...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build-deb.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// debPackage builds the package once per test run and returns its path.
func debPackage(t *testing.T) string {
	t.Helper()
	requireTool(t, "dpkg-deb", "apt-get install dpkg")
	// The e2e binary is built with the package's flags: once it is built,
	// the package's build only links.
	binary(t)
	debOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pmcp-deb-")
		if err != nil {
			debErr = err
			return
		}
		start := time.Now()
		debPath, debErr = buildDeb(dir)
		if debErr != nil {
			os.RemoveAll(dir)
		}
		t.Logf("built %s in %v", filepath.Base(debPath), time.Since(start).Round(time.Millisecond))
	})
	if debErr != nil {
		t.Fatal(debErr)
	}
	return debPath
}

func dpkgDeb(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("dpkg-deb", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dpkg-deb %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// tarEntry is one member of the package's data or control archive.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

func readTar(t *testing.T, b []byte) map[string]tarEntry {
	t.Helper()
	out := map[string]tarEntry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = tarEntry{h, data}
	}
}

// parseControl parses the fields of a control file (continuation lines
// joined with newlines).
func parseControl(b []byte) map[string]string {
	fields := map[string]string{}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") && last != "" {
			fields[last] += "\n" + line[1:]
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			last = k
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

func TestDebVersionMapping(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                "1.2.3",
		"v1.2.3-0-gabc1234":     "1.2.3",
		"v1.2.3-5-gabc1234":     "1.2.3+git5.gabc1234",
		"v1.0.0-rc1-5-gabc1234": "1.0.0~rc1+git5.gabc1234",
		"1.0.0-rc1":             "1.0.0~rc1",
		"2.1":                   "2.1",
	} {
		out, err := exec.Command("sh", buildScript, "--version-of", in).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("--version-of %s = %q (%v), want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"abc1234", "", "v", "1.0 beta"} {
		if out, err := exec.Command("sh", buildScript, "--version-of", bad).Output(); err == nil {
			t.Errorf("--version-of %q = %q, want an error", bad, out)
		}
	}
}

func TestDebControlFields(t *testing.T) {
	deb := debPackage(t)
	f := parseControl(dpkgDeb(t, "--field", deb))
	want := map[string]string{
		"Package":      "proxmox-mcp",
		"Version":      debFull,
		"Architecture": debArch(goEnv(t, "GOARCH")),
		"Section":      "admin",
		"Priority":     "optional",
		"Depends":      "systemd | systemd-standalone-sysusers | systemd-sysusers",
		"Enhances":     "pve-manager",
		"Homepage":     "https://github.com/proxmox-mcp/proxmox-mcp",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s: %q, want %q", k, f[k], v)
		}
	}
	if !strings.Contains(f["Maintainer"], "<") || !strings.HasSuffix(f["Maintainer"], ">") {
		t.Errorf("Maintainer %q is not NAME <EMAIL>", f["Maintainer"])
	}
	desc := strings.Split(f["Description"], "\n")
	if len(desc) < 5 || len(desc[0]) > 80 || strings.HasPrefix(desc[0], "proxmox-mcp") {
		t.Errorf("Description: want a synopsis under 80 columns not starting with the name, then an extended description; got %q", f["Description"])
	}
	if !strings.Contains(f["Description"], "starts nothing") {
		t.Error("the description does not say that installing starts nothing")
	}
	var size int
	if _, err := fmt.Sscan(f["Installed-Size"], &size); err != nil || size < 1024 {
		t.Errorf("Installed-Size %q", f["Installed-Size"])
	}
	for _, k := range []string{"Pre-Depends", "Conflicts", "Breaks", "Essential"} {
		if v, ok := f[k]; ok {
			t.Errorf("unexpected field %s: %s", k, v)
		}
	}
	if base := filepath.Base(deb); base != "proxmox-mcp_"+debFull+"_"+want["Architecture"]+".deb" {
		t.Errorf("file name %s", base)
	}
}

// debFiles are the files of the package and their modes; directories are
// 0755.
var debFiles = map[string]fs.FileMode{
	"usr/bin/proxmox-mcp":                                   0o755,
	"usr/lib/systemd/system/proxmox-mcp.service":            0o644,
	"usr/lib/systemd/system/proxmox-mcp-pki-renew.service":  0o644,
	"usr/lib/systemd/system/proxmox-mcp-pki-renew.timer":    0o644,
	"usr/lib/systemd/system/proxmox-mcp-helper.socket":      0o644,
	"usr/lib/systemd/system/proxmox-mcp-helper.service":     0o644,
	"usr/lib/systemd/system/proxmox-mcp-breakglass.path":    0o644,
	"usr/lib/systemd/system/proxmox-mcp-breakglass.service": 0o644,
	"usr/lib/sysusers.d/proxmox-mcp.conf":                   0o644,
	"usr/share/man/man1/proxmox-mcp.1.gz":                   0o644,
	"usr/share/doc/proxmox-mcp/copyright":                   0o644,
	"usr/share/doc/proxmox-mcp/changelog.Debian.gz":         0o644,
	"usr/share/lintian/overrides/proxmox-mcp":               0o644,
	"usr/share/bash-completion/completions/proxmox-mcp":     0o644,
	"usr/share/zsh/vendor-completions/_proxmox-mcp":         0o644,
}

func TestDebFilesModesOwners(t *testing.T) {
	deb := debPackage(t)
	data := readTar(t, dpkgDeb(t, "--fsys-tarfile", deb))
	control := readTar(t, dpkgDeb(t, "--ctrl-tarfile", deb))
	check := func(archive, name string, e tarEntry, mode fs.FileMode) {
		h := e.hdr
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" {
			t.Errorf("%s %s: owner %s:%s (%d:%d), want root:root", archive, name, h.Uname, h.Gname, h.Uid, h.Gid)
		}
		if got := fs.FileMode(h.Mode).Perm(); got != mode {
			t.Errorf("%s %s: mode %04o, want %04o", archive, name, got, mode)
		}
		if h.ModTime.Unix() != debEpoch {
			t.Errorf("%s %s: time %v, want SOURCE_DATE_EPOCH %v", archive, name, h.ModTime.UTC(), time.Unix(debEpoch, 0).UTC())
		}
	}
	for name, e := range data {
		switch e.hdr.Typeflag {
		case tar.TypeDir:
			check("data", name, e, 0o755)
			if name != "" && !slices.ContainsFunc(mapKeys(debFiles), func(f string) bool { return strings.HasPrefix(f, name+"/") }) {
				t.Errorf("directory %s holds none of the package's files", name)
			}
		case tar.TypeReg:
			mode, ok := debFiles[name]
			if !ok {
				t.Errorf("unexpected file /%s", name)
				continue
			}
			check("data", name, e, mode)
		default:
			t.Errorf("/%s: unexpected type %c", name, e.hdr.Typeflag)
		}
	}
	for name := range debFiles {
		if _, ok := data[name]; !ok {
			t.Errorf("missing /%s", name)
		}
	}
	for _, name := range []string{"etc", "var", "lib", "usr/local", "opt"} {
		if _, ok := data[name]; ok {
			t.Errorf("the package ships /%s: the installer owns /etc/proxmox-mcp and /var/lib/proxmox-mcp", name)
		}
	}

	wantControl := map[string]fs.FileMode{"control": 0o644, "md5sums": 0o644, "postinst": 0o755, "prerm": 0o755, "postrm": 0o755}
	for name, e := range control {
		if name == "" {
			continue
		}
		mode, ok := wantControl[name]
		if !ok {
			t.Errorf("unexpected control member %s (no conffiles: the package ships nothing in /etc)", name)
			continue
		}
		check("control", name, e, mode)
	}
	for name := range wantControl {
		if _, ok := control[name]; !ok {
			t.Errorf("control member %s is missing", name)
		}
	}

	// md5sums lists every file with its sum, and nothing else.
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(control["md5sums"].data)), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		sums[name] = sum
	}
	for name := range debFiles {
		got := md5.Sum(data[name].data)
		if sums[name] != hex.EncodeToString(got[:]) {
			t.Errorf("md5sums: %s is %q, the file's sum is %x", name, sums[name], got)
		}
	}
	if len(sums) != len(debFiles) {
		t.Errorf("md5sums has %d lines, want %d", len(sums), len(debFiles))
	}
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// gunzipNoName decompresses a gzip -n member: no name, no time.
func gunzipNoName(t *testing.T, name string, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header has name %q and time %v: want gzip -n", name, zr.Name, zr.ModTime)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}

func TestDebContents(t *testing.T) {
	deb := debPackage(t)
	data := readTar(t, dpkgDeb(t, "--fsys-tarfile", deb))

	// The units are those "units render" writes: the service for local
	// (loopback) mode, the renewal units of a LAN mode, the sysusers entry.
	golden := map[string]string{
		"usr/lib/systemd/system/proxmox-mcp.service":            "local/proxmox-mcp.service",
		"usr/lib/systemd/system/proxmox-mcp-pki-renew.service":  "lan/proxmox-mcp-pki-renew.service",
		"usr/lib/systemd/system/proxmox-mcp-pki-renew.timer":    "lan/proxmox-mcp-pki-renew.timer",
		"usr/lib/systemd/system/proxmox-mcp-helper.socket":      "local/proxmox-mcp-helper.socket",
		"usr/lib/systemd/system/proxmox-mcp-helper.service":     "local/proxmox-mcp-helper.service",
		"usr/lib/systemd/system/proxmox-mcp-breakglass.path":    "local/proxmox-mcp-breakglass.path",
		"usr/lib/systemd/system/proxmox-mcp-breakglass.service": "local/proxmox-mcp-breakglass.service",
		"usr/lib/sysusers.d/proxmox-mcp.conf":                   "local/proxmox-mcp.conf",
	}
	for name, g := range golden {
		want, err := os.ReadFile(filepath.Join("../systemd/testdata/units", g))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data[name].data, want) {
			t.Errorf("/%s differs from systemd/testdata/units/%s", name, g)
		}
	}
	if svc := string(data["usr/lib/systemd/system/proxmox-mcp.service"].data); !strings.Contains(svc, "ExecStart=/usr/bin/proxmox-mcp serve") {
		t.Errorf("the service does not run /usr/bin/proxmox-mcp:\n%s", svc)
	}

	man := gunzipNoName(t, "proxmox-mcp.1.gz", data["usr/share/man/man1/proxmox-mcp.1.gz"].data)
	if !strings.Contains(man, `.TH PROXMOX\-MCP 1 "2026\-01\-01" "proxmox\-mcp 1.2.3\-rc1"`) {
		t.Errorf("manual page header: %q", strings.SplitN(man, "\n", 3)[:2])
	}
	for _, want := range []string{`.SS "key create"`, `.SS "units render"`, `.SS "serve"`, ".SH FILES"} {
		if !strings.Contains(man, want) {
			t.Errorf("the manual page lacks %s", want)
		}
	}

	// The completion scripts are what the binary prints (golden in
	// cmd/proxmox-mcp/testdata).
	for name, g := range map[string]string{
		"usr/share/bash-completion/completions/proxmox-mcp": "completion.bash",
		"usr/share/zsh/vendor-completions/_proxmox-mcp":     "completion.zsh",
	} {
		want, err := os.ReadFile(filepath.Join("../cmd/proxmox-mcp/testdata", g))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data[name].data, want) {
			t.Errorf("/%s differs from cmd/proxmox-mcp/testdata/%s", name, g)
		}
	}

	changelog := gunzipNoName(t, "changelog.Debian.gz", data["usr/share/doc/proxmox-mcp/changelog.Debian.gz"].data)
	if !strings.HasPrefix(changelog, "proxmox-mcp ("+debFull+") unstable; urgency=medium\n") ||
		!strings.Contains(changelog, "\n    Built from commit "+debCommit+".\n") ||
		!strings.Contains(changelog, "  Thu, 01 Jan 2026 00:00:00 +0000\n") {
		t.Errorf("changelog.Debian:\n%s", changelog)
	}

	copyright := string(data["usr/share/doc/proxmox-mcp/copyright"].data)
	for _, want := range []string{
		"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n",
		"\nFiles: *\n",
		"\nFiles: go/src/*\n",
		"\nFiles: vendor/tailscale.com/*\n",
		"\nFiles: vendor/github.com/mark3labs/mcp-go/*\n",
		"\nFiles: vendor/modernc.org/sqlite/*\n",
		"\nLicense: Apache-2.0\n",
		"/usr/share/common-licenses/Apache-2.0",
	} {
		if !strings.Contains(copyright, want) {
			t.Errorf("copyright lacks %q", strings.TrimSpace(want))
		}
	}

	// The binary is static and stripped, and knows its version.
	bin := data["usr/bin/proxmox-mcp"].data
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (program header %v)", p.Type)
		}
	}
	if ef.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: want -ldflags -s -w")
	}
	if goEnv(t, "GOARCH") == runtime.GOARCH {
		path := filepath.Join(t.TempDir(), "proxmox-mcp")
		if err := os.WriteFile(path, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path, "version").Output()
		if err != nil || string(out) != "proxmox-mcp "+debVersion+"\n" {
			t.Errorf("proxmox-mcp version: %q, %v", out, err)
		}
	}
}

// fakes are the commands the maintainer scripts may call, each recording
// its arguments; systemctl also records which units it would (re)start:
// try-restart only those that are running, as systemd does.
var fakes = map[string]string{
	"systemctl": `echo "systemctl $*" >>"$FAKE_LOG"
action=
for a; do
	case "$a" in
	-*) ;;
	*)
		if [ -z "$action" ]; then action=$a; continue; fi
		case "$action" in
		start | restart | reload-or-restart) echo "STARTED $a" >>"$FAKE_LOG" ;;
		try-restart) if [ -e "$FAKE_STATE/$a.active" ]; then echo "STARTED $a" >>"$FAKE_LOG"; fi ;;
		enable) echo "ENABLED $a" >>"$FAKE_LOG" ;;
		esac
		;;
	esac
done`,
	"deb-systemd-invoke": `echo "deb-systemd-invoke $*" >>"$FAKE_LOG"
exec systemctl "$@"`,
	"systemd-sysusers": `echo "systemd-sysusers $*" >>"$FAKE_LOG"`,
}

// Commands the scripts must never run: recorded, so a test sees them.
var forbidden = []string{"deb-systemd-helper", "invoke-rc.d", "service", "rm", "userdel", "deluser", "groupdel", "delgroup", "useradd", "adduser", "proxmox-mcp"}

type scriptRun struct {
	calls  []string
	stdout string
}

// runScript runs a maintainer script of the package with the fakes first
// on PATH. systemd decides whether the script sees a running systemd (its
// /run/systemd/system test is pointed at a directory that exists or not);
// active lists the units that are running.
func runScript(t *testing.T, script string, systemd bool, active []string, env []string, args ...string) scriptRun {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	state := filepath.Join(dir, "state")
	for _, d := range []string{bin, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range forbidden {
		body := fmt.Sprintf("#!/bin/sh\necho \"FORBIDDEN %s $*\" >>\"$FAKE_LOG\"\n", name)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range active {
		if err := os.WriteFile(filepath.Join(state, u+".active"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runDir := filepath.Join(dir, "run-systemd-system")
	if systemd {
		if err := os.Mkdir(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	text := strings.ReplaceAll(script, "/run/systemd/system", runDir)
	path := filepath.Join(dir, "script")
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	cmd := exec.Command("/bin/sh", append([]string{path}, args...)...)
	cmd.Env = append([]string{
		"PATH=" + bin + ":/usr/bin:/bin",
		"FAKE_LOG=" + log,
		"FAKE_STATE=" + state,
		"LC_ALL=C",
	}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	var calls []string
	if b, err := os.ReadFile(log); err == nil {
		calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	return scriptRun{calls: calls, stdout: stdout.String()}
}

func TestDebMaintainerScripts(t *testing.T) {
	deb := debPackage(t)
	control := readTar(t, dpkgDeb(t, "--ctrl-tarfile", deb))
	scripts := map[string]string{}
	for _, name := range []string{"postinst", "prerm", "postrm"} {
		s := string(control[name].data)
		if !strings.HasPrefix(s, "#!/bin/sh\n") || !strings.Contains(s, "\nset -e\n") {
			t.Errorf("%s: want #!/bin/sh and set -e", name)
		}
		if strings.Count(s, "/run/systemd/system") == 0 && name != "postrm" {
			t.Errorf("%s never asks whether systemd runs", name)
		}
		scripts[name] = s
	}
	const (
		svc         = "proxmox-mcp.service"
		helperSvc   = "proxmox-mcp-helper.service"
		helperUnits = "proxmox-mcp-helper.socket " + helperSvc + " proxmox-mcp-breakglass.path proxmox-mcp-breakglass.service"
		stopHelper  = "deb-systemd-invoke stop " + helperSvc
	)
	sysusers := "systemd-sysusers proxmox-mcp.conf"
	reload := "systemctl --system daemon-reload"

	cases := []struct {
		name    string
		script  string
		systemd bool
		active  []string
		env     []string
		args    []string
		want    []string
		note    bool // the "run proxmox-mcp install" note
	}{
		{"fresh install starts nothing", "postinst", true, nil, nil,
			[]string{"configure", ""}, []string{sysusers, reload}, true},
		{"fresh install with no previous version argument", "postinst", true, nil, nil,
			[]string{"configure"}, []string{sysusers, reload}, true},
		{"fresh install while a unit of an earlier install runs", "postinst", true, []string{svc}, nil,
			[]string{"configure", ""}, []string{sysusers, reload}, true},
		{"upgrade restarts a running daemon", "postinst", true, []string{svc}, nil,
			[]string{"configure", "1.0.0-1"},
			[]string{sysusers, reload, "deb-systemd-invoke try-restart " + svc, "systemctl try-restart " + svc, "STARTED " + svc, stopHelper, "systemctl stop " + helperSvc}, false},
		{"upgrade leaves a stopped daemon stopped", "postinst", true, nil, nil,
			[]string{"configure", "1.0.0-1"},
			[]string{sysusers, reload, "deb-systemd-invoke try-restart " + svc, "systemctl try-restart " + svc, stopHelper, "systemctl stop " + helperSvc}, false},
		{"without systemd only the user is made", "postinst", false, []string{svc}, nil,
			[]string{"configure", "1.0.0-1"}, []string{sysusers}, false},
		{"DPKG_ROOT", "postinst", true, []string{svc}, []string{"DPKG_ROOT=/target"},
			[]string{"configure", ""}, []string{"systemd-sysusers --root=/target proxmox-mcp.conf"}, true},
		{"abort-upgrade restores a running daemon", "postinst", true, []string{svc}, nil,
			[]string{"abort-upgrade", "1.1.0-1"},
			[]string{sysusers, reload, "deb-systemd-invoke try-restart " + svc, "systemctl try-restart " + svc, "STARTED " + svc, stopHelper, "systemctl stop " + helperSvc}, false},
		{"triggered does nothing", "postinst", true, []string{svc}, nil,
			[]string{"triggered", "x"}, nil, false},
		{"remove stops the daemon and the timer", "prerm", true, []string{svc}, nil,
			[]string{"remove"},
			[]string{"deb-systemd-invoke stop proxmox-mcp-pki-renew.timer " + svc + " " + helperUnits, "systemctl stop proxmox-mcp-pki-renew.timer " + svc + " " + helperUnits}, false},
		{"upgrade stops nothing", "prerm", true, []string{svc}, nil,
			[]string{"upgrade", "1.3.0-1"}, nil, false},
		{"remove without systemd", "prerm", false, []string{svc}, nil,
			[]string{"remove"}, nil, false},
		{"postrm remove reloads systemd", "postrm", true, nil, nil,
			[]string{"remove"}, []string{reload}, false},
		{"purge removes nothing of the installer's", "postrm", true, nil, nil,
			[]string{"purge"}, []string{reload}, false},
		{"postrm upgrade does nothing", "postrm", true, nil, nil,
			[]string{"upgrade", "1.3.0-1"}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runScript(t, scripts[c.script], c.systemd, c.active, c.env, c.args...)
			if !slices.Equal(r.calls, c.want) {
				t.Errorf("%s %q ran:\n  %s\nwant:\n  %s", c.script, c.args, strings.Join(r.calls, "\n  "), strings.Join(c.want, "\n  "))
			}
			for _, call := range r.calls {
				if strings.HasPrefix(call, "FORBIDDEN") || strings.HasPrefix(call, "ENABLED") {
					t.Errorf("%s %q: %s", c.script, c.args, call)
				}
			}
			if note := strings.Contains(r.stdout, "proxmox-mcp install --mode"); note != c.note {
				t.Errorf("%s %q: the install note printed: %v, want %v\n%s", c.script, c.args, note, c.note, r.stdout)
			}
		})
	}

	if sc, err := exec.LookPath("shellcheck"); err == nil {
		for name, s := range scripts {
			cmd := exec.Command(sc, "-s", "sh", "-")
			cmd.Stdin = strings.NewReader(s)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", name, err, out)
			}
		}
	} else {
		t.Log("shellcheck is not installed: the maintainer scripts are not linted")
	}
}

func TestDebLintian(t *testing.T) {
	deb := debPackage(t)
	lintian := requireTool(t, "lintian", "apt-get install lintian")
	// (--show-overrides would make overridden tags fail the run.)
	cmd := exec.Command(lintian, "--fail-on", "error,warning", "--display-info", deb)
	out, err := cmd.Output() // stderr: "running with root privileges is not recommended!"
	var bad []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") {
			bad = append(bad, line)
		}
	}
	if err != nil || len(bad) > 0 {
		t.Errorf("lintian: %v; errors and warnings:\n%s\nfull output:\n%s", err, strings.Join(bad, "\n"), out)
	} else {
		t.Logf("lintian: no errors, no warnings\n%s", out)
	}
}

// Building again from the same tree gives the same bytes. The second build
// packages the first one's binary (Go's own builds are reproducible with
// -trimpath), so a file edited meanwhile in a shared tree cannot make the
// test flaky.
func TestDebReproducible(t *testing.T) {
	deb := debPackage(t)
	data := readTar(t, dpkgDeb(t, "--fsys-tarfile", deb))
	bin := filepath.Join(t.TempDir(), "proxmox-mcp")
	if err := os.WriteFile(bin, data["usr/bin/proxmox-mcp"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	again, err := buildDeb(t.TempDir(), "DEB_BINARY="+bin)
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two builds differ: %s (%d bytes) and %s (%d bytes)", deb, len(a), again, len(b))
	}
}

// The real dpkg installs, upgrades, removes and purges the package in a
// temporary root: --root keeps its database and files there,
// --force-script-chrootless runs the maintainer scripts here with
// DPKG_ROOT set, so they touch nothing outside it (postinst runs the real
// systemd-sysusers --root). Needs root, as dpkg does.
func TestDebInstallIntoATemporaryRoot(t *testing.T) {
	deb := debPackage(t)
	if os.Geteuid() != 0 {
		t.Skip("dpkg --root needs root")
	}
	if _, err := exec.LookPath("systemd-sysusers"); err != nil {
		t.Skip("systemd-sysusers is not installed: postinst cannot make the user")
	}
	root := t.TempDir()
	for _, d := range []string{"etc", "var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/log"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		"var/lib/dpkg/status":    "",
		"var/lib/dpkg/available": "",
		"etc/passwd":             "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":              "root:x:0:\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dpkg := func(args ...string) string {
		t.Helper()
		// --force-depends: the temporary root has no systemd package.
		all := append([]string{"--root=" + root, "--log=" + filepath.Join(root, "var/log/dpkg.log"),
			"--force-script-chrootless", "--force-depends"}, args...)
		out, err := exec.Command("dpkg", all...).CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	user := func() bool {
		b, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), "\nproxmox-mcp:x:") &&
			strings.Contains(string(b), ":proxmox-mcp daemon:/var/lib/proxmox-mcp:/usr/sbin/nologin\n")
	}

	out := dpkg("--install", deb)
	if !strings.Contains(out, "nothing is enabled or started") {
		t.Errorf("install did not print the note:\n%s", out)
	}
	if !user() {
		t.Error("postinst did not create the system user proxmox-mcp")
	}
	for name := range debFiles {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			t.Errorf("installed: %v", err)
		}
	}
	if status := dpkg("--status", "proxmox-mcp"); !strings.Contains(status, "Status: install ok installed") {
		t.Errorf("status after install:\n%s", status)
	}
	// The upgrade path (prerm upgrade, postinst configure OLD).
	if out := dpkg("--install", deb); strings.Contains(out, "nothing is enabled or started") {
		t.Errorf("an upgrade printed the first-install note:\n%s", out)
	}
	dpkg("--remove", "proxmox-mcp")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/proxmox-mcp")); !os.IsNotExist(err) {
		t.Errorf("after remove, /usr/bin/proxmox-mcp: %v", err)
	}
	dpkg("--purge", "proxmox-mcp")
	if !user() {
		t.Error("purge removed the system user: files it owned may remain, a reused uid would own them")
	}
	if _, err := os.Stat(filepath.Join(root, "usr")); err == nil {
		var left []string
		filepath.WalkDir(filepath.Join(root, "usr"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		if len(left) > 0 {
			t.Errorf("purge left files: %v", left)
		}
	}
}
