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
	"time"
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

// TestZshCompletion loads the zsh script into a real zsh (zsh -f,
// compinit), both as the .deb installs it (the file _proxmox-mcp on
// $fpath, autoloaded by the first completion) and sourced, and presses
// Tab once in a fresh interactive shell on a pseudo-terminal (zsh's own
// zpty): the matches zsh's completion system offers are recorded by a
// wrapper around compadd.
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		if os.Getenv("PMCP_REQUIRE_E2E") == "1" {
			t.Fatal("zsh is needed (apt-get install zsh)")
		}
		t.Skip("no zsh here (apt-get install zsh): the zsh script is checked against its golden file only")
	}
	var script, errb bytes.Buffer
	if code := run(context.Background(), []string{"completion", "zsh"}, &script, &errb); code != 0 {
		t.Fatalf("completion zsh: exit %d: %s", code, errb.String())
	}
	dir := t.TempDir()
	fpathDir := filepath.Join(dir, "vendor-completions")
	if err := os.Mkdir(fpathDir, 0o755); err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(fpathDir, "_proxmox-mcp")
	if err := os.WriteFile(installed, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The driver: an interactive zsh on a pseudo-terminal sources the
	// setup, says it is ready, gets the line and a Tab, and says when
	// the completion is over (comppostfuncs).
	driver := filepath.Join(dir, "drive.zsh")
	if err := os.WriteFile(driver, []byte(`zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "source ${(q)1}"
zpty -r z line '*READY-MARK*' || exit 4
zpty -w -n z "$2"$'\t'
zpty -r z line '*DONE-MARK*' || exit 5
zpty -d z
`), 0o644); err != nil {
		t.Fatal(err)
	}
	layouts := []struct {
		name, load, want string // want: the function _comps names
		cases            int    // how many of the cases (0: all)
	}{
		{"installed on fpath", "fpath=(" + shellQuote(fpathDir) + " $fpath)\nautoload -U compinit && compinit -u -D\n", "_proxmox-mcp", 0},
		{"sourced", "autoload -U compinit && compinit -u -D\nsource " + shellQuote(installed) + "\n", "_proxmox_mcp", 1},
	}
	cases := []struct {
		line string // typed, then Tab
		want []string
		not  []string
	}{
		{"proxmox-mcp st", []string{"status", "stdio"}, []string{"serve"}},
		{"proxmox-mcp key ", []string{"create", "list", "revoke", "rotate", "show"}, []string{"status"}},
		{"proxmox-mcp key create --p", []string{"--profile", "--policy"}, []string{"--name"}},
		{"proxmox-mcp key create --profile ", []string{"read-only", "operator", "admin", "root"}, nil},
		{"proxmox-mcp tools call x --output-format j", []string{"json", "json-pretty"}, []string{"text"}},
	}
	for _, l := range layouts {
		for i, c := range cases {
			if l.cases > 0 && i >= l.cases {
				break
			}
			run := filepath.Join(dir, strings.ReplaceAll(l.name, " ", "-")+"-"+strconv.Itoa(i))
			hits, defined := run+".hits", run+".defined"
			setup := run + ".setup.zsh"
			prog := "PROMPT=''\nRPROMPT=''\n" + l.load +
				"print -r -- \"${_comps[proxmox-mcp]}\" > " + shellQuote(defined) + "\n" +
				// Record what each compadd would add (a call that only asks,
				// with -O, -A or -D, is zsh's own and passes through).
				"compadd() {\n" +
				"\tif [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd \"$@\"; return; fi\n" +
				"\tlocal -a __m\n\tbuiltin compadd -O __m \"$@\"\n" +
				"\t(( $#__m )) && print -rl -- $__m >> " + shellQuote(hits) + "\n" +
				"\tbuiltin compadd \"$@\"\n}\n" +
				"_pmcp_done() { print -r -- 'DONE''-MARK' }\ncomppostfuncs=(_pmcp_done)\n" +
				"bindkey '^I' complete-word\nprint -r -- 'READY''-MARK'\n"
			if err := os.WriteFile(setup, []byte(prog), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, zsh, "-f", driver, setup, c.line)
			cmd.Env = []string{"HOME=" + dir, "TERM=xterm", "PATH=" + os.Getenv("PATH")}
			cmd.WaitDelay = time.Second
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s, %q: zsh: %v\n%s", l.name, c.line, err, out)
			}
			d, err := os.ReadFile(defined)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(d)); got != l.want {
				t.Errorf("%s: compinit registers %q for proxmox-mcp, want %q", l.name, got, l.want)
			}
			h, err := os.ReadFile(hits)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, w := range strings.Fields(string(h)) {
				got[w] = true
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("%s, %q then Tab: %q not offered (got %q)", l.name, c.line, w, h)
				}
			}
			for _, w := range c.not {
				if got[w] {
					t.Errorf("%s, %q then Tab: %q offered (got %q)", l.name, c.line, w, h)
				}
			}
		}
	}
}
