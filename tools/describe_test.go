package tools

import (
	"encoding/json"
	"slices"
	"testing"
)

// Reproduces the review finding: describe marked the 14 model aliases of
// net[n] (e1000 … vmxnet3) as required keys of the property string, so a
// model reading it would send every NIC model at once. An alias only
// renames another key and is never required; it takes its target's type.
// The same held for the disk aliases (volume of file, the *_length
// aliases of the *_max_length limits), checked here too, on PVE 9.1.
func TestDescribeAliasesAreNotRequired(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("root")
	for _, tc := range []struct {
		tool, param string
		aliases     map[string]string // alias → the type it takes
		required    []string          // real required sub-keys, still required
	}{
		{"put_nodes_qemu_config", "net0", map[string]string{
			"e1000": "string", "e1000-82540em": "string", "e1000-82544gc": "string", "e1000-82545em": "string", "e1000e": "string",
			"i82551": "string", "i82557b": "string", "i82559er": "string", "ne2k_isa": "string", "ne2k_pci": "string",
			"pcnet": "string", "rtl8139": "string", "virtio": "string", "vmxnet3": "string",
		}, []string{"model"}},
		{"post_nodes_qemu", "scsi0", map[string]string{
			"volume": "string", "bps_rd_length": "integer", "bps_wr_length": "integer", "iops_rd_length": "integer", "iops_wr_length": "integer",
		}, []string{"file"}},
	} {
		res, content := call(t, c, ctx, ToolDescribe, map[string]any{"tool": tc.tool, "param": tc.param})
		if res.IsError {
			t.Fatalf("%s %s: %s", tc.tool, tc.param, text(res))
		}
		keys := content["param"].(map[string]any)["keys"].([]any)
		seen := map[string]bool{}
		for _, k := range keys {
			kd := k.(map[string]any)
			name := kd["name"].(string)
			seen[name] = true
			if typ, alias := tc.aliases[name]; alias {
				if kd["required"] != false || kd["alias_of"] == nil || kd["type"] != typ {
					t.Errorf("%s %s: alias key %s described as %v, want required false, alias_of set, type %s", tc.tool, tc.param, name, kd, typ)
				}
				continue
			}
			if slices.Contains(tc.required, name) && kd["required"] != true {
				t.Errorf("%s %s: key %s is required by PVE, described as %v", tc.tool, tc.param, name, kd)
			}
		}
		for a := range tc.aliases {
			if !seen[a] {
				t.Errorf("%s %s: alias key %s is missing from the description", tc.tool, tc.param, a)
			}
		}
	}
	// The net[n] aliases set the model too: e1000=<mac> means model=e1000.
	_, content := call(t, c, ctx, ToolDescribe, map[string]any{"tool": "put_nodes_qemu_config", "param": "net0"})
	for _, k := range content["param"].(map[string]any)["keys"].([]any) {
		if kd := k.(map[string]any); kd["name"] == "e1000" && kd["sets_key"] != "model" {
			t.Errorf("e1000 does not say it sets model: %v", kd)
		}
	}
}

// The summary's required list names what a call must give: on PVE 9.1 the
// SDN fabric variants (delete, interfaces: oneOf, all variants optional)
// are not required, and the list agrees with the tool's JSON Schema.
func TestDescribeRequiredAgreesWithInputSchema(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("root")
	for _, tool := range []string{"put_cluster_sdn_fabrics_fabric_id", "post_cluster_sdn_fabrics_node_fabric_id", "put_nodes_qemu_config", "post_nodes_lxc"} {
		ep := realRegistry(t).Tool(tool)
		if ep == nil {
			t.Fatalf("no tool %s in PVE 9.1", tool)
		}
		_, content := call(t, c, ctx, ToolDescribe, map[string]any{"tool": tool})
		var got []string
		for _, r := range content["required"].([]any) {
			got = append(got, r.(string))
		}
		var js struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(ep.InputSchema(), &js); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, js.Required) {
			t.Errorf("%s: describe requires %v, the input schema requires %v", tool, got, js.Required)
		}
		for _, name := range []string{"delete", "interfaces"} {
			if slices.Contains(got, name) {
				t.Errorf("%s: %s is a oneOf whose variants are all optional, yet describe requires it", tool, name)
			}
		}
	}
}
