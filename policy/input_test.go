package policy

import (
	"reflect"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestTargetsOf(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	tests := []struct {
		method, path string
		args         map[string]any
		want         Targets
	}{
		{"POST", "/nodes/pve1/qemu", map[string]any{"vmid": 150, "scsi0": "local-lvm:32,iothread=1", "ide2": "local:iso/debian.iso,media=cdrom", "net0": "virtio,bridge=vmbr0"},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{150}, Storages: []string{"local", "local-lvm"}}},
		{"POST", "/nodes/pve1/qemu/100/clone", map[string]any{"newid": "120", "storage": "ceph", "target": "pve2"},
			Targets{Nodes: []string{"pve1", "pve2"}, VMIDs: []int{100, 120}, Storages: []string{"ceph"}}},
		{"POST", "/nodes/pve1/vzdump", map[string]any{"vmid": "101,100", "storage": "backup"},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{100, 101}, Storages: []string{"backup"}}},
		{"POST", "/nodes/pve1/vzdump", map[string]any{"all": true},
			Targets{Nodes: []string{"pve1"}}},
		// A volume names its storage and the guest it belongs to.
		{"DELETE", "/nodes/pve1/storage/local/content/local%3A100%2Fvm-100-disk-0.qcow2", nil,
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{100}, Storages: []string{"local"}}},
		// Regression: a disk of VM 900 attached to VM 150 named only 150.
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"scsi1": "local-lvm:vm-900-disk-0,size=8G", "virtio0": "/dev/sdb", "ide2": "none,media=cdrom"},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{150, 900}, Storages: []string{"local-lvm"}, Paths: []string{"/dev/sdb"}}},
		// Regression: a new disk importing another guest's disk named
		// only the new guest.
		{"POST", "/nodes/pve1/qemu", map[string]any{"vmid": 150, "scsi0": "local-lvm:0,import-from=local-lvm:vm-900-disk-0"},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{150, 900}, Storages: []string{"local-lvm"}}},
		// A linked clone names its base's guest too.
		{"POST", "/nodes/pve1/lxc", map[string]any{"vmid": 201, "rootfs": "local-zfs:base-200-disk-0/subvol-201-disk-0,size=8G", "ostemplate": "local:vztmpl/debian.tar.zst"},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{200, 201}, Storages: []string{"local", "local-zfs"}}},
		{"POST", "/nodes/pve1/lxc/200/move_volume", map[string]any{"volume": "rootfs", "storage": "local-zfs"},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{200}, Storages: []string{"local-zfs"}}},
		{"POST", "/nodes/pve1/qemu/100/agent/exec", map[string]any{"command": []any{"ls", "-l"}},
			Targets{Nodes: []string{"pve1"}, VMIDs: []int{100}, Commands: []string{"ls -l"}}},
		{"POST", "/nodes/pve1/services/pveproxy/restart", nil,
			Targets{Nodes: []string{"pve1"}, Services: []string{"pveproxy"}}},
		{"POST", "/nodes/pve1/qemu/100/migrate", map[string]any{"target": "pve2", "targetstorage": "local-lvm:ceph"},
			Targets{Nodes: []string{"pve1", "pve2"}, VMIDs: []int{100}, Storages: []string{"ceph"}}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			ep, vars, err := reg.Match(tt.method, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got := TargetsOf(ep, vars, tt.args)
			if !reflect.DeepEqual(normTargets(got), normTargets(tt.want)) {
				t.Errorf("TargetsOf = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func normTargets(t Targets) Targets {
	for _, s := range []*[]string{&t.Nodes, &t.Storages, &t.Pools, &t.Paths, &t.Services, &t.Commands} {
		if len(*s) == 0 {
			*s = nil
		}
	}
	if len(t.VMIDs) == 0 {
		t.VMIDs = nil
	}
	return t
}

func TestInputValue(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ep, vars, err := reg.Match("POST", "/nodes/pve1/qemu/100/status/stop")
	if err != nil {
		t.Fatal(err)
	}
	loc := time.FixedZone("CET", 3600)
	in := BuildInput(ep, "/nodes/pve1/qemu/100/status/stop", vars, map[string]any{"timeout": 30},
		Principal{KeyID: "abcdefghijklmnop", Name: "alice", Profile: "operator", Transport: "tailnet", Source: "100.64.0.7",
			Tailnet: &TailnetIdentity{User: "alice@example.com", Node: "laptop", Tags: []string{"tag:admins"},
				Capabilities: map[string][]any{"example.com/cap/proxmox-mcp": {map[string]any{"role": "operator", "vmids": []any{100.0, 101.0}}}}}},
		Guard{Evaluated: true}, time.Date(2026, 3, 13, 17, 30, 0, 0, loc))
	v, err := in.Value()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"concrete_path": "/nodes/pve1/qemu/100/status/stop", "endpoint": {"config_edit": false, "download": false, "expose_credentials": false, "reaches_outside": false, "returns_secrets": false, "risk": "destructive"}, "guard": {"evaluated": true, "hits": []}, "host": null, "method": "POST", "outside": [], "params": {"timeout": 30}, "path": "/nodes/{node}/qemu/{vmid}/status/stop", "principal": {"key_id": "abcdefghijklmnop", "name": "alice", "policy": "", "profile": "operator", "source": "100.64.0.7", "tailnet": {"capabilities": {"example.com/cap/proxmox-mcp": [{"role": "operator", "vmids": [100, 101]}]}, "node": "laptop", "tags": ["tag:admins"], "user": "alice@example.com"}, "transport": "tailnet"}, "reaches_host": [], "risk": "destructive", "targets": {"commands": [], "nodes": ["pve1"], "paths": [], "pools": [], "services": [], "storages": [], "vmids": [100]}, "time": {"hour": 17, "minute": 30, "rfc3339": "2026-03-13T17:30:00+01:00", "unix": 1773419400, "utc_offset_seconds": 3600, "weekday": "Friday", "zone": "CET"}, "tool": "post_nodes_qemu_status_stop"}`
	if got := v.String(); got != want {
		t.Errorf("input =\n%s\nwant\n%s", got, want)
	}
}

// A Tailnet identity without tags or grants still has both fields, empty,
// so that a policy can test them without an undefined.
func TestInputValueTailnetEmpty(t *testing.T) {
	in := Input{Principal: Principal{Transport: "tailnet", Tailnet: &TailnetIdentity{User: "tagged-devices", Node: "ci-runner"}}}
	v, err := in.Value()
	if err != nil {
		t.Fatal(err)
	}
	got := v.(interface{ Get(*ast.Term) *ast.Term }).Get(ast.StringTerm("principal")).Value.(ast.Object).Get(ast.StringTerm("tailnet")).String()
	if want := `{"capabilities": {}, "node": "ci-runner", "tags": [], "user": "tagged-devices"}`; got != want {
		t.Errorf("principal.tailnet = %s, want %s", got, want)
	}
}

// The cache key of an identity is canonical (tag order does not matter)
// and tells apart identities that differ in any field, a capability's value
// included.
func TestTailnetCacheKey(t *testing.T) {
	key := func(id TailnetIdentity) string {
		t.Helper()
		k, err := id.cacheKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := TailnetIdentity{User: "alice@example.com", Node: "laptop", Tags: []string{"tag:b", "tag:a"},
		Capabilities: map[string][]any{"example.com/cap/x": {map[string]any{"role": "read-only"}}, "example.com/cap/y": {}}}
	same := base
	same.Tags = []string{"tag:a", "tag:b"}
	same.Capabilities = map[string][]any{"example.com/cap/y": {}, "example.com/cap/x": {map[string]any{"role": "read-only"}}}
	if key(base) != key(same) {
		t.Errorf("the same identity has two keys:\n%s\n%s", key(base), key(same))
	}
	if base.Tags[0] != "tag:b" {
		t.Error("cacheKey sorted the caller's tags in place")
	}
	seen := map[string]string{key(base): "base"}
	for name, id := range map[string]TailnetIdentity{
		"user":       {User: "bob@example.com", Node: base.Node, Tags: base.Tags, Capabilities: base.Capabilities},
		"node":       {User: base.User, Node: "desktop", Tags: base.Tags, Capabilities: base.Capabilities},
		"tags":       {User: base.User, Node: base.Node, Tags: []string{"tag:a"}, Capabilities: base.Capabilities},
		"no caps":    {User: base.User, Node: base.Node, Tags: base.Tags},
		"cap value":  {User: base.User, Node: base.Node, Tags: base.Tags, Capabilities: map[string][]any{"example.com/cap/x": {map[string]any{"role": "operator"}}, "example.com/cap/y": {}}},
		"cap name":   {User: base.User, Node: base.Node, Tags: base.Tags, Capabilities: map[string][]any{"example.com/cap/z": {map[string]any{"role": "read-only"}}, "example.com/cap/y": {}}},
		"separator":  {User: base.User + `","node":"`, Node: base.Node, Tags: base.Tags, Capabilities: base.Capabilities},
		"two grants": {User: base.User, Node: base.Node, Tags: base.Tags, Capabilities: map[string][]any{"example.com/cap/x": {map[string]any{"role": "read-only"}, map[string]any{"role": "read-only"}}, "example.com/cap/y": {}}},
	} {
		k := key(id)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share the key %s", name, other, k)
		}
		seen[k] = name
	}
}
