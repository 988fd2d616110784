package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// EndWaits (the daemon's drain is nearly over) ends a call's wait for its
// task at once: the call answers with the task still running and its
// UPID, and its receipt is recorded. Before, the process exited in the
// middle of the wait: the caller got no answer and the write stayed an
// open intent although PVE had answered with its UPID.
func TestEndWaitsAnswersWithTheTaskRunning(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// A start that takes 40 s.
	h.sim.InjectTaskFault(sim.TaskFault{Type: "qmstart", Slow: 1000})
	c, ctx := h.as("operator")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	before := h.sim.Writes()
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = ToolCall
		req.Params.Arguments = map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 120}
		res, err := c.CallTool(ctx, req)
		done <- answer{res, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); h.sim.Writes() == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the start never reached PVE")
		}
	}
	select {
	case a := <-done:
		t.Fatalf("the call answered before its 40 s task ended: %v %v", a.res, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	ended := time.Now()
	h.srv.EndWaits()
	var a answer
	select {
	case a = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call still waits after EndWaits")
	}
	if a.err != nil || a.res.IsError {
		t.Fatalf("the call after EndWaits: %v %v", a.err, a.res)
	}
	t.Logf("answered %s after EndWaits", time.Since(ended).Round(time.Millisecond))
	var content map[string]any
	b, _ := json.Marshal(a.res.StructuredContent)
	json.Unmarshal(b, &content) //nolint:errcheck // our own content
	task, _ := content["task"].(map[string]any)
	if task["status"] != "running" || !strings.HasPrefix(content["upid"].(string), "UPID:pve1:") {
		t.Errorf("the answer: %v; want the task running and its UPID", content)
	}
	if txt := text(a.res); !strings.Contains(txt, "the daemon is stopping") || !strings.Contains(txt, ToolTaskWait) {
		t.Errorf("the answer does not say the wait ended because the daemon stops, and how to follow the task: %s", txt)
	}
	h.audit.mu.Lock()
	defer h.audit.mu.Unlock()
	if len(h.audit.intents) != 1 || len(h.audit.receipts) != 1 {
		t.Fatalf("journal: %d intents, %d receipts; want the write's receipt", len(h.audit.intents), len(h.audit.receipts))
	}
	for _, r := range h.audit.receipts {
		if r.Outcome != journal.OutcomeTaskRunning || r.UPID == "" {
			t.Errorf("receipt %+v; want task_running with the UPID", r)
		}
	}
}
