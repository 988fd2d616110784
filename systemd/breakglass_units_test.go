package systemd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The break-glass runner's units without and with a protected repository:
// golden files (`go test ./systemd -run TestBreakglassUnits -update`
// rewrites them), verified by systemd-analyze, and the service scored at
// most 2.0 although it is root.
func TestBreakglassUnits(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    UnitOptions
		// want and unwanted are lines of the service.
		want, unwanted []string
	}{
		{"none", UnitOptions{Mode: "local"},
			[]string{
				"CapabilityBoundingSet=CAP_CHOWN CAP_FOWNER CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH",
				"PrivateDevices=yes", "ProcSubset=pid",
			},
			[]string{"ReadWritePaths=", "CAP_SYS_ADMIN", "DeviceAllow=", "LimitMEMLOCK="}},
		{"protected", UnitOptions{Mode: "lan", ProtectedPaths: []string{"/srv/models", "/var/lib/vz/template/models"}, ProtectedVolumes: []string{"pve/models", "data/vm-100-disk-0"}},
			[]string{
				"ReadWritePaths=-/srv/models -/var/lib/vz/template/models",
				"ReadWritePaths=-/run/lvm -/run/lock/lvm -/etc/lvm/archive -/etc/lvm/backup",
				"CapabilityBoundingSet=CAP_CHOWN CAP_FOWNER CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_SYS_ADMIN",
				"PrivateDevices=no", "DevicePolicy=closed", "DeviceAllow=block-* rw", "DeviceAllow=/dev/mapper/control rw", "LimitMEMLOCK=64M",
			},
			[]string{"\nProcSubset=pid", "PrivateDevices=yes", "CAP_SYS_RAWIO"}},
		{"paths", UnitOptions{Mode: "tailscale", ProtectedPaths: []string{"/srv/models"}},
			[]string{"ReadWritePaths=-/srv/models", "PrivateDevices=yes", "ProcSubset=pid"},
			[]string{"/run/lvm", "CAP_SYS_ADMIN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units, err := breakglassUnits(t, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "breakglass", tc.name)
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
			path, svc := string(units[0].Data), string(units[1].Data)
			for _, want := range []string{
				"DirectoryNotEmpty=/var/lib/proxmox-mcp-helper/breakglass/queue\n", "MakeDirectory=yes\nDirectoryMode=0700\n",
				"Unit=" + BreakglassService + "\n", "[Install]\nWantedBy=paths.target\n",
			} {
				if !strings.Contains(path, want) {
					t.Errorf("the path unit lacks %q", want)
				}
			}
			lines := strings.Split(svc, "\n")
			for _, want := range append([]string{
				"Type=oneshot", "ExecStart=/usr/bin/proxmox-mcp breakglass run --config /etc/proxmox-mcp/config.hujson",
				"StateDirectory=proxmox-mcp-helper", "StateDirectoryMode=0700", "UMask=0077",
				"SyslogIdentifier=proxmox-mcp-breakglass", "ProtectSystem=strict", "PrivateNetwork=yes",
				"RestrictAddressFamilies=AF_UNIX", "NoNewPrivileges=yes",
			}, tc.want...) {
				if !slices.Contains(lines, want) {
					t.Errorf("the service lacks the line %q", want)
				}
			}
			for _, bad := range append([]string{"\n[Install]", "\nRestrictSUIDSGID=", "\nRemainAfterExit="}, tc.unwanted...) {
				if strings.Contains(svc, bad) {
					t.Errorf("the service has %q:\n%s", bad, svc)
				}
			}

			analyze := requireAnalyze(t)
			dir := t.TempDir()
			bin := filepath.Join(dir, "proxmox-mcp")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			o := tc.o
			o.Binary = bin
			units, err = breakglassUnits(t, o)
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
			t.Logf("%s (%s): exposure %.1f", BreakglassService, tc.name, score)
			if score > 2.0 {
				t.Errorf("exposure %.1f, want at most 2.0:\n%s", score, out)
			}
		})
	}
}

// The queue is the helper's StateDirectory='s, as host.BreakglassDir
// names it: the state directory's name with -helper under /var/lib, and
// proxmox-mcp-helper for a state directory elsewhere.
func TestBreakglassQueue(t *testing.T) {
	for _, tc := range []struct{ stateDir, want string }{
		{"", "/var/lib/proxmox-mcp-helper/breakglass/queue"},
		{"/var/lib/pmcp", "/var/lib/pmcp-helper/breakglass/queue"},
		{"/var/lib/a/b", "/var/lib/proxmox-mcp-helper/breakglass/queue"},
		{"/srv/pmcp", "/var/lib/proxmox-mcp-helper/breakglass/queue"},
	} {
		units, err := breakglassUnits(t, UnitOptions{Mode: "local", StateDir: tc.stateDir})
		if err != nil {
			t.Fatal(err)
		}
		if want := "DirectoryNotEmpty=" + tc.want + "\n"; !strings.Contains(string(units[0].Data), want) {
			t.Errorf("state directory %q: the path unit lacks %q:\n%s", tc.stateDir, want, units[0].Data)
		}
		helper := strings.TrimSuffix(strings.TrimPrefix(tc.want, "/var/lib/"), "/breakglass/queue")
		if want := "StateDirectory=" + helper + "\n"; !strings.Contains(string(units[1].Data), want) {
			t.Errorf("state directory %q: the service lacks %q", tc.stateDir, want)
		}
	}
}

func TestRenderRefusesBadProtected(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    UnitOptions
		want string
	}{
		{"root", UnitOptions{Mode: "local", ProtectedPaths: []string{"/"}}, `units: protected path "/": want an absolute, clean path without spaces, quotes or specifiers, not /`},
		{"relative", UnitOptions{Mode: "local", ProtectedPaths: []string{"srv/models"}}, `units: protected path "srv/models"`},
		{"unclean", UnitOptions{Mode: "local", ProtectedPaths: []string{"/srv/models/"}}, `units: protected path "/srv/models/"`},
		{"space", UnitOptions{Mode: "local", ProtectedPaths: []string{"/srv/my models"}}, `units: protected path "/srv/my models"`},
		{"quote", UnitOptions{Mode: "local", ProtectedPaths: []string{`/srv/"models"`}}, `units: protected path "/srv/\"models\""`},
		{"specifier", UnitOptions{Mode: "local", ProtectedPaths: []string{"/srv/%H"}}, `units: protected path "/srv/%H"`},
		{"volume id", UnitOptions{Mode: "local", ProtectedVolumes: []string{"local-lvm:vm-100-disk-0"}}, `units: protected volume "local-lvm:vm-100-disk-0": want an LV as vg/lv`},
		{"no lv", UnitOptions{Mode: "local", ProtectedVolumes: []string{"pve/"}}, `units: protected volume "pve/"`},
		{"dash", UnitOptions{Mode: "local", ProtectedVolumes: []string{"-pve/models"}}, `units: protected volume "-pve/models"`},
		{"three", UnitOptions{Mode: "local", ProtectedVolumes: []string{"pve/models/x"}}, `units: protected volume "pve/models/x"`},
		{"space in lv", UnitOptions{Mode: "local", ProtectedVolumes: []string{"pve/my models"}}, `units: protected volume "pve/my models"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.o)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err %v, want %q…", err, tc.want)
			}
		})
	}
}

// breakglassUnits are the runner's path unit and service of what Render
// renders, in that order.
func breakglassUnits(t *testing.T, o UnitOptions) ([]Unit, error) {
	t.Helper()
	all, err := Render(o)
	if err != nil {
		return nil, err
	}
	var out []Unit
	for _, u := range all {
		if u.Name == BreakglassPath || u.Name == BreakglassService {
			out = append(out, u)
		}
	}
	if len(out) != 2 || out[0].Name != BreakglassPath {
		t.Fatalf("Render gave %d break-glass units", len(out))
	}
	return out, nil
}
