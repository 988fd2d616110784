package tools

import (
	"strings"
	"testing"
)

// Paging always moves forward: an item that alone is over the cap is left
// out (null), named, and the next page starts after it.
func TestShapeNeverStalls(t *testing.T) {
	s := &Server{opts: Options{Limits: Limits{MaxResultBytes: 4096, DefaultListLimit: 50}}}
	huge := strings.Repeat("x", 10000)
	for _, tc := range []struct {
		name string
		item any
	}{
		{"string", huge},
		{"list", []any{huge}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []any{tc.item, "small", "small"}
			out := s.shape(data, Shape{}, nil)
			if out["next_offset"] != 1 || out["truncated"] != true || out["returned"] != 1 {
				t.Fatalf("first page %v", out)
			}
			if items := out["data"].([]any); items[0] != nil {
				t.Errorf("the oversized item was sent: %.80v", items[0])
			}
			if om, _ := out["omitted_items"].([]int); len(om) != 1 || om[0] != 0 {
				t.Errorf("omitted_items %v", out["omitted_items"])
			}
			if !strings.Contains(out["truncated_reason"].(string), "item 0 alone is over the 4096-byte cap") {
				t.Errorf("reason %v", out["truncated_reason"])
			}
			next := s.shape(data, Shape{Offset: 1}, nil)
			if next["returned"] != 2 || next["next_offset"] != nil {
				t.Errorf("second page %v", next)
			}
		})
	}
}

// An object that alone is over the cap, last on its page, is sent with its
// largest keys left out, and the answer says so.
func TestShapeOversizedLastObject(t *testing.T) {
	s := &Server{opts: Options{Limits: Limits{MaxResultBytes: 4096, DefaultListLimit: 50}}}
	big := map[string]any{"id": "qemu/100", "config": strings.Repeat("y", 9000)}
	out := s.shape([]any{big}, Shape{}, nil)
	if out["truncated"] != true || out["next_offset"] != nil || out["returned"] != 1 {
		t.Fatalf("page %v", out)
	}
	if keys, _ := out["omitted_keys"].([]string); len(keys) != 1 || keys[0] != "config" {
		t.Errorf("omitted_keys %v", out["omitted_keys"])
	}
	if r, _ := out["truncated_reason"].(string); !strings.Contains(r, "largest keys were left out") {
		t.Errorf("reason %q", r)
	}
}
