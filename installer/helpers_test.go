package installer

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// managedPrefixes are the places install writes; the transcript lists
// what is there.
var managedPrefixes = []string{"/etc/proxmox-mcp", "/var/lib/proxmox-mcp", "/var/lib/proxmox-mcp-helper", InstallStateDir, "/etc/systemd/system", "/usr/lib/sysusers.d", "/usr/local/bin", "/root"}

// files lists every file and directory install manages, with its mode,
// owner and group, as ls would.
func (h *fakeHost) files() string {
	h.t.Helper()
	s := h.system()
	var b strings.Builder
	err := filepath.WalkDir(h.root, func(hp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		p := "/" + strings.TrimPrefix(strings.TrimPrefix(hp, h.root), "/")
		managed := false
		for _, m := range managedPrefixes {
			if p == m || strings.HasPrefix(p, m+"/") {
				managed = true
			}
		}
		if !managed {
			return nil
		}
		st, err := s.stat(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Type() | st.mode
		fmt.Fprintf(&b, "%s %-25s %s\n", mode, s.owner(st).String(), p)
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		for _, l := range strings.Split(h.read(f), "\n") {
			if strings.HasPrefix(l, ServiceUser+":") {
				fmt.Fprintf(&b, "%s: %s\n", f, l)
			}
		}
	}
	return b.String()
}

// pve describes PVE's access state as pveum would list it.
func (h *fakeHost) pve() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, id := range sortedKeys(h.users) {
		u := h.users[id]
		fmt.Fprintf(&b, "user %s", id)
		for _, t := range sortedKeys(u.tokens) {
			fmt.Fprintf(&b, " token:%s(privsep=%d)", t, boolInt(u.tokens[t]))
		}
		b.WriteString("\n")
	}
	for _, r := range sortedKeys(h.roles) {
		fmt.Fprintf(&b, "role %s %s\n", r, h.roles[r])
	}
	for _, e := range h.acl {
		fmt.Fprintf(&b, "acl %s %s %s %s propagate=%d\n", e.Path, e.Type, e.UGID, e.RoleID, boolInt(bool(*e.Propagate)))
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// redactions keep transcripts stable and free of secrets: random
// certificate fingerprints, token values.
var redactions = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`([0-9A-F]{2}:){31}[0-9A-F]{2}`), "<sha256>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<token secret>"},
	{regexp.MustCompile(`pmcp_[a-z2-7]{16}_[A-Za-z0-9_-]{43}`), "<key>"},
}

func redact(s string) string {
	for _, r := range redactions {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// transcript records what a run did: the commands in order, what it told
// the operator, the files with owners and modes, PVE's access state, and
// the content of the given (secret-free) files.
func (h *fakeHost) transcript(title, out string, show ...string) string {
	h.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n## commands\n", title)
	for _, c := range h.takeCommands() {
		b.WriteString(c + "\n")
	}
	b.WriteString("\n## output\n" + out)
	b.WriteString("\n## files\n" + h.files())
	b.WriteString("\n## pve\n" + h.pve())
	for _, f := range show {
		fmt.Fprintf(&b, "\n## %s\n%s", f, h.read(f))
	}
	return strings.ReplaceAll(redact(b.String()), h.root, "$ROOT")
}

// golden compares got with testdata/NAME.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./installer -run %s -update)", err, t.Name())
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s differs from line %d (go test ./installer -run '^%s$' -update rewrites it)\n got: %q\nwant: %q", path, i+1, t.Name(), g, w)
			return
		}
	}
}

// install runs Install on the fake host and returns what it printed.
func (h *fakeHost) install(o Options) (string, error) {
	h.t.Helper()
	var out bytes.Buffer
	o.Out = &out
	if o.Executable == "" {
		o.Executable = h.hostPath("/tmp/proxmox-mcp")
	}
	if o.Version == "" {
		o.Version = "1.0.0-test"
	}
	err := Install(context.Background(), h.system(), o)
	return out.String(), err
}

// mustInstall installs and fails the test on error.
func (h *fakeHost) mustInstall(o Options) string {
	h.t.Helper()
	out, err := h.install(o)
	if err != nil {
		h.t.Fatalf("install: %v\n%s", err, out)
	}
	return out
}

func (h *fakeHost) uninstall(purge bool) (string, error) {
	var out bytes.Buffer
	err := Uninstall(context.Background(), h.system(), UninstallOptions{Purge: purge, Out: &out})
	return out.String(), err
}

func (h *fakeHost) doctor() *Report {
	h.t.Helper()
	rep, err := Doctor(context.Background(), h.system())
	if err != nil {
		h.t.Fatal(err)
	}
	return rep
}

func (rep *Report) text() string {
	var b bytes.Buffer
	rep.WriteText(&b)
	return b.String()
}

// snapshot is every path under the root with its content and mode, to
// assert that a refused run changed nothing. /run (the install lock) is
// runtime state, as on a host.
func (h *fakeHost) snapshot() string {
	h.t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(h.root, func(hp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if strings.HasPrefix(hp, h.hostPath("/run")+"/") {
			return nil
		}
		fmt.Fprintf(&b, "%s %s", fi.Mode(), strings.TrimPrefix(hp, h.root))
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(hp)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", data)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return b.String()
}
