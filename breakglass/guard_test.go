package breakglass

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

func TestGuard(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "dev-sdb")
	os.WriteFile(dev, nil, 0o600)
	link := filepath.Join(dir, "by-id-wwn-0x5000")
	os.Symlink(dev, link)
	g := NewGuard(Protected{Paths: []string{"/mnt/model-repo"}, Volumes: []string{"local-lvm:vm-900-disk-0", "pve/model"}, Devices: []string{"/dev/sdb"}})
	g.devices = append(g.devices, dev) // the test's stand-in for a real block device
	for _, tc := range []struct {
		name string
		vars map[string]string
		args map[string]any
		want []policy.GuardHit
	}{
		{"nothing protected named", nil, map[string]any{"scsi0": "local-lvm:vm-100-disk-0,size=32G", "description": "model repo notes"}, nil},
		{"path", nil, map[string]any{"path": "/mnt/model-repo/llama/weights.bin"}, []policy.GuardHit{{Kind: "path", Value: "/mnt/model-repo", Param: "path"}}},
		{"path escaping with ..", nil, map[string]any{"path": "/srv/../mnt/model-repo"}, []policy.GuardHit{{Kind: "path", Value: "/mnt/model-repo", Param: "path"}}},
		{"parent of the repository", nil, map[string]any{"path": "/mnt"}, []policy.GuardHit{{Kind: "path", Value: "/mnt/model-repo", Param: "path"}}},
		{"bind mount in a property string", nil, map[string]any{"mp0": "/mnt/model-repo,mp=/models"}, []policy.GuardHit{{Kind: "path", Value: "/mnt/model-repo", Param: "mp0"}}},
		{"volume as a disk", nil, map[string]any{"scsi1": "local-lvm:vm-900-disk-0,size=100G"}, []policy.GuardHit{{Kind: "volume", Value: "local-lvm:vm-900-disk-0", Param: "scsi1"}}},
		{"volume in the path", map[string]string{"volume": "local-lvm:vm-900-disk-0"}, nil, []policy.GuardHit{{Kind: "volume", Value: "local-lvm:vm-900-disk-0", Param: "volume"}}},
		{"LV as a device path", nil, map[string]any{"scsi2": "/dev/pve/model"}, []policy.GuardHit{{Kind: "device", Value: "/dev/pve/model", Param: "scsi2"}, {Kind: "volume", Value: "pve/model", Param: "scsi2"}}},
		{"LV through device mapper", nil, map[string]any{"virtio0": "/dev/mapper/pve-model"}, []policy.GuardHit{{Kind: "device", Value: "/dev/mapper/pve-model", Param: "virtio0"}}},
		{"device by a symlink", nil, map[string]any{"sata0": link}, []policy.GuardHit{{Kind: "device", Value: dev, Param: "sata0"}}},
		{"device in a list", nil, map[string]any{"devices": []any{"/dev/sdc", "/dev/sdb"}}, []policy.GuardHit{{Kind: "device", Value: "/dev/sdb", Param: "devices"}}},
	} {
		got := g.Check(context.Background(), nil, tc.vars, tc.args)
		if !got.Evaluated {
			t.Errorf("%s: not evaluated", tc.name)
		}
		if len(got.Hits) != len(tc.want) {
			t.Errorf("%s: hits %+v, want %+v", tc.name, got.Hits, tc.want)
			continue
		}
		for i := range tc.want {
			if got.Hits[i] != tc.want[i] {
				t.Errorf("%s: hit %+v, want %+v", tc.name, got.Hits[i], tc.want[i])
			}
		}
	}
	empty := NewGuard(Protected{})
	if got := empty.Check(context.Background(), nil, nil, map[string]any{"path": "/mnt/model-repo"}); !got.Evaluated || len(got.Hits) != 0 || !empty.Empty() {
		t.Errorf("empty guard: %+v", got)
	}
}
