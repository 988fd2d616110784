package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

func TestMain(m *testing.M) {
	// The scripts start this binary some 200 times; built with -race, each
	// start would sleep a second as it exits (the race runtime's
	// atexit_sleep_ms), 67 s of the package's 92 s. testscript passes
	// GORACE on to the commands; one set by whoever runs the tests wins.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=10 "+g))
	}
	testscript.Main(m, map[string]func(){
		"proxmox-mcp": main,
	})
}

// TestScripts runs the CLI scripts in testdata/script. $FIXTURES points at
// ../shared/fixtures; scripts that need it start with [!fixtures] skip.
func TestScripts(t *testing.T) {
	fixtures, _ := filepath.Abs("../../../shared/fixtures")
	_, statErr := os.Stat(fixtures)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// expand FILE...: replace $WORK and other variables in files
			// (txtar file bodies are not expanded).
			"expand": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) == 0 {
					ts.Fatalf("usage: expand FILE...")
				}
				for _, f := range args {
					ts.Check(os.WriteFile(ts.MkAbs(f), []byte(os.Expand(ts.ReadFile(f), ts.Getenv)), 0o600))
				}
			},
			// simulator CONFIG: start the PVE simulator (the built-in demo
			// schema, fast tasks) for the rest of the script, and write a
			// daemon configuration for it to CONFIG: state in
			// $WORK/state, the tier tokens in $WORK/tokens, writes allowed.
			"simulator": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: simulator CONFIG")
				}
				ts.Check(startSimulator(ts, ts.MkAbs(args[0])))
			},
			// waitfor URL: poll URL until it answers 200 (10 s at most).
			"waitfor": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: waitfor URL")
				}
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					resp, err := http.Get(args[0])
					if err == nil {
						resp.Body.Close()
						if resp.StatusCode == http.StatusOK {
							return
						}
					}
					if time.Now().After(deadline) {
						ts.Fatalf("%s did not answer 200 within 10 s: %v", args[0], err)
					}
				}
			},
			// keyfile FILE: write the key the last command printed to FILE.
			"keyfile": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: keyfile FILE")
				}
				k := regexp.MustCompile(`pmcp_[a-z2-7]{16}_[A-Za-z0-9_-]{43}`).FindString(ts.ReadFile("stdout"))
				if k == "" {
					ts.Fatalf("no key in the last command's output")
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(k+"\n"), 0o600))
			},
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "fixtures":
				return statErr == nil, nil
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, nil
		},
	})
}

func startSimulator(ts *testscript.TestScript, cfgPath string) error {
	metricsAddr, err := simulatorConfig(ts.Getenv("WORK"), cfgPath, ts.Defer)
	if err != nil {
		return err
	}
	ts.Setenv("METRICS", metricsAddr)
	return nil
}

// simulatorConfig starts the simulator until cleanup runs what it is
// given and writes the configuration startSimulator describes, in work;
// it returns the metrics listener's address.
func simulatorConfig(work, cfgPath string, cleanup func(func())) (metricsAddr string, err error) {
	reg, err := schema.Parse(sim.DemoSchema())
	if err != nil {
		return "", err
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: 1, TaskDuration: 0.05})
	if err != nil {
		return "", err
	}
	srv, err := sim.Listen(s, "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	cleanup(func() { stop(); <-done })
	apidoc := filepath.Join(work, "apidoc.js")
	if err := os.WriteFile(apidoc, sim.DemoSchema(), 0o644); err != nil {
		return "", err
	}
	// A port free now for the metrics listener, in $METRICS, for scripts
	// that run serve and ask it (status).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	metricsAddr = ln.Addr().String()
	ln.Close()
	tokDir := filepath.Join(work, "tokens")
	if err := os.MkdirAll(tokDir, 0o700); err != nil {
		return "", err
	}
	tokens := ""
	for _, tier := range config.Tiers() {
		tok, ok := s.Token("mcp@pve!" + tier)
		if !ok {
			return "", fmt.Errorf("the simulator has no %s token", tier)
		}
		path := filepath.Join(tokDir, tier)
		if err := os.WriteFile(path, []byte(tok.Secret+"\n"), 0o600); err != nil {
			return "", err
		}
		tokens += fmt.Sprintf("      %q: {\"id\": %q, \"secret_file\": %q},\n", tier, tok.ID, path)
	}
	cfg := fmt.Sprintf(`{
  "version": 1,
  "state_dir": %q,
  "schema": {"path": %q},
  "allow_mutations": true,
  "pve": {
    "url": %q,
    "fingerprint": %q,
    "tokens": {
%s    },
  },
  "listen": {"loopback": {"address": "127.0.0.1:0"}},
  "metrics": {"address": %q},
}
`, filepath.Join(work, "state"), apidoc, srv.URL, srv.Fingerprint, tokens, metricsAddr)
	return metricsAddr, os.WriteFile(cfgPath, []byte(cfg), 0o600)
}
