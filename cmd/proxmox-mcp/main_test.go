package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
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
		},
		Condition: func(cond string) (bool, error) {
			if cond == "fixtures" {
				return statErr == nil, nil
			}
			return false, nil
		},
	})
}
