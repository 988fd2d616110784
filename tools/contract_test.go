package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// A config edit is planned against the current configuration, and its
// answer carries the evidence: the operation, the digest before and after,
// the fields changed. The journal's receipt holds the same; a read of the
// configuration is recorded as an observation of it.
func TestConfigEditAnswersWithEvidence(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	_, before := call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/config"})
	oldMem := fmt.Sprint(before["data"].(map[string]any)["memory"])
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config",
		"params": map[string]any{"memory": 3072, "description": "set by the test"}, "operation_key": "mem-1"})
	if res.IsError {
		t.Fatal(text(res))
	}
	ev, _ := content["evidence"].(map[string]any)
	if ev == nil || ev["operation"] == "" || ev["operation_key"] != "mem-1" || ev["digest_before"] == ev["digest_after"] || ev["digest_after"] == nil {
		t.Fatalf("evidence %v", ev)
	}
	ch, _ := ev["changes"].(map[string]any)
	mem, _ := ch["memory"].(map[string]any)
	if mem == nil || fmt.Sprint(mem["before"]) != oldMem || fmt.Sprint(mem["after"]) != "3072" || ch["description"] == nil || len(ch) != 2 {
		t.Errorf("changes %v, want memory %s → 3072 and description", ch, oldMem)
	}
	id := ev["operation"].(string)
	evs, err := h.journal.CallEvents(context.Background(), id)
	if err != nil || len(evs) != 2 {
		t.Fatalf("the operation's rows: %v, %v", evs, err)
	}
	d, err := evs[1].DetailOf()
	if err != nil || d.Digest != ev["digest_after"] || d.Changes["memory"].After == nil {
		t.Errorf("receipt detail %+v, %v", d, err)
	}
	// The first read was recorded as an observation of the configuration.
	seen, err := h.journal.PathEvents(context.Background(), "/nodes/pve1/qemu/100/config", 0, 10)
	if err != nil || len(seen) < 3 {
		t.Fatalf("path rows: %d, %v", len(seen), err)
	}
	if d, _ := seen[0].DetailOf(); seen[0].Kind != journal.KindCall || d.Digest == "" || d.Config["memory"] == nil {
		t.Errorf("the read left no observation: %+v %+v", seen[0], d)
	}
	// proxmox_operation by key tells the same.
	res, view := call(t, c, ctx, ToolOperation, map[string]any{"operation_key": "mem-1"})
	if res.IsError || view["operation"] != id || view["state"] != "ok" || view["changes"] == nil {
		t.Errorf("proxmox_operation: %s", text(res))
	}
	// Another key sees no such operation.
	other, octx := h.as("root")
	if res, _ := call(t, other, octx, ToolOperation, map[string]any{"operation_key": "mem-1"}); !res.IsError {
		t.Errorf("another key found the operation by its key: %s", text(res))
	}
}

// Regression: a lost answer could not be retried safely. With an
// operation key, the same request again returns the recorded operation
// and nothing is sent; the same key with another request is refused;
// concurrent retries from several clients send once.
func TestOperationKeyMakesRetriesSafe(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("admin")
	snap := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/snapshot", "params": map[string]any{"snapname": "mcp-retry-1"}, "operation_key": "snap-1", "wait": 30}
	res, first := call(t, c, ctx, ToolCall, snap)
	if res.IsError {
		t.Fatal(text(res))
	}
	res, again := call(t, c, ctx, ToolCall, snap)
	if res.IsError || again["replayed"] != true || again["operation"] != first["evidence"].(map[string]any)["operation"] {
		t.Fatalf("the retry: %s", text(res))
	}
	if got := snapshots(t, h, ctx, c); got != 1 {
		t.Errorf("%d snapshots named before-upgrade after a retry, want 1", got)
	}
	other := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/snapshot", "params": map[string]any{"snapname": "other"}, "operation_key": "snap-1"}
	res, _ = call(t, c, ctx, ToolCall, other)
	if !res.IsError || !strings.Contains(text(res), "was used by your key for a different request") {
		t.Errorf("the same key for another request: %s", text(res))
	}
	// Reads take no operation key.
	res, _ = call(t, c, ctx, ToolCall, map[string]any{"method": "GET", "path": "/version", "operation_key": "r-1"})
	if !res.IsError || !strings.Contains(text(res), "only a write takes an operation key") {
		t.Errorf("a read with an operation key: %s", text(res))
	}
	// Eight clients retry one snapshot at once: one is sent.
	burst := map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/100/snapshot", "params": map[string]any{"snapname": "burst"}, "operation_key": "snap-burst", "wait": 30}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, cctx := h.as("admin")
			if res, _ := call(t, cl, cctx, ToolCall, burst); res.IsError {
				t.Errorf("a concurrent retry: %s", text(res))
			}
		}()
	}
	wg.Wait()
	if got := snapshotsNamed(t, h, ctx, c, "burst"); got != 1 {
		t.Errorf("%d snapshots after 8 concurrent retries with one key, want 1", got)
	}
}

func snapshots(t *testing.T, h *harness, ctx context.Context, c interface{}) int {
	t.Helper()
	return snapshotsNamed(t, h, ctx, c, "mcp-retry-1")
}

func snapshotsNamed(t *testing.T, h *harness, ctx context.Context, _ interface{}, name string) int {
	t.Helper()
	cl, cctx := h.as("read-only")
	res, content := call(t, cl, cctx, ToolCall, map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/snapshot"})
	if res.IsError {
		t.Fatal(text(res))
	}
	n := 0
	for _, s := range content["data"].([]any) {
		if s.(map[string]any)["name"] == name {
			n++
		}
	}
	return n
}

// PVE's protection flag is shown in the evidence of an edit of a protected
// guest.
func TestEvidenceShowsProtection(t *testing.T) {
	h := newHarness(t, harnessOpts{journal: true})
	c, ctx := h.as("root")
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": map[string]any{"protection": 1}})
	if res.IsError {
		t.Fatal(text(res))
	}
	if ev, _ := content["evidence"].(map[string]any); ev["protection"] != true {
		t.Errorf("evidence of a protected guest: %v", ev)
	}
}
