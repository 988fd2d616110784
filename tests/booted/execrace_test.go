package booted

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/tests/internal/gobuild"
)

// installExecrace builds tests/booted/execrace and copies it into the
// container.
func (c *Container) installExecrace(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "execrace")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./tests/booted/execrace")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gobuild.CombinedOutput(cmd); err != nil {
		t.Fatal(&buildError{"go build ./tests/booted/execrace", err, out})
	}
	c.CopyFile(bin, "/usr/local/bin/execrace", 0o755)
}

// execraceReport is what execrace prints.
type execraceReport struct {
	Runs  int            `json:"runs"`
	Bad   int            `json:"bad"`
	Ends  map[string]int `json:"ends"`
	First []string       `json:"first"`
	P50MS float64        `json:"p50_ms"`
	P90MS float64        `json:"p90_ms"`
}

// TestBootedExecStartRace: a command that exits at once, run by the real
// host.Services.Exec under systemd 257 hundreds of times while the node
// is busy, always comes back with its own exit status. With Type=exec and
// PrivatePIDs=yes, systemd 257 handled the exec-fd event of such a unit
// before the SIGCHLD of its main process, which it supervises as "not our
// child" (the grandchild forked into the new PID namespace), found that
// process a zombie, stopped the unit with SIGKILL to it and recorded no
// exit status: 19 of 1000 runs of `true` came back with no exit code, and
// `false` as a success (docs/benchmarks.md, the root helper). Systemd's
// own exit statuses still tell a sandbox that could not start the
// program from a program's status.
func TestBootedExecStartRace(t *testing.T) {
	t.Parallel()
	c := Boot(t, rootfs(t), Options{})
	c.installExecrace(t)
	run := func(t *testing.T, args ...string) execraceReport {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		res := c.Run(ctx, append([]string{"execrace"}, args...)...)
		var rep execraceReport
		if !res.OK() || json.Unmarshal([]byte(res.Stdout), &rep) != nil {
			t.Fatalf("execrace %v: %s", args, res)
		}
		if rep.Bad > 0 {
			msg := ""
			if m := regexp.MustCompile(`proxmox-mcp-exec-[0-9a-f]+\.service`).FindString(strings.Join(rep.First, "\n")); m != "" {
				msg = "\njournal of " + m + ":\n" + c.Journal("-u", m, "-o", "short-precise")
			}
			t.Errorf("execrace %v: %d of %d runs ended otherwise: %v\n%s%s", args, rep.Bad, rep.Runs, rep.Ends, strings.Join(rep.First, "\n"), msg)
		}
		return rep
	}
	t.Run("true under load", func(t *testing.T) {
		rep := run(t, "-n", "300", "-load", "2")
		t.Logf("true, %d runs through host.Services.Exec beside 2 busy loops: %d without exit 0 (%v); p50 %.1f ms, p90 %.1f ms", rep.Runs, rep.Bad, rep.Ends, rep.P50MS, rep.P90MS)
	})
	t.Run("false under load", func(t *testing.T) {
		rep := run(t, "-n", "100", "-load", "2", "-want", "exit 1", "/usr/bin/false")
		t.Logf("false, %d runs beside 2 busy loops: %d without exit 1 (%v)", rep.Runs, rep.Bad, rep.Ends)
	})
	t.Run("systemd's own statuses", func(t *testing.T) {
		// A working directory that is not there: systemd's 200/CHDIR,
		// before the program; a program's own 200 is the program's.
		run(t, "-n", "3", "-cwd", "/nonexistent", "-want", "exit 200 (200/CHDIR)")
		run(t, "-n", "3", "-want", "exit 200", "/bin/sh", "-c", "exit 200")
		// An execve that fails after the hand-off (no #! line).
		c.WriteFile("/usr/local/bin/noshebang", []byte("true\n"), 0o755)
		run(t, "-n", "3", "-want", "exit 203 (203/EXEC)", "/usr/local/bin/noshebang")
	})
}
