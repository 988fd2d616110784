package sim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The checks PVE makes in code, beyond an endpoint's permissions object:
// each helper names the PVE function it follows. They return nil or an
// *apiError with PVE's status and wording (403 "Permission check failed
// (path, privilege)" from raise_perm_exc, 400 from raise_param_exc, 500
// from a plain die).

// check is RPCEnvironment::check: every privilege on the path.
func (r *request) check(path string, privs ...string) error {
	return r.sim.st.checkFull(r.who, path, privs, false)
}

// checkAny is RPCEnvironment::check_any: one of the privileges.
func (r *request) checkAny(path string, privs ...string) error {
	return r.sim.st.checkFull(r.who, path, privs, true)
}

// can is check with noerr: whether the caller holds every privilege.
func (r *request) can(path string, privs ...string) bool { return r.check(path, privs...) == nil }

// canAny is check_any with noerr.
func (r *request) canAny(path string, privs ...string) bool { return r.checkAny(path, privs...) == nil }

// checkVMPerm is RPCEnvironment::check_vm_perm: the privileges on the
// pool, when one is given, else on /vms/<vmid>.
func (r *request) checkVMPerm(vmid int, pool string, any bool, privs ...string) error {
	if pool != "" && r.sim.st.checkFull(r.who, "/pool/"+pool, privs, any) == nil {
		return nil
	}
	return r.sim.st.checkFull(r.who, fmt.Sprintf("/vms/%d", vmid), privs, any)
}

// rootOnly refuses parameters only root@pam may give, as the API handlers
// do with raise_param_exc({ $opt => "Only root may use this option." }).
func (r *request) rootOnly(names ...string) error {
	if r.who.isRoot() {
		return nil
	}
	errs := map[string]string{}
	for _, n := range names {
		if r.has(n) && r.str(n) != "" && r.str(n) != "0" {
			errs[n] = "Only root may use this option."
		}
	}
	if len(errs) > 0 {
		return paramError(errs)
	}
	return nil
}

// checkPoolExist is RPCEnvironment::check_pool_exist.
func (r *request) checkPoolExist(pool string) error {
	if r.sim.st.pools[pool] == nil {
		return permError(fmt.Sprintf("pool '%s' does not exist", pool))
	}
	return nil
}

// volumeIDRe is Storage::Plugin::parse_volume_id's pattern.
var volumeIDRe = regexp.MustCompile(`(?i)^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$`)

// parseVolumeID splits STORAGE:NAME; ok is false for a path or other text.
func parseVolumeID(volid string) (storeID, name string, ok bool) {
	m := volumeIDRe.FindStringSubmatch(volid)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

var (
	dirImageRe  = regexp.MustCompile(`^(\d+)/(\S+)$`)
	dirLinkedRe = regexp.MustCompile(`^\d+/\S+/(\d+)/\S+$`)
	isoRe       = regexp.MustCompile(`^iso/[^/]+\.(?i:iso|img)$`)
	vztmplRe    = regexp.MustCompile(`^vztmpl/[^/]+\.tar\.(?:gz|xz|zst|bz2)$`)
	backupRe    = regexp.MustCompile(`^backup/([^/]+\.(?:tgz|(?:tar|vma)(?:\.(?:gz|lzo|zst|bz2|xz))?))$`)
	vzdumpRe    = regexp.MustCompile(`^vzdump-(?:openvz|lxc|qemu)-(\d+)-.+`)
	snippetsRe  = regexp.MustCompile(`^snippets/[^/]+$`)
	importRe    = regexp.MustCompile(`^import/[^/]+\.(?:ova|ovf|qcow2|raw|vmdk)(?:/.+)?$`)
	lvmImageRe  = regexp.MustCompile(`^(?:vm|base)-(\d+)-\S+$`)
)

// parseVolname is Storage::parse_volname by name alone, as PVE's plugins
// do: the content type and owning guest of a volume of a storage that
// exists, whether or not the volume does.
func (st *state) parseVolname(volid string) (vtype string, owner int, err error) {
	storeID, name, ok := parseVolumeID(volid)
	if !ok {
		return "", 0, fail("unable to parse volume ID '%s'", volid)
	}
	s := st.storage(storeID)
	if s == nil {
		return "", 0, fail("storage '%s' does not exist", storeID)
	}
	atoi := func(v string) int { n, _ := strconv.Atoi(v); return n }
	if s.typ == "lvmthin" || s.typ == "lvm" {
		if m := lvmImageRe.FindStringSubmatch(name); m != nil {
			return "images", atoi(m[1]), nil
		}
		return "", 0, fail("unable to parse lvm volume name '%s'", name)
	}
	switch {
	case dirLinkedRe.MatchString(name):
		return "images", atoi(dirLinkedRe.FindStringSubmatch(name)[1]), nil
	case dirImageRe.MatchString(name):
		return "images", atoi(dirImageRe.FindStringSubmatch(name)[1]), nil
	case isoRe.MatchString(name):
		return "iso", 0, nil
	case vztmplRe.MatchString(name):
		return "vztmpl", 0, nil
	case backupRe.MatchString(name):
		if m := vzdumpRe.FindStringSubmatch(backupRe.FindStringSubmatch(name)[1]); m != nil {
			return "backup", atoi(m[1]), nil
		}
		return "backup", 0, nil
	case snippetsRe.MatchString(name):
		return "snippets", 0, nil
	case importRe.MatchString(name):
		return "import", 0, nil
	}
	return "", 0, fail("unable to parse directory volume name '%s'", name)
}

// checkVolumeAccess is Storage::check_volume_access: Datastore.Allocate on
// the storage admits any volume; an ISO, template or import needs
// Datastore.AllocateSpace or Datastore.Audit; the guest's own volume is
// free to it (vmid 0: no guest); a backup needs Datastore.AllocateSpace
// and VM.Backup on its guest; a disk image Datastore.Audit and
// VM.Config.Disk on its guest. A path (no storage) is root@pam's alone.
func (r *request) checkVolumeAccess(vmid int, volid, wantType string) error {
	storeID, _, ok := parseVolumeID(volid)
	if !ok {
		if r.who.isRoot() {
			return nil
		}
		return fail("Only root can pass arbitrary filesystem paths.")
	}
	vtype, owner, err := r.sim.st.parseVolname(volid)
	if err != nil {
		return err
	}
	if wantType != "" && vtype != wantType && (wantType != "rootdir" || vtype != "images") {
		return fail("unable to use volume %s - content type needs to be '%s'", volid, wantType)
	}
	spath := "/storage/" + storeID
	if r.can(spath, "Datastore.Allocate") {
		return nil
	}
	switch {
	case vtype == "iso" || vtype == "vztmpl" || vtype == "import":
		return r.checkAny(spath, "Datastore.AllocateSpace", "Datastore.Audit")
	case owner != 0 && vmid != 0 && owner == vmid:
		return nil
	case vtype == "backup" && owner != 0:
		if err := r.check(spath, "Datastore.AllocateSpace"); err != nil {
			return err
		}
		return r.check(fmt.Sprintf("/vms/%d", owner), "VM.Backup")
	case (vtype == "images" || vtype == "rootdir") && owner != 0:
		if err := r.check(spath, "Datastore.Audit"); err != nil {
			return err
		}
		return r.check(fmt.Sprintf("/vms/%d", owner), "VM.Config.Disk")
	}
	return fail("missing privileges to access %s", volid)
}

// propertyString splits a property string into its keys; a bare first
// value goes to defaultKey, and aliases are resolved.
func propertyString(v, defaultKey string, aliases map[string]string) map[string]string {
	out := map[string]string{}
	for i, part := range strings.Split(v, ",") {
		k, val, hasEq := strings.Cut(part, "=")
		if !hasEq {
			if i == 0 && defaultKey != "" {
				out[defaultKey] = part
			}
			continue
		}
		if a := aliases[k]; a != "" {
			k = a
		}
		out[k] = val
	}
	return out
}

// checkVnetAccess is GuestHelpers::check_vnet_access for a NIC's bridge
// (every bridge is in the zone localnetwork: the simulator has no SDN
// vnets): SDN.Use on the VLAN with a tag, on each VLAN of the trunks, else
// on the bridge itself.
func (r *request) checkVnetAccess(bridge, tag, trunks string) error {
	base := "/sdn/zones/localnetwork/" + bridge
	if tag != "" {
		if err := r.check(base+"/"+tag, "SDN.Use"); err != nil {
			return err
		}
	}
	if trunks != "" {
		for _, t := range trunkTags(trunks) {
			if err := r.check(base+"/"+strconv.Itoa(t), "SDN.Use"); err != nil {
				return err
			}
		}
	}
	if tag == "" && trunks == "" {
		return r.check(base, "SDN.Use")
	}
	return nil
}

// trunkTags is GuestHelpers::get_tags_from_trunk: "10;20-22" is 10, 20,
// 21, 22, in order.
func trunkTags(trunks string) []int {
	seen := map[int]bool{}
	for part := range strings.SplitSeq(trunks, ";") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for t := a; t <= b; t++ {
			seen[t] = true
		}
	}
	out := make([]int, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Ints(out)
	return out
}

// checkBridgeAccess is QemuServer::check_bridge_access (kind qemu) and
// LXC::check_bridge_access (kind lxc) over the NICs of a configuration.
func (r *request) checkBridgeAccess(kind string, conf map[string]string) error {
	if r.who.isRoot() {
		return nil
	}
	for _, k := range sortedKeys(conf) {
		if !isIndexed(k, "net") {
			continue
		}
		if err := r.checkNetBridge(kind, conf[k]); err != nil {
			return err
		}
	}
	return nil
}

func (r *request) checkNetBridge(kind, value string) error {
	var net map[string]string
	if kind == "lxc" {
		net = propertyString(value, "", nil)
	} else {
		net = propertyString(value, "model", nil)
	}
	bridge := net["bridge"]
	if bridge == "" {
		return nil // no vnet to check for
	}
	return r.checkVnetAccess(bridge, net["tag"], net["trunks"])
}

// assertTagPermissions is GuestHelpers::assert_tag_permissions with the
// datacenter defaults (user-tag-access user-allow=free, no registered
// tags), under which any tag is free to set: VM.Config.Options is what a
// tag change needs.
func (r *request) assertTagPermissions(vmid int) error {
	return r.checkVMPerm(vmid, "", false, "VM.Config.Options")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The option classes of qemu-server's API2/Qemu.pm ($cpuoptions,
// $memoryoptions, $hwtypeoptions, $generaloptions, $vmpoweroptions,
// $diskoptions, $cloudinitoptions) that check_vm_modify_config_perm maps to
// privileges.
var (
	qemuCPUOptions    = privSet("cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus")
	qemuMemoryOptions = privSet("memory", "balloon", "shares", "allow-ksm")
	qemuHWTypeOptions = privSet("acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet", "vga", "watchdog", "audio0", "rng0")
	qemuGeneral       = privSet("agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime", "migrate_speed",
		"name", "onboot", "ostype", "protection", "reboot", "startdate", "startup", "tdf", "template")
	qemuPowerOptions     = privSet("freeze")
	qemuDiskOptions      = privSet("boot", "bootdisk", "vmstatestorage")
	qemuCloudinitOptions = privSet("cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys")
)

func isQemuDrive(key string) bool { return isDiskKey("qemu", key) }

// qemuModifyConfigPerm is API2/Qemu.pm's check_vm_modify_config_perm: the
// privilege each option class needs on the guest (or its pool); startup
// also needs Sys.Modify on /, and an option of no class (args, hookscript,
// lock, affinity, …) is root@pam's. Drives, unused, serial, usb, hostpci,
// virtiofs and tags are checked elsewhere, as their value decides.
func (r *request) qemuModifyConfigPerm(vmid int, pool string, keys []string) error {
	if r.who.isRoot() {
		return nil
	}
	vm := func(any bool, privs ...string) error { return r.checkVMPerm(vmid, pool, any, privs...) }
	for _, opt := range keys {
		var err error
		switch {
		case isQemuDrive(opt), opt == "cdrom", opt == "tags",
			isIndexed(opt, "unused"), isIndexed(opt, "serial"), isIndexed(opt, "usb"), isIndexed(opt, "hostpci"), isIndexed(opt, "virtiofs"):
			continue
		case qemuCPUOptions[opt] || isIndexed(opt, "numa"):
			err = vm(false, "VM.Config.CPU")
		case qemuMemoryOptions[opt]:
			err = vm(false, "VM.Config.Memory")
		case qemuHWTypeOptions[opt]:
			err = vm(false, "VM.Config.HWType")
		case qemuGeneral[opt]:
			err = vm(false, "VM.Config.Options")
			if err == nil && opt == "startup" {
				err = r.check("/", "Sys.Modify")
			}
		case qemuPowerOptions[opt]:
			err = vm(false, "VM.PowerMgmt")
		case qemuDiskOptions[opt]:
			err = vm(false, "VM.Config.Disk")
		case isIndexed(opt, "net") || opt == "running-nets-host-mtu":
			err = vm(false, "VM.Config.Network")
		case qemuCloudinitOptions[opt] || isIndexed(opt, "ipconfig"):
			err = vm(true, "VM.Config.Cloudinit", "VM.Config.Network")
		case opt == "vmstate":
			err = vm(false, "VM.Config.Disk", "VM.PowerMgmt")
		default:
			err = fail("only root can set '%s' config", opt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// qemuNewDiskRe is QemuServer::Drive's NEW_DISK_RE: [STORAGE:]SIZE.
var qemuNewDiskRe = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)

var cloudinitRe = regexp.MustCompile(`[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow2|vmdk))?$`)

// qemuDrive parses a drive option: its volume (file, alias volume), media
// and import-from.
func qemuDrive(v string) map[string]string {
	return propertyString(v, "file", map[string]string{"volume": "file"})
}

func driveIsCDROM(d map[string]string) bool { return d["media"] == "cdrom" }

func driveIsCloudinit(d map[string]string) bool { return cloudinitRe.MatchString(d["file"]) }

// qemuStorageAccess is API2/Qemu.pm's check_storage_access over the drives
// of a create or update: a new disk needs Datastore.AllocateSpace on its
// storage (or defaultStorage) and a storage for images; an existing volume
// check_volume_access and content images or iso; the host's CD drive
// (cdrom) Sys.Console; import-from VM.Clone on the source guest (or access
// to the source volume); vmstatestorage Datastore.AllocateSpace.
func (r *request) qemuStorageAccess(vmid int, params map[string]string, defaultStorage string) error {
	for _, opt := range sortedKeys(params) {
		if !isQemuDrive(opt) {
			continue
		}
		d := qemuDrive(params[opt])
		volid := d["file"]
		_, volname, managed := parseVolumeID(volid)
		switch {
		case volid == "" || volid == "none" || volid == "cloudinit" || managed && volname == "cloudinit":
		case driveIsCDROM(d) && volid == "cdrom":
			if err := r.check("/", "Sys.Console"); err != nil {
				return err
			}
		case !driveIsCDROM(d) && qemuNewDiskRe.MatchString(volid):
			sid := qemuNewDiskRe.FindStringSubmatch(volid)[2]
			if sid == "" {
				sid = defaultStorage
			}
			if sid == "" {
				return fail("no storage ID specified (and no default storage)")
			}
			if err := r.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return err
			}
			if st := r.sim.st.storage(sid); st == nil {
				return fail("storage '%s' does not exist", sid)
			} else if !st.hasContent("images") {
				return paramError(map[string]string{"storage": fmt.Sprintf("storage '%s' does not support vm images", sid)})
			}
		default:
			if err := r.checkVolumeAccess(vmid, volid, ""); err != nil {
				return err
			}
			if managed {
				if vtype, _, err := r.sim.st.parseVolname(volid); err != nil {
					return err
				} else if vtype != "images" && vtype != "iso" {
					return paramError(map[string]string{opt: "content type needs to be 'images' or 'iso'"})
				}
			}
		}
		if src := d["import-from"]; src != "" {
			if _, _, ok := parseVolumeID(src); ok {
				vtype, owner, err := r.sim.st.parseVolname(src)
				if err != nil {
					return err
				}
				if vtype != "images" && vtype != "import" {
					return paramError(map[string]string{opt: fmt.Sprintf("%s has wrong type '%s' - needs to be 'images' or 'import'", src, vtype)})
				}
				if owner != 0 {
					if err := r.check(fmt.Sprintf("/vms/%d", owner), "VM.Clone"); err != nil {
						return err
					}
					continue
				}
			}
			if err := r.checkVolumeAccess(vmid, src, ""); err != nil {
				return err
			}
		}
	}
	if sid := params["vmstatestorage"]; sid != "" {
		return r.check("/storage/"+sid, "Datastore.AllocateSpace")
	}
	return nil
}

// qemuDevicePerm is the value-dependent part of a QEMU option check:
// serial ports (a socket needs VM.Config.HWType, a real port root@pam),
// USB (check_usb_perm), PCI passthrough (check_hostpci_perm), rng
// (check_rng_perm) and virtiofs (check_dir_perm). Other options pass.
func (r *request) qemuDevicePerm(vmid int, pool, opt, value string) error {
	if r.who.isRoot() {
		return nil
	}
	hw := func() error { return r.checkVMPerm(vmid, pool, false, "VM.Config.HWType") }
	switch {
	case isIndexed(opt, "serial"):
		if value == "socket" {
			return hw()
		}
		return fail("only root can set '%s' config for real devices", opt)
	case isIndexed(opt, "usb"):
		if err := hw(); err != nil {
			return err
		}
		dev := propertyString(value, "host", nil)
		switch {
		case dev["host"] != "":
			if !strings.EqualFold(dev["host"], "spice") {
				return fail("only root can set '%s' config for real devices", opt)
			}
		case dev["mapping"] != "":
			return r.check("/mapping/usb/"+dev["mapping"], "Mapping.Use")
		default:
			return fail("either 'host' or 'mapping' must be set.")
		}
	case isIndexed(opt, "hostpci"):
		dev := propertyString(value, "host", nil)
		switch {
		case dev["host"] != "":
			return fail("only root can set '%s' config for non-mapped devices", opt)
		case dev["mapping"] != "":
			if err := r.check("/mapping/pci/"+dev["mapping"], "Mapping.Use"); err != nil {
				return err
			}
			return hw()
		default:
			return fail("either 'host' or 'mapping' must be set.")
		}
	case isIndexed(opt, "rng"):
		if err := hw(); err != nil {
			return err
		}
		if propertyString(value, "source", nil)["source"] == "/dev/hwrng" {
			return r.check("/mapping/hwrng", "Mapping.Use")
		}
	case isIndexed(opt, "virtiofs"):
		if err := r.checkVMPerm(vmid, pool, false, "VM.Config.Disk"); err != nil {
			return err
		}
		return r.check("/mapping/dir/"+propertyString(value, "dirid", nil)["dirid"], "Mapping.Use")
	}
	return nil
}

// qemuCPUModelAccess is check_cpu_model_access: a custom CPU model needs
// Mapping.Use on /mapping/cpu/<name>, unless the model is unchanged.
func (r *request) qemuCPUModelAccess(newCPU, oldCPU string) error {
	if newCPU == "" {
		return nil
	}
	model := propertyString(newCPU, "cputype", nil)["cputype"]
	if model == "" {
		return nil
	}
	if oldCPU != "" && propertyString(oldCPU, "cputype", nil)["cputype"] == model {
		return nil
	}
	if name, custom := strings.CutPrefix(model, "custom-"); custom {
		return r.check("/mapping/cpu/"+name, "Mapping.Use")
	}
	return nil
}

// resolveCDROMAlias is API2/Qemu.pm's resolve_cdrom_alias: cdrom is ide2
// with media=cdrom, and is checked as that drive.
func resolveCDROMAlias(params map[string]string) map[string]string {
	v, ok := params["cdrom"]
	if !ok {
		return params
	}
	out := maps.Clone(params)
	delete(out, "cdrom")
	if !strings.Contains(v, "media=") {
		v += ",media=cdrom"
	}
	out["ide2"] = v
	return out
}

// qemuCreatePerms is the option part of create_vm: storage access, the
// option classes, devices, bridges and CPU model.
func (r *request) qemuCreatePerms(vmid int, pool string, params map[string]string, storage string) error {
	params = resolveCDROMAlias(params)
	if err := r.qemuStorageAccess(vmid, params, storage); err != nil {
		return err
	}
	keys := sortedKeys(params)
	if err := r.qemuModifyConfigPerm(vmid, pool, keys); err != nil {
		return err
	}
	for _, k := range keys {
		if err := r.qemuDevicePerm(vmid, pool, k, params[k]); err != nil {
			return err
		}
	}
	if err := r.checkBridgeAccess("qemu", params); err != nil {
		return err
	}
	return r.qemuCPUModelAccess(params["cpu"], "")
}

// qemuDrivePerms is update_vm_api's check_drive_perms: a cloud-init drive
// needs VM.Config.Cloudinit and VM.Config.CDROM, a CD-ROM VM.Config.CDROM,
// any other disk VM.Config.Disk.
func (r *request) qemuDrivePerms(vmid int, value string) error {
	d := qemuDrive(value)
	switch {
	case driveIsCloudinit(d):
		return r.checkVMPerm(vmid, "", false, "VM.Config.Cloudinit", "VM.Config.CDROM")
	case driveIsCDROM(d):
		return r.checkVMPerm(vmid, "", false, "VM.Config.CDROM")
	}
	return r.checkVMPerm(vmid, "", false, "VM.Config.Disk")
}

// qemuUpdateValuePerms is the per-option part of update_vm_api's
// $updatefn, which needs the current configuration: for each deleted
// option the checks of its current value, for each changed one those of
// the old and the new value (drives, devices, tags, the old NIC's bridge),
// and Datastore.AllocateSpace for an unused disk the guest owns and that
// the delete destroys.
func (r *request) qemuUpdateValuePerms(g *guest, changes map[string]string, deletes []string) error {
	vmid := g.vmid
	current := g.effective()
	for _, opt := range deletes {
		val, ok := current[opt]
		if !ok {
			continue // PVE warns and skips an unset option
		}
		var err error
		switch {
		case isIndexed(opt, "unused"):
			if err = r.checkVMPerm(vmid, "", false, "VM.Config.Disk"); err == nil {
				if _, owner, perr := r.sim.st.parseVolname(val); perr == nil && owner == vmid {
					sid, _, _ := parseVolumeID(val)
					err = r.check("/storage/"+sid, "Datastore.AllocateSpace")
				}
			}
		case isQemuDrive(opt):
			err = r.qemuDrivePerms(vmid, val)
		case isIndexed(opt, "serial"):
			if val == "socket" {
				err = r.checkVMPerm(vmid, "", false, "VM.Config.HWType")
			} else if !r.who.isRoot() {
				err = fail("only root can delete '%s' config for real devices", opt)
			}
		case isIndexed(opt, "usb"), isIndexed(opt, "hostpci"), isIndexed(opt, "rng"), isIndexed(opt, "virtiofs"):
			err = r.qemuDevicePerm(vmid, "", opt, val)
		case opt == "tags":
			err = r.assertTagPermissions(vmid)
		case isIndexed(opt, "net"):
			err = r.checkBridgeAccess("qemu", map[string]string{opt: val})
		}
		if err != nil {
			return err
		}
	}
	for _, opt := range sortedKeys(changes) {
		val := changes[opt]
		if p, ok := g.pending[opt]; ok && p == val {
			continue // nothing changes
		}
		old := current[opt]
		var err error
		switch {
		case isQemuDrive(opt):
			if old != "" {
				err = r.qemuDrivePerms(vmid, old)
			}
			if err == nil {
				err = r.qemuDrivePerms(vmid, val)
			}
		case isIndexed(opt, "serial"):
			if (old == "" || old == "socket") && val == "socket" {
				err = r.checkVMPerm(vmid, "", false, "VM.Config.HWType")
			} else if !r.who.isRoot() {
				err = fail("only root can modify '%s' config for real devices", opt)
			}
		case isIndexed(opt, "usb"), isIndexed(opt, "hostpci"), isIndexed(opt, "rng"), isIndexed(opt, "virtiofs"):
			if old != "" {
				err = r.qemuDevicePerm(vmid, "", opt, old)
			}
			if err == nil {
				err = r.qemuDevicePerm(vmid, "", opt, val)
			}
		case opt == "tags":
			err = r.assertTagPermissions(vmid)
		case isIndexed(opt, "net"):
			if old != "" {
				err = r.checkBridgeAccess("qemu", map[string]string{opt: old})
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lxcNewDiskRe is PVE::LXC's NEW_DISK_RE: STORAGE:SIZE.
var lxcNewDiskRe = regexp.MustCompile(`^([^:\s]+):(\d+(\.\d+)?)$`)

// lxcMountPoint parses rootfs or mpN: its volume (the default key) and
// type (a path under /dev is a device, another path a bind mount).
func lxcMountPoint(v string) (volume, typ string) {
	volume = propertyString(v, "volume", nil)["volume"]
	switch {
	case strings.HasPrefix(volume, "/dev/"):
		return volume, "device"
	case strings.HasPrefix(volume, "/"):
		return volume, "bind"
	}
	return volume, "volume"
}

// lxcFeatures parses the features option.
func lxcFeatures(v string) map[string]string { return propertyString(v, "", nil) }

// lxcModifyConfigPerm is PVE::LXC::check_ct_modify_config_perm for the
// options of newconf (set) and of deletes: CPU, disk (a mount point of
// another type than volume is root@pam's; a new volume needs
// Datastore.AllocateSpace, an existing one check_volume_access), memory,
// network (with the bridges of the old and new value), device passthrough
// and hookscript (root@pam's), features (root@pam's for a privileged
// container; any change other than nesting is root@pam's; nesting needs
// VM.Allocate), tags, and VM.Config.Options for the rest.
func (r *request) lxcModifyConfigPerm(vmid int, pool string, oldconf, newconf map[string]string, deletes []string, unprivileged bool) error {
	if r.who.isRoot() {
		return nil
	}
	vm := func(privs ...string) error { return r.checkVMPerm(vmid, pool, false, privs...) }
	check := func(opt string, del bool) error {
		switch {
		case opt == "cores" || opt == "cpuunits" || opt == "cpulimit":
			return vm("VM.Config.CPU")
		case opt == "rootfs" || isIndexed(opt, "mp"):
			if err := vm("VM.Config.Disk"); err != nil || del {
				return err
			}
			volid, typ := lxcMountPoint(newconf[opt])
			if typ != "volume" {
				return permError(fmt.Sprintf("mount point type %s is only allowed for root@pam", typ))
			}
			if m := lxcNewDiskRe.FindStringSubmatch(volid); m != nil {
				return r.check("/storage/"+m[1], "Datastore.AllocateSpace")
			}
			return r.checkVolumeAccess(vmid, volid, "rootdir")
		case opt == "memory" || opt == "swap":
			return vm("VM.Config.Memory")
		case isIndexed(opt, "net"):
			if err := vm("VM.Config.Network"); err != nil {
				return err
			}
			if old := oldconf[opt]; old != "" {
				if err := r.checkNetBridge("lxc", old); err != nil {
					return err
				}
			}
			if v := newconf[opt]; v != "" {
				return r.checkNetBridge("lxc", v)
			}
			return nil
		case isIndexed(opt, "dev"):
			return permError("configuring device passthrough is only allowed for root@pam")
		case opt == "nameserver" || opt == "searchdomain" || opt == "hostname":
			return vm("VM.Config.Network")
		case opt == "features":
			if !unprivileged {
				return permError("changing feature flags for privileged container is only allowed for root@pam")
			}
			nesting, other := lxcFeatureChange(oldconf["features"], newconf["features"], del)
			if other {
				return permError("changing feature flags (except nesting) is only allowed for root@pam")
			}
			if nesting {
				return vm("VM.Allocate")
			}
			return nil
		case opt == "hookscript":
			return permError("changing the hookscript is only allowed for root@pam")
		case opt == "tags":
			return r.assertTagPermissions(vmid)
		}
		return vm("VM.Config.Options")
	}
	for _, opt := range sortedKeys(newconf) {
		if err := check(opt, false); err != nil {
			return err
		}
	}
	for _, opt := range deletes {
		if err := check(opt, true); err != nil {
			return err
		}
	}
	return nil
}

// lxcFeatureChange classifies a change of the features option as
// check_ct_modify_config_perm does: whether nesting changes, and whether
// anything else does.
func lxcFeatureChange(oldV, newV string, del bool) (nesting, other bool) {
	if del {
		f := lxcFeatures(oldV)
		_, hasNesting := f["nesting"]
		return len(f) == 1 && hasNesting, len(f) > 0 && !(len(f) == 1 && hasNesting)
	}
	nf := lxcFeatures(newV)
	if oldV != "" {
		of := lxcFeatures(oldV)
		keys := map[string]bool{}
		for k := range of {
			keys[k] = true
		}
		for k := range nf {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if of[k] != nf[k] {
				if k == "nesting" {
					nesting = true
					continue
				}
				return nesting, true
			}
		}
		return nesting, false
	}
	_, hasNesting := nf["nesting"]
	if len(nf) == 1 && hasNesting {
		return true, false
	}
	return false, len(nf) > 0
}

// qemuMappingAccess is QemuServer::check_mapping_access over a source
// configuration: real USB and PCI devices are root@pam's, mapped ones need
// Mapping.Use on their mapping, as do a hardware rng and virtiofs.
func (r *request) qemuMappingAccess(conf map[string]string) error {
	if r.who.isRoot() {
		return nil
	}
	for _, opt := range sortedKeys(conf) {
		v := conf[opt]
		switch {
		case isIndexed(opt, "usb"):
			dev := propertyString(v, "host", nil)
			switch {
			case dev["host"] != "":
				if !strings.EqualFold(dev["host"], "spice") {
					return fail("only root can set '%s' config for real devices", opt)
				}
			case dev["mapping"] != "":
				if err := r.check("/mapping/usb/"+dev["mapping"], "Mapping.Use"); err != nil {
					return err
				}
			default:
				return fail("either 'host' or 'mapping' must be set.")
			}
		case isIndexed(opt, "hostpci"):
			dev := propertyString(v, "host", nil)
			switch {
			case dev["host"] != "":
				return fail("only root can set '%s' config for non-mapped devices", opt)
			case dev["mapping"] != "":
				if err := r.check("/mapping/pci/"+dev["mapping"], "Mapping.Use"); err != nil {
					return err
				}
			default:
				return fail("either 'host' or 'mapping' must be set.")
			}
		case isIndexed(opt, "rng"):
			if propertyString(v, "source", nil)["source"] == "/dev/hwrng" {
				if err := r.check("/mapping/hwrng", "Mapping.Use"); err != nil {
					return err
				}
			}
		case isIndexed(opt, "virtiofs"):
			if err := r.check("/mapping/dir/"+propertyString(v, "dirid", nil)["dirid"], "Mapping.Use"); err != nil {
				return err
			}
		}
	}
	return nil
}

// cloneChecks are what a clone checks of the source configuration (the
// snapshot's, when cloning one): for QEMU check_storage_access_clone
// (Datastore.AllocateSpace on the target storage of every disk: the
// storage parameter, or the disk's own; Sys.Console for the host's CD
// drive; the vmstate storage), check_mapping_access, check_bridge_access
// and the CPU model; for LXC (clone_vm) Datastore.AllocateSpace on every
// volume mount point's target storage, no other mount point type, and
// SDN.Use on each NIC's bridge.
func (r *request) cloneChecks(kind string, conf map[string]string, storage string) error {
	if kind == "lxc" {
		for _, opt := range sortedKeys(conf) {
			switch {
			case opt == "rootfs" || isIndexed(opt, "mp"):
				volid, typ := lxcMountPoint(conf[opt])
				if typ != "volume" {
					return fail("unable to clone mountpoint '%s' (type %s)", opt, typ)
				}
				sid, _, _ := parseVolumeID(volid)
				if storage != "" {
					sid = storage
				}
				if err := r.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
					return err
				}
			case isIndexed(opt, "net"):
				if err := r.checkBridgeAccess("lxc", map[string]string{opt: conf[opt]}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, opt := range sortedKeys(conf) {
		if !isQemuDrive(opt) {
			continue
		}
		d := qemuDrive(conf[opt])
		volid := d["file"]
		switch {
		case volid == "" || volid == "none":
		case driveIsCDROM(d):
			if volid == "cdrom" {
				if err := r.check("/", "Sys.Console"); err != nil {
					return err
				}
			}
		default:
			sid, _, _ := parseVolumeID(volid)
			if storage != "" {
				sid = storage
			}
			if err := r.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return err
			}
		}
	}
	if sid := conf["vmstatestorage"]; sid != "" {
		if err := r.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if err := r.qemuMappingAccess(conf); err != nil {
		return err
	}
	if err := r.checkBridgeAccess("qemu", conf); err != nil {
		return err
	}
	return r.qemuCPUModelAccess(conf["cpu"], "")
}

// migrateStorageChecks are the target-storage checks of migrate_vm
// (qemu-server: targetstorage; pve-container: target-storage): a storage
// map other than the identity (1) needs VM.Config.Disk, and every target
// storage Datastore.AllocateSpace and the content the guest's disks need
// (check_storage_access_migrate).
func (r *request) migrateStorageChecks(kind string, vmid int, storageMap string) error {
	if storageMap == "" {
		return nil
	}
	param := map[string]string{"qemu": "targetstorage", "lxc": "target-storage"}[kind]
	identity := false
	var targets []string
	for _, entry := range splitList(storageMap) {
		switch {
		case entry == "1":
			identity = true
		case strings.Count(entry, ":") == 1:
			_, dst, _ := strings.Cut(entry, ":")
			targets = append(targets, dst)
		default:
			targets = append(targets, entry)
		}
	}
	if identity && len(targets) > 0 {
		return paramError(map[string]string{param: "failed to parse storage map: identity mapping cannot be combined with other mappings"})
	}
	if !identity {
		if err := r.checkVMPerm(vmid, "", false, "VM.Config.Disk"); err != nil {
			return err
		}
	}
	content, missing := "images", "vm images"
	if kind == "lxc" {
		content, missing = "rootdir", "CT rootdirs"
	}
	for _, sid := range targets {
		st := r.sim.st.storage(sid)
		if st == nil {
			return fail("storage '%s' does not exist", sid)
		}
		if err := r.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
		if !st.hasContent(content) {
			return fail("storage '%s' does not support %s", sid, missing)
		}
	}
	return nil
}

// restoreChecks are what a restore checks of the backed-up configuration
// in its worker, before any data is written: for QEMU
// check_restore_permissions on the backup's configuration merged with the
// call's options (the bridges' SDN.Use, mapped devices' Mapping.Use); for
// LXC the bridge of every backed-up NIC the call does not replace, and
// Sys.Modify on / for a container that would become privileged (a new
// one, or one that was unprivileged).
func (r *request) restoreChecks(kind string, backup, params map[string]string, previous *guest) error {
	if kind == "qemu" {
		merged := maps.Clone(backup)
		maps.Copy(merged, params)
		if err := r.checkBridgeAccess("qemu", merged); err != nil {
			return err
		}
		return r.qemuMappingAccess(merged)
	}
	for _, opt := range sortedKeys(backup) {
		if _, replaced := params[opt]; isIndexed(opt, "net") && !replaced {
			if err := r.checkBridgeAccess("lxc", map[string]string{opt: backup[opt]}); err != nil {
				return err
			}
		}
	}
	unprivileged := backup["unprivileged"] == "1"
	if r.has("unprivileged") {
		unprivileged = r.flag("unprivileged")
	}
	if (previous == nil || previous.conf["unprivileged"] == "1") && !unprivileged {
		return r.check("/", "Sys.Modify")
	}
	return nil
}
