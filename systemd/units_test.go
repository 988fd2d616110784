package systemd

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden unit files")

// The units of every mode, exactly as the installer writes them, are
// golden files reviewed like code: `go test ./systemd -run TestUnitsGolden
// -update` rewrites them.
func TestUnitsGolden(t *testing.T) {
	for _, mode := range Modes {
		t.Run(mode, func(t *testing.T) {
			units, err := Render(UnitOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "units", mode)
			if *update {
				os.RemoveAll(dir)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var names []string
			for _, u := range units {
				names = append(names, u.Name)
				golden := filepath.Join(dir, u.Name)
				if *update {
					if err := os.WriteFile(golden, u.Data, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(u.Data, want) {
					t.Errorf("%s differs from %s (run with -update and review the diff):\n%s", u.Name, golden, u.Data)
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != len(units) {
				t.Errorf("%s holds %d files, the mode renders %v", dir, len(entries), names)
			}
		})
	}
}

func TestRenderByMode(t *testing.T) {
	for _, tc := range []struct {
		mode            string
		units           []string
		netlink, ipDeny bool
	}{
		{"local", []string{ServiceUnit, SysusersFile, HelperSocket, HelperService, BreakglassPath, BreakglassService}, false, true},
		{"lan", []string{ServiceUnit, SysusersFile, RenewService, RenewTimer, HelperSocket, HelperService, BreakglassPath, BreakglassService}, false, true},
		{"tailscale", []string{ServiceUnit, SysusersFile, HelperSocket, HelperService, BreakglassPath, BreakglassService}, true, false},
		{"both", []string{ServiceUnit, SysusersFile, RenewService, RenewTimer, HelperSocket, HelperService, BreakglassPath, BreakglassService}, true, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			units, err := Render(UnitOptions{Mode: tc.mode, Binary: "/usr/local/bin/proxmox-mcp", StateDir: "/srv/pmcp", User: "pmcp"})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			var service string
			for _, u := range units {
				names = append(names, u.Name)
				if u.Name == ServiceUnit {
					service = string(u.Data)
				}
			}
			if strings.Join(names, " ") != strings.Join(tc.units, " ") {
				t.Errorf("units %v, want %v", names, tc.units)
			}
			for _, want := range []string{
				"ExecStart=/usr/local/bin/proxmox-mcp serve --config /etc/proxmox-mcp/config.hujson\n",
				"User=pmcp\nGroup=pmcp\n",
				"ReadWritePaths=/srv/pmcp\n", // not under /var/lib: no StateDirectory=
				"Type=notify\n", "WatchdogSec=30s\n",
			} {
				if !strings.Contains(service, want) {
					t.Errorf("service lacks %q", want)
				}
			}
			if strings.Contains(service, "StateDirectory=") {
				t.Error("StateDirectory= for a state directory outside /var/lib")
			}
			if got := strings.Contains(service, "AF_NETLINK"); got != tc.netlink {
				t.Errorf("AF_NETLINK allowed: %v, want %v", got, tc.netlink)
			}
			if got := strings.Contains(service, "IPAddressDeny=any"); got != tc.ipDeny {
				t.Errorf("IPAddressDeny=any: %v, want %v", got, tc.ipDeny)
			}
		})
	}
}

func TestRenderRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    UnitOptions
		want string
	}{
		{"mode", UnitOptions{Mode: "public"}, `units: mode "public": want one of local, lan, tailscale, both`},
		{"relative binary", UnitOptions{Mode: "local", Binary: "proxmox-mcp"}, `units: binary "proxmox-mcp": want an absolute, clean path`},
		{"space in config", UnitOptions{Mode: "local", ConfigFile: "/etc/my config"}, `units: config file "/etc/my config": want an absolute, clean path without spaces`},
		{"specifier", UnitOptions{Mode: "local", StateDir: "/var/lib/%n"}, `units: state directory "/var/lib/%n"`},
		{"unclean", UnitOptions{Mode: "local", PKIDir: "/etc/../pki"}, `units: PKI directory "/etc/../pki"`},
		{"user", UnitOptions{Mode: "local", User: "Root Admin"}, `units: user "Root Admin": want a system user name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.o)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err %v, want %q…", err, tc.want)
			}
		})
	}
}

// requireAnalyze returns systemd-analyze, or skips where it is missing
// (CI installs Debian's systemd package, and PMCP_REQUIRE_E2E makes a
// missing one a failure).
func requireAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("PMCP_REQUIRE_E2E") != "" {
			t.Fatal("systemd-analyze is required (PMCP_REQUIRE_E2E): install Debian's systemd package")
		}
		t.Skip("systemd-analyze is not installed (Debian package systemd)")
	}
	return p
}

// renderTo writes the units of a mode into a directory, with the binary
// pointing at an executable file so that verify can check ExecStart=.
func renderTo(t *testing.T, mode string) (string, []Unit) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "proxmox-mcp")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	units, err := Render(UnitOptions{Mode: mode, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if err := os.WriteFile(filepath.Join(dir, u.Name), u.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, units
}

// `systemd-analyze verify` finds nothing to say about any unit of any mode.
func TestUnitsVerify(t *testing.T) {
	analyze := requireAnalyze(t)
	for _, mode := range Modes {
		t.Run(mode, func(t *testing.T) {
			dir, units := renderTo(t, mode)
			args := []string{"verify", "--man=no"}
			for _, u := range units {
				if u.Dir == UnitDir {
					args = append(args, filepath.Join(dir, u.Name))
				}
			}
			out, err := exec.Command(analyze, args...).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

var exposure = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// Every service's exposure score is at most 2.0 ("OK") in every mode.
func TestUnitsSecurityScore(t *testing.T) {
	analyze := requireAnalyze(t)
	for _, mode := range Modes {
		dir, units := renderTo(t, mode)
		for _, u := range units {
			if !strings.HasSuffix(u.Name, ".service") {
				continue
			}
			t.Run(mode+"/"+u.Name, func(t *testing.T) {
				out, err := exec.Command(analyze, "security", "--offline=yes", "--no-pager", filepath.Join(dir, u.Name)).CombinedOutput()
				m := exposure.FindSubmatch(out)
				if m == nil {
					t.Fatalf("no exposure level in the output (%v):\n%s", err, out)
				}
				score, _ := strconv.ParseFloat(string(m[1]), 64)
				t.Logf("%s (%s): exposure %.1f", u.Name, mode, score)
				if score > 2.0 {
					t.Errorf("exposure %.1f, want at most 2.0:\n%s", score, out)
				}
			})
		}
	}
}
