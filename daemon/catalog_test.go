package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// referenceCatalogBytes is the size of the expanded tools/list of the
// TypeScript server this one replaces, for 695 tools whose input schemas
// are generic (reference/anchors/proxmox-mcp-bridge.md).
const referenceCatalogBytes = 622_000

// The expanded catalog of a root key on the real PVE 9.1 schema holds
// every endpoint with its real parameters, in pages of at most
// tools.ToolsPageSize tools, and all of it is smaller than the reference's
// list with generic schemas. (It was 1.13 MB in one page, with each
// control argument spelled out per tool and each title repeating the
// description's METHOD /path.)
func TestExpandedCatalogFits(t *testing.T) {
	real := realSchema(t)
	if real == nil {
		t.Skip("the real PVE 9.1 schema is not here: ../shared/fixtures must sit beside the repository")
	}
	r := newRig(t, func(cfg map[string]any) {
		real(cfg)
		cfg["tools"] = map[string]any{"mode": "expanded"}
	})
	r.start()
	s := r.session(t, r.key("root"))
	list, err := s.Tools()
	if err != nil {
		t.Fatal(err)
	}
	if list.Bytes >= referenceCatalogBytes {
		t.Errorf("the expanded tools/list of a root key is %d bytes, not under the reference's %d", list.Bytes, referenceCatalogBytes)
	}
	if list.Pages < 2 {
		t.Errorf("%d tools came in %d page", len(list.Tools), list.Pages)
	}
	seen := map[string]bool{}
	endpoints := 0
	for _, raw := range list.Tools {
		var tl struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Annotations struct {
				Title string `json:"title"`
			} `json:"annotations"`
			InputSchema struct {
				Properties        map[string]json.RawMessage `json:"properties"`
				PatternProperties map[string]json.RawMessage `json:"patternProperties"`
				Required          []string                   `json:"required"`
			} `json:"inputSchema"`
		}
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatal(err)
		}
		if seen[tl.Name] {
			t.Errorf("%s is listed twice (pages overlap)", tl.Name)
		}
		seen[tl.Name] = true
		ep := r.d.schema.Current().Tool(tl.Name)
		if ep == nil {
			continue
		}
		endpoints++
		if tl.Annotations.Title != "" || strings.Contains(tl.Description, ep.Method+" "+ep.Path) {
			t.Errorf("%s repeats its method and path: title %q, description %q", tl.Name, tl.Annotations.Title, tl.Description)
		}
		// Every real parameter is there, with its rules.
		for _, p := range ep.Params {
			if p.Indexed {
				if _, ok := tl.InputSchema.PatternProperties[`^`+p.Prefix+`\d+$`]; !ok {
					t.Errorf("%s lacks the numbered parameter %s", tl.Name, p.Name)
				}
				continue
			}
			if _, ok := tl.InputSchema.Properties[p.Name]; !ok {
				t.Errorf("%s lacks the parameter %s", tl.Name, p.Name)
			}
		}
		// And the control arguments, by name.
		control := "_dry_run"
		if ep.Method != "GET" {
			control = "_confirm"
		}
		found := false
		for pat := range tl.InputSchema.PatternProperties {
			found = found || strings.HasPrefix(pat, "^_(") && strings.Contains(pat, strings.TrimPrefix(control, "_"))
		}
		if !found {
			t.Errorf("%s does not name its control argument %s: %v", tl.Name, control, tl.InputSchema.PatternProperties)
		}
	}
	if want := r.d.schema.Current().Methods(); endpoints != want {
		t.Errorf("%d endpoint tools listed, want %d", endpoints, want)
	}
	for _, page := range list.PageBytes {
		if page > list.Bytes/2 {
			t.Errorf("one page holds %d of %d bytes", page, list.Bytes)
		}
	}
	if len(list.Tools) > list.Pages*tools.ToolsPageSize {
		t.Errorf("%d tools in %d pages of at most %d", len(list.Tools), list.Pages, tools.ToolsPageSize)
	}
	t.Logf("expanded tools/list of a root key: %d tools, %d bytes in %d pages", len(list.Tools), list.Bytes, list.Pages)
}
