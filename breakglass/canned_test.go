package breakglass

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// canned answers GETs from a table of PVE bodies (the data member), for
// layouts the simulator does not build: ZFS, multipath, thin LVs PVE does
// not name, storages above a protected path, directory mappings. A path
// not in the table answers 501, as PVE does for a method it lacks.
type canned map[string]string

func (c canned) Get(_ context.Context, path string, q url.Values, out any) error {
	key := path
	if len(q) > 0 {
		key += "?" + q.Encode()
	}
	body, ok := c[key]
	if !ok {
		body, ok = c[path]
	}
	if !ok {
		return &pve.APIError{Method: "GET", Path: path, Status: http.StatusNotImplemented, Message: "Method 'GET " + path + "' not implemented"}
	}
	return json.Unmarshal([]byte(body), out)
}

// host is one node, pve1, with:
//   - /dev/sdc in a ZFS pool; /dev/sdd under multipath, whose map
//     /dev/mapper/mpatha is the PV of the VG mp;
//   - the VG pve (PV /dev/nvme0n1p3) with the thin pool data and an LV
//     "model" PVE does not list (it lists only vm-N-… names);
//   - the dir storage local at /var/lib/vz and an lvmthin storage
//     local-lvm on pve/data;
//   - the directory mapping models (/mnt/model-repo) that VM 300 uses
//     through virtiofs0;
//   - VM 300 (virtiofs) and VM 301 (nothing protected).
func host() canned {
	return canned{
		"/storage": `[{"storage":"local","type":"dir","path":"/var/lib/vz","content":"iso,backup,vztmpl"},
			{"storage":"local-lvm","type":"lvmthin","vgname":"pve","thinpool":"data","content":"images,rootdir"}]`,
		"/nodes":                     `[{"node":"pve1","status":"online"},{"node":"pve2","status":"offline"}]`,
		"/cluster/resources?type=vm": `[{"vmid":300,"node":"pve1","type":"qemu"},{"vmid":301,"node":"pve1","type":"qemu"}]`,
		"/cluster/mapping/dir":       `[{"id":"models","map":["node=pve1,path=/mnt/model-repo"]}]`,
		"/nodes/pve1/disks/list?include-partitions=1&skipsmart=1": `[
			{"devpath":"/dev/nvme0n1","used":"partitions","by_id_link":"/dev/disk/by-id/nvme-Samsung_1","wwn":"eui.0025"},
			{"devpath":"/dev/nvme0n1p3","parent":"/dev/nvme0n1","used":"LVM"},
			{"devpath":"/dev/sdc","used":"ZFS","by_id_link":"/dev/disk/by-id/ata-Disk_C","wwn":"0x5000c"},
			{"devpath":"/dev/sdd","used":"Device Mapper","by_id_link":"/dev/disk/by-id/ata-Disk_D","wwn":"0x5000d"}]`,
		"/nodes/pve1/disks/lvm":                 `{"leaf":0,"children":[{"name":"mp","children":[{"name":"/dev/mapper/mpatha"}]},{"name":"pve","children":[{"name":"/dev/nvme0n1p3"}]}]}`,
		"/nodes/pve1/disks/lvmthin":             `[{"lv":"data","vg":"pve"}]`,
		"/nodes/pve1/disks/directory":           `[]`,
		"/nodes/pve1/storage/local-lvm/content": `[{"volid":"local-lvm:vm-301-disk-0","vmid":301}]`,
		"/nodes/pve1/storage/local/content":     `[{"volid":"local:iso/x.iso"},{"volid":"local:backup/vzdump-qemu-301-2026_01_01-00_00_00.vma.zst","vmid":301}]`,
		"/nodes/pve1/qemu/300/pending":          `[{"key":"virtiofs0","value":"models,cache=auto"},{"key":"memory","value":4096}]`,
		"/nodes/pve1/qemu/300/snapshot":         `[{"name":"current"}]`,
		"/nodes/pve1/qemu/301/pending":          `[{"key":"scsi0","value":"local-lvm:vm-301-disk-0,size=8G"}]`,
		"/nodes/pve1/qemu/301/snapshot":         `[{"name":"current"}]`,
	}
}

func TestGuardLayoutsBeyondPVEsView(t *testing.T) {
	for _, tc := range []struct {
		name           string
		p              Protected
		method, path   string
		vars           map[string]string
		args           map[string]any
		kind, contains string
		noHits         bool
	}{
		{name: "a ZFS pool may hold the protected disk", p: Protected{Devices: []string{"/dev/sdc"}},
			method: "DELETE", path: "/nodes/{node}/disks/zfs/{name}", vars: map[string]string{"node": "pve1", "name": "tank"},
			kind: "unresolved", contains: "protected device /dev/sdc (node pve1) is in a ZFS pool whose members PVE's API does not list"},
		{name: "a VG on a multipath map may lie on the protected disk", p: Protected{Devices: []string{"/dev/sdd"}},
			method: "DELETE", path: "/nodes/{node}/disks/lvm/{name}", vars: map[string]string{"node": "pve1", "name": "mp"},
			kind: "unresolved", contains: "volume group mp (node pve1), whose physical volume /dev/mapper/mpatha is not in PVE's disk list"},
		{name: "a VG on a multipath map, with no protected disk", p: Protected{Volumes: []string{"pve/model"}},
			method: "DELETE", path: "/nodes/{node}/disks/lvm/{name}", vars: map[string]string{"node": "pve1", "name": "mp"}, noHits: true},
		{name: "an LV of that VG", p: Protected{Devices: []string{"/dev/sdd"}},
			method: "PUT", path: "/nodes/{node}/qemu/{vmid}/config", vars: map[string]string{"node": "pve1", "vmid": "301"},
			args: map[string]any{"scsi3": "/dev/mp/data"}, kind: "unresolved", contains: "/dev/mp/data, an LV of volume group mp"},
		{name: "a thin LV PVE does not list: every pool of its VG may hold it", p: Protected{Volumes: []string{"pve/model"}},
			method: "DELETE", path: "/nodes/{node}/disks/lvmthin/{name}", vars: map[string]string{"node": "pve1", "name": "data"},
			args: map[string]any{"volume-group": "pve"}, kind: "thin-pool", contains: "thin pool pve/data (node pve1), which may hold protected LV pve/model"},
		{name: "the LV by its lvmthin volume id", p: Protected{Volumes: []string{"pve/model"}},
			method: "DELETE", path: "/nodes/{node}/storage/{storage}/content/{volume}", vars: map[string]string{"node": "pve1", "storage": "local-lvm", "volume": "model"},
			kind: "volume", contains: "local-lvm:model, which names protected LV pve/model"},
		{name: "a storage above the path: its definition is protected", p: Protected{Paths: []string{"/var/lib/vz/models"}},
			method: "PUT", path: "/storage/{storage}", vars: map[string]string{"storage": "local"}, args: map[string]any{"path": "/srv/vz"},
			kind: "path", contains: "storage local, whose path /var/lib/vz is above protected path /var/lib/vz/models"},
		{name: "a storage above the path: its content, which cannot reach it, is not", p: Protected{Paths: []string{"/var/lib/vz/models"}},
			method: "DELETE", path: "/nodes/{node}/storage/{storage}/content/{volume}", vars: map[string]string{"node": "pve1", "storage": "local", "volume": "local:iso/x.iso"},
			noHits: true},
		{name: "a storage whose content directory holds the path", p: Protected{Paths: []string{"/var/lib/vz/template/iso/models"}},
			method: "DELETE", path: "/nodes/{node}/storage/{storage}/content/{volume}", vars: map[string]string{"node": "pve1", "storage": "local", "volume": "local:iso/x.iso"},
			kind: "path", contains: "storage local, whose content directories under /var/lib/vz reach protected path /var/lib/vz/template/iso/models"},
		{name: "a guest with a backup on that storage", p: Protected{Paths: []string{"/var/lib/vz/template/iso/models"}},
			method: "POST", path: "/nodes/{node}/qemu/{vmid}/status/stop", vars: map[string]string{"node": "pve1", "vmid": "301"},
			kind: "guest", contains: "guest 301, which owns local:backup/vzdump-qemu-301-2026_01_01-00_00_00.vma.zst on storage local"},
		{name: "a guest using the repository through a directory mapping", p: Protected{Paths: []string{"/mnt/model-repo"}},
			method: "POST", path: "/nodes/{node}/qemu/{vmid}/status/stop", vars: map[string]string{"node": "pve1", "vmid": "300"},
			kind: "guest", contains: "vm 300 virtiofs0 holds /mnt/model-repo, at or under protected path /mnt/model-repo"},
		{name: "a mapping created for the repository", p: Protected{Paths: []string{"/mnt/model-repo"}},
			method: "POST", path: "/cluster/mapping/dir", args: map[string]any{"id": "again", "map": []any{"node=pve1,path=/mnt/model-repo/llama"}},
			kind: "path", contains: "/mnt/model-repo/llama, at or under protected path /mnt/model-repo"},
		{name: "a guest on a node the inventory cannot read", p: Protected{Paths: []string{"/mnt/model-repo"}},
			method: "PUT", path: "/nodes/{node}/disks/wipedisk", vars: map[string]string{"node": "pve2"}, args: map[string]any{"disk": "/dev/sdb"},
			kind: "unresolved", contains: "the disks of node pve2 are not in the inventory"},
		{name: "an unrelated guest", p: Protected{Paths: []string{"/mnt/model-repo"}},
			method: "POST", path: "/nodes/{node}/qemu/{vmid}/status/stop", vars: map[string]string{"node": "pve1", "vmid": "301"}, noHits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGuard(tc.p, Options{PVE: host(), ResolvePath: fakeFS{}.resolve})
			if err != nil {
				t.Fatal(err)
			}
			ep := registry91(t).Lookup(tc.method, tc.path)
			if ep == nil {
				t.Fatalf("%s %s is not in PVE 9.1", tc.method, tc.path)
			}
			got := policyGuard{Guard: g.Check(context.Background(), ep, tc.vars, tc.args)}
			switch {
			case tc.noHits && len(got.Hits) != 0:
				t.Errorf("hits %+v, want none", got.Hits)
			case !tc.noHits && !got.has(tc.kind, tc.contains):
				t.Errorf("hits %+v, want a %s hit with %q", got.Hits, tc.kind, tc.contains)
			}
		})
	}
}

// NewGuard refuses protected names that cannot name anything, saying
// which field and why.
func TestNewGuardChecksNames(t *testing.T) {
	for _, tc := range []struct {
		p    Protected
		want string
	}{
		{Protected{Paths: []string{"mnt/models"}}, `protected.paths[0]: "mnt/models" must be an absolute path`},
		{Protected{Devices: []string{"/dev/../etc/shadow"}}, `protected.devices[0]: "/dev/../etc/shadow" must be a clean path under /dev/`},
		{Protected{Devices: []string{"/srv/disk"}}, `protected.devices[0]: "/srv/disk" must be a clean path under /dev/`},
		{Protected{Volumes: []string{"models"}}, `protected.volumes[0]: "models" must be a volume id (storage:name) or an LV (vg/lv)`},
		{Protected{Volumes: []string{"pve/a/b"}}, `protected.volumes[0]: "pve/a/b" must be a volume id`},
		{Protected{Volumes: []string{"1x:vm-100-disk-0"}}, `protected.volumes[0]: volume id "1x:vm-100-disk-0": storage id "1x" must start with a letter`},
	} {
		if _, err := NewGuard(tc.p, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewGuard(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
}
