package policy

import (
	"reflect"
	"testing"
	"time"
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
		{"DELETE", "/nodes/pve1/storage/local/content/local%3A100%2Fvm-100-disk-0.qcow2", nil,
			Targets{Nodes: []string{"pve1"}, Storages: []string{"local"}}},
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
			Tailnet: &TailnetIdentity{User: "alice@example.com", Node: "laptop"}},
		Guard{Evaluated: true}, time.Date(2026, 3, 13, 17, 30, 0, 0, loc))
	v, err := in.Value()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"concrete_path": "/nodes/pve1/qemu/100/status/stop", "endpoint": {"download": false, "expose_credentials": false, "risk": "destructive"}, "guard": {"evaluated": true, "hits": []}, "method": "POST", "params": {"timeout": 30}, "path": "/nodes/{node}/qemu/{vmid}/status/stop", "principal": {"key_id": "abcdefghijklmnop", "name": "alice", "policy": "", "profile": "operator", "source": "100.64.0.7", "tailnet": {"node": "laptop", "user": "alice@example.com"}, "transport": "tailnet"}, "risk": "destructive", "targets": {"commands": [], "nodes": ["pve1"], "paths": [], "pools": [], "services": [], "storages": [], "vmids": [100]}, "time": {"hour": 17, "minute": 30, "rfc3339": "2026-03-13T17:30:00+01:00", "unix": 1773419400, "utc_offset_seconds": 3600, "weekday": "Friday", "zone": "CET"}, "tool": "post_nodes_qemu_status_stop"}`
	if got := v.String(); got != want {
		t.Errorf("input =\n%s\nwant\n%s", got, want)
	}
}
