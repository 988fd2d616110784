package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// Asking any command for help prints its synopsis and flags and does
// nothing else: the manual page asks every command, and an operator who
// types "proxmox-mcp COMMAND -h" must never see it act.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for name, cmd := range commands() {
		for _, args := range [][]string{
			append(strings.Fields(name), "-h"),
			append(strings.Fields(name), "--help"),
			append([]string{"help"}, strings.Fields(name)...),
		} {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			if code != 0 || stderr.Len() != 0 {
				t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
				continue
			}
			want := "usage: proxmox-mcp " + name
			if !strings.HasPrefix(stdout.String(), want) {
				t.Errorf("%q: stdout starts %q, want %q", args, firstLine(stdout.String()), want)
			}
			if !strings.Contains(stdout.String(), cmd.summary) {
				t.Errorf("%q: help lacks the summary %q", args, cmd.summary)
			}
		}
	}
}

func TestHelpListsFlagsWithTheirArguments(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"help", "audit", "tail"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		"usage: proxmox-mcp audit tail [",
		"\n  --journal FILE\n",
		"\n  --state-dir DIR\n",
		"\n  -n N\n",
		"(default 20)",
		"\n  --follow\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help audit tail lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestManPage(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"help", "--man"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page := stdout.String()
	if !strings.Contains(page, `.TH PROXMOX\-MCP 1 "2026\-01\-01" "proxmox\-mcp `+version+`"`) {
		t.Errorf("manual page header: %q", firstLines(page, 2))
	}
	for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "FILES", "ENVIRONMENT", "EXIT STATUS", "SEE ALSO"} {
		if !strings.Contains(page, "\n.SH "+sec+"\n") {
			t.Errorf("manual page lacks section %s", sec)
		}
	}
	for name := range commands() {
		if !strings.Contains(page, "\n.SS "+roffArg(name)+"\n") {
			t.Errorf("manual page lacks command %s", name)
		}
	}
	for _, want := range []string{`.BI "\-\-expires" " WHEN"`, `.BI "\-n" " N"`, `.B "\-\-force"`} {
		if !strings.Contains(page, want) {
			t.Errorf("manual page lacks %s", want)
		}
	}
	for i, line := range strings.Split(strings.TrimSuffix(page, "\n"), "\n") {
		if line == "" {
			t.Errorf("line %d is empty (a blank line in roff is a paragraph break)", i+1)
		}
	}
	// Asked twice, the page is the same: the package build is reproducible.
	var again bytes.Buffer
	run(context.Background(), []string{"help", "--man"}, &again, &stderr)
	if again.String() != page {
		t.Error("two runs of help --man differ")
	}

	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("groff is not installed: the page is not rendered")
		return
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = strings.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, out)
	}
}

func TestManPageRefusesABadSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"help", "--man"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "SOURCE_DATE_EPOCH") {
		t.Errorf("stderr %q does not name SOURCE_DATE_EPOCH", stderr.String())
	}
}

func TestRoffEscaping(t *testing.T) {
	for in, want := range map[string]string{
		`a\b`:        `a\eb`,
		"--json":     `\-\-json`,
		".hidden":    `\&.hidden`,
		"'quoted'":   `\&'quoted'`,
		"plain text": "plain text",
	} {
		if got := roffText(in); got != want {
			t.Errorf("roffText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := roffArg(`say "hi"`); got != `"say \(dqhi\(dq"` {
		t.Errorf("roffArg = %q", got)
	}
}

func firstLine(s string) string { return firstLines(s, 1) }

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
