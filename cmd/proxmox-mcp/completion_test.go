package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden completion scripts")

// TestCompletionGolden: the scripts completion prints are the golden
// files (go test -run TestCompletionGolden -update rewrites them after a
// change of the command table).
func TestCompletionGolden(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"completion", shell}, &out, &errb); code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
		}
		golden := filepath.Join("testdata", "completion."+shell)
		if *update {
			if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("completion %s differs from %s (rerun with -update and read the diff)", shell, golden)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"completion", "fish"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `shell "fish": want bash or zsh`) {
		t.Errorf("completion fish: exit %d: %s", code, errb.String())
	}
}

// TestBashCompletion runs the bash script: command words, a group's
// subcommands, a command's flags, a flag's values.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		if os.Getenv("PMCP_REQUIRE_E2E") == "1" {
			t.Fatal("bash is needed")
		}
		t.Skip("no bash here")
	}
	script := filepath.Join("testdata", "completion.bash")
	for _, c := range []struct {
		line string // the words, the last one being completed
		want []string
		not  []string
	}{
		{"proxmox-mcp st", []string{"status", "stdio"}, []string{"serve"}},
		{"proxmox-mcp key ", []string{"create", "list", "revoke", "rotate", "show"}, nil},
		{"proxmox-mcp key create --p", []string{"--profile", "--policy"}, []string{"--name"}},
		{"proxmox-mcp key create --profile ", []string{"read-only", "operator", "admin", "root"}, nil},
		{"proxmox-mcp tools call x --output-format j", []string{"json", "json-pretty"}, []string{"text"}},
		{"proxmox-mcp status --", []string{"--config", "--json", "--state-dir", "--output-format"}, []string{"--key-file", "-n"}},
		{"proxmox-mcp status -", []string{"-n", "--json", "-h"}, nil},
		{"proxmox-mcp call get /nodes --key-", []string{"--key-file"}, nil},
		{"proxmox-mcp help ke", []string{"key"}, nil},
	} {
		words := strings.Split(c.line, " ")
		var arr strings.Builder
		for _, w := range words {
			arr.WriteString(" " + shellQuote(w))
		}
		prog := "source " + shellQuote(script) + "\nCOMP_WORDS=(" + arr.String() + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_proxmox_mcp\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", c.line, err, out)
		}
		got := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got[l] = true
		}
		for _, w := range c.want {
			if !got[w] {
				t.Errorf("%q: %q not offered (got %q)", c.line, w, out)
			}
		}
		for _, w := range c.not {
			if got[w] {
				t.Errorf("%q: %q offered (got %q)", c.line, w, out)
			}
		}
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
