package schema

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestToolNameRule(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/version", "get_version"},
		{"GET", "/nodes", "get_nodes"},
		{"GET", "/nodes/{node}", "get_nodes_node"},
		{"GET", "/nodes/{node}/qemu", "get_nodes_qemu"},
		{"DELETE", "/nodes/{node}/qemu/{vmid}", "delete_nodes_qemu_vmid"},
		{"GET", "/nodes/{node}/qemu/{vmid}/status/current", "get_nodes_qemu_status_current"},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", "post_nodes_qemu_status_start"},
		{"POST", "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", "post_nodes_qemu_snapshot_rollback"},
		{"GET", "/cluster/notifications/matcher-field-values", "get_cluster_notifications_matcher_field_values"},
		{"PUT", "/nodes/{node}/qemu/{vmid}/move_disk", "put_nodes_qemu_move_disk"},
		{"GET", "/cluster/sdn/fabrics/node/{fabric_id}/{node_id}", "get_cluster_sdn_fabrics_node_node_id"},
		{"GET", "/", "get_root"},
	} {
		if got := ToolName(tc.method, tc.path); got != tc.want {
			t.Errorf("ToolName(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestToolNameShortensLongNames(t *testing.T) {
	const path = "/cluster/notifications/endpoints/sendmail/{name}"
	got := ToolName("DELETE", path)
	if len(got) > MaxToolNameLen {
		t.Fatalf("%q is %d characters, over %d", got, len(got), MaxToolNameLen)
	}
	if !strings.HasPrefix(got, "delete_cluster_notifications_endpoints_") {
		t.Errorf("%q lost its readable prefix", got)
	}
	if again := ToolName("DELETE", path); again != got {
		t.Errorf("not deterministic: %q then %q", got, again)
	}
	if other := ToolName("DELETE", "/cluster/notifications/endpoints/sendmail/{name}x"); other == got {
		t.Errorf("two long paths share the name %q", got)
	}
}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Every endpoint of both real schemas gets a unique, valid, short name,
// and an endpoint present in both versions has the same name in both.
func TestToolNamesRealSchemas(t *testing.T) {
	names := map[string]map[string]string{} // version -> key -> tool
	for _, file := range []string{pve91, pve845} {
		r := fixtureRegistry(t, file)
		names[file] = map[string]string{}
		seen := map[string]string{}
		for _, ep := range r.Endpoints() {
			if !toolNamePattern.MatchString(ep.Tool) || len(ep.Tool) > MaxToolNameLen {
				t.Errorf("%s: tool name %q breaks the rule", ep.Key(), ep.Tool)
			}
			if prev, dup := seen[ep.Tool]; dup {
				t.Errorf("%s and %s share tool name %q", prev, ep.Key(), ep.Tool)
			}
			seen[ep.Tool] = ep.Key()
			if r.Tool(ep.Tool) != ep {
				t.Errorf("Tool(%q) does not find %s", ep.Tool, ep.Key())
			}
			if ep.Tool != ToolName(ep.Method, ep.Path) {
				t.Errorf("%s: registry name %q differs from the rule's %q", ep.Key(), ep.Tool, ToolName(ep.Method, ep.Path))
			}
			names[file][ep.Key()] = ep.Tool
		}
	}
	common := 0
	for key, tool := range names[pve845] {
		if newer, ok := names[pve91][key]; ok {
			common++
			if newer != tool {
				t.Errorf("%s is %q in 8.4.5 but %q in 9.1", key, tool, newer)
			}
		}
	}
	if common < 590 {
		t.Errorf("only %d endpoints in common between 8.4.5 and 9.1", common)
	}
}

// Names are assigned from the endpoint alone, so a collision (which no
// real schema has) still yields distinct names.
func TestAssignToolNamesResolvesCollisions(t *testing.T) {
	eps := []*Endpoint{
		{Method: "GET", Path: "/a/{b}"},
		{Method: "GET", Path: "/a/b"},
	}
	byTool, err := assignToolNames(eps)
	if err != nil {
		t.Fatal(err)
	}
	if eps[0].Tool == eps[1].Tool || len(byTool) != 2 {
		t.Fatalf("collision not resolved: %q and %q", eps[0].Tool, eps[1].Tool)
	}
	for _, ep := range eps {
		if !strings.HasPrefix(ep.Tool, "get_a_b_") || len(ep.Tool) != len("get_a_b_")+toolHashLen {
			t.Errorf("%s named %q, want get_a_b_<hash>", ep.Key(), ep.Tool)
		}
	}
}

func ExampleToolName() {
	fmt.Println(ToolName("POST", "/nodes/{node}/qemu/{vmid}/status/start"))
	fmt.Println(ToolName("GET", "/nodes/{node}/storage/{storage}/content/{volume}"))
	// Output:
	// post_nodes_qemu_status_start
	// get_nodes_storage_content_volume
}
