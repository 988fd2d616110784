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
		Condition: func(cond string) (bool, error) {
			if cond == "fixtures" {
				return statErr == nil, nil
			}
			return false, nil
		},
	})
}
