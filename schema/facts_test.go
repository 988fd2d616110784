package schema

import (
	"reflect"
	"testing"
)

// The facts of an endpoint are computed once from the real schema: which
// calls edit a configuration guarded by a digest, which reach outside the
// cluster, which answer with secrets, and which parameters name targets.
func TestFactsOnRealSchema(t *testing.T) {
	reg := fixtureRegistry(t, "pve-9.1/apidoc.js")
	edit := func(m, p string) bool { t.Helper(); return lookup(t, reg, m, p).Facts.ConfigEdit }
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", true},
		{"POST", "/nodes/{node}/qemu/{vmid}/config", true},
		{"PUT", "/nodes/{node}/lxc/{vmid}/config", true},
		{"PUT", "/cluster/ha/resources/{sid}", true},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", false},
		{"PUT", "/nodes/{node}/qemu/{vmid}/resize", false},
	} {
		if got := edit(tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s: ConfigEdit = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
	if !lookup(t, reg, "GET", "/nodes/{node}/qemu/{vmid}/config").Facts.ReadsConfig || lookup(t, reg, "GET", "/nodes/{node}/qemu/{vmid}/status/current").Facts.ReadsConfig {
		t.Error("ReadsConfig is wrong for the QEMU config and status reads")
	}
	if !lookup(t, reg, "POST", "/nodes/{node}/storage/{storage}/download-url").Facts.ReachesOutside {
		t.Error("download-url does not reach outside")
	}
	if lookup(t, reg, "GET", "/nodes/{node}/storage/{storage}/content").Facts.ReachesOutside {
		t.Error("a content listing reaches outside")
	}
	for _, key := range [][2]string{{"POST", "/access/ticket"}, {"POST", "/nodes/{node}/termproxy"}, {"GET", "/nodes/{node}/qemu/{vmid}/agent/file-read"}} {
		if !lookup(t, reg, key[0], key[1]).Facts.ReturnsSecrets {
			t.Errorf("%s %s does not return secrets", key[0], key[1])
		}
	}
	create := lookup(t, reg, "POST", "/nodes/{node}/qemu")
	kinds := map[string]TargetKind{}
	for _, tp := range create.Facts.Targets {
		kinds[tp.Param] = tp.Kind
	}
	want := map[string]TargetKind{"node": TargetNode, "vmid": TargetVMID, "storage": TargetStorage, "pool": TargetPool,
		"scsi[n]": TargetDisk, "efidisk0": TargetDisk, "hookscript": TargetVolume}
	for p, k := range want {
		if kinds[p] != k {
			t.Errorf("POST /nodes/{node}/qemu: target %s is %q, want %q", p, kinds[p], k)
		}
	}
	if k, ok := create.TargetKind("scsi7"); !ok || k != TargetDisk {
		t.Errorf("TargetKind(scsi7) = %q, %v; want disk", k, ok)
	}
	if _, ok := create.TargetKind("net0"); ok {
		t.Error("net0 names a target")
	}
	if !create.Secret("cipassword") || create.Secret("memory") {
		t.Error("cipassword is not a secret, or memory is")
	}
}

// Check gives the values a policy decides on typed as the schema says:
// one boolean however the caller spelt it, an integer in canonical form on
// the wire and as a number, arrays item by item.
func TestCheckTypesValues(t *testing.T) {
	reg := fixtureRegistry(t, "pve-9.1/apidoc.js")
	ep := lookup(t, reg, "POST", "/nodes/{node}/qemu/{vmid}/status/stop")
	for _, skip := range []any{true, 1.0, "1"} {
		v, err := ep.Check(map[string]any{"node": "pve1", "vmid": "100", "skiplock": skip, "timeout": "+030"})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Values["skiplock"]; got != true {
			t.Errorf("skiplock %#v → %#v, want true", skip, got)
		}
		if got := v.Values["vmid"]; got != int64(100) {
			t.Errorf("vmid → %#v, want int64(100)", got)
		}
		if got := v.Wire.Get("timeout"); got != "30" {
			t.Errorf("wire timeout = %q, want 30", got)
		}
		if got := v.Values["timeout"]; got != int64(30) {
			t.Errorf("timeout → %#v, want int64(30)", got)
		}
		if got := v.Values["node"]; got != "pve1" {
			t.Errorf("node → %#v", got)
		}
	}
	agent := lookup(t, reg, "POST", "/nodes/{node}/qemu/{vmid}/agent/exec")
	v, err := agent.Check(map[string]any{"node": "pve1", "vmid": 100.0, "command": []any{"ls", "-l"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Values["command"]; !reflect.DeepEqual(got, []any{"ls", "-l"}) {
		t.Errorf("command → %#v", got)
	}
	if _, err := ep.Check(map[string]any{"node": "pve1", "vmid": 100.0, "skiplock": "yes"}); err == nil {
		t.Error("skiplock=yes was accepted")
	}
}

func lookup(t *testing.T, reg *Registry, method, path string) *Endpoint {
	t.Helper()
	ep := reg.Lookup(method, path)
	if ep == nil {
		t.Fatalf("no %s %s in the schema", method, path)
	}
	return ep
}
