package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The scenario of the change contract, on the demo, through MCP alone and
// in four calls: snapshot VM 100, set its memory (the daemon plans the
// edit against the current digest and answers with the evidence: the
// operation, the digest before and after, memory before → after), read it
// back, undo it (the undo's own answer shows memory set back, and offers
// the rollback to the change's snapshot it did not take).
func TestDemoSnapshotEditReadUndo(t *testing.T) {
	d := startDemo(t, "admin")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, err := client.NewStreamableHttpClient(d.URL, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + d.Key}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "changes-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	calls := 0
	do := func(name string, args map[string]any) map[string]any {
		t.Helper()
		calls++
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("call %d, %s: %v", calls, name, err)
		}
		var content map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &content) //nolint:errcheck // the server's own JSON
		if res.IsError {
			t.Fatalf("call %d, %s: %v", calls, name, res.Content)
		}
		return content
	}
	const config = "/nodes/pve1/qemu/100/config"

	// 1. Snapshot VM 100, as the first step of a change.
	snap := do("proxmox_api_call", map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/snapshot",
		"params": map[string]any{"snapname": "before-memory"}, "wait": 60, "change": "memory-demo"})
	if snap["upid"] == nil {
		t.Fatalf("the snapshot started no task: %v", snap)
	}
	// 2. Set its memory: planned against the current digest, answered with
	// the evidence.
	edit := do("proxmox_api_call", map[string]any{"method": "PUT", "path": config, "params": map[string]any{"memory": 6144},
		"operation_key": "demo-memory-1", "change": "memory-demo"})
	ev, _ := edit["evidence"].(map[string]any)
	mem, _ := ev["changes"].(map[string]any)["memory"].(map[string]any)
	if ev["operation"] == nil || ev["digest_before"] == nil || ev["digest_after"] == nil || ev["digest_before"] == ev["digest_after"] ||
		mem == nil || fmt.Sprint(mem["after"]) != "6144" {
		t.Fatalf("the edit's evidence: %v", ev)
	}
	before := fmt.Sprint(mem["before"])
	// 3. Read it back.
	read := do("proxmox_api_call", map[string]any{"method": "GET", "path": config})
	if data, _ := read["data"].(map[string]any); fmt.Sprint(data["memory"]) != "6144" || data["digest"] != ev["digest_after"] {
		t.Fatalf("read back: %v", read["data"])
	}
	// 4. Undo it.
	undo := do("proxmox_undo", map[string]any{"operation": ev["operation"], "preview": false})
	uev, _ := undo["evidence"].(map[string]any)
	umem, _ := uev["changes"].(map[string]any)["memory"].(map[string]any)
	if undo["undo_of"] != ev["operation"] || umem == nil || fmt.Sprint(umem["before"]) != "6144" || fmt.Sprint(umem["after"]) != before {
		t.Fatalf("the undo's answer: %v", undo)
	}
	plan, _ := undo["undo"].(map[string]any)
	if offer, _ := plan["rollback_offer"].(map[string]any); offer == nil || offer["snapshot"] != "before-memory" {
		t.Errorf("the undo offers no rollback to the change's snapshot: %v", plan)
	}
	if calls > 4 {
		t.Errorf("the scenario took %d calls, want at most 4", calls)
	}
}
