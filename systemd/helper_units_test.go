package systemd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The helper's units with two write roots: golden files, verified by
// systemd-analyze, and scored at most 2.0 although the service is root.
func TestHelperUnits(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "proxmox-mcp")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := UnitOptions{Mode: "local", HostWriteRoots: []string{"/etc/pve", "/srv/app"}}
	units, err := helperUnits(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "helper")
	for _, u := range units {
		p := filepath.Join(golden, u.Name)
		if *update {
			if err := os.MkdirAll(golden, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, u.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(u.Data, want) {
			t.Errorf("%s differs from %s (run with -update and review the diff):\n%s", u.Name, p, u.Data)
		}
	}
	svc := string(units[1].Data)
	for _, want := range []string{"ReadWritePaths=/etc/pve /srv/app\n", "StateDirectory=proxmox-mcp-helper\n", "PrivateNetwork=yes\n", "RestrictAddressFamilies=AF_UNIX\n"} {
		if !strings.Contains(svc, want) {
			t.Errorf("the helper's service lacks %q", want)
		}
	}
	if sock := string(units[0].Data); !strings.Contains(sock, "SocketGroup=proxmox-mcp\nSocketMode=0660\n") {
		t.Errorf("the socket is not root's and the daemon group's alone:\n%s", sock)
	}
	if _, err := Render(UnitOptions{Mode: "local", HostWriteRoots: []string{"/"}}); err == nil {
		t.Error("a write root of / was rendered")
	}

	analyze := requireAnalyze(t)
	opts.Binary = bin
	units, err = helperUnits(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, u := range units {
		p := filepath.Join(dir, u.Name)
		if err := os.WriteFile(p, u.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command(analyze, "security", "--offline=yes", "--no-pager", paths[1]).CombinedOutput()
	m := exposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level (%v):\n%s", err, out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("%s: exposure %.1f", HelperService, score)
	if score > 2.0 {
		t.Errorf("exposure %.1f, want at most 2.0:\n%s", score, out)
	}
}

// helperUnits are the helper's socket and service of what Render renders.
func helperUnits(t *testing.T, o UnitOptions) ([]Unit, error) {
	t.Helper()
	all, err := Render(o)
	if err != nil {
		return nil, err
	}
	var out []Unit
	for _, u := range all {
		if u.Name == HelperSocket || u.Name == HelperService {
			out = append(out, u)
		}
	}
	if len(out) != 2 {
		t.Fatalf("Render gave %d helper units", len(out))
	}
	return out, nil
}
