package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/proxmox-mcp once per test run and returns its path.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pmcp-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "proxmox-mcp")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/proxmox-mcp").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build proxmox-mcp: %v", buildErr)
	}
	return binPath
}

// fixture returns a path under ../shared/fixtures or skips the test.
func fixture(t testing.TB, rel string) string {
	t.Helper()
	p, _ := filepath.Abs(filepath.Join("../../shared/fixtures", rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", p)
	}
	return p
}
