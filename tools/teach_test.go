package tools

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// exampleRE finds the examples a validation error gives.
var exampleRE = regexp.MustCompile(`Example: (\{.*?\})\.(?:\n|$)`)

// A validation error gives, for each failing parameter, an example
// argument; the call made again with the examples passes validation (it
// is answered as a dry run, not refused).
func TestValidationErrorExampleFixesTheCall(t *testing.T) {
	h := newHarness(t, harnessOpts{reg: realRegistry(t)})
	c, ctx := h.as("root")
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config",
		"params": map[string]any{"memory": "lots", "cores": 0, "net0": "model=nic9000"}})
	got := text(res)
	if !res.IsError || !strings.Contains(got, `memory: syntax [current=]<integer>, in MiB, default 512. Example: {"memory": "512"}.`) {
		t.Fatalf("the error teaches no example for memory:\n%s", got)
	}
	found := exampleRE.FindAllStringSubmatch(got, -1)
	if len(found) != 3 {
		t.Fatalf("want an example for memory, cores and net0, got %d:\n%s", len(found), got)
	}
	params := map[string]any{}
	for _, m := range found {
		if err := json.Unmarshal([]byte(m[1]), &params); err != nil {
			t.Fatalf("example %s is no JSON: %v", m[1], err)
		}
	}
	res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": params, "dry_run": true})
	if res.IsError || content["dry_run"] != true {
		t.Fatalf("the call with the examples %v: %s", params, text(res))
	}
}
