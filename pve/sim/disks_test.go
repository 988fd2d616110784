package sim

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

type diskRow struct {
	Devpath  string `json:"devpath"`
	Parent   string `json:"parent"`
	Used     string `json:"used"`
	Type     string `json:"type"`
	ByIDLink string `json:"by_id_link"`
	WWN      string `json:"wwn"`
	Size     int64  `json:"size"`
	Mounted  int    `json:"mounted"`
	Health   string `json:"health"`
}

type vgList struct {
	Leaf     int `json:"leaf"`
	Children []struct {
		Name     string `json:"name"`
		Size     int64  `json:"size"`
		Free     int64  `json:"free"`
		LVCount  int    `json:"lvcount"`
		Children []struct {
			Name string `json:"name"`
			Size int64  `json:"size"`
			Free int64  `json:"free"`
			Leaf int    `json:"leaf"`
		} `json:"children"`
	} `json:"children"`
}

func (e *env) get(c *pve.Client, path string, q url.Values, out any) {
	e.t.Helper()
	if err := c.Get(context.Background(), path, q, out); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}

func (e *env) run(c *pve.Client, method, path string, form url.Values) pve.TaskStatus {
	e.t.Helper()
	resp, err := c.Do(context.Background(), method, path, form)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	upid, err := resp.String()
	if err != nil {
		e.t.Fatalf("%s %s: no UPID: %s", method, path, resp.Data)
	}
	return e.finish(c, upid)
}

func find(rows []diskRow, dev string) *diskRow {
	for i := range rows {
		if rows[i].Devpath == dev {
			return &rows[i]
		}
	}
	return nil
}

// The default layout: the system disk's partitions hold the VG pve (swap,
// root, the thin pool data of local-lvm); sda and sdb are unused; the
// lists have PVE's shapes (partitions only with include-partitions, a
// disk with partitions "used" by its first partition's use without it).
func TestDiskListsDefaultLayout(t *testing.T) {
	e := newEnv(t)
	ro := e.client("mcp@pve!read-only")
	var disks []diskRow
	e.get(ro, "/nodes/pve1/disks/list", nil, &disks)
	if len(disks) != 3 || find(disks, "/dev/nvme0n1p3") != nil {
		t.Fatalf("disks without partitions: %+v", disks)
	}
	nvme := find(disks, "/dev/nvme0n1")
	if nvme == nil || nvme.Used != "BIOS boot" || !strings.HasPrefix(nvme.ByIDLink, "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_") || nvme.WWN != "eui.002538b411b0c7de" {
		t.Errorf("nvme0n1: %+v", nvme)
	}
	if sdb := find(disks, "/dev/sdb"); sdb == nil || sdb.Used != "" || sdb.ByIDLink != "/dev/disk/by-id/ata-Samsung_SSD_870_EVO_2TB_S6PNNS0T500101" {
		t.Errorf("sdb: %+v", sdb)
	}
	e.get(ro, "/nodes/pve1/disks/list", url.Values{"include-partitions": {"1"}, "skipsmart": {"1"}}, &disks)
	if len(disks) != 6 {
		t.Fatalf("with partitions: %+v", disks)
	}
	if p := find(disks, "/dev/nvme0n1p3"); p == nil || p.Parent != "/dev/nvme0n1" || p.Type != "partition" || p.Used != "LVM" {
		t.Errorf("nvme0n1p3: %+v", p)
	}
	if d := find(disks, "/dev/nvme0n1"); d == nil || d.Used != "partitions" || d.Health != "UNKNOWN" {
		t.Errorf("nvme0n1 with partitions: %+v", d)
	}
	var unused []diskRow
	e.get(ro, "/nodes/pve1/disks/list", url.Values{"type": {"unused"}, "include-partitions": {"1"}}, &unused)
	if len(unused) != 2 || find(unused, "/dev/sda") == nil || find(unused, "/dev/sdb") == nil {
		t.Errorf("unused: %+v", unused)
	}

	var vgs vgList
	e.get(ro, "/nodes/pve1/disks/lvm", nil, &vgs)
	if len(vgs.Children) != 1 || vgs.Children[0].Name != "pve" || len(vgs.Children[0].Children) != 1 || vgs.Children[0].Children[0].Name != "/dev/nvme0n1p3" {
		t.Fatalf("volume groups: %+v", vgs)
	}
	// swap, root, data, and the disks of the guests on pve1's local-lvm.
	if vg := vgs.Children[0]; vg.LVCount != 3+4 || vg.Free <= 0 || vg.Free >= vg.Size {
		t.Errorf("vg pve: %+v", vg)
	}
	var pools []struct {
		LV     string `json:"lv"`
		VG     string `json:"vg"`
		LVSize int64  `json:"lv_size"`
		Used   int64  `json:"used"`
	}
	e.get(ro, "/nodes/pve1/disks/lvmthin", nil, &pools)
	if len(pools) != 1 || pools[0].LV != "data" || pools[0].VG != "pve" || pools[0].Used <= 0 {
		t.Errorf("thin pools: %+v", pools)
	}
	var dirs []map[string]any
	e.get(ro, "/nodes/pve1/disks/directory", nil, &dirs)
	if len(dirs) != 0 {
		t.Errorf("directories: %+v", dirs)
	}
}

// Creating a volume group and a directory storage changes every list as
// PVE's would: the PV, the storage (lvm with its vgname; dir at
// /mnt/pve/NAME, mounted by UUID), the disk's use and its new partition.
func TestDiskCreateVolumeGroupAndDirectory(t *testing.T) {
	e := newEnv(t)
	root := e.client("root@pam!sim")
	if st := e.run(root, "POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"models"}, "device": {"/dev/sda"}, "add_storage": {"1"}}); st.ExitStatus != "OK" {
		t.Fatalf("lvmcreate: %+v", st)
	}
	if st := e.run(root, "POST", "/nodes/pve1/disks/directory", url.Values{"name": {"models-dir"}, "device": {"/dev/disk/by-id/ata-Samsung_SSD_870_EVO_2TB_S6PNNS0T500101"}, "add_storage": {"1"}}); st.ExitStatus != "OK" {
		t.Fatalf("dircreate: %+v", st)
	}
	var vgs vgList
	e.get(root, "/nodes/pve1/disks/lvm", nil, &vgs)
	if len(vgs.Children) != 2 || vgs.Children[0].Name != "models" || vgs.Children[0].Children[0].Name != "/dev/sda" || vgs.Children[0].LVCount != 0 {
		t.Fatalf("volume groups: %+v", vgs)
	}
	var disks []diskRow
	e.get(root, "/nodes/pve1/disks/list", url.Values{"include-partitions": {"1"}}, &disks)
	if d := find(disks, "/dev/sda"); d == nil || d.Used != "LVM" {
		t.Errorf("sda: %+v", d)
	}
	if p := find(disks, "/dev/sdb1"); p == nil || p.Parent != "/dev/sdb" || p.Used != "ext4" || p.Mounted != 1 {
		t.Errorf("sdb1: %+v", p)
	}
	var dirs []struct{ Path, Device, Type, Unitfile string }
	e.get(root, "/nodes/pve1/disks/directory", nil, &dirs)
	if len(dirs) != 1 || dirs[0].Path != "/mnt/pve/models-dir" || !strings.HasPrefix(dirs[0].Device, "/dev/disk/by-uuid/") ||
		dirs[0].Unitfile != `/etc/systemd/system/mnt-pve-models\x2ddir.mount` || dirs[0].Type != "ext4" {
		t.Errorf("directories: %+v", dirs)
	}
	var storages []map[string]any
	e.get(root, "/storage", nil, &storages)
	got := map[string]map[string]any{}
	for _, s := range storages {
		got[s["storage"].(string)] = s
	}
	if s := got["models"]; s == nil || s["type"] != "lvm" || s["vgname"] != "models" || s["nodes"] != "pve1" {
		t.Errorf("storage models: %v", s)
	}
	if s := got["models-dir"]; s == nil || s["type"] != "dir" || s["path"] != "/mnt/pve/models-dir" || s["is_mountpoint"] != "1" {
		t.Errorf("storage models-dir: %v", s)
	}
	// A disk in use is refused, as assert_disk_unused refuses it.
	_, err := root.Do(context.Background(), "POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"again"}, "device": {"/dev/sdb"}})
	var apiErr *pve.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "device '/dev/sdb' is already in use") {
		t.Errorf("in use: %v", err)
	}
	_, err = root.Do(context.Background(), "POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"again"}, "device": {"/dev/dm-7"}})
	if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "not a valid block device") {
		t.Errorf("unknown device: %v", err)
	}
}

// add_storage needs Datastore.Allocate on /storage beside Sys.Modify, a
// check PVE makes in code.
func TestDiskCreateAddStorageNeedsDatastoreAllocate(t *testing.T) {
	e := newEnv(t)
	e.sim.mu.Lock()
	e.sim.st.roleDefs["DiskAdmin"] = privSet("Sys.Modify", "Sys.Audit")
	e.sim.mu.Unlock()
	tok, err := e.sim.AddToken("disks@pve!t", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Grant("/", "disks@pve", "DiskAdmin", true); err != nil {
		t.Fatal(err)
	}
	c := e.clientFor(tok)
	_, err = c.Do(context.Background(), "POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"models"}, "device": {"/dev/sda"}, "add_storage": {"1"}})
	var apiErr *pve.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 403 || !strings.Contains(apiErr.Message, "/storage, Datastore.Allocate") {
		t.Fatalf("add_storage without Datastore.Allocate: %v", err)
	}
	if st := e.run(c, "POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"models"}, "device": {"/dev/sda"}}); st.ExitStatus != "OK" {
		t.Fatalf("lvmcreate without storage: %+v", st)
	}
	_, err = e.client("mcp@pve!operator").Do(context.Background(), "POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"x"}, "device": {"/dev/sdb"}})
	if !errors.As(err, &apiErr) || apiErr.Status != 403 {
		t.Errorf("operator: %v", err)
	}
}
