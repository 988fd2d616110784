package main

import (
	"os"
	"strings"
	"testing"
)

// TestCLIDocListsEveryCommand: docs/cli.md has a row for every command
// of the table, and none that is not one.
func TestCLIDocListsEveryCommand(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := commands()
	rows := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
			rows[name] = true
			if _, ok := cmds[name]; !ok {
				t.Errorf("docs/cli.md lists %q, which is no command", name)
			}
		}
	}
	for name := range cmds {
		if !rows[name] {
			t.Errorf("docs/cli.md has no row for %q", name)
		}
	}
}
