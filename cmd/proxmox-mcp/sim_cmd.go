package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

func simCommands() map[string]command {
	return map[string]command{
		"sim": {"run the PVE API simulator over HTTPS (--coverage: report what it simulates)", (*cli).sim},
	}
}

func (c *cli) sim(args []string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8006", "address to serve on")
	apidoc := fs.String("apidoc", "", "the apidoc.js whose endpoints are served (default: the built-in demo schema)")
	seed := fs.Uint64("seed", 1, "seed of UPIDs, MACs and token secrets")
	taskDuration := fs.Float64("task-duration", 1, "scale of task durations (0.1 makes tasks ten times faster)")
	coverage := fs.Bool("coverage", false, "print how many endpoints have handlers, then exit")
	asJSON := fs.Bool("json", false, "print one JSON object")
	nodeDir := fs.String("node-dir", "", "answer as the pveproxy of a node whose /etc/pve is this directory: its certificate, and the users, tokens and ACLs of its user.cfg and priv/token.cfg")
	if _, err := parse(fs, args, 0, "proxmox-mcp sim [--listen ADDR] [--apidoc FILE] [--node-dir DIR] [--seed N] [--coverage] [--json]"); err != nil {
		return err
	}
	if *taskDuration <= 0 {
		return usagef("--task-duration must be above 0, got %v", *taskDuration)
	}
	data, name := sim.DemoSchema(), "built-in demo schema"
	if *apidoc != "" {
		var err error
		if data, err = schema.ReadFile(*apidoc); err != nil {
			return fmt.Errorf("--apidoc: %w", err)
		}
		name = *apidoc
	}
	reg, err := schema.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: *seed, TaskDuration: *taskDuration})
	if err != nil {
		return err
	}
	cov := s.Coverage()
	if *coverage {
		if *asJSON {
			return writeJSON(c, cov)
		}
		fmt.Fprintf(c.stdout, "%s: %d endpoints\n  semantic handlers   %d\n  directory indexes   %d\n  validated, then 501 %d\n",
			name, cov.Endpoints, cov.Semantic, cov.Directory, cov.NotSimulated)
		fmt.Fprintln(c.stdout, "handled:")
		for _, h := range cov.Handled {
			fmt.Fprintln(c.stdout, "  "+h)
		}
		return nil
	}
	var srv *sim.Server
	if *nodeDir != "" {
		n, err := sim.OpenNodeDir(s, *nodeDir)
		if err != nil {
			return fmt.Errorf("--node-dir: %w", err)
		}
		srv, err = sim.ListenNode(n, *listen)
		if err != nil {
			return fmt.Errorf("--node-dir: %w", err)
		}
	} else if srv, err = sim.Listen(s, *listen); err != nil {
		return err
	}
	if *asJSON {
		line, err := json.Marshal(map[string]any{
			"url": srv.URL, "fingerprint": srv.Fingerprint, "tokens": s.Tokens(),
			"coverage": map[string]int{"endpoints": cov.Endpoints, "semantic": cov.Semantic, "directory": cov.Directory},
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, string(line))
	} else {
		fmt.Fprintf(c.stdout, "PVE simulator on %s\n  TLS certificate SHA-256 %s\n  schema %s: %d endpoints, %d simulated, %d directory indexes\n  API tokens (Authorization: PVEAPIToken=ID=SECRET):\n",
			srv.URL, srv.Fingerprint, name, cov.Endpoints, cov.Semantic, cov.Directory)
		for _, t := range s.Tokens() {
			fmt.Fprintf(c.stdout, "    %-20s %s  %s\n", t.ID, t.Secret, strings.ReplaceAll(t.Role, ",", ", "))
		}
		fmt.Fprintln(c.stdout, "Serving until interrupted.")
	}
	return srv.Serve(c.ctx)
}
