package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// TestNodeSchemasCompile: every input schema the real binary lists, in each
// tool mode, for a root key (the largest catalog) on the real PVE 9.1
// schema, compiles with Ajv 8 in strict mode (draft 2020-12, patterns with
// the u flag: LangChain, n8n) and with @cfworker/json-schema (the
// TypeScript SDK's validator on edge runtimes), every pattern and
// patternProperties key exercised. The script is tests/e2e/node/schemas.mjs;
// it reports and this test judges.
func TestNodeSchemasCompile(t *testing.T) {
	apidoc := fixture(t, "pve-9.1/apidoc.js")
	node := lookNode(t, 20)
	nodeModules(t, "e2e/node", "ajv", "@cfworker/json-schema")
	dir, err := filepath.Abs("e2e/node")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := os.ReadFile(apidoc)
	if err != nil {
		t.Fatal(err)
	}
	// The fewest tools each mode must list for root on 9.1: a smaller list
	// would pass by listing less.
	modes := []struct {
		mode     string
		minTools int
	}{
		{"compact", 8},
		{"expanded", 600},
		{"search", 2},
	}
	for _, m := range modes {
		t.Run(m.mode, func(t *testing.T) {
			t.Parallel()
			h := startStdioHostWith(t, schema)
			key := h.key(t, "schemas-root", "root")
			s := startServe(t, h, func(cfg map[string]any) { cfg["tools"] = map[string]any{"mode": m.mode} })
			ss, err := mcptest.Dial(s.url+"/mcp", key)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			list, err := ss.Tools()
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) < m.minTools {
				t.Fatalf("%s mode lists %d tools for root on 9.1, want at least %d", m.mode, len(list.Tools), m.minTools)
			}
			file := filepath.Join(t.TempDir(), "tools.json")
			raw, err := json.Marshal(list.Tools)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := run(ctx, t, os.Environ(), dir, node, "schemas.mjs", file)
			if err != nil {
				t.Fatalf("schemas.mjs: %v", err)
			}
			var res struct {
				Tools    int `json:"tools"`
				Patterns int `json:"patterns"`
				Ajv      []struct {
					Tool  string `json:"tool"`
					Error string `json:"error"`
				} `json:"ajv"`
				Cfworker []struct {
					Tool   string   `json:"tool"`
					Errors []string `json:"errors"`
				} `json:"cfworker"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("schemas.mjs printed %q: %v", out, err)
			}
			if res.Tools != len(list.Tools) {
				t.Errorf("schemas.mjs read %d tools, %d were listed", res.Tools, len(list.Tools))
			}
			for _, r := range res.Ajv {
				t.Errorf("Ajv strict refuses the input schema of %s: %s", r.Tool, r.Error)
			}
			for _, r := range res.Cfworker {
				t.Errorf("@cfworker/json-schema refuses the input schema of %s:\n  %s", r.Tool, strings.Join(r.Errors, "\n  "))
			}
			t.Logf("%s: %d tools, %d patterns, %d bytes in %d pages", m.mode, res.Tools, res.Patterns, list.Bytes, list.Pages)
		})
	}
}
