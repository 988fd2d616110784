package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/daemon"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

func toolsCommands() map[string]command {
	return map[string]command{
		"tools list": {"list the tools a key (or local-root) sees, as an agent would", (*cli).toolsList},
		"tools call": {"call a tool as an agent would: the same plan, policy and journal", (*cli).toolsCall},
		"call":       {"pvesh-style API call (get|create|set|delete /path [--param v]...) through the daemon's plan, policy and journal", (*cli).call},
	}
}

// session opens the daemon's MCP server in process for the caller the
// flags name (openLocal: a key, else local-root for uid 0; as root, the
// state directory's owner first).
func (c *cli) session(f sessionFlags) (*daemon.Local, error) {
	d, caller, err := c.openLocal(f, "warn")
	if err != nil {
		return nil, err
	}
	return d.Local(c.ctx, caller)
}

func (c *cli) toolsList(args []string) error {
	fs := flag.NewFlagSet("tools list", flag.ContinueOnError)
	sf := addSessionFlags(fs, true)
	asJSON := fs.Bool("json", false, "print one JSON object {\"tools\": [...]} with each tool's schema and annotations")
	if _, err := parse(fs, args, 0, "proxmox-mcp tools list [--key-file FILE | --local-root] [--config FILE] [--state-dir DIR] [--json]"); err != nil {
		return err
	}
	s, err := c.session(sf)
	if err != nil {
		return err
	}
	list, err := s.ListTools(c.ctx)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	if *asJSON {
		return writeJSON(c, map[string]any{"tools": list})
	}
	for _, t := range list {
		fmt.Fprintf(c.stdout, "%-34s %s%s\n", t.Name, toolKind(t), firstSentence(t.Description))
	}
	return nil
}

// toolKind marks a tool's annotations as pvesh marks a path's methods.
func toolKind(t mcp.Tool) string {
	a := t.Annotations
	switch {
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return "[read] "
	case a.DestructiveHint != nil && *a.DestructiveHint:
		return "[write, destructive] "
	default:
		return "[write] "
	}
}

func firstSentence(s string) string {
	s = oneLine(s)
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// argFlags is --arg k=v, repeated: a value that parses as JSON is that
// value (4096, true, {"a":1}, "quoted"), any other is a string.
type argFlags map[string]any

func (a argFlags) String() string { return "" }

func (a argFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not NAME=VALUE", s)
	}
	a[k] = jsonOrString(v)
	return nil
}

func jsonOrString(v string) any {
	var x any
	if json.Unmarshal([]byte(v), &x) == nil {
		return x
	}
	return v
}

func (c *cli) toolsCall(args []string) error {
	fs := flag.NewFlagSet("tools call", flag.ContinueOnError)
	sf := addSessionFlags(fs, true)
	given := argFlags{}
	fs.Var(given, "arg", "an argument `NAME=VALUE` (repeat; VALUE is JSON when it parses, else a string)")
	argsJSON := fs.String("args", "", "the arguments as one JSON `OBJECT` (--arg overrides its keys)")
	asJSON := fs.Bool("json", false, "print the tool's result as MCP returns it (content, structuredContent, isError)")
	pos, err := parse(fs, args, 1, "proxmox-mcp tools call NAME [--arg NAME=VALUE]... [--args JSON] [--key-file FILE | --local-root] [--config FILE] [--state-dir DIR] [--json]")
	if err != nil {
		return err
	}
	callArgs := map[string]any{}
	if *argsJSON != "" {
		if err := json.Unmarshal([]byte(*argsJSON), &callArgs); err != nil {
			return usagef("--args: not a JSON object: %v", err)
		}
	}
	for k, v := range given {
		callArgs[k] = v
	}
	return c.callTool(sf, pos[0], callArgs, *asJSON)
}

// callTool runs one tool call and prints its result; a result that is an
// error (a refusal, a denial, a failed call) is exit status 1, its text on
// standard output as for any result.
func (c *cli) callTool(sf sessionFlags, name string, args map[string]any, asJSON bool) error {
	s, err := c.session(sf)
	if err != nil {
		return err
	}
	res, err := s.CallTool(c.ctx, name, args)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSON(c, res); err != nil {
			return err
		}
	} else {
		for _, ct := range res.Content {
			if t, ok := ct.(mcp.TextContent); ok {
				fmt.Fprintln(c.stdout, strings.TrimRight(t.Text, "\n"))
			}
		}
	}
	if res.IsError {
		return toolError{name: name, text: resultText(res)}
	}
	return nil
}

// toolError is a tool result that is an error, already printed.
type toolError struct{ name, text string }

func (e toolError) Error() string {
	return fmt.Sprintf("%s: %s", e.name, firstLineOf(e.text))
}

func resultText(res *mcp.CallToolResult) string {
	for _, ct := range res.Content {
		if t, ok := ct.(mcp.TextContent); ok {
			return t.Text
		}
	}
	return "the tool returned an error"
}

// pveshVerbs are pvesh's verbs and the HTTP methods they send.
var pveshVerbs = map[string]string{"get": "GET", "ls": "GET", "create": "POST", "set": "PUT", "delete": "DELETE"}

// call is pvesh's command line: call VERB /path [--param value]...,
// sent through the caller's MCP session as proxmox_api_get (get, ls) or
// proxmox_api_call (the writes). Parameters
// are strings, as pvesh sends them; PVE's schema reads them.
func (c *cli) call(args []string) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	sf := addSessionFlags(fs, true)
	asJSON := fs.Bool("json", false, "print the tool's result as MCP returns it")
	dryRun := fs.Bool("dry-run", false, "plan and check the call, send nothing")
	confirm := fs.String("confirm", "", "the confirmation `TOKEN` a previous answer asked for")
	opKey := fs.String("operation-key", "", "an operation `KEY` that makes a retry of this write safe")
	const synopsis = "proxmox-mcp call get|create|set|delete /PATH [--PARAM VALUE]... [--dry-run] [--confirm TOKEN] [--key-file FILE | --local-root] [--config FILE] [--state-dir DIR] [--json]"
	addOutputFormat(fs)
	own, params, err := splitParams(fs, args)
	if err != nil {
		return usagef("%v (usage: %s)", err, synopsis)
	}
	pos, err := parse(fs, own, 2, synopsis)
	if err != nil {
		return err
	}
	method, ok := pveshVerbs[pos[0]]
	if !ok {
		return usagef("verb %q: must be get, create, set or delete (pvesh's; usage: %s)", pos[0], synopsis)
	}
	if method == "GET" {
		// Reads go through the read tool, as an agent's should.
		if *dryRun || *confirm != "" || *opKey != "" {
			return usagef("%s: --dry-run, --confirm and --operation-key are for writes (usage: %s)", pos[0], synopsis)
		}
		getArgs := map[string]any{"path": pos[1]}
		if len(params) > 0 {
			getArgs["params"] = params
		}
		return c.callTool(sf, tools.ToolGet, getArgs, *asJSON)
	}
	callArgs := map[string]any{"method": method, "path": pos[1]}
	if len(params) > 0 {
		callArgs["params"] = params
	}
	if *dryRun {
		callArgs["dry_run"] = true
	}
	if *confirm != "" {
		callArgs["confirm"] = *confirm
	}
	if *opKey != "" {
		callArgs["operation_key"] = *opKey
	}
	return c.callTool(sf, tools.ToolCall, callArgs, *asJSON)
}

// splitParams takes the API parameters (--name value, --name=value) out
// of a pvesh-style command line, leaving the command's own flags (those
// fs defines, and -h) and the positional arguments. A parameter without a
// value (the last word, or one followed by another --flag) is "1", as
// pvesh reads a boolean.
func splitParams(fs *flag.FlagSet, args []string) (own []string, params map[string]any, err error) {
	params = map[string]any{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			own = append(own, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			own = append(own, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "" {
			return nil, nil, fmt.Errorf("%q is not a parameter", a)
		}
		if name == "h" || name == "help" {
			own = append(own, a)
			continue
		}
		if f := fs.Lookup(name); f != nil {
			own = append(own, a)
			if !hasValue && !isBoolFlag(f) && i+1 < len(args) {
				i++
				own = append(own, args[i])
			}
			continue
		}
		if !hasValue {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
				value = args[i]
			} else {
				value = "1"
			}
		}
		if _, dup := params[name]; dup {
			return nil, nil, fmt.Errorf("parameter --%s given twice", name)
		}
		params[name] = value
	}
	return own, params, nil
}

// isBoolFlag reports whether a flag takes no value.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
