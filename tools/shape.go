package tools

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Shape is how the caller wants an answer cut down.
type Shape struct {
	// Fields keeps only these keys of each object.
	Fields map[string]bool
	// Omit drops these keys of each object.
	Omit map[string]bool
	// Limit and Offset page a list; Limit 0 is the default limit.
	Limit, Offset int
}

// shape applies fields, omit and paging, then the size cap. It never cuts
// JSON in the middle: a list loses items from its end and says where to
// continue, an object loses whole keys and names them, a long string is
// shortened at a character boundary; each is marked truncated.
func (s *Server) shape(data any, sh Shape, pveTotal *int64) map[string]any {
	out := map[string]any{}
	switch v := data.(type) {
	case []any:
		total := len(v)
		if pveTotal != nil {
			out["pve_total"] = *pveTotal
		}
		limit := sh.Limit
		if limit <= 0 {
			limit = s.opts.Limits.DefaultListLimit
		}
		off := min(max(sh.Offset, 0), total)
		end := min(off+limit, total)
		items := make([]any, 0, end-off)
		for _, it := range v[off:end] {
			items = append(items, project(it, sh))
		}
		first := items
		items, fit := fitList(items, s.opts.Limits.MaxResultBytes)
		if len(items) == 0 && len(first) > 0 {
			// One item alone is over the cap: send it with its largest
			// keys left out, so the caller always moves forward.
			if obj, ok := first[0].(map[string]any); ok {
				small, dropped := fitObject(obj, s.opts.Limits.MaxResultBytes-64)
				items = []any{small}
				out["omitted_keys"] = dropped
			} else {
				items = []any{nil}
				out["omitted_items"] = []int{off}
			}
		}
		out["data"] = items
		out["total"] = total
		out["offset"] = off
		out["returned"] = len(items)
		if next := off + len(items); next < total {
			out["next_offset"] = next
			out["truncated"] = !fit || end < total
			if !fit {
				out["truncated_reason"] = fmt.Sprintf("the answer is capped at %d bytes; continue at next_offset, or ask for fewer fields", s.opts.Limits.MaxResultBytes)
			}
		}
		if _, ok := out["omitted_keys"]; ok {
			out["truncated"] = true
			out["truncated_reason"] = fmt.Sprintf("item %d alone is over the %d-byte cap: its largest keys were left out (omitted_keys); ask for them with fields", off, s.opts.Limits.MaxResultBytes)
		}
		if _, ok := out["omitted_items"]; ok {
			out["truncated"] = true
			out["truncated_reason"] = fmt.Sprintf("item %d alone is over the %d-byte cap and was left out (null); read it by a narrower path", off, s.opts.Limits.MaxResultBytes)
		}
	case map[string]any:
		obj := project(v, sh).(map[string]any)
		obj, dropped := fitObject(obj, s.opts.Limits.MaxResultBytes)
		out["data"] = obj
		if len(dropped) > 0 {
			out["truncated"] = true
			out["omitted_keys"] = dropped
			out["truncated_reason"] = fmt.Sprintf("the answer is capped at %d bytes; the largest keys were left out: ask for them with fields", s.opts.Limits.MaxResultBytes)
		}
	case string:
		if len(v) > s.opts.Limits.MaxResultBytes {
			cut := v[:s.opts.Limits.MaxResultBytes]
			for !utf8.ValidString(cut) {
				cut = cut[:len(cut)-1]
			}
			out["data"] = cut
			out["truncated"] = true
			out["truncated_reason"] = fmt.Sprintf("the text is %d bytes, capped at %d", len(v), len(cut))
		} else {
			out["data"] = v
		}
	default:
		out["data"] = v
	}
	return out
}

// project keeps or drops keys of an object; other values pass.
func project(v any, sh Shape) any {
	obj, ok := v.(map[string]any)
	if !ok || (len(sh.Fields) == 0 && len(sh.Omit) == 0) {
		return v
	}
	out := make(map[string]any, len(obj))
	for k, val := range obj {
		if len(sh.Fields) > 0 && !sh.Fields[k] {
			continue
		}
		if sh.Omit[k] {
			continue
		}
		out[k] = val
	}
	return out
}

func jsonLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// fitList keeps the longest prefix of items whose JSON fits the cap.
func fitList(items []any, capBytes int) ([]any, bool) {
	total := 2
	for i, it := range items {
		total += jsonLen(it) + 1
		if total > capBytes {
			return items[:i], false
		}
	}
	return items, true
}

// fitObject drops the largest keys until the object fits, and names them.
func fitObject(obj map[string]any, capBytes int) (map[string]any, []string) {
	if jsonLen(obj) <= capBytes {
		return obj, nil
	}
	type kv struct {
		key  string
		size int
	}
	sizes := make([]kv, 0, len(obj))
	for k, v := range obj {
		sizes = append(sizes, kv{k, jsonLen(v)})
	}
	sort.Slice(sizes, func(i, j int) bool {
		if sizes[i].size != sizes[j].size {
			return sizes[i].size > sizes[j].size
		}
		return sizes[i].key < sizes[j].key
	})
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	var dropped []string
	for _, e := range sizes {
		if jsonLen(out) <= capBytes {
			break
		}
		delete(out, e.key)
		dropped = append(dropped, e.key)
	}
	sort.Strings(dropped)
	return out, dropped
}

// dataSummary is the first line of an answer's text.
func dataSummary(method, path string, shaped map[string]any) string {
	if total, ok := shaped["total"].(int); ok {
		s := fmt.Sprintf("%s %s: %d of %d items", method, path, shaped["returned"], total)
		if next, ok := shaped["next_offset"]; ok {
			s += fmt.Sprintf(" (more from offset %v)", next)
		}
		return s + "."
	}
	if shaped["truncated"] == true {
		return fmt.Sprintf("%s %s: done; the answer was shortened (see truncated_reason).", method, path)
	}
	return fmt.Sprintf("%s %s: done.", method, path)
}
