package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// The block devices of a node as PVE's Diskmanage and LVMPlugin see them:
// disks with their partitions, LVM volume groups with their physical
// volumes, logical volumes and thin pools, and the mount units of PVE's
// directory storages (/etc/systemd/system/mnt-pve-NAME.mount).

func (s *Sim) diskRoutes(add func(string, handler)) {
	add("GET /nodes/{node}/disks/list", s.diskList)
	add("GET /nodes/{node}/disks/lvm", s.lvmList)
	add("POST /nodes/{node}/disks/lvm", s.lvmCreate)
	add("GET /nodes/{node}/disks/lvmthin", s.lvmThinList)
	add("GET /nodes/{node}/disks/directory", s.directoryList)
	add("POST /nodes/{node}/disks/directory", s.directoryCreate)
}

// blockLayout is one node's block devices.
type blockLayout struct {
	disks  []*blockDisk
	vgs    []*volumeGroup
	mounts []*mountUnit
}

// blockDisk is a disk of node.disks and what is on it.
type blockDisk struct {
	disk
	partitions []*partition
	// vg is the volume group of which the whole disk is a PV.
	vg string
	// fstype is a filesystem made on the whole disk.
	fstype string
}

type partition struct {
	num     int
	size    int64
	used    string // BIOS boot, EFI, LVM, ext4, ...
	mounted bool
	uuid    string // the filesystem's UUID, for /dev/disk/by-uuid
}

type volumeGroup struct {
	name string
	pvs  []string // device paths, as pvs prints them
	// lvs are the LVs PVE does not manage as volumes (root, swap, thin
	// pools); volumes of lvm and lvmthin storages are counted from them.
	lvs []*logicalVolume
}

type logicalVolume struct {
	name     string
	size     int64
	thinPool bool
	metaSize int64
}

type mountUnit struct {
	name, what, fstype string
}

func (m *mountUnit) path() string { return "/mnt/pve/" + m.name }

// partPath is the device path of a disk's partition: /dev/sda1,
// /dev/nvme0n1p1.
func partPath(devpath string, num int) string {
	if r := rune(devpath[len(devpath)-1]); unicode.IsDigit(r) {
		return fmt.Sprintf("%sp%d", devpath, num)
	}
	return fmt.Sprintf("%s%d", devpath, num)
}

// byIDLink is the /dev/disk/by-id name PVE reports (the first ata-,
// scsi- or nvme- link udev makes for the disk).
func (d *blockDisk) byIDLink() string {
	prefix := "ata-"
	if d.typ == "nvme" {
		prefix = "nvme-"
	}
	return "/dev/disk/by-id/" + prefix + strings.ReplaceAll(d.model, " ", "_") + "_" + d.serial
}

// blocks returns the node's layout, building the default one on first use:
// the system disk (nvme0n1) with a BIOS boot, an EFI and an LVM partition
// holding the volume group pve (swap, root and the thin pool data behind
// local-lvm), every other disk unused.
func (st *state) blocks(n *node) *blockLayout {
	if st.blockdevs == nil {
		st.blockdevs = map[string]*blockLayout{}
	}
	if b := st.blockdevs[n.name]; b != nil {
		return b
	}
	b := &blockLayout{}
	for _, d := range n.disks {
		bd := &blockDisk{disk: d}
		if d.devpath == "/dev/nvme0n1" {
			const mib = 1 << 20
			bd.partitions = []*partition{
				{num: 1, size: 1007 * 1024, used: "BIOS boot"},
				{num: 2, size: 1024 * mib, used: "EFI", mounted: true, uuid: "7A3C-1F2E"},
				{num: 3, size: d.size - 1025*mib - 1007*1024, used: "LVM"},
			}
			b.vgs = append(b.vgs, &volumeGroup{name: "pve", pvs: []string{partPath(d.devpath, 3)}, lvs: []*logicalVolume{
				{name: "swap", size: n.swapTotal},
				{name: "root", size: n.rootTotal},
				{name: "data", size: 400 << 30, thinPool: true, metaSize: 4 << 30},
			}})
		}
		b.disks = append(b.disks, bd)
	}
	st.blockdevs[n.name] = b
	return b
}

// lookupBlockdev resolves a device path as verify_blockdev_path does (its
// symlinks followed): a disk, a partition or a disk's by-id link.
func (b *blockLayout) lookupBlockdev(path string) (*blockDisk, *partition) {
	for _, d := range b.disks {
		if path == d.devpath || path == d.byIDLink() {
			return d, nil
		}
		for _, p := range d.partitions {
			if path == partPath(d.devpath, p.num) || path == fmt.Sprintf("%s-part%d", d.byIDLink(), p.num) {
				return d, p
			}
		}
	}
	return nil, nil
}

// storageVG is the volume group (and thin pool) an LVM storage uses.
func storageVG(st *storage) (vg, pool string) {
	switch st.typ {
	case "lvmthin":
		return cmp.Or(st.options["vgname"], "pve"), cmp.Or(st.options["thinpool"], "data")
	case "lvm":
		return st.options["vgname"], ""
	}
	return "", ""
}

// vgUsage counts a volume group's LVs and the bytes they take: its own
// LVs, the volumes of lvm storages on it (thick), and those of lvmthin
// storages (inside a thin pool, so they take no VG space of their own).
func (s *Sim) vgUsage(nodeName string, vg *volumeGroup) (count int, used int64) {
	for _, lv := range vg.lvs {
		count++
		used += lv.size + 2*lv.metaSize // the metadata LV and its spare
	}
	for _, st := range s.st.storages {
		name, _ := storageVG(st)
		if name != vg.name || st.shared {
			continue
		}
		for _, v := range st.volumesOn(nodeName) {
			count++
			if st.typ == "lvm" {
				used += v.size
			}
		}
	}
	return count, used
}

func (b *blockLayout) pvSize(dev string) int64 {
	d, p := b.lookupBlockdev(dev)
	switch {
	case p != nil:
		return p.size
	case d != nil:
		return d.size
	}
	return 0
}

// diskEntry is one line of get_disks for a disk.
func (d *blockDisk) entry(withPartitions, skipSmart bool) map[string]any {
	e := map[string]any{
		"devpath": d.devpath, "model": d.model, "serial": d.serial, "size": d.size, "type": d.typ, "health": d.health,
		"gpt": boolInt(d.gpt || len(d.partitions) > 0), "mounted": 0, "osdid": -1, "osdid-list": nil,
		"wwn": cmp.Or(d.wwn, "unknown"), "vendor": d.vendor, "by_id_link": d.byIDLink(), "wearout": "N/A", "rpm": d.rpm,
	}
	if d.typ == "nvme" {
		e["wearout"] = 99
	}
	if skipSmart {
		e["health"], e["wearout"] = "UNKNOWN", "N/A"
	}
	used := ""
	switch {
	case d.vg != "":
		used = "LVM"
	case d.fstype != "":
		used = d.fstype
	}
	if len(d.partitions) > 0 {
		if withPartitions {
			used = "partitions"
		}
		for _, p := range d.partitions {
			if used == "" {
				used = p.used
			}
		}
		if used == "" {
			used = "partitions"
		}
	}
	if used != "" {
		e["used"] = used
	}
	return e
}

func (d *blockDisk) partitionEntry(p *partition) map[string]any {
	e := map[string]any{
		"devpath": partPath(d.devpath, p.num), "parent": d.devpath, "gpt": 1, "type": "partition", "size": p.size,
		"mounted": boolInt(p.mounted), "osdid": -1, "osdid-list": nil,
	}
	if p.used != "" {
		e["used"] = p.used
	}
	return e
}

// diskList is GET /nodes/{node}/disks/list: disks sorted by name and,
// with include-partitions, their partitions (PVE lists both in one array
// sorted by kernel name).
func (s *Sim) diskList(r *request) (any, error) {
	b := s.st.blocks(r.node())
	withParts := r.flag("include-partitions")
	type named struct {
		key string
		e   map[string]any
	}
	var rows []named
	for _, d := range b.disks {
		rows = append(rows, named{strings.TrimPrefix(d.devpath, "/dev/"), d.entry(withParts, r.flag("skipsmart"))})
		if withParts {
			for _, p := range d.partitions {
				rows = append(rows, named{strings.TrimPrefix(partPath(d.devpath, p.num), "/dev/"), d.partitionEntry(p)})
			}
		}
	}
	slices.SortFunc(rows, func(a, b named) int { return strings.Compare(a.key, b.key) })
	list := []map[string]any{}
	for _, row := range rows {
		used, _ := row.e["used"].(string)
		switch r.str("type") {
		case "unused":
			if used != "" {
				continue
			}
		case "journal_disks":
			if used != "" && !(used == "partitions" && row.e["gpt"] == 1 || used == "LVM") {
				continue
			}
		}
		list = append(list, row.e)
	}
	return list, nil
}

// lvmList is GET /nodes/{node}/disks/lvm: the volume groups with their
// physical volumes as children, sorted by name.
func (s *Sim) lvmList(r *request) (any, error) {
	n := r.node()
	b := s.st.blocks(n)
	vgs := slices.Clone(b.vgs)
	slices.SortFunc(vgs, func(a, b *volumeGroup) int { return strings.Compare(a.name, b.name) })
	children := []map[string]any{}
	for _, vg := range vgs {
		count, used := s.vgUsage(n.name, vg)
		var size int64
		pvs := []map[string]any{}
		for _, pv := range vg.pvs {
			sz := b.pvSize(pv)
			size += sz
			pvs = append(pvs, map[string]any{"name": pv, "size": sz, "leaf": 1})
		}
		free := max(size-used, 0)
		// One PV or several: the free bytes are spread from the first.
		rest := used
		for _, pv := range pvs {
			sz := pv["size"].(int64)
			take := min(rest, sz)
			pv["free"] = sz - take
			rest -= take
		}
		children = append(children, map[string]any{"name": vg.name, "size": size, "free": free, "lvcount": count, "leaf": 0, "children": pvs})
	}
	return map[string]any{"leaf": 0, "children": children}, nil
}

// lvmThinList is GET /nodes/{node}/disks/lvmthin: every thin pool of
// every volume group.
func (s *Sim) lvmThinList(r *request) (any, error) {
	n := r.node()
	list := []map[string]any{}
	for _, vg := range s.st.blocks(n).vgs {
		for _, lv := range vg.lvs {
			if !lv.thinPool {
				continue
			}
			var used int64
			for _, st := range s.st.storages {
				if v, pool := storageVG(st); v == vg.name && pool == lv.name && st.typ == "lvmthin" {
					used += st.used(n.name)
				}
			}
			list = append(list, map[string]any{"lv": lv.name, "vg": vg.name, "lv_size": lv.size, "used": used,
				"metadata_size": lv.metaSize, "metadata_used": lv.metaSize / 50})
		}
	}
	return list, nil
}

// directoryList is GET /nodes/{node}/disks/directory: the mount units of
// PVE's directory storages.
func (s *Sim) directoryList(r *request) (any, error) {
	list := []map[string]any{}
	for _, m := range s.st.blocks(r.node()).mounts {
		list = append(list, map[string]any{
			"unitfile": "/etc/systemd/system/" + unitName(m.path()) + ".mount", "path": m.path(),
			"device": m.what, "type": m.fstype, "options": "defaults",
		})
	}
	return list, nil
}

// unitName escapes a path as systemd-escape --path does.
func unitName(path string) string {
	var b strings.Builder
	for i, c := range []byte(strings.Trim(path, "/")) {
		switch {
		case c == '/':
			b.WriteByte('-')
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}

// verifyUnusedDisk is verify_blockdev_path and assert_disk_unused.
func (b *blockLayout) verifyUnusedDisk(dev string) (*blockDisk, *partition, error) {
	d, p := b.lookupBlockdev(dev)
	if d == nil {
		return nil, nil, fail("not a valid block device")
	}
	path := d.devpath
	inUse := d.vg != "" || d.fstype != "" || len(d.partitions) > 0
	if p != nil {
		path = partPath(d.devpath, p.num)
		inUse = p.used != ""
	}
	if inUse {
		return nil, nil, fail("device '%s' is already in use", path)
	}
	return d, p, nil
}

// mayAddStorage is the check of add_storage: Datastore.Allocate on
// /storage and a storage ID not yet defined.
func (s *Sim) mayAddStorage(r *request, id string) error {
	if err := s.st.checkFull(r.who, "/storage", []string{"Datastore.Allocate"}, false); err != nil {
		return err
	}
	if s.st.storage(id) != nil {
		return fail("create storage failed: storage ID '%s' already defined", id)
	}
	return nil
}

// lvmCreate is POST /nodes/{node}/disks/lvm: a volume group on an unused
// disk or partition and, with add_storage, an lvm storage for this node.
func (s *Sim) lvmCreate(r *request) (any, error) {
	n := r.node()
	b := s.st.blocks(n)
	name := r.str("name")
	d, p, err := b.verifyUnusedDisk(r.str("device"))
	if err != nil {
		return nil, err
	}
	newStorage := &storage{id: name, typ: "lvm", content: []string{"images", "rootdir"}, total: d.size,
		options: map[string]string{"vgname": name, "nodes": n.name}, volumes: map[string][]*volume{}}
	if r.flag("add_storage") {
		if err := s.mayAddStorage(r, name); err != nil {
			return nil, err
		}
	}
	dev := d.devpath
	if p != nil {
		dev, newStorage.total = partPath(d.devpath, p.num), p.size
	}
	return r.startTask(n.name, "lvmcreate", name, durQuick, []string{"# pvcreate " + dev, "# vgcreate " + name + " " + dev}, func() error {
		for _, vg := range b.vgs {
			if vg.name == name {
				return fmt.Errorf("volume group with name '%s' already exists on node '%s'", name, n.name)
			}
		}
		if p != nil {
			p.used = "LVM"
		} else {
			d.vg = name
		}
		b.vgs = append(b.vgs, &volumeGroup{name: name, pvs: []string{dev}})
		if r.flag("add_storage") {
			s.st.storages = append(s.st.storages, newStorage)
		}
		return nil
	}), nil
}

// directoryCreate is POST /nodes/{node}/disks/directory: a filesystem on an
// unused disk (in a new partition 1) or partition, mounted at
// /mnt/pve/NAME by a mount unit naming it by UUID, and with add_storage a
// dir storage there.
func (s *Sim) directoryCreate(r *request) (any, error) {
	n := r.node()
	b := s.st.blocks(n)
	name := r.str("name")
	fstype := cmp.Or(r.str("filesystem"), "ext4")
	d, p, err := b.verifyUnusedDisk(r.str("device"))
	if err != nil {
		return nil, err
	}
	path := "/mnt/pve/" + name
	newStorage := &storage{id: name, typ: "dir", content: []string{"backup", "images", "iso", "rootdir", "snippets", "vztmpl"}, path: path,
		total: d.size, options: map[string]string{"is_mountpoint": "1", "nodes": n.name}, volumes: map[string][]*volume{}}
	if r.flag("add_storage") {
		if err := s.mayAddStorage(r, name); err != nil {
			return nil, err
		}
	}
	for _, m := range b.mounts {
		if m.name == name {
			return nil, fail("a systemd mount unit already exists: /etc/systemd/system/%s.mount", unitName(m.path()))
		}
	}
	uuid := s.st.uuid()
	return r.startTask(n.name, "dircreate", name, durQuick, []string{"# mkfs -t " + fstype, "# systemctl start " + unitName(path) + ".mount"}, func() error {
		if p == nil {
			p = &partition{num: 1, size: d.size - 2<<20}
			d.partitions = append(d.partitions, p)
			d.gpt = true
		}
		p.used, p.mounted, p.uuid = fstype, true, uuid
		b.mounts = append(b.mounts, &mountUnit{name: name, what: "/dev/disk/by-uuid/" + uuid, fstype: fstype})
		if r.flag("add_storage") {
			newStorage.total = p.size
			s.st.storages = append(s.st.storages, newStorage)
		}
		return nil
	}), nil
}
