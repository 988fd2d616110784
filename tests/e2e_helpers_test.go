package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// The end-to-end tests that drive the daemon with outside clients (Node's
// official MCP SDKs, the MCP conformance suite) need Node and the npm
// packages of tests/e2e/node and tests/conformance. Without them they skip,
// saying how to install them; with PMCP_REQUIRE_E2E=1 (CI sets it) they
// fail instead, so that a CI run cannot pass by skipping them.
const installHint = "run `make e2e-deps` (npm ci in tests/e2e/node and tests/conformance; Node 20 or later on PATH)"

func requireE2E() bool { return os.Getenv("PMCP_REQUIRE_E2E") == "1" }

// missing skips the test, or fails it when end-to-end tests are required.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; " + installHint
	if requireE2E() {
		t.Fatalf("PMCP_REQUIRE_E2E=1 and %s", msg)
	}
	t.Skip(msg)
}

// nodeModules returns the absolute path of dir's node_modules after checking
// that every named package is installed there.
func nodeModules(t testing.TB, dir string, pkgs ...string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join(dir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(abs, filepath.FromSlash(p), "package.json")); err != nil {
			missing(t, "the npm package %s is not installed in %s", p, abs)
		}
	}
	return abs
}

// lookNode finds node on PATH and checks its major version.
func lookNode(t testing.TB, minMajor int) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	checkNodeVersion(t, node, minMajor)
	return node
}

func checkNodeVersion(t testing.TB, node string, minMajor int) {
	t.Helper()
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		missing(t, "%s --version: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	var major int
	if _, err := fmt.Sscanf(v, "v%d.", &major); err != nil || major < minMajor {
		missing(t, "%s is Node %s; Node %d or later is needed", node, v, minMajor)
	}
}

// process is a started server whose first stdout line was JSON.
type process struct {
	name   string
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

// startJSON starts proxmox-mcp with args; see startServer.
func startJSON(t testing.TB, v any, args ...string) *process {
	t.Helper()
	return startServer(t, binary(t), v, args...)
}

// startServer starts a server program with args, decodes the one JSON line
// it prints once ready into v, and stops it (SIGTERM, then kill) when the
// test ends; it must exit cleanly on SIGTERM.
func startServer(t testing.TB, bin string, v any, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{name: filepath.Base(bin), cmd: cmd, stderr: &lockedBuffer{}}
	if len(args) > 0 {
		p.name += " " + args[0]
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(t) })
	lines := make(chan []byte, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadBytes('\n')
		lines <- line
		io.Copy(io.Discard, stdout) //nolint:errcheck // drain until exit
	}()
	select {
	case line := <-lines:
		if err := json.Unmarshal(line, v); err != nil {
			t.Fatalf("%s: no ready line (%q): %v\nstderr:\n%s", p.name, line, err, p.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not ready after 30 s\nstderr:\n%s", p.name, p.stderr)
	}
	return p
}

func (p *process) stop(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s did not stop cleanly on SIGTERM: %v\nstderr:\n%s", p.name, err, p.stderr)
		}
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck // last resort
		<-done
		t.Errorf("%s did not stop within 15 s of SIGTERM\nstderr:\n%s", p.name, p.stderr)
	}
}

// lockedBuffer collects a process's stderr while a failing test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// demoInfo is the line `proxmox-mcp demo --json` prints once ready.
type demoInfo struct {
	URL     string `json:"url"`
	Key     string `json:"key"`
	Profile string `json:"profile"`
}

// startDemo runs `proxmox-mcp demo` (simulator and daemon on loopback) with
// a key of the profile.
func startDemo(t testing.TB, profile string) demoInfo {
	t.Helper()
	var d demoInfo
	startJSON(t, &d, "demo", "--json", "--listen", "127.0.0.1:0", "--profile", profile)
	if d.URL == "" || d.Key == "" || d.Profile != profile {
		t.Fatalf("demo ready line %+v: want a URL and a %s key", d, profile)
	}
	return d
}

// stdioHost is a simulated PVE host and a configuration with which
// `proxmox-mcp stdio` serves MCP over stdin and stdout.
type stdioHost struct {
	config   string
	stateDir string
}

// startStdioHost runs the simulator (`proxmox-mcp sim`) on the built-in demo
// schema and writes a daemon configuration that uses it with every tier's
// token, mutations allowed.
func startStdioHost(t testing.TB) stdioHost {
	t.Helper()
	return startStdioHostWith(t, sim.DemoSchema())
}

// startStdioHostWith is startStdioHost with another apidoc.js (the real
// PVE 9.1 schema, for measurements of what a host runs).
func startStdioHostWith(t testing.TB, schema []byte) stdioHost {
	t.Helper()
	dir := t.TempDir()
	apidoc := filepath.Join(dir, "apidoc.js")
	if err := os.WriteFile(apidoc, schema, 0o644); err != nil {
		t.Fatal(err)
	}
	var s struct {
		URL         string `json:"url"`
		Fingerprint string `json:"fingerprint"`
		Tokens      []struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		} `json:"tokens"`
	}
	startJSON(t, &s, "sim", "--json", "--listen", "127.0.0.1:0", "--apidoc", apidoc, "--task-duration", "0.5")
	tokens := map[string]any{}
	for _, tier := range []string{"read-only", "operator", "admin", "root"} {
		for _, tok := range s.Tokens {
			if tok.ID != "mcp@pve!"+tier {
				continue
			}
			secret := filepath.Join(dir, "token-"+tier)
			if err := os.WriteFile(secret, []byte(tok.Secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tokens[tier] = map[string]string{"id": tok.ID, "secret_file": secret}
		}
		if tokens[tier] == nil {
			t.Fatalf("the simulator printed no token for tier %s: %+v", tier, s.Tokens)
		}
	}
	h := stdioHost{config: filepath.Join(dir, "config.hujson"), stateDir: filepath.Join(dir, "state")}
	cfg, err := json.MarshalIndent(map[string]any{
		"version":         1,
		"state_dir":       h.stateDir,
		"schema":          map[string]string{"path": apidoc},
		"allow_mutations": true,
		"pve":             map[string]any{"url": s.URL, "fingerprint": s.Fingerprint, "tokens": tokens},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// key creates a key of the profile with `proxmox-mcp key create`.
func (h stdioHost) key(t testing.TB, name, profile string) string {
	t.Helper()
	out, err := exec.Command(binary(t), "key", "create", "--state-dir", h.stateDir, "--name", name, "--profile", profile, "--json").Output()
	if err != nil {
		t.Fatalf("key create: %v", err)
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		t.Fatalf("key create printed %s: %v", out, err)
	}
	return k.Key
}

// command is the argv of `proxmox-mcp stdio` for this host.
func (h stdioHost) command(t testing.TB) []string {
	return []string{binary(t), "stdio", "--config", h.config}
}

// run executes a command with a deadline, returning stdout; stderr goes to
// the test log when the command fails.
func run(ctx context.Context, t *testing.T, env []string, dir string, argv ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Logf("%s: %v\nstderr:\n%s", strings.Join(argv[:min(len(argv), 3)], " "), err, stderr.String())
	}
	return out, err
}

// environ is the test's environment with some variables replaced.
func environ(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}
