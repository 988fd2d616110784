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

// The cluster sync's unit is rendered only in cluster mode; it is a
// golden file like the others, verifies cleanly and keeps the exposure
// score of the other root unit at or under 2.0.
func TestClusterUnit(t *testing.T) {
	without, err := Render(UnitOptions{Mode: "local"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range without {
		if u.Name == ClusterUnit {
			t.Fatal("the cluster unit is rendered without cluster mode")
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "proxmox-mcp")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var unit []byte
	for _, o := range []UnitOptions{{Mode: "local", Cluster: true}, {Mode: "local", Cluster: true, Binary: bin}} {
		units, err := Render(o)
		if err != nil {
			t.Fatal(err)
		}
		var found []byte
		for _, u := range units {
			if u.Name == ClusterUnit && u.Dir == UnitDir {
				found = u.Data
			}
		}
		if found == nil {
			t.Fatalf("Render(%+v) has no %s", o, ClusterUnit)
		}
		if o.Binary == "" {
			golden := filepath.Join("testdata", "cluster", ClusterUnit)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, found, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(found, want) {
				t.Errorf("%s differs from %s (run with -update and review the diff):\n%s", ClusterUnit, golden, found)
			}
			continue
		}
		unit = found
	}
	analyze := requireAnalyze(t)
	path := filepath.Join(dir, ClusterUnit)
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command(analyze, "security", "--offline=yes", "--no-pager", path).CombinedOutput()
	m := exposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in the output (%v):\n%s", err, out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("%s: exposure %.1f", ClusterUnit, score)
	if score > 2.0 {
		t.Errorf("exposure %.1f, want at most 2.0:\n%s", score, strings.TrimSpace(string(out)))
	}
}
