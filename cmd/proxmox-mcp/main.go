// Command proxmox-mcp is the MCP daemon for Proxmox VE and its CLI. main
// only parses the command line and wires packages; the work happens in them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli carries the context and output streams of one invocation.
type cli struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

// command is one "noun verb" of the CLI.
type command struct {
	summary string
	run     func(c *cli, args []string) error
}

// commands gathers the commands of every noun; each noun's file defines
// its own set.
func commands() map[string]command {
	all := map[string]command{
		"version": {"print the version", (*cli).version},
	}
	for _, set := range []map[string]command{
		schemaCommands(),
		simCommands(),
		serveCommands(),
		keyCommands(),
		policyCommands(),
		auditCommands(),
		pkiCommands(),
		unitsCommands(),
		installCommands(),
		clusterCommands(),
		helperCommands(),
		breakglassCommands(),
		toolsCommands(),
		statusCommands(),
		completionCommands(),
	} {
		for name, cmd := range set {
			all[name] = cmd
		}
	}
	return all
}

// errUsage marks errors that deserve the usage text and exit status 2.
var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (e usageError) Unwrap() error { return errUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" {
		args = []string{"version", "--verbose"}
	}
	if prettyRequested(args) {
		// --output-format json-pretty (cli_output.go).
		pw := &indentWriter{w: stdout}
		defer pw.Flush() //nolint:errcheck // stdout's own errors are the command's
		stdout = pw
	}
	c := &cli{ctx: ctx, stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) >= 2 && args[0] == "help" {
		if args[1] == "--man" && len(args) == 2 {
			// The manual page proxmox-mcp(1), in roff; the package ships it.
			if err := c.man(cmds, version); err != nil {
				fmt.Fprintf(stderr, "proxmox-mcp help: %s\n", oneLine(err.Error()))
				return 1
			}
			return 0
		}
		// help COMMAND is COMMAND -h.
		args = append(slices.Clone(args[1:]), "-h")
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		c.usage(cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	name, rest := args[0], args[1:]
	if _, ok := cmds[name]; !ok && len(args) > 1 {
		name, rest = args[0]+" "+args[1], args[2:]
	}
	cmd, ok := cmds[name]
	if group := groupOf(cmds, args[0]); !ok && len(group) > 0 {
		// A bare group lists its commands, as pveum does.
		switch {
		case len(args) == 1:
			c.groupUsage(stdout, cmds, args[0], group)
			return 2
		case args[1] == "-h" || args[1] == "--help" || args[1] == "help":
			c.groupUsage(stdout, cmds, args[0], group)
			return 0
		}
		fmt.Fprintf(stderr, "proxmox-mcp: unknown command %q\n", strings.Join(args[:2], " "))
		c.groupUsage(stderr, cmds, args[0], group)
		return 2
	}
	if !ok {
		fmt.Fprintf(stderr, "proxmox-mcp: unknown command %q (run 'proxmox-mcp help')\n", strings.Join(args[:min(2, len(args))], " "))
		return 2
	}
	if err := cmd.run(c, rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var h helpRequest
			if errors.As(err, &h) {
				h.print(stdout, cmd.summary)
			}
			return 0
		}
		fmt.Fprintf(stderr, "proxmox-mcp %s: %s\n", name, oneLine(err.Error()))
		if errors.Is(err, errUsage) {
			return 2
		}
		if errors.As(err, new(errNotRunning)) {
			return 3
		}
		return 1
	}
	return 0
}

// oneLine keeps error output to one line: a script reads the first line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func (c *cli) usage(cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(c.stdout, "usage: proxmox-mcp COMMAND [ARGS]\n\ncommands:")
	for _, n := range names {
		fmt.Fprintf(c.stdout, "  %-14s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(c.stdout, "\n'proxmox-mcp help COMMAND' (or COMMAND -h) shows a command's arguments and flags.")
}

// parse parses flags that may come before, between or after positional
// arguments, and checks the number of positional arguments.
func parse(fs *flag.FlagSet, args []string, want int, synopsis string) ([]string, error) {
	fs.SetOutput(io.Discard)
	addOutputFormat(fs)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpRequest{synopsis: synopsis, flags: fs}
			}
			return nil, usagef("%v (usage: %s)", err, synopsis)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			positional = append(positional, args[1:]...)
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	if len(positional) != want {
		return nil, usagef("want %d argument(s), got %d (usage: %s)", want, len(positional), synopsis)
	}
	return positional, nil
}
