package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// commit is set at build time with -ldflags "-X main.commit=..."; without
// it, the VCS revision Go recorded (when it did) stands in.
var commit = ""

// buildInfo is what --version says.
type buildInfo struct {
	Version    string                `json:"version"`
	Commit     string                `json:"commit"`
	Go         string                `json:"go"`
	Platform   string                `json:"platform"`
	PVESchemas []schema.TestedSchema `json:"pve_schemas_tested"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, PVESchemas: schema.TestedWith()}
	if b.Commit == "" {
		b.Commit = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			var rev, dirty string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					if s.Value == "true" {
						dirty = "-dirty"
					}
				}
			}
			if rev != "" {
				b.Commit = rev + dirty
			}
		}
	}
	return b
}

func (c *cli) version(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	verbose := fs.Bool("verbose", false, "also the commit, the Go version and the PVE schemas this build was tested with (what --version prints)")
	asJSON := fs.Bool("json", false, "print one JSON object with every field")
	if _, err := parse(fs, args, 0, "proxmox-mcp version [--verbose] [--json]"); err != nil {
		return err
	}
	b := currentBuild()
	if *asJSON {
		return writeJSON(c, b)
	}
	fmt.Fprintf(c.stdout, "proxmox-mcp %s\n", b.Version)
	if !*verbose {
		return nil
	}
	schemas := make([]string, len(b.PVESchemas))
	for i, s := range b.PVESchemas {
		schemas[i] = fmt.Sprintf("%s (%d endpoints, sha256 %.12s)", s.Release, s.Endpoints, s.SHA256)
	}
	fmt.Fprintf(c.stdout, "commit       %s\ngo           %s %s\npve schemas  %s\n", b.Commit, b.Go, b.Platform, strings.Join(schemas, ", "))
	return nil
}
