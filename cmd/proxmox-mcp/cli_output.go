package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// --output-format is pvesh's flag: json, json-pretty or text. Every
// command that prints data has a --json flag; parse gives each of them
// --output-format as well (json and json-pretty set --json, text clears
// it), so help, the manual page and completion show it from the command
// table. json-pretty indents what the command writes: run finds the
// flag's value in the arguments and puts an indenting writer in front of
// standard output.

// outputFormats are the values of --output-format.
var outputFormats = []string{"json", "json-pretty", "text"}

// formatFlag is --output-format on a flag set that has --json.
type formatFlag struct {
	fs    *flag.FlagSet
	value string
}

func (f *formatFlag) String() string {
	if f == nil {
		return ""
	}
	return f.value
}

func (f *formatFlag) Set(v string) error {
	switch v {
	case "json", "json-pretty":
		f.value = v
		return f.fs.Set("json", "true")
	case "text":
		f.value = v
		return f.fs.Set("json", "false")
	}
	return fmt.Errorf("%q is not %s", v, strings.Join(outputFormats, ", "))
}

// addOutputFormat gives a flag set with --json the --output-format flag.
func addOutputFormat(fs *flag.FlagSet) {
	if fs.Lookup("json") == nil || fs.Lookup("output-format") != nil {
		return
	}
	fs.Var(&formatFlag{fs: fs}, "output-format", "`FORMAT` of the output: json (as --json), json-pretty (indented) or text (the default)")
}

// prettyRequested reports whether the arguments ask for json-pretty: the
// last --output-format before a "--" wins, as the flag parser has it.
func prettyRequested(args []string) bool {
	pretty := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "output-format" {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			value = args[i]
		}
		pretty = value == "json-pretty"
	}
	return pretty
}

// indentWriter indents every line that is a JSON object or array (the
// JSON output of a command, one value per line) and passes every other
// line as it is. Flush writes a last line without a newline.
type indentWriter struct {
	w   io.Writer
	buf []byte
}

func (p *indentWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := p.line(p.buf[:i+1]); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+1:]
	}
}

func (p *indentWriter) line(l []byte) error {
	t := bytes.TrimSpace(l)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		var out bytes.Buffer
		if err := json.Indent(&out, t, "", "  "); err == nil {
			out.WriteByte('\n')
			_, err := p.w.Write(out.Bytes())
			return err
		}
	}
	_, err := p.w.Write(l)
	return err
}

// Flush writes what is left.
func (p *indentWriter) Flush() error {
	if len(p.buf) == 0 {
		return nil
	}
	err := p.line(p.buf)
	p.buf = nil
	return err
}

// groupOf lists the commands of a group ("key" → "key create", …).
func groupOf(cmds map[string]command, group string) []string {
	var names []string
	for n := range cmds {
		if g, _, ok := strings.Cut(n, " "); ok && g == group {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// groupUsage lists a group's commands with their synopses, as pveum does
// for a bare group.
func (c *cli) groupUsage(w io.Writer, cmds map[string]command, group string, names []string) {
	fmt.Fprintf(w, "usage: proxmox-mcp %s COMMAND [ARGS]\n\ncommands:\n", group)
	for _, n := range names {
		h := commandHelp(n, cmds[n])
		fmt.Fprintf(w, "  %s\n        %s\n", h.synopsis, cmds[n].summary)
	}
	fmt.Fprintf(w, "\n'proxmox-mcp help %s COMMAND' (or COMMAND -h) shows a command's flags.\n", group)
}
