package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/tests/internal/gobuild"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes what the package's tests built once for all of them:
// the binary and the Debian package.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, p := range []string{binPath, debPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
	os.Exit(code)
}

// binary builds cmd/proxmox-mcp once per test run and returns its path. It
// is built as the Debian package builds it (no cgo, paths trimmed), so the
// end-to-end tests run the binary that ships and the package test
// (deb_test.go) finds every package already compiled.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pmcp-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "proxmox-mcp")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "../cmd/proxmox-mcp")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := gobuild.CombinedOutput(cmd)
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
