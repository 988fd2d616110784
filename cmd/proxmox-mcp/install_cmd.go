package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"

	"github.com/proxmox-mcp/proxmox-mcp/installer"
)

func installCommands() map[string]command {
	return map[string]command{
		"install":   {"install proxmox-mcp on this PVE 9 host, or upgrade or resume it (as root)", (*cli).install},
		"uninstall": {"remove what install made; --purge also its configuration, state and PVE user", (*cli).uninstall},
		"doctor":    {"check the installation: each problem with its fix", (*cli).doctor},
	}
}

// The environment install reads for unattended runs; flags win.
const (
	envMode        = "PMCP_SETUP_MODE"
	envLANHost     = "PMCP_LAN_HOST"
	envTSHostname  = "PMCP_TAILSCALE_HOSTNAME"
	envTSAuthKeyFn = "PMCP_TAILSCALE_AUTHKEY_FILE"
)

// listFlag is a flag that may be repeated and takes comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// hostFlags are the flags that pick the host: --root (hidden, for tests:
// a directory standing for /) and --verbose.
type hostFlags struct {
	root    *string
	verbose *bool
}

func addHostFlags(fs *flag.FlagSet) hostFlags {
	return hostFlags{
		root:    fs.String("root", "/", "the file system root (tests)"),
		verbose: fs.Bool("verbose", false, "log every command run and file written (never a secret)"),
	}
}

// system is the host to work on.
func (c *cli) system(h hostFlags) (*installer.System, error) {
	level := "warn"
	if *h.verbose {
		level = "debug"
	}
	s := installer.Host(c.logger(level))
	root := *h.root
	if root != "/" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--root: %s is not a directory", root)
		}
		s.Root, s.Run = abs, installer.ExecRunner{Root: abs}
	}
	return s, nil
}

// stdinIsTerminal reports whether someone can answer questions (a
// terminal, not /dev/null or a pipe).
func stdinIsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

func (c *cli) install(args []string) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	mode := fs.String("mode", "", "exposure: local, lan, tailscale or both ("+envMode+"); default: the installed mode")
	lanAddr := fs.String("lan-address", "", "the LAN listener: a private IP of this host, or IP:PORT (port 8443 when absent) ("+envLANHost+")")
	var lanNames listFlag
	fs.Var(&lanNames, "lan-name", "a DNS name LAN clients use (repeatable, or comma-separated)")
	tsHost := fs.String("tailscale-hostname", "", "the node's name on the tailnet ("+envTSHostname+"; default proxmox-mcp)")
	tsKey := fs.String("tailscale-authkey-file", "", "a file holding a Tailscale auth key ("+envTSAuthKeyFn+"); without one the node shows a login URL")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	hf := addHostFlags(fs)
	const synopsis = "proxmox-mcp install [--mode local|lan|tailscale|both] [--lan-address IP[:PORT]] [--lan-name NAME] " +
		"[--tailscale-hostname NAME] [--tailscale-authkey-file FILE] [--yes] [--verbose]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	env := func(flagName string, v *string, name string) {
		if !isFlagSet(fs, flagName) {
			if e, ok := os.LookupEnv(name); ok {
				*v = e
			}
		}
	}
	env("mode", mode, envMode)
	env("lan-address", lanAddr, envLANHost)
	env("tailscale-hostname", tsHost, envTSHostname)
	env("tailscale-authkey-file", tsKey, envTSAuthKeyFn)
	s, err := c.system(hf)
	if err != nil {
		return err
	}
	o := installer.Options{
		LANAddress: *lanAddr, LANNames: lanNames, TailscaleHostname: *tsHost, TailscaleAuthKeyFile: *tsKey,
		Version: version, Out: c.stdout,
	}
	if *mode != "" {
		m, err := installer.ParseMode(*mode)
		if err != nil {
			if !isFlagSet(fs, "mode") {
				return usagef("%s: %v", envMode, err)
			}
			return usagef("--mode: %v", err)
		}
		o.Mode = m
	}
	installed, err := installer.Installed(s)
	if err != nil {
		return err
	}
	tty := stdinIsTerminal()
	if o.Mode == "" && installed == "" {
		if !tty {
			return usagef("no exposure mode: set %s (local, lan, tailscale or both) or give --mode; stdin is not a terminal, so nothing is asked (usage: %s)", envMode, synopsis)
		}
		if err := askInstall(c.stdout, bufio.NewReader(os.Stdin), &o); err != nil {
			return err
		}
	}
	if tty && !*yes {
		what := "install proxmox-mcp"
		if installed != "" {
			what = "upgrade proxmox-mcp (mode " + string(installed) + ")"
		}
		if o.Mode != "" && installed != "" && o.Mode != installed {
			what = "change proxmox-mcp from mode " + string(installed) + " to " + string(o.Mode)
		} else if o.Mode != "" && installed == "" {
			what += " (mode " + string(o.Mode) + ")"
		}
		ok, err := confirm(c.stdout, bufio.NewReader(os.Stdin), what, true)
		if err != nil || !ok {
			return errors.Join(err, errors.New("nothing was changed"))
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the running binary is unknown: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("the running binary: %w", err)
	}
	o.Executable = exe
	return installer.Install(c.ctx, s, o)
}

// askInstall asks for the mode and what it needs.
func askInstall(w io.Writer, in *bufio.Reader, o *installer.Options) error {
	fmt.Fprint(w, `How should MCP clients reach this host?
  1) local      loopback only (127.0.0.1:8765): clients on this host, or over an SSH tunnel
  2) lan        also TLS on a private LAN address, with a local CA each client trusts once
  3) tailscale  also an embedded Tailscale node (no tailscaled needed)
  4) both       LAN and Tailscale
`)
	modes := installer.Modes()
	answer, err := ask(w, in, "Mode [1]: ", func(s string) error {
		if s == "" {
			return nil
		}
		for i, m := range modes {
			if s == fmt.Sprint(i+1) || s == string(m) {
				return nil
			}
		}
		return fmt.Errorf("answer 1 to 4, or local, lan, tailscale or both")
	})
	if err != nil {
		return err
	}
	o.Mode = installer.ModeLocal
	for i, m := range modes {
		if answer == fmt.Sprint(i+1) || answer == string(m) {
			o.Mode = m
		}
	}
	if o.Mode.LAN() {
		if o.LANAddress, err = ask(w, in, "LAN address (a private IP of this host; port 8443 unless given): ", func(s string) error {
			_, err := installer.NormalizeLANAddress(s)
			return err
		}); err != nil {
			return err
		}
		names, err := ask(w, in, "DNS names LAN clients use, comma-separated (empty: the host name only): ", func(string) error { return nil })
		if err != nil {
			return err
		}
		var l listFlag
		_ = l.Set(names)
		o.LANNames = l
	}
	if o.Mode.Tailnet() {
		if o.TailscaleHostname, err = ask(w, in, "Tailscale node name [proxmox-mcp]: ", func(string) error { return nil }); err != nil {
			return err
		}
		if o.TailscaleAuthKeyFile, err = ask(w, in, "Tailscale auth key file (empty: log in with the URL shown after the start): ", func(s string) error {
			if s != "" && !filepath.IsAbs(s) {
				return fmt.Errorf("give an absolute path")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// ask reads one answer, asking again (three times in all) while check
// refuses it.
func ask(w io.Writer, in *bufio.Reader, prompt string, check func(string) error) (string, error) {
	for range 3 {
		fmt.Fprint(w, prompt)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("no answer (%v): nothing was changed", err)
		}
		line = strings.TrimSpace(line)
		if err := check(line); err != nil {
			fmt.Fprintf(w, "  %v\n", err)
			continue
		}
		return line, nil
	}
	return "", errors.New("no usable answer: nothing was changed")
}

// confirm asks a yes/no question.
func confirm(w io.Writer, in *bufio.Reader, what string, def bool) (bool, error) {
	hint := "[Y/n]"
	if !def {
		hint = "[y/N]"
	}
	a, err := ask(w, in, fmt.Sprintf("%s? %s ", strings.ToUpper(what[:1])+what[1:], hint), func(s string) error {
		switch strings.ToLower(s) {
		case "", "y", "yes", "n", "no":
			return nil
		}
		return fmt.Errorf("answer y or n")
	})
	if err != nil {
		return false, err
	}
	switch strings.ToLower(a) {
	case "y", "yes":
		return true, nil
	case "n", "no":
		return false, nil
	}
	return def, nil
}

func (c *cli) uninstall(args []string) error {
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	purge := fs.Bool("purge", false, "also remove the configuration, the state (keys, policies, journal), the PVE user with its tokens and the system user")
	yes := fs.Bool("yes", false, "do not ask for confirmation (needed when stdin is not a terminal)")
	hf := addHostFlags(fs)
	const synopsis = "proxmox-mcp uninstall [--purge] [--yes] [--verbose]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	s, err := c.system(hf)
	if err != nil {
		return err
	}
	installed, err := installer.Installed(s)
	if err != nil {
		return err
	}
	if installed != "" && !*yes {
		what := "stop proxmox-mcp and remove its units (keeping its configuration, state and PVE user)"
		if *purge {
			what = "remove proxmox-mcp with its configuration, keys, policies, journal, PVE user and tokens, and system user"
		}
		if !stdinIsTerminal() {
			return usagef("uninstall would %s: confirm with --yes (stdin is not a terminal) (usage: %s)", what, synopsis)
		}
		ok, err := confirm(c.stdout, bufio.NewReader(os.Stdin), what, false)
		if err != nil || !ok {
			return errors.Join(err, errors.New("nothing was changed"))
		}
	}
	return installer.Uninstall(c.ctx, s, installer.UninstallOptions{Purge: *purge, Out: c.stdout})
}

// errProblems is doctor's exit status 1 when it found problems; they are
// already printed.
var errProblems = errors.New("problems found")

func (c *cli) doctor(args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	hf := addHostFlags(fs)
	const synopsis = "proxmox-mcp doctor [--json] [--verbose]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	s, err := c.system(hf)
	if err != nil {
		return err
	}
	rep, err := installer.Doctor(c.ctx, s)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(c, rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(c.stdout)
	}
	if !rep.OK {
		return fmt.Errorf("%w: %d (see above)", errProblems, rep.Problems())
	}
	return nil
}
