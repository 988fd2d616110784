package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Task durations of clock time (scaled by Options.TaskDuration).
const (
	durStart    = 2 * time.Second
	durStop     = time.Second
	durShutdown = 5 * time.Second
	durReboot   = 6 * time.Second
	durQuick    = time.Second
	durSnapshot = 3 * time.Second
	durRollback = 4 * time.Second
	durCreate   = 3 * time.Second
	durClone    = 8 * time.Second
	durDestroy  = 2 * time.Second
	durMigrate  = 10 * time.Second
	durBackup   = 15 * time.Second
	durResize   = time.Second
)

func (s *Sim) guestRoutes(add func(string, handler)) {
	for _, kind := range []string{"qemu", "lxc"} {
		base := "/nodes/{node}/" + kind
		item := base + "/{vmid}"
		add("GET "+base, s.guestList(kind))
		add("POST "+base, s.guestCreate(kind))
		add("GET "+item+"/config", s.guestConfig(kind))
		add("PUT "+item+"/config", s.guestUpdate(kind, false))
		add("GET "+item+"/pending", s.guestPending(kind))
		add("GET "+item+"/status/current", s.guestCurrent(kind))
		for _, action := range []string{"start", "stop", "shutdown", "reboot", "suspend", "resume"} {
			add("POST "+item+"/status/"+action, s.guestPower(kind, action))
		}
		add("GET "+item+"/snapshot", s.snapshotList(kind))
		add("POST "+item+"/snapshot", s.snapshotCreate(kind))
		add("POST "+item+"/snapshot/{snapname}/rollback", s.snapshotRollback(kind))
		add("DELETE "+item+"/snapshot/{snapname}", s.snapshotDelete(kind))
		add("GET "+item+"/snapshot/{snapname}/config", s.snapshotConfig(kind))
		add("PUT "+item+"/snapshot/{snapname}/config", s.snapshotUpdate(kind))
		add("DELETE "+item, s.guestDestroy(kind))
		add("PUT "+item+"/resize", s.guestResize(kind))
		add("POST "+item+"/clone", s.guestClone(kind))
		add("POST "+item+"/migrate", s.guestMigrate(kind))
		add("POST "+item+"/template", s.guestTemplate(kind))
	}
	add("POST /nodes/{node}/qemu/{vmid}/config", s.guestUpdate("qemu", true))
	add("POST /nodes/{node}/qemu/{vmid}/status/reset", s.guestPower("qemu", "reset"))
	add("POST /nodes/{node}/vzdump", s.vzdump)
}

// what PVE calls the guest in messages.
func label(kind string) string {
	if kind == "lxc" {
		return "CT"
	}
	return "VM"
}

func confPath(kind, nodeName string, vmid int) string {
	dir := "qemu-server"
	if kind == "lxc" {
		dir = "lxc"
	}
	return fmt.Sprintf("nodes/%s/%s/%d.conf", nodeName, dir, vmid)
}

// guest loads the request's guest as load_config does: it must exist, be
// of the kind and live on the node of the path.
func (r *request) guest(kind string) (*guest, error) {
	g := r.sim.st.guests[r.vmid()]
	if g == nil || g.kind != kind || g.node != r.str("node") {
		return nil, fail("Configuration file '%s' does not exist", confPath(kind, r.str("node"), r.vmid()))
	}
	return g, nil
}

// checkLock refuses work on a locked guest unless skiplock is set.
func (r *request) checkLock(g *guest) error {
	if l := g.currentLock(); l != "" && !r.flag("skiplock") {
		return fail("%s is locked (%s)", label(g.kind), l)
	}
	return nil
}

func (g *guest) currentLock() string {
	if g.lock != "" {
		return g.lock
	}
	return g.conf["lock"]
}

func (s *Sim) guestList(kind string) handler {
	return func(r *request) (any, error) {
		list := []map[string]any{}
		for _, g := range s.st.sortedGuests() {
			if g.kind != kind || g.node != r.str("node") || !r.can(fmt.Sprintf("/vms/%d", g.vmid), "VM.Audit") {
				continue
			}
			e := s.guestSummary(g, r)
			delete(e, "template") // the node lists name it only for templates
			if g.template() {
				e["template"] = 1
			}
			if kind == "lxc" {
				e["vmid"] = strconv.Itoa(g.vmid) // PVE lists container IDs as strings
				e["type"] = "lxc"
				swap, _ := strconv.ParseInt(g.conf["swap"], 10, 64)
				e["maxswap"] = swap << 20
				e["swap"] = 0
			} else if g.status == "running" {
				e["qmpstatus"] = qmpStatus(g)
			}
			list = append(list, e)
		}
		return list, nil
	}
}

// blockStats has the fields QEMU's query-blockstats gives per disk.
func blockStats(up int64, cdrom bool) map[string]any {
	rd, wr := up*4096, up*2048
	if cdrom {
		rd, wr = 344348, 0
	}
	st := map[string]any{
		"rd_bytes": rd, "wr_bytes": wr, "rd_operations": rd / 4096, "wr_operations": wr / 4096, "flush_operations": up / 10,
		"rd_total_time_ns": up * 45000, "wr_total_time_ns": up * 90000, "flush_total_time_ns": up * 20000,
		"rd_merged": 0, "wr_merged": 0, "unmap_operations": up / 600, "unmap_bytes": up * 1024, "unmap_merged": 0,
		"unmap_total_time_ns": up * 100, "wr_highest_offset": wr / 2, "idle_time_ns": 4427685914,
		"account_failed": true, "account_invalid": true, "timed_stats": []any{},
	}
	for _, k := range []string{"failed_rd_operations", "failed_wr_operations", "failed_flush_operations", "failed_unmap_operations",
		"invalid_rd_operations", "invalid_wr_operations", "invalid_flush_operations", "invalid_unmap_operations"} {
		st[k] = 0
	}
	return st
}

func qmpStatus(g *guest) string {
	switch {
	case g.status != "running":
		return "stopped"
	case g.paused:
		return "paused"
	}
	return "running"
}

// configTypes reads the JSON types of a guest config's keys from the
// schema's GET …/config return schema, so numbers and strings come back as
// PVE sends them ("memory": "2048" for QEMU, 2048 for LXC).
func (s *Sim) configTypes(kind string) (exact, indexed map[string]string) {
	s.cfgTypesOnce.Do(func() {
		s.cfgTypes = map[string][2]map[string]string{}
		for _, k := range []string{"qemu", "lxc"} {
			e, i := s.readConfigTypes(k)
			s.cfgTypes[k] = [2]map[string]string{e, i}
		}
	})
	t := s.cfgTypes[kind]
	return t[0], t[1]
}

// readConfigTypes reads the types of a guest configuration's fields from
// the schema (once per simulator: the schema does not change under it).
func (s *Sim) readConfigTypes(kind string) (exact, indexed map[string]string) {
	exact, indexed = map[string]string{}, map[string]string{}
	ep := s.reg.Lookup("GET", "/nodes/{node}/"+kind+"/{vmid}/config")
	if ep == nil || len(ep.Returns) == 0 {
		return exact, indexed
	}
	var ret struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(ep.Returns, &ret) == nil {
		for k, v := range ret.Properties {
			if prefix, ok := strings.CutSuffix(k, "[n]"); ok {
				indexed[prefix] = v.Type
			} else {
				exact[k] = v.Type
			}
		}
	}
	return exact, indexed
}

// typed converts config values to PVE's JSON types.
func (s *Sim) typed(kind string, conf map[string]string) map[string]any {
	exact, indexed := s.configTypes(kind)
	out := make(map[string]any, len(conf))
	for k, v := range conf {
		t, ok := exact[k]
		if !ok {
			t = indexed[strings.TrimRight(k, "0123456789")]
		}
		switch t {
		case "integer", "boolean":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[k] = n
				continue
			}
		case "number":
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = f
				continue
			}
		}
		out[k] = v
	}
	return out
}

// effective is the configuration with pending changes applied.
func (g *guest) effective() map[string]string {
	conf := cloneConf(g.conf)
	for k, v := range g.pending {
		conf[k] = v
	}
	for _, k := range g.pendDel {
		delete(conf, k)
	}
	return conf
}

func (s *Sim) guestConfig(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		if name := r.str("snapshot"); name != "" {
			snap := g.snapshot(name)
			if snap == nil {
				return nil, fail("snapshot '%s' does not exist", name)
			}
			out := s.typed(kind, snap.conf)
			out["digest"] = g.digest()
			return out, nil
		}
		conf := g.effective()
		if r.flag("current") {
			conf = cloneConf(g.conf)
		}
		out := s.typed(kind, conf)
		if g.lock != "" {
			out["lock"] = g.lock
		}
		if g.parent != "" {
			out["parent"] = g.parent
		}
		out["digest"] = g.digest()
		return out, nil
	}
}

func (s *Sim) guestPending(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		keys := map[string]bool{}
		for k := range g.conf {
			keys[k] = true
		}
		for k := range g.pending {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		slices.Sort(names)
		list := []map[string]any{}
		for _, k := range names {
			e := map[string]any{"key": k}
			if v, ok := g.conf[k]; ok {
				e["value"] = v
			}
			if v, ok := g.pending[k]; ok {
				e["pending"] = v
			}
			if slices.Contains(g.pendDel, k) {
				e["delete"] = 1
			}
			list = append(list, e)
		}
		return list, nil
	}
}

// configControl are the parameters of a config update that are not options.
var configControl = map[string]bool{
	"node": true, "vmid": true, "digest": true, "delete": true, "revert": true, "skiplock": true,
	"force": true, "background_delay": true, "skip_cloud_init": true, "import-working-storage": true,
}

// appliedWhileRunning are options a running guest takes at once; others
// wait as pending changes until the next stop and start.
func appliedWhileRunning(kind, key string) bool {
	switch key {
	case "name", "hostname", "description", "tags", "onboot", "protection", "startup", "lock":
		return true
	}
	if isDiskKey(kind, key) || isIndexed(key, "net") || isIndexed(key, "usb") || isIndexed(key, "unused") {
		return true
	}
	return kind == "lxc" && (key == "memory" || key == "swap" || key == "cores" || key == "cpulimit" || key == "cpuunits")
}

// guestUpdate is PUT …/config (synchronous) and, for QEMU, POST …/config
// (the same as a task). It honours digest, delete, revert and pending
// values, after the checks PVE makes in code: for QEMU (update_vm_api)
// skiplock is root@pam's, every option deleted or set passes
// check_vm_modify_config_perm, new disks and volumes check_storage_access,
// new NICs their bridge's SDN.Use, a custom CPU model Mapping.Use, and,
// once the configuration is loaded (in the task, for POST), each old and
// new value its own checks; for LXC (update_pct_config's caller) every
// option deleted, reverted or set passes check_ct_modify_config_perm.
func (s *Sim) guestUpdate(kind string, async bool) handler {
	return func(r *request) (any, error) {
		if kind == "qemu" {
			if err := r.rootOnly("skiplock"); err != nil {
				return nil, err
			}
		}
		changes := map[string]string{}
		for k := range r.args {
			if !configControl[k] {
				changes[k] = r.args.Get(k)
			}
		}
		deletes := splitList(r.str("delete"))
		reverts := splitList(r.str("revert"))
		for _, k := range reverts {
			if _, clash := changes[k]; clash || slices.Contains(deletes, k) {
				return nil, paramError(map[string]string{k: "you can't change and revert at the same time"})
			}
		}
		for _, k := range deletes {
			if _, clash := changes[k]; clash {
				return nil, paramError(map[string]string{k: "you can't change and delete at the same time"})
			}
		}
		vmid := r.vmid()
		checked := changes // what the checks see: cdrom is ide2
		if kind == "qemu" {
			checked = resolveCDROMAlias(changes)
			for i, k := range deletes {
				if k == "cdrom" {
					deletes[i] = "ide2"
				}
			}
			if err := r.qemuModifyConfigPerm(vmid, "", deletes); err != nil {
				return nil, err
			}
			if err := r.qemuModifyConfigPerm(vmid, "", sortedKeys(checked)); err != nil {
				return nil, err
			}
			if err := r.qemuStorageAccess(vmid, checked, ""); err != nil {
				return nil, err
			}
			if err := r.checkBridgeAccess("qemu", checked); err != nil {
				return nil, err
			}
		}
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		if d := r.str("digest"); d != "" && d != g.digest() {
			return nil, fail("detected modified configuration - file changed by other user? Try again.")
		}
		if kind == "qemu" {
			if err := r.qemuCPUModelAccess(changes["cpu"], g.effective()["cpu"]); err != nil {
				return nil, err
			}
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		if kind == "lxc" {
			unpriv := g.conf["unprivileged"] == "1"
			for _, step := range []struct {
				set  map[string]string
				dels []string
			}{{nil, deletes}, {nil, reverts}, {changes, nil}} {
				if err := r.lxcModifyConfigPerm(vmid, "", g.conf, step.set, step.dels, unpriv); err != nil {
					return nil, err
				}
			}
		}
		if err := s.checkConfigValues(g, checked); err != nil {
			return nil, err
		}
		apply := func() error {
			if kind == "qemu" {
				// A reverted option is set again to its current value.
				values := maps.Clone(checked)
				for _, k := range reverts {
					if v, ok := g.conf[k]; ok {
						values[k] = v
					}
				}
				if err := r.qemuUpdateValuePerms(g, values, deletes); err != nil {
					return err
				}
			}
			return s.applyConfig(g, checked, deletes, reverts, r.flag("force"))
		}
		if !async {
			return nil, apply()
		}
		return r.startTask(g.node, "qmconfig", strconv.Itoa(g.vmid), durQuick, []string{"update VM " + strconv.Itoa(g.vmid) + ": " + describeChanges(changes, deletes)}, apply), nil
	}
}

func describeChanges(changes map[string]string, deletes []string) string {
	var parts []string
	for k, v := range changes {
		parts = append(parts, "-"+k+" "+v)
	}
	slices.Sort(parts)
	if len(deletes) > 0 {
		parts = append(parts, "-delete "+strings.Join(deletes, ","))
	}
	return strings.Join(parts, " ")
}

// splitList is PVE's split_list.
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == 0 })
}

// checkConfigValues refuses what PVE refuses before writing: new disks on a
// storage that does not exist or does not hold guest images.
func (s *Sim) checkConfigValues(g *guest, changes map[string]string) error {
	for k, v := range changes {
		if !isDiskKey(g.kind, k) || isCDROM(v) {
			continue
		}
		volid, _, _ := strings.Cut(v, ",")
		storeID, rest, ok := strings.Cut(volid, ":")
		if !ok {
			continue
		}
		st := s.st.storage(storeID)
		if st == nil {
			return paramError(map[string]string{k: fmt.Sprintf("storage '%s' does not exist", storeID)})
		}
		if !st.hasContent(contentOf(g.kind)) {
			return paramError(map[string]string{k: fmt.Sprintf("storage '%s' does not support %s content", storeID, contentOf(g.kind))})
		}
		if _, err := strconv.ParseFloat(rest, 64); err != nil && s.findVolume(g.node, volid) == nil {
			return paramError(map[string]string{k: fmt.Sprintf("volume '%s' does not exist", volid)})
		}
	}
	return nil
}

// applyConfig writes changes: new disks (STORAGE:SIZE) are allocated;
// a deleted disk becomes unusedN unless forced; a deleted unusedN destroys
// its volume; on a running guest, options that cannot change live wait as
// pending values.
func (s *Sim) applyConfig(g *guest, changes map[string]string, deletes, reverts []string, force bool) error {
	for _, k := range reverts {
		delete(g.pending, k)
		g.pendDel = slices.DeleteFunc(g.pendDel, func(d string) bool { return d == k })
	}
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := changes[k]
		if isDiskKey(g.kind, k) && !isCDROM(v) {
			v = s.allocateIfNew(g, k, v)
		}
		if isIndexed(k, "net") && g.kind == "qemu" {
			v = s.withMAC(v)
		}
		if g.status == "running" && !appliedWhileRunning(g.kind, k) {
			if g.pending == nil {
				g.pending = map[string]string{}
			}
			g.pending[k] = v
			continue
		}
		if old, ok := g.conf[k]; ok && isDiskKey(g.kind, k) && !isCDROM(old) {
			oldVol, _ := diskVolume(old)
			newVol, _ := diskVolume(v)
			if oldVol != newVol {
				s.detachDisk(g, oldVol, false)
			}
		}
		g.conf[k] = v
	}
	for _, k := range deletes {
		old, ok := g.conf[k]
		if !ok {
			continue // PVE only warns about deleting an unset option
		}
		if g.status == "running" && !appliedWhileRunning(g.kind, k) {
			if !slices.Contains(g.pendDel, k) {
				g.pendDel = append(g.pendDel, k)
			}
			continue
		}
		delete(g.conf, k)
		switch {
		case isIndexed(k, "unused"):
			s.destroyVolume(g.node, old)
		case isDiskKey(g.kind, k) && !isCDROM(old):
			vol, _ := diskVolume(old)
			s.detachDisk(g, vol, force)
		}
	}
	return nil
}

// applyPending makes pending changes current (at stop, start, reboot).
func (s *Sim) applyPending(g *guest) {
	for k, v := range g.pending {
		g.conf[k] = v
	}
	for _, k := range g.pendDel {
		delete(g.conf, k)
	}
	g.pending, g.pendDel = nil, nil
}

// allocateIfNew turns STORAGE:SIZE into a new volume.
func (s *Sim) allocateIfNew(g *guest, key, v string) string {
	volid, opts, _ := strings.Cut(v, ",")
	storeID, size, _ := strings.Cut(volid, ":")
	gib, err := strconv.ParseFloat(size, 64)
	if err != nil {
		return v
	}
	st := s.st.storage(storeID)
	name := s.freeDiskName(st, g.node, g.vmid)
	bytes := int64(gib * (1 << 30))
	newVol := storeID + ":" + name
	st.addVolume(g.node, &volume{volid: newVol, content: contentOf(g.kind), format: "raw", size: bytes, vmid: g.vmid, ctime: s.clock.Now().Unix()})
	out := newVol
	if opts != "" {
		out += "," + opts
	}
	_ = key
	return out + ",size=" + formatSize(bytes)
}

func (s *Sim) freeDiskName(st *storage, nodeName string, vmid int) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("vm-%d-disk-%d", vmid, i)
		if s.findVolume(nodeName, st.id+":"+name) == nil && s.findVolume(nodeName, st.id+":"+strings.Replace(name, "vm-", "base-", 1)) == nil {
			return name
		}
	}
}

func (s *Sim) findVolume(nodeName, volid string) *volume {
	storeID, _, _ := strings.Cut(volid, ":")
	st := s.st.storage(storeID)
	if st == nil {
		return nil
	}
	for _, v := range st.volumesOn(nodeName) {
		if v.volid == volid {
			return v
		}
	}
	return nil
}

func (s *Sim) destroyVolume(nodeName, value string) {
	volid, _ := diskVolume(value)
	storeID, _, _ := strings.Cut(volid, ":")
	if st := s.st.storage(storeID); st != nil {
		st.removeVolume(nodeName, volid)
	}
}

// detachDisk moves a removed disk to the first free unusedN, or destroys it.
func (s *Sim) detachDisk(g *guest, volid string, destroy bool) {
	if destroy {
		s.destroyVolume(g.node, volid)
		return
	}
	for i := 0; ; i++ {
		k := fmt.Sprintf("unused%d", i)
		if _, taken := g.conf[k]; !taken {
			g.conf[k] = volid
			return
		}
	}
}

// withMAC adds a generated MAC to a QEMU net option that lacks one.
func (s *Sim) withMAC(v string) string {
	model, rest, _ := strings.Cut(v, ",")
	if strings.Contains(model, "=") {
		return v
	}
	out := model + "=" + s.st.macAddress()
	if rest != "" {
		out += "," + rest
	}
	return out
}

// guestCurrent is GET …/status/current.
func (s *Sim) guestCurrent(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		e := s.guestSummary(g, r)
		e["ha"] = map[string]any{"managed": 0}
		if kind == "qemu" {
			e["qmpstatus"] = qmpStatus(g)
			e["agent"] = boolInt(g.conf["agent"] == "1")
			if g.status == "running" {
				mem := g.memoryMiB() << 20
				up := int64(r.now.Sub(g.startedAt).Seconds())
				e["running-machine"] = "pc-i440fx-9.2+pve1"
				e["running-qemu"] = "9.2.0"
				e["balloon"] = mem
				e["freemem"] = mem * 4 / 10
				e["shares"] = 1000
				e["spice"] = 0
				e["ballooninfo"] = map[string]any{"actual": mem, "max_mem": mem, "total_mem": mem - 80<<20, "free_mem": mem * 4 / 10,
					"major_page_faults": 1811, "minor_page_faults": 3803793, "mem_swapped_in": 0, "mem_swapped_out": 0, "last_update": r.now.Unix()}
				blocks := map[string]any{}
				for k, v := range g.conf {
					if isDiskKey("qemu", k) {
						blocks[k] = blockStats(up, isCDROM(v))
					}
				}
				e["blockstat"] = blocks
				nics := map[string]any{}
				for k := range g.conf {
					if isIndexed(k, "net") {
						nics[fmt.Sprintf("tap%di%s", g.vmid, strings.TrimPrefix(k, "net"))] = map[string]any{"netin": up * 1517, "netout": up * 403}
					}
				}
				e["nics"] = nics
				e["proxmox-support"] = map[string]any{"backup-max-workers": true, "pbs-dirty-bitmap": true, "pbs-dirty-bitmap-migration": true,
					"pbs-dirty-bitmap-savevm": true, "pbs-masterkey": true, "query-bitmap-info": true, "pbs-library-version": "1.5.1 (UNKNOWN)"}
			}
		} else {
			e["type"] = "lxc"
			swap, _ := strconv.ParseInt(g.conf["swap"], 10, 64)
			e["maxswap"] = swap << 20
			e["swap"] = 0
		}
		return e, nil
	}
}

// powerRootOnly are the parameters of each power action only root@pam may
// give (qemu-server's vm_start, vm_stop, vm_reset, vm_shutdown,
// vm_suspend, vm_resume; pve-container's vm_start and vm_stop).
var powerRootOnly = map[string][]string{
	"qemu start": {"stateuri", "skiplock", "migratedfrom", "migration_type", "migration_network", "targetstorage",
		"force-cpu", "with-conntrack-state", "nets-host-mtu"},
	"qemu stop":     {"skiplock", "keepActive", "migratedfrom"},
	"qemu reset":    {"skiplock"},
	"qemu shutdown": {"skiplock", "keepActive"},
	"qemu suspend":  {"skiplock"},
	"qemu resume":   {"skiplock", "nocheck"},
	"lxc start":     {"skiplock"},
	"lxc stop":      {"skiplock"},
}

// vmstateStorage is QemuConfig::find_vmstate_storage: the configured
// vmstatestorage, else a shared storage the VM has a disk on, else a
// local one (a file-based one first), else local.
func (s *Sim) vmstateStorage(g *guest) string {
	if v := g.conf["vmstatestorage"]; v != "" {
		return v
	}
	var shared, local string
	for _, k := range sortedKeys(g.conf) {
		if !isDiskKey(g.kind, k) || isCDROM(g.conf[k]) {
			continue
		}
		sid, _, ok := parseVolumeID(qemuDrive(g.conf[k])["file"])
		st := s.st.storage(sid)
		if !ok || st == nil {
			continue
		}
		dst := &local
		if st.shared {
			dst = &shared
		}
		if *dst == "" || st.path != "" {
			*dst = sid
		}
	}
	return cmp.Or(shared, local, "local")
}

// guestPower starts, stops, shuts down, reboots, suspends, resumes or
// resets a guest as a task; the state changes when the task ends. Root's
// parameters are refused to everyone else first, and a suspend to disk
// needs VM.Config.Disk and Datastore.AllocateSpace on the state storage
// (qemu-server's vm_suspend).
func (s *Sim) guestPower(kind, action string) handler {
	return func(r *request) (any, error) {
		if err := r.rootOnly(powerRootOnly[kind+" "+action]...); err != nil {
			return nil, err
		}
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		if action == "suspend" && r.flag("todisk") {
			if g.status != "running" {
				return nil, fail("VM %d not running", g.vmid)
			}
			if err := r.checkVMPerm(g.vmid, "", false, "VM.Config.Disk"); err != nil {
				return nil, err
			}
			if err := r.check("/storage/"+cmp.Or(r.str("statestorage"), s.vmstateStorage(g)), "Datastore.AllocateSpace"); err != nil {
				return nil, err
			}
		}
		prefix := "qm"
		if kind == "lxc" {
			prefix = "vz"
		}
		id := strconv.Itoa(g.vmid)
		L := label(kind)
		var d time.Duration
		var finish func() error
		switch action {
		case "start":
			if g.template() {
				return nil, fail("you can't start a vm if it's a template")
			}
			d = durStart
			finish = func() error {
				if l := g.currentLock(); l != "" && !r.flag("skiplock") {
					return fmt.Errorf("%s is locked (%s)", L, l)
				}
				if g.status == "running" {
					return fmt.Errorf("%s %d already running", L, g.vmid)
				}
				s.applyPending(g)
				g.status, g.paused, g.startedAt = "running", false, s.clock.Now()
				return nil
			}
		case "stop", "shutdown":
			d = durStop
			if action == "shutdown" {
				d = durShutdown
			}
			finish = func() error {
				if g.status != "running" {
					return fmt.Errorf("%s %d not running", L, g.vmid)
				}
				s.applyPending(g)
				g.status, g.paused = "stopped", false
				return nil
			}
		case "reboot", "reset":
			d = durReboot
			if action == "reset" {
				d = durQuick
			}
			finish = func() error {
				if g.status != "running" {
					return fmt.Errorf("%s %d not running", L, g.vmid)
				}
				s.applyPending(g)
				g.paused, g.startedAt = false, s.clock.Now()
				return nil
			}
		case "suspend":
			d = durQuick
			finish = func() error {
				if g.status != "running" {
					return fmt.Errorf("%s %d not running", L, g.vmid)
				}
				g.paused = true
				return nil
			}
		case "resume":
			d = durQuick
			finish = func() error {
				if g.status != "running" {
					return fmt.Errorf("%s %d not running", L, g.vmid)
				}
				g.paused = false
				return nil
			}
		}
		log := []string{fmt.Sprintf("%s %s: %s", L, id, action)}
		return r.startTask(g.node, prefix+action, id, d, log, finish), nil
	}
}

func (s *Sim) snapshotList(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		list := []map[string]any{}
		for _, sn := range g.snapshots {
			e := map[string]any{"name": sn.name, "description": sn.description, "snaptime": sn.snaptime}
			if sn.parent != "" {
				e["parent"] = sn.parent
			}
			if kind == "qemu" {
				e["vmstate"] = boolInt(sn.vmstate)
			}
			list = append(list, e)
		}
		cur := map[string]any{"name": "current", "description": "You are here!", "digest": g.digest(), "running": boolInt(g.status == "running")}
		if g.parent != "" {
			cur["parent"] = g.parent
		}
		return append(list, cur), nil
	}
}

func (s *Sim) snapshotCreate(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		name := r.str("snapname")
		if name == "current" || name == "vzdump" {
			return nil, fail("invalid snapshot name '%s'", name)
		}
		if g.snapshot(name) != nil {
			return nil, fail("snapshot name '%s' already used", name)
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		g.lock = "snapshot"
		vmstate := r.flag("vmstate") && kind == "qemu" && g.status == "running"
		desc := r.str("description")
		prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[kind]
		t := r.startTask(g.node, prefix+"snapshot", strconv.Itoa(g.vmid), durSnapshot,
			[]string{fmt.Sprintf("snapshotting '%s'", name)}, func() error {
				g.lock = ""
				g.snapshots = append(g.snapshots, &snapshot{name: name, parent: g.parent, description: desc,
					snaptime: s.clock.Now().Unix(), vmstate: vmstate, conf: cloneConf(g.conf)})
				g.parent = name
				return nil
			})
		s.st.task(t).onCancel = func() { g.lock = "" }
		return t, nil
	}
}

func (s *Sim) snapshotRollback(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		sn := g.snapshot(r.str("snapname"))
		if sn == nil {
			return nil, fail("snapshot '%s' does not exist", r.str("snapname"))
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		// qemu-server's rollback checks VM.PowerMgmt before a start it
		// would make as a side effect; pve-container's does not.
		if kind == "qemu" && r.flag("start") {
			if err := r.check(fmt.Sprintf("/vms/%d", g.vmid), "VM.PowerMgmt"); err != nil {
				return nil, err
			}
		}
		g.lock = "rollback"
		prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[kind]
		start := r.flag("start")
		t := r.startTask(g.node, prefix+"rollback", strconv.Itoa(g.vmid), durRollback,
			[]string{fmt.Sprintf("rollback to snapshot '%s'", sn.name)}, func() error {
				g.lock = ""
				g.conf = cloneConf(sn.conf)
				g.pending, g.pendDel = nil, nil
				g.parent = sn.name
				switch {
				case sn.vmstate || start:
					g.status, g.paused, g.startedAt = "running", false, s.clock.Now()
				default:
					g.status, g.paused = "stopped", false
				}
				return nil
			})
		s.st.task(t).onCancel = func() { g.lock = "" }
		return t, nil
	}
}

func (s *Sim) snapshotDelete(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		sn := g.snapshot(r.str("snapname"))
		if sn == nil {
			return nil, fail("snapshot '%s' does not exist", r.str("snapname"))
		}
		if err := r.checkLock(g); err != nil && !r.flag("force") {
			return nil, err
		}
		g.lock = "snapshot-delete"
		prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[kind]
		t := r.startTask(g.node, prefix+"delsnapshot", strconv.Itoa(g.vmid), durSnapshot,
			[]string{fmt.Sprintf("delete snapshot '%s'", sn.name)}, func() error {
				g.lock = ""
				for _, other := range g.snapshots {
					if other.parent == sn.name {
						other.parent = sn.parent
					}
				}
				if g.parent == sn.name {
					g.parent = sn.parent
				}
				g.snapshots = slices.DeleteFunc(g.snapshots, func(x *snapshot) bool { return x == sn })
				return nil
			})
		s.st.task(t).onCancel = func() { g.lock = "" }
		return t, nil
	}
}

func (s *Sim) snapshotConfig(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		sn := g.snapshot(r.str("snapname"))
		if sn == nil {
			return nil, fail("snapshot '%s' does not exist", r.str("snapname"))
		}
		out := s.typed(kind, sn.conf)
		out["snaptime"] = sn.snaptime
		if sn.description != "" {
			out["description"] = sn.description
		}
		if sn.parent != "" {
			out["parent"] = sn.parent
		}
		return out, nil
	}
}

func (s *Sim) snapshotUpdate(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		sn := g.snapshot(r.str("snapname"))
		if sn == nil {
			return nil, fail("snapshot '%s' does not exist", r.str("snapname"))
		}
		if r.has("description") {
			sn.description = r.str("description")
		}
		return nil, nil
	}
}

// guestDestroy is DELETE …/{vmid}: refused for protected, running or
// locked guests (skiplock is root@pam's, qemu-server's destroy_vm); the
// task removes the guest, its volumes and, with purge, its ACL entries.
func (s *Sim) guestDestroy(kind string) handler {
	return func(r *request) (any, error) {
		if err := r.rootOnly("skiplock"); err != nil {
			return nil, err
		}
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		L := label(kind)
		if g.conf["protection"] == "1" {
			return nil, fail("can't remove %s %d - protection mode enabled", L, g.vmid)
		}
		if g.status == "running" {
			return nil, fail("%s %d is running - destroy failed", L, g.vmid)
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		g.lock = "destroyed"
		prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[kind]
		purge := r.flag("purge")
		return r.startTask(g.node, prefix+"destroy", strconv.Itoa(g.vmid), durDestroy,
			[]string{fmt.Sprintf("destroy %s %d", L, g.vmid)}, func() error {
				for k, v := range g.conf {
					if (isDiskKey(kind, k) && !isCDROM(v)) || isIndexed(k, "unused") {
						s.destroyVolume(g.node, v)
					}
				}
				delete(s.st.guests, g.vmid)
				if purge {
					path := fmt.Sprintf("/vms/%d", g.vmid)
					s.st.acl = slices.DeleteFunc(s.st.acl, func(e aclEntry) bool { return e.path == path })
				}
				return nil
			}), nil
	}
}

// guestResize grows a disk: "+2G" adds, "40G" sets; shrinking is refused.
// It needs Datastore.AllocateSpace on the disk's storage, checked in the
// task for QEMU (qemu-server's resize_vm, where skiplock is root@pam's),
// and at once for LXC, after check_ct_modify_config_perm, which reads the
// disk parameter as an option: VM.Config.Options (pve-container's
// resize_vm).
func (s *Sim) guestResize(kind string) handler {
	return func(r *request) (any, error) {
		if err := r.rootOnly("skiplock"); err != nil {
			return nil, err
		}
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		if d := r.str("digest"); d != "" && d != g.digest() {
			return nil, fail("detected modified configuration - file changed by other user? Try again.")
		}
		key := r.str("disk")
		v, ok := g.conf[key]
		if !ok || !isDiskKey(kind, key) || isCDROM(v) {
			return nil, fail("disk '%s' does not exist", key)
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		volid, _ := diskVolume(v)
		sid, _, _ := parseVolumeID(volid)
		allocate := func() error { return r.check("/storage/"+sid, "Datastore.AllocateSpace") }
		if kind == "lxc" {
			if err := r.lxcModifyConfigPerm(g.vmid, "", g.conf, map[string]string{"disk": key}, nil, g.conf["unprivileged"] == "1"); err != nil {
				return nil, err
			}
			if err := allocate(); err != nil {
				return nil, err
			}
		}
		cur := parseSizeOpt(v)
		spec := r.str("size")
		var want int64
		if rel, ok := strings.CutPrefix(spec, "+"); ok {
			want = cur + parseSize(rel)
		} else {
			want = parseSize(spec)
		}
		if want < cur {
			return nil, fail("shrinking disks is not supported")
		}
		return r.startTask(g.node, "resize", strconv.Itoa(g.vmid), durResize,
			[]string{fmt.Sprintf("resize %s to %s", key, formatSize(want))}, func() error {
				if kind == "qemu" {
					if err := allocate(); err != nil {
						return err
					}
				}
				g.conf[key] = setSizeOpt(g.conf[key], want)
				volid, _ := diskVolume(g.conf[key])
				if vol := s.findVolume(g.node, volid); vol != nil {
					vol.size = want
				}
				return nil
			}), nil
	}
}

func setSizeOpt(v string, size int64) string {
	parts := strings.Split(v, ",")
	found := false
	for i, p := range parts {
		if strings.HasPrefix(p, "size=") {
			parts[i] = "size=" + formatSize(size)
			found = true
		}
	}
	if !found {
		parts = append(parts, "size="+formatSize(size))
	}
	return strings.Join(parts, ",")
}

// guestClone copies a guest to newid, on the same or the target node. The
// pool must exist, and the source configuration passes cloneChecks.
func (s *Sim) guestClone(kind string) handler {
	return func(r *request) (any, error) {
		if pool := r.str("pool"); pool != "" {
			if err := r.checkPoolExist(pool); err != nil {
				return nil, err
			}
		}
		src, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		newid := r.num("newid", 0)
		if s.st.guests[newid] != nil {
			return nil, fail("unable to create %s %d: config file already exists", label(kind), newid)
		}
		target := src.node
		if t := r.str("target"); t != "" {
			nd := s.st.node(t)
			if nd == nil || !nd.online {
				return nil, fail("target node '%s' is not online", t)
			}
			target = t
		}
		if err := r.checkLock(src); err != nil {
			return nil, err
		}
		full := r.flag("full") || !src.template()
		if r.has("full") && !r.flag("full") && !src.template() {
			return nil, fail("linked clone feature is not supported for '%s' (only templates)", fmt.Sprint(src.vmid))
		}
		conf := cloneConf(src.conf)
		if sn := r.str("snapname"); sn != "" {
			snap := src.snapshot(sn)
			if snap == nil {
				return nil, fail("snapshot '%s' does not exist", sn)
			}
			conf = cloneConf(snap.conf)
		}
		if err := r.cloneChecks(kind, conf, r.str("storage")); err != nil {
			return nil, err
		}
		delete(conf, "template")
		delete(conf, "protection")
		for k := range conf {
			if isIndexed(k, "unused") {
				delete(conf, k)
			}
		}
		if name := r.str("name"); name != "" && kind == "qemu" {
			conf["name"] = name
		}
		if host := r.str("hostname"); host != "" && kind == "lxc" {
			conf["hostname"] = host
		}
		if d := r.str("description"); d != "" {
			conf["description"] = d
		}
		clone := &guest{vmid: newid, kind: kind, node: target, conf: conf, status: "stopped", lock: "clone", pool: r.str("pool")}
		s.st.guests[newid] = clone
		if !src.template() {
			src.lock = "clone"
		}
		prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[kind]
		storageOverride := r.str("storage")
		t := r.startTask(src.node, prefix+"clone", strconv.Itoa(src.vmid), durClone,
			[]string{fmt.Sprintf("create %s clone of %s %d to %d", map[bool]string{true: "full", false: "linked"}[full], label(kind), src.vmid, newid)},
			func() error {
				src.lock = ""
				clone.lock = ""
				for k, v := range clone.conf {
					if !isDiskKey(kind, k) || isCDROM(v) {
						continue
					}
					volid, size := diskVolume(v)
					storeID, _, _ := strings.Cut(volid, ":")
					if storageOverride != "" {
						storeID = storageOverride
					}
					st := s.st.storage(storeID)
					if st == nil {
						return fmt.Errorf("storage '%s' does not exist", storeID)
					}
					name := s.freeDiskName(st, clone.node, newid)
					newVol := storeID + ":" + name
					st.addVolume(clone.node, &volume{volid: newVol, content: contentOf(kind), format: "raw", size: size, vmid: newid, ctime: s.clock.Now().Unix()})
					_, opts, _ := strings.Cut(v, ",")
					clone.conf[k] = newVol
					if opts != "" {
						clone.conf[k] += "," + opts
					}
				}
				for k, v := range clone.conf {
					if isIndexed(k, "net") && kind == "qemu" {
						model, rest, _ := strings.Cut(v, ",")
						m, _, _ := strings.Cut(model, "=")
						clone.conf[k] = m + "=" + s.st.macAddress()
						if rest != "" {
							clone.conf[k] += "," + rest
						}
					}
				}
				if kind == "qemu" {
					clone.conf["smbios1"] = "uuid=" + s.st.uuid()
					clone.conf["vmgenid"] = s.st.uuid()
				}
				return nil
			})
		s.st.task(t).onCancel = func() { src.lock = ""; delete(s.st.guests, newid) }
		return t, nil
	}
}

// guestMigrate moves a guest to another node of the simulated cluster.
// force, migration_type and migration_network are root@pam's (qemu-server's
// migrate_vm), and a target storage map passes migrateStorageChecks.
func (s *Sim) guestMigrate(kind string) handler {
	return func(r *request) (any, error) {
		if kind == "qemu" {
			if err := r.rootOnly("force", "migration_type", "migration_network"); err != nil {
				return nil, err
			}
		}
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		target := r.str("target")
		nd := s.st.node(target)
		switch {
		case nd == nil:
			return nil, fail("no such cluster node '%s'", target)
		case target == g.node:
			return nil, fail("target is local node.")
		case !nd.online:
			return nil, fail("target node '%s' is not online", target)
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		if g.status == "running" {
			if kind == "qemu" && !r.flag("online") {
				return nil, fail("can't migrate running VM without --online")
			}
			if kind == "lxc" && !r.flag("restart") {
				return nil, fail("lxc live migration is currently not implemented - use 'restart' mode")
			}
		}
		if err := r.migrateStorageChecks(kind, g.vmid, r.str(map[string]string{"qemu": "targetstorage", "lxc": "target-storage"}[kind])); err != nil {
			return nil, err
		}
		g.lock = "migrate"
		typ := map[string]string{"qemu": "qmigrate", "lxc": "vzmigrate"}[kind]
		from := g.node
		t := r.startTask(from, typ, strconv.Itoa(g.vmid), durMigrate,
			[]string{fmt.Sprintf("starting migration of %s %d to node '%s' (%s)", label(kind), g.vmid, target, nd.ip)},
			func() error {
				g.lock = ""
				for k, v := range g.conf {
					if (isDiskKey(kind, k) && !isCDROM(v)) || isIndexed(k, "unused") {
						volid, _ := diskVolume(v)
						storeID, _, _ := strings.Cut(volid, ":")
						st := s.st.storage(storeID)
						if st == nil || st.shared {
							continue
						}
						if vol := s.findVolume(from, volid); vol != nil {
							st.removeVolume(from, volid)
							st.addVolume(target, vol)
						}
					}
				}
				g.node = target
				if g.status == "running" {
					g.startedAt = s.clock.Now()
				}
				return nil
			})
		s.st.task(t).onCancel = func() { g.lock = "" }
		return t, nil
	}
}

// guestTemplate converts a stopped guest to a template; QEMU does it in a
// task, LXC synchronously, as in PVE.
func (s *Sim) guestTemplate(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		if g.template() {
			return nil, fail("%s %d is already a template", label(kind), g.vmid)
		}
		if g.status == "running" {
			return nil, fail("you can't convert a running %s to a template", map[string]string{"qemu": "VM", "lxc": "CT"}[kind])
		}
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
		convert := func() error {
			for k, v := range g.conf {
				if isDiskKey(kind, k) && !isCDROM(v) {
					volid, _ := diskVolume(v)
					base := strings.Replace(volid, ":vm-", ":base-", 1)
					if vol := s.findVolume(g.node, volid); vol != nil {
						vol.volid = base
					}
					g.conf[k] = strings.Replace(v, volid, base, 1)
				}
			}
			g.conf["template"] = "1"
			return nil
		}
		if kind == "lxc" {
			return nil, convert()
		}
		return r.startTask(g.node, "qmtemplate", strconv.Itoa(g.vmid), durQuick, []string{"converting to template"}, convert), nil
	}
}

// createControl are the parameters of a create that are not options of
// the new guest: what create_vm extracts before checking the rest.
var createControl = map[string]map[string]bool{
	"qemu": privSet("node", "vmid", "archive", "bwlimit", "force", "pool", "start", "ha-managed", "storage", "unique",
		"live-restore", "import-working-storage"),
	"lxc": privSet("node", "vmid", "ignore-unpack-errors", "bwlimit", "start", "ha-managed", "unprivileged", "restore",
		"unique", "force", "password", "ssh-public-keys", "pool", "ostemplate", "storage"),
}

// createOptions are the options a create sets on the new guest.
func (r *request) createOptions(kind string) map[string]string {
	conf := map[string]string{}
	for k := range r.args {
		if !createControl[kind][k] {
			conf[k] = r.args.Get(k)
		}
	}
	return conf
}

// qemuCreateChecks are the checks of qemu-server's create_vm before it
// locks the new configuration: the pool exists; Datastore.AllocateSpace on
// the storage parameter; Sys.Console for ha-managed; VM.PowerMgmt for
// start; VM.Allocate on /vms/<vmid> or on the pool, or, to restore over an
// existing VM, VM.Backup on it (else a bare "Permission check failed");
// no disk beside an archive, and access to the archive; then the
// options (qemuCreatePerms).
func (r *request) qemuCreateChecks(vmid int, existing *guest) error {
	pool, storage, archive := r.str("pool"), r.str("storage"), r.str("archive")
	if pool != "" {
		if err := r.checkPoolExist(pool); err != nil {
			return err
		}
	}
	if storage != "" {
		if err := r.check("/storage/"+storage, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if r.flag("ha-managed") {
		if err := r.check("/", "Sys.Console"); err != nil {
			return err
		}
	}
	vmPath := fmt.Sprintf("/vms/%d", vmid)
	if r.flag("start") {
		if err := r.check(vmPath, "VM.PowerMgmt"); err != nil {
			return err
		}
	}
	switch {
	case r.can(vmPath, "VM.Allocate"):
	case pool != "" && r.can("/pool/"+pool, "VM.Allocate"):
	case archive != "" && r.flag("force") && existing != nil && existing.kind == "qemu" && existing.node == r.str("node") && r.can(vmPath, "VM.Backup"):
		// restoring over an existing VM the caller may back up
	default:
		return permError("")
	}
	opts := r.createOptions("qemu")
	if archive != "" {
		for _, k := range sortedKeys(opts) {
			if isQemuDrive(k) {
				return paramError(map[string]string{k: "option conflicts with option 'archive'"})
			}
		}
		if err := r.checkVolumeAccess(vmid, archive, "backup"); err != nil {
			return err
		}
	}
	if len(opts) > 0 {
		return r.qemuCreatePerms(vmid, pool, opts, storage)
	}
	return nil
}

// lxcCreateChecks are the checks of pve-container's create_vm: Sys.Modify
// on / for a privileged container; Sys.Console for ha-managed; the VM ID
// is free unless an existing container is force-restored (then it must be
// stopped and unprotected); the pool exists; VM.Allocate on /vms/<vmid> or
// on the pool, or VM.Backup on the container a restore overwrites (and
// Sys.Modify to make it privileged); the options
// (check_ct_modify_config_perm); access to the template or archive; and
// Datastore.AllocateSpace on every storage a mount point is allocated on
// (the storage parameter, local by default, when no rootfs is given).
func (r *request) lxcCreateChecks(vmid int, existing *guest) error {
	restore := r.flag("restore")
	unprivileged := r.flag("unprivileged")
	if !restore {
		if !r.has("unprivileged") {
			unprivileged = true
		}
		if !unprivileged {
			if err := r.check("/", "Sys.Modify"); err != nil {
				return err
			}
		}
	}
	if r.flag("ha-managed") {
		if err := r.check("/", "Sys.Console"); err != nil {
			return err
		}
	}
	sameExists := existing != nil && existing.kind == "lxc" && existing.node == r.str("node")
	if !(sameExists && restore && r.flag("force")) {
		if existing != nil {
			return fail("%s %d already exists on node '%s'", label(existing.kind), vmid, existing.node)
		}
	} else {
		if existing.status == "running" {
			return fail("can't overwrite running container")
		}
		if existing.conf["protection"] == "1" {
			return fail("unable to restore CT %d - protection mode enabled", vmid)
		}
	}
	pool := r.str("pool")
	if pool != "" {
		if err := r.checkPoolExist(pool); err != nil {
			return err
		}
	}
	vmPath := fmt.Sprintf("/vms/%d", vmid)
	switch {
	case r.can(vmPath, "VM.Allocate"):
	case pool != "" && r.can("/pool/"+pool, "VM.Allocate"):
	case restore && r.flag("force") && sameExists && r.can(vmPath, "VM.Backup"):
		if existing.conf["unprivileged"] == "1" && r.has("unprivileged") && !unprivileged {
			if err := r.check("/", "Sys.Modify"); err != nil {
				return err
			}
		}
	default:
		return permError("")
	}
	opts := r.createOptions("lxc")
	if err := r.lxcModifyConfigPerm(vmid, pool, nil, opts, nil, unprivileged); err != nil {
		return err
	}
	want := "vztmpl"
	if restore {
		want = "backup"
	}
	if err := r.checkVolumeAccess(vmid, r.str("ostemplate"), want); err != nil {
		return err
	}
	storage := r.str("storage")
	if storage == "" {
		storage = "local"
	}
	checkStorage := func(sid string) error {
		st := r.sim.st.storage(sid)
		if st == nil {
			return fail("storage '%s' does not exist", sid)
		}
		if !st.hasContent("rootdir") {
			return paramError(map[string]string{"storage": fmt.Sprintf("storage '%s' does not support container directories", sid)})
		}
		return r.check("/storage/"+sid, "Datastore.AllocateSpace")
	}
	hasRootfs := false
	for _, k := range sortedKeys(opts) {
		if k != "rootfs" && !isIndexed(k, "mp") {
			continue
		}
		hasRootfs = hasRootfs || k == "rootfs"
		v := opts[k]
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			v = storage + ":" + v
		}
		volid, typ := lxcMountPoint(v)
		if typ != "volume" {
			if !r.who.isRoot() {
				return fail("Only root can pass arbitrary filesystem paths.")
			}
			continue
		}
		sid, _, _ := parseVolumeID(volid)
		if err := checkStorage(sid); err != nil {
			return err
		}
	}
	if !hasRootfs {
		return checkStorage(storage)
	}
	return nil
}

// guestCreate creates a guest (or restores one from a backup archive),
// after the checks PVE makes in code (qemuCreateChecks, lxcCreateChecks).
func (s *Sim) guestCreate(kind string) handler {
	return func(r *request) (any, error) {
		vmid := r.vmid()
		nodeName := r.str("node")
		archive := r.str("archive")
		if kind == "lxc" && r.flag("restore") {
			archive = r.str("ostemplate")
		}
		existing := s.st.guests[vmid]
		checks := r.qemuCreateChecks
		if kind == "lxc" {
			checks = r.lxcCreateChecks
		}
		if err := checks(vmid, existing); err != nil {
			return nil, err
		}
		if existing != nil {
			if archive == "" || !r.flag("force") {
				return nil, fail("unable to create %s %d - %s %d already exists on node '%s'", label(kind), vmid, label(kind), vmid, existing.node)
			}
			if existing.status == "running" {
				return nil, fail("unable to restore %s %d - %s is running", label(kind), vmid, label(kind))
			}
			if existing.conf["protection"] == "1" {
				return nil, fail("unable to restore %s %d - protection mode enabled", label(kind), vmid)
			}
		}
		conf := map[string]string{}
		var restoreFrom *volume
		if archive != "" {
			restoreFrom = s.findVolume(nodeName, archive)
			if restoreFrom == nil || restoreFrom.content != "backup" {
				return nil, fail("unable to restore %s %d - archive '%s' does not exist", label(kind), vmid, archive)
			}
		}
		if kind == "lxc" && archive == "" {
			tmpl := r.str("ostemplate")
			if s.findVolume(nodeName, tmpl) == nil {
				return nil, fail("volume '%s' does not exist", tmpl)
			}
		}
		for k, v := range r.createOptions(kind) {
			conf[k] = v
		}
		if kind == "lxc" && !r.flag("restore") && (!r.has("unprivileged") || r.flag("unprivileged")) {
			conf["unprivileged"] = "1"
		}
		if kind == "qemu" {
			conf = resolveCDROMAlias(conf)
		}
		g := &guest{vmid: vmid, kind: kind, node: nodeName, conf: conf, status: "stopped", lock: "create", pool: r.str("pool")}
		if err := s.checkConfigValues(g, conf); err != nil {
			return nil, err
		}
		previous := s.st.guests[vmid]
		s.st.guests[vmid] = g
		prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[kind]
		typ := prefix + "create"
		if restoreFrom != nil {
			typ = prefix + "restore"
		}
		start := r.flag("start")
		storageOverride := r.str("storage")
		t := r.startTask(nodeName, typ, strconv.Itoa(vmid), durCreate, []string{fmt.Sprintf("%s %s %d", strings.TrimPrefix(typ, prefix), label(kind), vmid)},
			func() error {
				if restoreFrom != nil {
					if err := r.restoreChecks(kind, restoreFrom.guestConf, g.conf, previous); err != nil {
						// Nothing was restored: the old guest, if any, stays.
						if previous != nil {
							s.st.guests[vmid] = previous
						} else {
							delete(s.st.guests, vmid)
						}
						return taskError(err)
					}
				}
				if previous != nil {
					for k, v := range previous.conf {
						if (isDiskKey(kind, k) && !isCDROM(v)) || isIndexed(k, "unused") {
							s.destroyVolume(previous.node, v)
						}
					}
				}
				if restoreFrom != nil {
					for k, v := range restoreFrom.guestConf {
						if _, set := g.conf[k]; !set {
							g.conf[k] = v
						}
					}
					for k, v := range g.conf {
						if isDiskKey(kind, k) && !isCDROM(v) {
							_, size := diskVolume(v)
							storeID := storageOverride
							if storeID == "" {
								storeID = "local-lvm"
							}
							g.conf[k] = s.allocateIfNew(g, k, fmt.Sprintf("%s:%g", storeID, float64(size)/(1<<30)))
						}
					}
				} else {
					for k, v := range g.conf {
						if isDiskKey(kind, k) && !isCDROM(v) {
							g.conf[k] = s.allocateIfNew(g, k, v)
						}
						if isIndexed(k, "net") && kind == "qemu" {
							g.conf[k] = s.withMAC(v)
						}
					}
					if kind == "qemu" {
						g.conf["smbios1"] = "uuid=" + s.st.uuid()
						g.conf["vmgenid"] = s.st.uuid()
						g.conf["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", s.clock.Now().Unix())
					}
				}
				g.lock = ""
				if start {
					g.status, g.startedAt = "running", s.clock.Now()
				}
				return nil
			})
		s.st.task(t).onCancel = func() {
			if previous != nil {
				s.st.guests[vmid] = previous
			} else {
				delete(s.st.guests, vmid)
			}
		}
		return t, nil
	}
}
