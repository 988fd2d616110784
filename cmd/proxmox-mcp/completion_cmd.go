package main

import (
	"flag"
	"sort"

	"github.com/proxmox-mcp/proxmox-mcp/completion"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

func completionCommands() map[string]command {
	return map[string]command{
		"completion": {"print the shell completion script for bash or zsh (the .deb installs both)", (*cli).completion},
	}
}

func (c *cli) completion(args []string) error {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	pos, err := parse(fs, args, 1, "proxmox-mcp completion bash|zsh")
	if err != nil {
		return err
	}
	table := completionTable(commands())
	switch pos[0] {
	case "bash":
		return completion.Bash(c.stdout, "proxmox-mcp", table)
	case "zsh":
		return completion.Zsh(c.stdout, "proxmox-mcp", table)
	}
	return usagef("shell %q: want bash or zsh", pos[0])
}

// completionTable is the command table as completion sees it: each
// command's flags from its own help (what help and the manual page show).
func completionTable(cmds map[string]command) []completion.Command {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]completion.Command, 0, len(names))
	for _, n := range names {
		h := commandHelp(n, cmds[n])
		cc := completion.Command{Name: n, Summary: cmds[n].summary}
		for _, o := range h.options() {
			f := completion.Flag{Name: o.name, Usage: o.usage, Arg: o.arg}
			switch o.name {
			case "output-format":
				f.Values = outputFormats
			case "profile":
				f.Values = policy.Profiles()
			}
			cc.Flags = append(cc.Flags, f)
		}
		out = append(out, cc)
	}
	return out
}
