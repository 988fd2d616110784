package tools

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func demoRegistry(t *testing.T) *schema.Registry {
	t.Helper()
	reg, err := schema.Parse(sim.DemoSchema())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// The tools/list of each mode, for a root key on the built-in demo
// schema, is what testdata/tools/MODE/TOOL.json records, one file per
// tool: name, description, annotations and input and output schemas. A
// change to any of them is a change clients see; review the diff, then
// run go test ./tools -run TestToolListGolden -update, which also removes
// the files of tools that are gone.
func TestToolListGolden(t *testing.T) {
	for _, mode := range []Mode{ModeCompact, ModeSearch, ModeExpanded} {
		t.Run(string(mode), func(t *testing.T) {
			// Every family of tools is served: the journal's (the change
			// contract), the host's and break-glass with a helper that is
			// never reached by a listing.
			h := newHarness(t, harnessOpts{mode: mode, reg: demoRegistry(t), journal: true, host: HostOptions{
				Helper: func(context.Context, host.Request, func(host.ExecProgress)) (host.Response, error) {
					return host.Response{}, errors.New("a listing reaches no helper")
				},
				Roots:     []host.Root{{Path: "/srv", Write: true}},
				Protected: []string{"/mnt/model-repo"},
			}})
			c, ctx := h.as("root")
			res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "tools", string(mode))
			listed := map[string]bool{}
			for _, tool := range res.Tools {
				listed[tool.Name+".json"] = true
				got, err := json.MarshalIndent(tool, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join(dir, tool.Name+".json"), append(got, '\n'))
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatalf("%v (run go test ./tools -run TestToolListGolden -update)", err)
			}
			for _, e := range entries {
				if listed[e.Name()] {
					continue
				}
				if *update {
					if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
						t.Fatal(err)
					}
					continue
				}
				t.Errorf("%s: the tool is no longer listed in mode %s; review, then go test ./tools -run TestToolListGolden -update", filepath.Join(dir, e.Name()), mode)
			}
		})
	}
}

// checkGolden compares got with the golden file, or rewrites it with
// -update; a mismatch shows the lines that differ.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Errorf("%v (a new tool? review it, then go test ./tools -run TestToolListGolden -update)", err)
		return
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (-golden +now):\n%s\nreview, then go test ./tools -run TestToolListGolden -update",
			golden, cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
}

// In search mode, which has no describe tool, the search tool describes an
// endpoint, and every hint the answers give names a tool that exists.
func TestSearchModeDescribes(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: ModeSearch, reg: demoRegistry(t)})
	c, ctx := h.as("operator")
	names := toolNames(t, c, ctx)
	if len(names) != 3 {
		t.Fatalf("search mode lists %v", names)
	}
	res, content := call(t, c, ctx, ToolSearch, map[string]any{"describe": "post_nodes_qemu_status_start"})
	if res.IsError || content["path"] != "/nodes/{node}/qemu/{vmid}/status/start" {
		t.Fatalf("describe through search: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolSearch, map[string]any{"describe": "post_nodes_qemu_status_start", "query": "x"})
	if !res.IsError || !strings.Contains(text(res), "query") {
		t.Errorf("describe with query: %s", text(res))
	}
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "params": map[string]any{"timeout": -1}})
	if !strings.Contains(text(res), "See proxmox_api_search with describe post_nodes_qemu_status_start") {
		t.Errorf("validation hint in search mode: %s", text(res))
	}
	_, content = call(t, c, ctx, ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start"})
	notes, _ := json.Marshal(content["notes"])
	if !strings.Contains(string(notes), "proxmox_api_get /nodes/pve1/tasks/UPID") || strings.Contains(string(notes), ToolTaskWait) {
		t.Errorf("follow hint in search mode: %s", notes)
	}
	init, err := c.Initialize(context.Background(), mcp.InitializeRequest{})
	if err == nil && strings.Contains(init.Instructions, ToolDescribe) {
		t.Errorf("search-mode instructions name %s: %s", ToolDescribe, init.Instructions)
	}
}

// Every call is journalled, the ones that reach no endpoint included: a
// search, a describe, the schema status, the onboarding prompt, and a
// tool's own argument error. When the journal refuses, the answer is
// withheld.
func TestEveryCallIsJournaled(t *testing.T) {
	h := newHarness(t, harnessOpts{reg: demoRegistry(t)})
	c, ctx := h.as("operator")
	call(t, c, ctx, ToolSearch, map[string]any{"query": "start vm"})
	call(t, c, ctx, ToolDescribe, map[string]any{"tool": "post_nodes_qemu_status_start"})
	call(t, c, ctx, ToolSchemaStatus, nil)
	call(t, c, ctx, ToolSearch, map[string]any{"query": "x", "frobnicate": 1})
	if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: PromptOnboarding}}); err != nil {
		t.Fatal(err)
	}
	h.audit.mu.Lock()
	var got []string
	for _, r := range h.audit.records {
		got = append(got, r.call.Tool+":"+string(r.out.Outcome))
		if r.call.Principal.Name != "operator-key" {
			t.Errorf("row without the caller: %+v", r.call)
		}
	}
	h.audit.mu.Unlock()
	want := []string{"proxmox_api_search:ok", "proxmox_api_describe:ok", "proxmox_schema_status:ok", "proxmox_api_search:invalid", "proxmox_onboarding:ok"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("journal rows %v, want %v", got, want)
	}
	h.audit.fail = errors.New("disk full")
	res, _ := call(t, c, ctx, ToolSearch, map[string]any{"query": "start vm"})
	if !res.IsError || !strings.Contains(text(res), "answer is withheld") {
		t.Errorf("answer without a journal row: %s", text(res))
	}
}
