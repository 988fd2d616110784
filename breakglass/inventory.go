package breakglass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Reader reads the PVE API in PVE's own view. *pve.Client is one; the
// daemon gives the guard the client of its least privileged tier token.
type Reader interface {
	Get(ctx context.Context, path string, params url.Values, out any) error
}

// mark is why an object is protected, as a hit reports it.
type mark struct {
	kind   string // path, volume, device, storage, volume-group, thin-pool, guest, unresolved
	reason string
}

// pathMark is a protected path.
type pathMark struct {
	path string
	mark
}

// nodeView is what the inventory knows of one node's block devices.
type nodeView struct {
	err error // the node's disks could not be read
	// known are the device names PVE reports (devpath, by_id_link, wwn
	// and partition aliases), each to its device path.
	known map[string]string
	// devices are protected device names (aliases included).
	devices map[string]mark
	// vgs are the node's volume groups; vgMarks those that hold or lie on
	// something protected; wholeVGs those every LV of which is protected.
	vgs      map[string]bool
	vgMarks  map[string]mark
	wholeVGs map[string]mark
	// thinPools are vg/pool; thinMarks those that hold a protected LV.
	thinPools map[string]bool
	thinMarks map[string]mark
	// dirUnits are PVE's directory mount units by name (/mnt/pve/NAME);
	// unitMarks those on or at something protected.
	unitMarks map[string]mark
	// zfsUnknown: a protected device is in a ZFS pool, and the pool's
	// members are not in PVE's disk list, so every pool is unresolved.
	zfsUnknown string
}

// guestInfo is where a guest lives. What it holds is read when a call
// targets it, never from the inventory.
type guestInfo struct {
	vmid int
	node string
	typ  string // qemu or lxc
	pool string
}

// inventory is PVE's view of what references the protected objects, at
// one moment: storages, block devices, LVM, directory units and mappings,
// and where each guest lives. It is never changed after it is built.
type inventory struct {
	at time.Time
	// unresolved are configured objects that could not be found in PVE's
	// view: every call that is not a read is refused while they stand.
	unresolved []mark
	paths      []pathMark
	// volumes are protected volume ids; lvs protected vg/lv names.
	volumes map[string]mark
	lvs     map[string]mark
	// storages: whole are storages every volume of which is protected;
	// config are those whose definition reaches something protected (a
	// change of the storage itself is a hit, its other volumes are not).
	whole  map[string]mark
	config map[string]mark
	// storageConf is /storage by id.
	storageConf map[string]storageConf
	nodes       map[string]*nodeView
	// guests are where each guest lives (what it holds is read when a
	// call targets it).
	guests map[int]*guestInfo
	// owners are guests that own a protected volume by its name (PVE
	// destroys vm-900-* with VM 900 even when no config names it).
	owners map[int]mark
	// dirMaps are the paths of directory mappings (virtiofs) by id.
	dirMaps map[string][]string
}

// storageConf is one entry of GET /storage.
type storageConf struct {
	Storage     string          `json:"storage"`
	Type        string          `json:"type"`
	Path        string          `json:"path"`
	VGName      string          `json:"vgname"`
	ThinPool    string          `json:"thinpool"`
	Pool        string          `json:"pool"`
	Nodes       string          `json:"nodes"`
	Shared      flexible        `json:"shared"`
	ContentDirs json.RawMessage `json:"content-dirs"`
}

// flexible decodes PVE's numbers, booleans and strings alike.
type flexible string

func (f *flexible) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = flexible(scalar(v))
	return nil
}

func (f flexible) true() bool { return f == "1" || f == "true" }

// contentDirs are the storage's directories per content type
// (pve-storage's vtype_subdirs, with content-dirs overrides).
func (s storageConf) contentDirs() []string {
	dirs := map[string]string{"images": "images", "rootdir": "private", "iso": "template/iso", "vztmpl": "template/cache",
		"backup": "dump", "snippets": "snippets", "import": "import"}
	var override string
	if err := json.Unmarshal(s.ContentDirs, &override); err == nil {
		for kv := range strings.SplitSeq(override, ",") {
			if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
				dirs[k] = v
			}
		}
	} else {
		var obj map[string]string
		if json.Unmarshal(s.ContentDirs, &obj) == nil {
			for k, v := range obj {
				dirs[k] = v
			}
		}
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, filepath.Join(s.Path, d))
	}
	slices.Sort(out)
	return out
}

// pathStorage reports whether a storage of this type keeps files under a
// path (dir, nfs, cifs, cephfs, btrfs; ESXi's and PBS's paths are not on
// this host's disks).
func pathStorage(typ string) bool {
	switch typ {
	case "dir", "nfs", "cifs", "cephfs", "btrfs", "glusterfs":
		return true
	}
	return false
}

type diskRow struct {
	Devpath  string   `json:"devpath"`
	Parent   string   `json:"parent"`
	Used     string   `json:"used"`
	ByIDLink string   `json:"by_id_link"`
	WWN      string   `json:"wwn"`
	Type     string   `json:"type"`
	Mounted  flexible `json:"mounted"`
}

// refreshTimeout bounds one inventory read.
const refreshTimeout = 30 * time.Second

// parallelReads bounds the guest configurations read at once for a call.
const parallelReads = 8

// loader builds one inventory.
type loader struct {
	g   *Guard
	ctx context.Context
	inv *inventory
	// raws are the nodes' answers until derivation.
	mu   sync.Mutex
	raws map[string]*nodeRaw
}

func (g *Guard) load(ctx context.Context) (*inventory, error) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	l := &loader{g: g, ctx: ctx, inv: &inventory{
		at: g.now(), volumes: map[string]mark{}, lvs: map[string]mark{}, whole: map[string]mark{}, config: map[string]mark{},
		storageConf: map[string]storageConf{}, nodes: map[string]*nodeView{}, guests: map[int]*guestInfo{}, owners: map[int]mark{},
		dirMaps: map[string][]string{},
	}, raws: map[string]*nodeRaw{}}
	if err := l.readCluster(); err != nil {
		return nil, err
	}
	l.deriveDevices()
	l.derivePaths()
	l.deriveVolumes()
	l.readOwners()
	return l.inv, nil
}

// get reads one path; the reader's errors name the call.
func (l *loader) get(path string, q url.Values, out any) error {
	return l.g.pve.Get(l.ctx, path, q, out)
}

// readCluster reads the storages, the nodes with their disks, LVM and
// directory units, the guests and the directory mappings.
func (l *loader) readCluster() error {
	inv := l.inv
	var storages []storageConf
	if err := l.get("/storage", nil, &storages); err != nil {
		return err
	}
	for _, s := range storages {
		s.Path = filepath.Clean(s.Path)
		inv.storageConf[s.Storage] = s
	}
	var nodes []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := l.get("/nodes", nil, &nodes); err != nil {
		return err
	}
	var resources []struct {
		VMID int    `json:"vmid"`
		Node string `json:"node"`
		Type string `json:"type"`
		Pool string `json:"pool"`
	}
	if err := l.get("/cluster/resources", url.Values{"type": {"vm"}}, &resources); err != nil {
		return err
	}
	for _, r := range resources {
		inv.guests[r.VMID] = &guestInfo{vmid: r.VMID, node: r.Node, typ: r.Type, pool: r.Pool}
	}
	var maps []struct {
		ID  string   `json:"id"`
		Map []string `json:"map"`
	}
	if err := l.get("/cluster/mapping/dir", nil, &maps); err != nil {
		// A PVE without directory mappings (before 8.3) answers 501: there
		// are none.
		var apiErr *pve.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotImplemented {
			return err
		}
	}
	for _, m := range maps {
		for _, entry := range m.Map {
			for kv := range strings.SplitSeq(entry, ",") {
				if p, ok := strings.CutPrefix(strings.TrimSpace(kv), "path="); ok {
					inv.dirMaps[m.ID] = append(inv.dirMaps[m.ID], filepath.Clean(p))
				}
			}
		}
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.Status != "online" {
			continue
		}
		v := &nodeView{known: map[string]string{}, devices: map[string]mark{}, vgs: map[string]bool{}, vgMarks: map[string]mark{},
			wholeVGs: map[string]mark{}, thinPools: map[string]bool{}, thinMarks: map[string]mark{}, unitMarks: map[string]mark{}}
		inv.nodes[n.Node] = v
		wg.Go(func() {
			raw, err := l.readNode(n.Node)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.raws[n.Node], v.err = raw, err
		})
	}
	wg.Wait()
	return nil
}

// nodeRaw is what readNode reads; derivation happens once all are read.
type nodeRaw struct {
	disks []diskRow
	vgs   []struct {
		Name     string `json:"name"`
		Children []struct {
			Name string `json:"name"`
		} `json:"children"`
	}
	thin  []struct{ LV, VG string }
	units []struct{ Path, Device, Type string }
}

func (l *loader) readNode(node string) (*nodeRaw, error) {
	raw := &nodeRaw{}
	base := pve.Path("nodes", node, "disks")
	if err := l.get(base+"/list", url.Values{"include-partitions": {"1"}, "skipsmart": {"1"}}, &raw.disks); err != nil {
		return nil, err
	}
	var lvm struct {
		Children json.RawMessage `json:"children"`
	}
	if err := l.get(base+"/lvm", nil, &lvm); err != nil {
		return nil, err
	}
	if len(lvm.Children) > 0 {
		if err := json.Unmarshal(lvm.Children, &raw.vgs); err != nil {
			return nil, fmt.Errorf("GET %s/lvm: %w", base, err)
		}
	}
	if err := l.get(base+"/lvmthin", nil, &raw.thin); err != nil {
		return nil, err
	}
	if err := l.get(base+"/directory", nil, &raw.units); err != nil {
		return nil, err
	}
	return raw, nil
}

// partNumber is the number of a partition of a disk (sda1: 1,
// nvme0n1p3: 3), which udev puts in its by-id names (…-part3).
func partNumber(devpath, parent string) string {
	n := strings.TrimPrefix(devpath, parent)
	return strings.TrimPrefix(n, "p")
}

// deriveDevices resolves the protected devices and LVs on every node and
// derives their aliases, partitions, parent disks, volume groups and thin
// pools.
func (l *loader) deriveDevices() {
	inv := l.inv
	p := l.g.protected
	foundDev := map[string]bool{}
	foundVG := map[string]bool{}
	for node, v := range inv.nodes {
		raw := l.raws[node]
		if v.err != nil || raw == nil {
			continue
		}
		// Every name PVE gives a device, to its device path.
		byPath := map[string]diskRow{}
		children := map[string][]string{}
		aliases := map[string][]string{}
		for _, d := range raw.disks {
			byPath[d.Devpath] = d
			v.known[d.Devpath] = d.Devpath
			aliases[d.Devpath] = append(aliases[d.Devpath], d.Devpath)
			if d.Parent != "" {
				children[d.Parent] = append(children[d.Parent], d.Devpath)
			}
		}
		for _, d := range raw.disks {
			if d.Parent != "" {
				continue
			}
			var links []string
			if d.ByIDLink != "" {
				links = append(links, d.ByIDLink)
			}
			if d.WWN != "" && d.WWN != "unknown" {
				if strings.HasPrefix(d.WWN, "eui.") || strings.HasPrefix(d.WWN, "nvme.") {
					links = append(links, "/dev/disk/by-id/nvme-"+d.WWN)
				} else {
					links = append(links, "/dev/disk/by-id/wwn-"+d.WWN)
				}
			}
			for _, link := range links {
				v.known[link] = d.Devpath
				aliases[d.Devpath] = append(aliases[d.Devpath], link)
				for _, part := range children[d.Devpath] {
					alias := link + "-part" + partNumber(part, d.Devpath)
					v.known[alias] = part
					aliases[part] = append(aliases[part], alias)
				}
			}
		}
		protect := func(dev string, m mark) {
			for _, a := range aliases[dev] {
				if _, ok := v.devices[a]; !ok {
					v.devices[a] = m
				}
			}
		}
		hasDisk := false // a protected disk or partition is on this node
		for _, want := range p.Devices {
			dev, ok := v.known[want]
			if !ok {
				continue
			}
			foundDev[want], hasDisk = true, true
			d := byPath[dev]
			name := "protected device " + want
			if dev != want {
				name = dev + ", " + name
			}
			protect(dev, mark{"device", fmt.Sprintf("%s (node %s)", name, node)})
			for _, part := range children[dev] {
				protect(part, mark{"device", fmt.Sprintf("%s, a partition of protected device %s (node %s)", part, want, node)})
			}
			if d.Parent != "" {
				protect(d.Parent, mark{"device", fmt.Sprintf("%s, the disk of protected partition %s (node %s)", d.Parent, want, node)})
			}
			// What sits on the device beyond PVE's view: a ZFS pool's
			// members are not listed, so every pool of the node is
			// unresolved.
			for _, part := range append([]string{dev}, children[dev]...) {
				if byPath[part].Used == "ZFS" {
					v.zfsUnknown = fmt.Sprintf("protected device %s (node %s) is in a ZFS pool whose members PVE's API does not list", want, node)
				}
			}
		}
		// Volume groups: those with a protected PV lie wholly on the
		// repository; a PV PVE does not list cannot be told apart.
		for _, vg := range raw.vgs {
			v.vgs[vg.Name] = true
			for _, pv := range vg.Children {
				dev := v.known[pv.Name]
				if m, ok := v.devices[pv.Name]; ok || dev != "" && v.devices[dev] != (mark{}) {
					if !ok {
						m = v.devices[dev]
					}
					v.wholeVGs[vg.Name] = mark{"volume-group", fmt.Sprintf("volume group %s (node %s), which lies on %s", vg.Name, node, m.reason)}
				} else if dev == "" && hasDisk {
					v.wholeVGs[vg.Name] = mark{"unresolved", fmt.Sprintf("volume group %s (node %s), whose physical volume %s is not in PVE's disk list and so cannot be told apart from the protected devices", vg.Name, node, pv.Name)}
				}
			}
			if m, ok := v.wholeVGs[vg.Name]; ok {
				v.vgMarks[vg.Name] = m
			}
		}
		for _, t := range raw.thin {
			key := t.VG + "/" + t.LV
			v.thinPools[key] = true
			if m, ok := v.wholeVGs[t.VG]; ok {
				v.thinMarks[key] = m
			}
		}
		// Protected LVs: their VG holds them; aliases under /dev.
		for _, lv := range l.g.lvs() {
			vg, name, _ := strings.Cut(lv, "/")
			if !v.vgs[vg] {
				continue
			}
			foundVG[lv] = true
			m := mark{"volume-group", fmt.Sprintf("volume group %s (node %s), which holds protected LV %s", vg, node, lv)}
			if _, ok := v.vgMarks[vg]; !ok {
				v.vgMarks[vg] = m
			}
			dm := mark{"device", fmt.Sprintf("protected LV %s", lv)}
			v.devices["/dev/"+vg+"/"+name] = dm
			v.devices[mapperPath(vg, name)] = dm
		}
		// Directory units: a unit whose device is protected puts its path
		// under protection; one whose device PVE cannot name (by UUID) is
		// unresolved while the node has a protected device with a
		// filesystem.
		for _, u := range raw.units {
			name := strings.TrimPrefix(u.Path, "/mnt/pve/")
			dev, ok := v.known[u.Device]
			switch {
			case ok && v.devices[dev] != (mark{}):
				m := mark{"path", fmt.Sprintf("%s, mounted from %s", u.Path, v.devices[dev].reason)}
				v.unitMarks[name] = m
				inv.paths = append(inv.paths, pathMark{filepath.Clean(u.Path), m})
			case !ok && l.mountedProtected(v, byPath, aliases):
				m := mark{"unresolved", fmt.Sprintf("%s (mounted from %s, which PVE's disk list does not name, on node %s, which has a protected device with a mounted filesystem)", u.Path, u.Device, node)}
				v.unitMarks[name] = m
				inv.paths = append(inv.paths, pathMark{filepath.Clean(u.Path), m})
			}
		}
	}
	for _, want := range p.Devices {
		if !foundDev[want] {
			inv.unresolved = append(inv.unresolved, mark{"unresolved", fmt.Sprintf("protected device %s is not in PVE's disk list of any node%s", want, l.nodeErrors())})
		}
	}
	for _, lv := range l.g.lvs() {
		if !foundVG[lv] {
			inv.unresolved = append(inv.unresolved, mark{"unresolved", fmt.Sprintf("the volume group of protected LV %s is on no node%s", lv, l.nodeErrors())})
		}
	}
}

// mountedProtected reports whether a protected device (or a partition of
// one) of the node carries a mounted filesystem.
func (l *loader) mountedProtected(v *nodeView, byPath map[string]diskRow, aliases map[string][]string) bool {
	for dev := range aliases {
		if _, ok := v.devices[dev]; ok && byPath[dev].Mounted.true() {
			return true
		}
	}
	return false
}

// nodeErrors names the nodes whose disks could not be read.
func (l *loader) nodeErrors() string {
	var names []string
	for name, v := range l.inv.nodes {
		if v.err != nil {
			names = append(names, fmt.Sprintf("%s (%v)", name, v.err))
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return "; unreadable: " + strings.Join(names, ", ")
}

// derivePaths resolves the protected paths and relates the storages to
// them: a storage at or under one is protected whole, and so is one above
// one whose content directories reach it; one above it otherwise is
// protected as a definition.
func (l *loader) derivePaths() {
	inv := l.inv
	for _, p := range l.g.protected.Paths {
		clean := filepath.Clean(p)
		inv.paths = append(inv.paths, pathMark{clean, mark{"path", "protected path " + clean}})
		real, err := l.g.resolvePath(clean)
		switch {
		case err != nil:
			inv.unresolved = append(inv.unresolved, mark{"unresolved", fmt.Sprintf("protected path %s cannot be resolved: %v", clean, err)})
		case real != clean:
			inv.paths = append(inv.paths, pathMark{real, mark{"path", fmt.Sprintf("%s, where protected path %s leads", real, clean)}})
		}
	}
	for _, id := range sortedKeys(inv.storageConf) {
		s := inv.storageConf[id]
		if !pathStorage(s.Type) || s.Path == "." || s.Path == "" {
			continue
		}
		real, err := l.g.resolvePath(s.Path)
		if err != nil {
			if len(inv.paths) > 0 {
				inv.whole[id] = mark{"unresolved", fmt.Sprintf("storage %s, whose path %s cannot be resolved: %v", id, s.Path, err)}
			}
			continue
		}
		for _, pm := range inv.paths {
			switch {
			case within(real, pm.path):
				if m, ok := inv.whole[id]; ok && m.kind != "unresolved" {
					break
				}
				inv.whole[id] = mark{pm.kind, fmt.Sprintf("storage %s, whose path %s is at or under %s", id, s.Path, pm.reason)}
			case within(pm.path, real):
				reach := false
				for _, dir := range s.contentDirs() {
					reach = reach || within(dir, pm.path) || within(pm.path, dir)
				}
				if m, ok := inv.whole[id]; ok && m.kind != "unresolved" {
					break
				}
				if reach {
					inv.whole[id] = mark{pm.kind, fmt.Sprintf("storage %s, whose content directories under %s reach %s", id, s.Path, pm.reason)}
				} else if _, ok := inv.config[id]; !ok {
					inv.config[id] = mark{pm.kind, fmt.Sprintf("storage %s, whose path %s is above %s", id, s.Path, pm.reason)}
				}
			}
			if m, ok := inv.whole[id]; ok && m.kind != "unresolved" {
				break
			}
		}
	}
}

// deriveVolumes turns the protected volumes and LVs into volume ids on
// every storage that reaches them, marks the storages over wholly
// protected volume groups, and the thin pools that hold protected LVs.
func (l *loader) deriveVolumes() {
	inv := l.inv
	protectLV := func(lv string, m mark) {
		if _, ok := inv.lvs[lv]; !ok {
			inv.lvs[lv] = m
		}
	}
	for _, v := range l.g.protected.Volumes {
		if strings.Contains(v, ":") {
			vol, err := schema.ParseVolumeID(v)
			if err != nil {
				inv.unresolved = append(inv.unresolved, mark{"unresolved", fmt.Sprintf("protected volume %s: %v", v, err)})
				continue
			}
			inv.volumes[vol.String()] = mark{"volume", "protected volume " + vol.String()}
			s, ok := inv.storageConf[vol.Storage]
			if !ok {
				inv.unresolved = append(inv.unresolved, mark{"unresolved", fmt.Sprintf("protected volume %s is on storage %s, which is not defined", v, vol.Storage)})
				continue
			}
			switch {
			case s.Type == "lvm" || s.Type == "lvmthin":
				protectLV(s.VGName+"/"+vol.Name, mark{"volume", fmt.Sprintf("LV %s/%s of protected volume %s", s.VGName, vol.Name, v)})
			case s.Type == "zfspool":
				for _, dev := range []string{"/dev/zvol/" + s.Pool + "/" + vol.Name} {
					for _, nv := range inv.nodes {
						nv.devices[dev] = mark{"device", "the zvol of protected volume " + v}
					}
				}
			case pathStorage(s.Type) && vol.Content != "":
				if file, ok := volumeFile(s, vol); ok {
					inv.paths = append(inv.paths, pathMark{file, mark{"path", fmt.Sprintf("%s, the file of protected volume %s", file, v)}})
				}
			}
			if vol.OwnerVMID != 0 {
				inv.owners[vol.OwnerVMID] = mark{"guest", fmt.Sprintf("guest %d, which owns protected volume %s by its name", vol.OwnerVMID, v)}
			}
			continue
		}
		protectLV(v, mark{"volume", "protected LV " + v})
	}
	// Every lvm and lvmthin storage over the VG of a protected LV names it.
	for _, id := range sortedKeys(inv.storageConf) {
		s := inv.storageConf[id]
		if s.Type != "lvm" && s.Type != "lvmthin" {
			continue
		}
		for _, lv := range sortedKeys(inv.lvs) {
			vg, name, _ := strings.Cut(lv, "/")
			if vg != s.VGName {
				continue
			}
			volid := id + ":" + name
			if _, ok := inv.volumes[volid]; !ok {
				inv.volumes[volid] = mark{"volume", fmt.Sprintf("%s, which names %s", volid, inv.lvs[lv].reason)}
			}
			if _, ok := inv.config[id]; !ok {
				inv.config[id] = mark{"storage", fmt.Sprintf("storage %s, whose volume group %s holds %s", id, vg, inv.lvs[lv].reason)}
			}
			if vol, err := schema.ParseVolumeID(volid); err == nil && vol.OwnerVMID != 0 {
				if _, ok := inv.owners[vol.OwnerVMID]; !ok {
					inv.owners[vol.OwnerVMID] = mark{"guest", fmt.Sprintf("guest %d, which owns %s by its name", vol.OwnerVMID, inv.volumes[volid].reason)}
				}
			}
		}
		for node, v := range inv.nodes {
			if m, ok := v.wholeVGs[s.VGName]; ok && storageOnNode(s, node) {
				if _, done := inv.whole[id]; !done {
					inv.whole[id] = mark{m.kind, fmt.Sprintf("storage %s, over %s", id, m.reason)}
				}
			}
		}
	}
}

// volumeFile is the file of a volume on a directory storage.
func volumeFile(s storageConf, vol schema.VolumeID) (string, bool) {
	sub := map[string]string{"images": "images", "iso": "template/iso", "vztmpl": "template/cache", "backup": "dump",
		"snippets": "snippets", "import": "import"}[vol.Content]
	if sub == "" {
		return "", false
	}
	var override string
	if json.Unmarshal(s.ContentDirs, &override) == nil {
		for kv := range strings.SplitSeq(override, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == vol.Content {
				sub = v
			}
		}
	}
	_, rel, _ := strings.Cut(vol.Name, "/")
	if vol.Content == "images" {
		rel = vol.Name
	}
	return filepath.Join(s.Path, sub, rel), true
}

func storageOnNode(s storageConf, node string) bool {
	if s.Nodes == "" {
		return true
	}
	return slices.Contains(strings.Split(s.Nodes, ","), node)
}

// readOwners lists the volumes of the storages that are protected whole,
// and of those that hold protected LVs: the guests that own a volume
// there are guests of the repository, and a thin pool holding a protected
// LV is found.
func (l *loader) readOwners() {
	inv := l.inv
	for _, id := range sortedKeys(inv.storageConf) {
		s := inv.storageConf[id]
		wm, whole := inv.whole[id]
		_, holds := inv.config[id]
		if whole && wm.kind == "unresolved" || !whole && !(holds && s.Type == "lvmthin") {
			continue
		}
		for _, node := range sortedKeys(inv.nodes) {
			if inv.nodes[node].err != nil || !storageOnNode(s, node) {
				continue
			}
			var content []struct {
				Volid string `json:"volid"`
				VMID  int    `json:"vmid"`
			}
			if err := l.get(pve.Path("nodes", node, "storage", id, "content"), nil, &content); err != nil {
				inv.whole[id] = mark{"unresolved", fmt.Sprintf("the volumes of storage %s on node %s cannot be listed: %v", id, node, err)}
				break
			}
			for _, c := range content {
				if whole {
					if _, ok := inv.owners[c.VMID]; !ok && c.VMID != 0 {
						inv.owners[c.VMID] = mark{"guest", fmt.Sprintf("guest %d, which owns %s on %s", c.VMID, c.Volid, wm.reason)}
					}
				}
				if m, ok := inv.volumes[c.Volid]; ok && s.Type == "lvmthin" {
					inv.nodes[node].thinMarks[s.VGName+"/"+s.ThinPool] = mark{"thin-pool", fmt.Sprintf("thin pool %s/%s (node %s), which holds %s", s.VGName, s.ThinPool, node, m.reason)}
				}
			}
			if s.Shared.true() {
				break
			}
		}
	}
	// A protected LV that no lvmthin storage lists may be a thin LV of
	// any pool of its VG (PVE lists only LVs it names vm-N-…): every pool
	// there holds it.
	for node, v := range inv.nodes {
		for _, lv := range sortedKeys(inv.lvs) {
			vg, _, _ := strings.Cut(lv, "/")
			listed := false
			for key, m := range v.thinMarks {
				listed = listed || strings.HasPrefix(key, vg+"/") && strings.Contains(m.reason, lv)
			}
			if listed {
				continue
			}
			for key := range v.thinPools {
				if strings.HasPrefix(key, vg+"/") {
					if _, ok := v.thinMarks[key]; !ok {
						v.thinMarks[key] = mark{"thin-pool", fmt.Sprintf("thin pool %s (node %s), which may hold protected LV %s", key, node, lv)}
					}
				}
			}
		}
	}
}

func sortedKeys[V any, K interface{ ~string | ~int }](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// scalar formats a decoded JSON value (or a typed argument) as PVE would
// see it on the wire.
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}
