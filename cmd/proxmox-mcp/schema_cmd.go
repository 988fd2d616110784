package main

import (
	"encoding/json"
	"flag"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

func schemaCommands() map[string]command {
	return map[string]command{
		"schema check": {"validate an apidoc.js file and print its summary", (*cli).schemaCheck},
		"schema diff":  {"list the endpoints added, removed and changed between two apidoc.js files", (*cli).schemaDiff},
	}
}

func (c *cli) schemaCheck(args []string) error {
	fs := flag.NewFlagSet("schema check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	files, err := parse(fs, args, 1, "proxmox-mcp schema check FILE [--json]")
	if err != nil {
		return err
	}
	reg, err := schema.ParseFile(files[0])
	if err != nil {
		return err
	}
	sum := reg.Summarize(files[0])
	if *asJSON {
		return writeJSON(c, sum)
	}
	return sum.WriteText(c.stdout)
}

func (c *cli) schemaDiff(args []string) error {
	fs := flag.NewFlagSet("schema diff", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	files, err := parse(fs, args, 2, "proxmox-mcp schema diff OLD NEW [--json]")
	if err != nil {
		return err
	}
	old, err := schema.ParseFile(files[0])
	if err != nil {
		return err
	}
	new, err := schema.ParseFile(files[1])
	if err != nil {
		return err
	}
	d := schema.Compare(old, new)
	if *asJSON {
		return writeJSON(c, d)
	}
	return d.WriteText(c.stdout)
}

func writeJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
