package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/installer"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// helpRequest is what parse returns for -h or --help: the command's
// synopsis and flags. run prints it; the manual page is made of them.
// Every command parses its flags before it does anything else, so asking
// any command for help never acts (TestEveryCommandAnswersHelp).
type helpRequest struct {
	synopsis string
	flags    *flag.FlagSet
}

func (helpRequest) Error() string { return "help requested" }
func (helpRequest) Unwrap() error { return flag.ErrHelp }

// flagHelp is one flag as the help and the manual page show it.
type flagHelp struct {
	name, arg, usage, def string
	quote                 bool // the default is a string
}

// dashed is the flag as it is typed: -n, --state-dir.
func (f flagHelp) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// options lists the command's flags in name order, with the argument
// name the synopsis gives them (--expires WHEN) or one derived from the
// flag's type.
func (h helpRequest) options() []flagHelp {
	var out []flagHelp
	h.flags.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		fh := flagHelp{name: f.Name, usage: usage, quote: kind == "string"}
		if kind != "" {
			fh.arg = argName(h.synopsis, f.Name, kind)
		}
		if !isZeroDefault(f) {
			fh.def = f.DefValue
		}
		out = append(out, fh)
	})
	return out
}

// argName is the placeholder of --name's value: the word after it in the
// synopsis, else one made from the flag's name or type.
func argName(synopsis, name, kind string) string {
	re := regexp.MustCompile(`-` + regexp.QuoteMeta(name) + `[ =]([A-Z][A-Z0-9_.|]*)`)
	if m := re.FindStringSubmatch(synopsis); m != nil {
		return m[1]
	}
	switch {
	case kind == "int" || kind == "uint" || kind == "int64" || kind == "uint64":
		return "N"
	case kind != "string":
		return strings.ToUpper(kind)
	case name == "config" || strings.HasSuffix(name, "file"):
		return "FILE"
	case strings.HasSuffix(name, "dir"):
		return "DIR"
	}
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s":
		return true
	}
	return false
}

// print writes the command's help: synopsis, summary and flags.
func (h helpRequest) print(w io.Writer, summary string) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", h.synopsis, summary)
	opts := h.options()
	if len(opts) == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	for _, o := range opts {
		head := "  " + o.dashed()
		if o.arg != "" {
			head += " " + o.arg
		}
		fmt.Fprintln(w, head)
		text := o.usage
		switch {
		case o.def != "" && o.quote:
			text += " (default " + strconv.Quote(o.def) + ")"
		case o.def != "":
			text += " (default " + o.def + ")"
		}
		fmt.Fprintf(w, "        %s\n", text)
	}
}

// commandHelp asks a command for its help without letting it act: it
// runs with "-h", a cancelled context and discarded output. A command
// that does not answer with a helpRequest gets a synopsis of its name.
func commandHelp(name string, cmd command) helpRequest {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := cmd.run(&cli{ctx: ctx, stdout: io.Discard, stderr: io.Discard}, []string{"-h"})
	var h helpRequest
	if errors.As(err, &h) {
		return h
	}
	return helpRequest{synopsis: "proxmox-mcp " + name, flags: flag.NewFlagSet(name, flag.ContinueOnError)}
}

// manDate is the manual page's date: SOURCE_DATE_EPOCH when it is set (a
// reproducible build), else today.
func manDate() (string, error) {
	t := time.Now()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since 1970", s)
		}
		t = time.Unix(sec, 0)
	}
	return t.UTC().Format("2006-01-02"), nil
}

// man writes the manual page proxmox-mcp(1) in roff (man(7)). Everything
// about the commands comes from the commands themselves: the page cannot
// drift from the binary it describes.
func (c *cli) man(cmds map[string]command, version string) error {
	date, err := manDate()
	if err != nil {
		return err
	}
	w := bufio.NewWriter(c.stdout)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)

	fmt.Fprintln(w, `.\" proxmox-mcp(1), written by "proxmox-mcp help --man": do not edit.`)
	fmt.Fprintf(w, ".TH PROXMOX\\-MCP 1 %s %s \"User Commands\"\n", roffArg(date), roffArg("proxmox-mcp "+version))
	fmt.Fprintln(w, ".SH NAME")
	fmt.Fprintln(w, `proxmox\-mcp \- MCP server for Proxmox VE, with its key, policy and audit tools`)
	fmt.Fprintln(w, ".SH SYNOPSIS")
	fmt.Fprintln(w, ".B proxmox\\-mcp\n.I command\n.RI [ arguments ]\n.br\n.B proxmox\\-mcp help\n.RI [ command ]")
	fmt.Fprintln(w, ".SH DESCRIPTION")
	for i, p := range manDescription {
		if i > 0 {
			fmt.Fprintln(w, ".PP")
		}
		fmt.Fprintln(w, roffText(p))
	}
	fmt.Fprintln(w, ".SH COMMANDS")
	for _, n := range names {
		h := commandHelp(n, cmds[n])
		fmt.Fprintf(w, ".SS %s\n", roffArg(n))
		fmt.Fprintf(w, ".B %s\n", roffArg(h.synopsis))
		fmt.Fprintln(w, ".PP")
		fmt.Fprintln(w, roffText(sentence(cmds[n].summary)))
		for _, o := range h.options() {
			fmt.Fprintln(w, ".TP")
			if o.arg != "" {
				fmt.Fprintf(w, ".BI %s \" %s\"\n", roffArg(o.dashed()), roffEscape(o.arg))
			} else {
				fmt.Fprintf(w, ".B %s\n", roffArg(o.dashed()))
			}
			text := sentence(o.usage)
			if o.def != "" {
				text += " Default: " + o.def + "."
			}
			fmt.Fprintln(w, roffText(text))
		}
	}
	fmt.Fprintln(w, ".SH FILES")
	for _, f := range manFiles() {
		fmt.Fprintf(w, ".TP\n.I %s\n%s\n", roffArg(f[0]), roffText(f[1]))
	}
	fmt.Fprintln(w, ".SH ENVIRONMENT")
	fmt.Fprintf(w, ".TP\n.B PMCP_KEY\n%s\n", roffText("The key proxmox-mcp stdio authenticates with when --key-file is not given."))
	fmt.Fprintf(w, ".TP\n.B SOURCE_DATE_EPOCH\n%s\n", roffText("The date of this manual page when help --man writes it."))
	fmt.Fprintln(w, ".SH EXIT STATUS")
	fmt.Fprintf(w, ".TP\n.B 0\n%s\n", roffText("Success, or help was asked for."))
	fmt.Fprintf(w, ".TP\n.B 1\n%s\n", roffText("The command failed; one line on standard error says why."))
	fmt.Fprintf(w, ".TP\n.B 2\n%s\n", roffText("The command line was wrong: an unknown command, flag or argument count."))
	fmt.Fprintln(w, ".SH SEE ALSO")
	fmt.Fprintln(w, ".BR systemctl (1),\n.BR journalctl (1),\n.BR systemd-sysusers (8),\n.BR pveum (1)")
	fmt.Fprintln(w, ".PP")
	fmt.Fprintln(w, roffText("The documentation of the project: "+docsURL))
	return w.Flush()
}

const docsURL = "https://github.com/proxmox-mcp/proxmox-mcp/tree/main/docs"

var manDescription = []string{
	"proxmox-mcp lets AI agents (MCP clients) operate a Proxmox VE host through the Proxmox API, " +
		"under Rego policies bound to per-person API keys, with a durable journal of every call. " +
		"It is one binary: the daemon (serve, stdio), the key, policy and audit tools, and the installer.",
	"The daemon runs as the unprivileged system user " + systemd.DefaultUser + " under systemd and is reachable over " +
		"loopback, a Tailnet or private-LAN TLS; every HTTP client sends its key as \"Authorization: Bearer KEY\". " +
		"Installing the Debian package starts nothing: proxmox-mcp install chooses the exposure and enables the service.",
	"Each command below prints its own help with proxmox-mcp help COMMAND or COMMAND -h.",
}

func manFiles() [][2]string {
	return [][2]string{
		{config.DefaultFile, "The configuration (HuJSON): listeners, PVE API tokens, tool mode and switches."},
		{config.DefaultPKIDir, "The local CA and the LAN server certificate (LAN exposure only)."},
		{config.DefaultStateDir, "The daemon's state: keys, policies, the journal and the schema cache."},
		{installer.InstallStateFile, "What proxmox-mcp install made, which uninstall removes; root's alone, out of the daemon's reach."},
		{systemd.UnitDir + "/" + systemd.ServiceUnit, "The service as the installer wrote it for the chosen exposure."},
		{"/usr/lib/systemd/system/" + systemd.ServiceUnit, "The service the Debian package ships (loopback only); the installer's unit overrides it."},
		{systemd.SysusersDir + "/" + systemd.SysusersFile, "The system user the daemon runs as (systemd-sysusers)."},
	}
}

// sentence starts s with a capital letter and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// roffEscape makes s safe inside a roff line: backslashes and dashes.
func roffEscape(s string) string {
	return strings.NewReplacer(`\`, `\e`, `-`, `\-`).Replace(s)
}

// roffArg is s as one quoted argument of a roff request.
func roffArg(s string) string {
	return `"` + strings.ReplaceAll(roffEscape(s), `"`, `\(dq`) + `"`
}

// roffText is s as a filled text line that no roff request can start.
func roffText(s string) string {
	s = roffEscape(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
