package schema

import (
	"strings"
	"testing"
)

// Alias keys are never required (PVE's check_object skips them): on 9.1
// every alias of every property string, 111 of them (the 14 NIC models of
// net[n] among them), says so, while the keys they rename keep their own
// rule. Before Required existed, callers read !Optional and got true.
func TestRequiredSkipsAliasesOnRealSchema(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	aliases := 0
	var walk func(where string, p *Param)
	walk = func(where string, p *Param) {
		if p.Alias != "" {
			aliases++
			if p.Required() {
				t.Errorf("%s: alias %s of %s is required", where, p.Name, p.Alias)
			}
		}
		if p.Properties != nil {
			for _, k := range p.Properties.Keys {
				walk(where+"."+p.Name, k)
			}
		}
	}
	for _, ep := range r.Endpoints() {
		for _, p := range ep.Params {
			walk(ep.Key(), p)
		}
	}
	if aliases != 111 {
		t.Errorf("found %d alias keys in 9.1, want 111", aliases)
	}
	net := r.Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config").Param("net[n]").Properties
	if model := net.Key("model"); !model.Required() {
		t.Error("net[n] model lost its required rule")
	}
	for _, name := range strings.Fields("e1000 e1000-82540em e1000-82544gc e1000-82545em e1000e i82551 i82557b i82559er ne2k_isa ne2k_pci pcnet rtl8139 virtio vmxnet3") {
		if k := net.Key(name); k == nil || k.Required() {
			t.Errorf("net[n] alias %s: %+v", name, k)
		}
	}
}
