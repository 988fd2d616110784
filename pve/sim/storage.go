package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Sim) storageRoutes(add func(string, handler)) {
	add("GET /storage", s.storageConfigList)
	add("GET /storage/{storage}", s.storageConfig)
	add("GET /nodes/{node}/storage", s.nodeStorageList)
	add("GET /nodes/{node}/storage/{storage}/status", s.storageStatus)
	add("GET /nodes/{node}/storage/{storage}/content", s.storageContent)
	add("GET /nodes/{node}/storage/{storage}/content/{volume}", s.volumeInfo)
	add("DELETE /nodes/{node}/storage/{storage}/content/{volume}", s.volumeDelete)
}

func (st *storage) config() map[string]any {
	e := map[string]any{"storage": st.id, "type": st.typ, "content": strings.Join(st.content, ","), "digest": "0000000000000000000000000000000000000000"}
	if st.path != "" {
		e["path"] = st.path
	}
	if st.shared {
		e["shared"] = 1
	}
	for k, v := range st.options {
		e[k] = v
	}
	switch st.typ {
	case "lvmthin":
		e["vgname"], e["thinpool"] = storageVG(st)
	case "nfs":
		e["server"], e["export"], e["options"] = "10.10.0.5", "/export/pve-backup", "vers=4.2"
		e["prune-backups"] = "keep-daily=7,keep-weekly=4"
	}
	return e
}

func (s *Sim) storageConfigList(r *request) (any, error) {
	list := []map[string]any{}
	for _, st := range s.st.storages {
		if t := r.str("type"); t != "" && t != st.typ {
			continue
		}
		if r.canAny("/storage/"+st.id, "Datastore.Audit", "Datastore.AllocateSpace") {
			list = append(list, st.config())
		}
	}
	return list, nil
}

func (s *Sim) storageConfig(r *request) (any, error) {
	st := s.st.storage(r.str("storage"))
	if st == nil {
		return nil, fail("storage '%s' does not exist", r.str("storage"))
	}
	return st.config(), nil
}

func (r *request) storage() (*storage, error) {
	st := r.sim.st.storage(r.str("storage"))
	if st == nil {
		return nil, fail("storage '%s' does not exist", r.str("storage"))
	}
	return st, nil
}

func (s *Sim) storageStatusEntry(st *storage, nodeName string) map[string]any {
	used := st.used(nodeName)
	return map[string]any{
		"storage": st.id, "type": st.typ, "content": strings.Join(st.content, ","), "shared": boolInt(st.shared),
		"active": 1, "enabled": 1, "total": st.total, "used": used, "avail": st.total - used,
	}
}

// nodeStorageList is GET /nodes/{node}/storage with its filters.
func (s *Sim) nodeStorageList(r *request) (any, error) {
	list := []map[string]any{}
	for _, st := range s.st.storages {
		if !r.canAny("/storage/"+st.id, "Datastore.Audit", "Datastore.AllocateSpace") {
			continue
		}
		if id := r.str("storage"); id != "" && id != st.id {
			continue
		}
		if c := r.str("content"); c != "" {
			ok := false
			for _, want := range splitList(c) {
				ok = ok || st.hasContent(want)
			}
			if !ok {
				continue
			}
		}
		e := s.storageStatusEntry(st, r.str("node"))
		used := e["used"].(int64)
		e["used_fraction"] = float64(used) / float64(st.total)
		list = append(list, e)
	}
	return list, nil
}

func (s *Sim) storageStatus(r *request) (any, error) {
	st, err := r.storage()
	if err != nil {
		return nil, err
	}
	return s.storageStatusEntry(st, r.str("node")), nil
}

func volumeEntry(v *volume) map[string]any {
	e := map[string]any{"volid": v.volid, "content": v.content, "format": v.format, "size": v.size, "ctime": v.ctime}
	if v.vmid != 0 {
		e["vmid"] = v.vmid
	}
	if v.content == "images" || v.content == "rootdir" {
		e["used"] = v.size
	}
	if v.content == "backup" {
		e["subtype"] = v.subtype
		if v.notes != "" {
			e["notes"] = v.notes
		}
		if v.protected {
			e["protected"] = 1
		}
	}
	return e
}

// storageContent lists a storage's volumes, filtered by content and VM ID;
// only volumes the caller may access (pve-storage's Content.pm index runs
// check_volume_access on each and skips those that fail: without
// Datastore.Allocate, a disk image needs Datastore.Audit and
// VM.Config.Disk on its guest, a backup Datastore.AllocateSpace and
// VM.Backup).
func (s *Sim) storageContent(r *request) (any, error) {
	st, err := r.storage()
	if err != nil {
		return nil, err
	}
	list := []map[string]any{}
	for _, v := range st.volumesOn(r.str("node")) {
		if c := r.str("content"); c != "" && c != v.content {
			continue
		}
		if id := r.num("vmid", 0); id != 0 && v.vmid != id {
			continue
		}
		if r.checkVolumeAccess(0, v.volid, "") != nil {
			continue
		}
		list = append(list, volumeEntry(v))
	}
	return list, nil
}

// volume resolves the {volume} of a content path as Content.pm's
// real_volume_id does: a full volume ID of the path's storage, or a name
// on it; a volume ID of another storage is refused.
func (r *request) volume(st *storage) (*volume, string, error) {
	volid := r.str("volume")
	if strings.Contains(volid, ":") {
		sid, _, ok := parseVolumeID(volid)
		if !ok {
			return nil, "", paramError(map[string]string{"volume": fmt.Sprintf("unable to parse volume ID '%s'", volid)})
		}
		if sid != st.id {
			return nil, "", paramError(map[string]string{"volume": fmt.Sprintf("storage ID mismatch (%s != %s)", sid, st.id)})
		}
	} else {
		volid = st.id + ":" + volid
	}
	return r.sim.findVolume(r.str("node"), volid), volid, nil
}

// volumeInfo is GET …/content/{volume}, for a caller that may access the
// volume (check_volume_access, Content.pm's info).
func (s *Sim) volumeInfo(r *request) (any, error) {
	st, err := r.storage()
	if err != nil {
		return nil, err
	}
	v, volid, err := r.volume(st)
	if err != nil {
		return nil, err
	}
	if err := r.checkVolumeAccess(0, volid, ""); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fail("volume '%s' does not exist", volid)
	}
	_, name, _ := strings.Cut(v.volid, ":")
	e := map[string]any{"format": v.format, "size": v.size, "used": v.size, "path": st.path + "/" + name}
	if st.typ == "lvmthin" {
		e["path"] = "/dev/pve/" + name
	}
	if v.notes != "" {
		e["notes"] = v.notes
	}
	if v.protected {
		e["protected"] = 1
	}
	return e, nil
}

// volumeDelete removes a volume; a disk in use by a guest is refused, as
// PVE refuses it, and so is a protected backup. A guest's backup needs
// Datastore.AllocateSpace on the storage and VM.Backup on the guest, any
// other volume Datastore.Allocate (pve-storage's Content.pm delete).
func (s *Sim) volumeDelete(r *request) (any, error) {
	st, err := r.storage()
	if err != nil {
		return nil, err
	}
	v, volid, err := r.volume(st)
	if err != nil {
		return nil, err
	}
	vtype, owner, err := s.st.parseVolname(volid)
	if err != nil {
		return nil, err
	}
	if vtype == "backup" && owner != 0 {
		if err := r.check("/storage/"+st.id, "Datastore.AllocateSpace"); err != nil {
			return nil, err
		}
		if err := r.check(fmt.Sprintf("/vms/%d", owner), "VM.Backup"); err != nil {
			return nil, err
		}
	} else if err := r.check("/storage/"+st.id, "Datastore.Allocate"); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fail("volume '%s' does not exist", volid)
	}
	if v.protected {
		return nil, fail("volume '%s' is protected", volid)
	}
	for _, g := range s.st.guests {
		for k, val := range g.conf {
			if isDiskKey(g.kind, k) && strings.HasPrefix(val, volid) {
				return nil, fail("unable to delete volume '%s' - volume is still in use by %s %d", volid, label(g.kind), g.vmid)
			}
		}
	}
	nodeName := r.str("node")
	return r.startTask(nodeName, "imgdel", volid, durQuick, []string{"removing volume " + volid}, func() error {
		if !st.removeVolume(nodeName, volid) {
			return fmt.Errorf("volume '%s' does not exist", volid)
		}
		return nil
	}), nil
}

// vzdumpChecks are the checks of pve-manager's vzdump API before its
// worker starts: tmpdir, dumpdir, script and job-id are root@pam's;
// bwlimit, ionice and performance need Sys.Modify on /; a fleecing storage
// Datastore.AllocateSpace; prune-backups Datastore.Allocate on the backup
// storage (assert_param_permission_vzdump and API2/Backup.pm's
// assert_param_permission_common); stop Sys.Modify on the node; and the
// backup storage (local unless given) Datastore.AllocateSpace.
func (r *request) vzdumpChecks(storeID string) error {
	if !r.who.isRoot() {
		for _, k := range []string{"tmpdir", "dumpdir", "script", "job-id"} {
			if r.has(k) {
				return paramError(map[string]string{k: "Only root may set this option."})
			}
		}
		if r.has("bwlimit") || r.has("ionice") || r.has("performance") {
			if err := r.check("/", "Sys.Modify"); err != nil {
				return err
			}
		}
		if f := r.str("fleecing"); f != "" {
			if sid := propertyString(f, "enabled", nil)["storage"]; sid != "" {
				if err := r.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
					return err
				}
			}
		}
		if r.has("prune-backups") && storeID != "" {
			if err := r.check("/storage/"+storeID, "Datastore.Allocate"); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"all", "exclude", "pool"} {
		if r.has(k) && r.str(k) != "0" && r.str("vmid") != "" {
			return paramError(map[string]string{k: "option conflicts with option 'vmid'"})
		}
	}
	if r.flag("stop") {
		if err := r.check("/nodes/"+r.str("node"), "Sys.Modify"); err != nil {
			return err
		}
	}
	if storeID != "" {
		return r.check("/storage/"+storeID, "Datastore.AllocateSpace")
	}
	return nil
}

// taskError is an error as a task's exit status shows it: the message,
// without the HTTP status a synchronous answer would carry.
func taskError(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return errors.New(ae.msg)
	}
	return err
}

// vzdump backs up guests of the node to a backup storage; each archive
// appears as storage content when the task ends. VM.Backup on each guest
// is checked in the task, as PVE's exec_backup does: with all (or
// exclude) a guest without it is skipped, otherwise the job fails.
func (s *Sim) vzdump(r *request) (any, error) {
	nodeName := r.str("node")
	storeID := r.str("storage")
	if storeID == "" && !r.has("dumpdir") {
		storeID = "local"
	}
	if err := r.vzdumpChecks(storeID); err != nil {
		return nil, err
	}
	st := s.st.storage(storeID)
	if st == nil {
		return nil, fail("storage '%s' does not exist", storeID)
	}
	if !st.hasContent("backup") {
		return nil, fail("cannot use storage '%s': storage does not support backup content", storeID)
	}
	all := r.flag("all") || r.has("exclude")
	var targets []*guest
	if all {
		for _, g := range s.st.sortedGuests() {
			if g.node == nodeName && !strings.Contains(","+r.str("exclude")+",", ","+strconv.Itoa(g.vmid)+",") {
				targets = append(targets, g)
			}
		}
	} else {
		for _, id := range splitList(r.str("vmid")) {
			g := s.st.guestByID(id)
			if g == nil {
				return nil, fail("unable to find VM '%s'", id)
			}
			if g.node != nodeName {
				return nil, fail("%s %d is not on node '%s'", label(g.kind), g.vmid, nodeName)
			}
			targets = append(targets, g)
		}
	}
	if len(targets) == 0 {
		return nil, paramError(map[string]string{"vmid": "property is missing and it is not optional"})
	}
	slices.SortFunc(targets, func(a, b *guest) int { return a.vmid - b.vmid })
	var allowed []*guest
	var denied error
	for _, g := range targets {
		err := r.check(fmt.Sprintf("/vms/%d", g.vmid), "VM.Backup")
		switch {
		case err == nil:
			allowed = append(allowed, g)
		case !all && denied == nil:
			denied = taskError(err)
		}
	}
	id := ""
	if len(targets) == 1 {
		id = strconv.Itoa(targets[0].vmid)
	}
	if denied != nil {
		return r.startTask(nodeName, "vzdump", id, durQuick, []string{"INFO: starting new backup job"}, func() error { return denied }), nil
	}
	targets = allowed
	for _, g := range targets {
		if err := r.checkLock(g); err != nil {
			return nil, err
		}
	}
	mode := r.str("mode")
	if mode == "" {
		mode = "snapshot"
	}
	compress := r.str("compress")
	notesTmpl := r.str("notes-template")
	protected := r.flag("protected")
	var log []string
	for _, g := range targets {
		g.lock = "backup"
		log = append(log, fmt.Sprintf("INFO: Starting Backup of VM %d (%s)", g.vmid, g.kind), fmt.Sprintf("INFO: Backup mode: %s", mode))
	}
	started := r.now
	return r.startTask(nodeName, "vzdump", id, durBackup*time.Duration(max(1, len(targets))), log, func() error {
		for _, g := range targets {
			g.lock = ""
			ext := map[string]string{"qemu": "vma", "lxc": "tar"}[g.kind]
			switch compress {
			case "", "0":
			case "1", "lzo":
				ext += ".lzo"
			case "gzip":
				ext += ".gz"
			default:
				ext += ".zst"
			}
			name := fmt.Sprintf("vzdump-%s-%d-%s.%s", g.kind, g.vmid, started.UTC().Format("2006_01_02-15_04_05"), ext)
			notes := strings.ReplaceAll(strings.ReplaceAll(notesTmpl, "{{guestname}}", g.name()), "{{vmid}}", strconv.Itoa(g.vmid))
			st.addVolume(nodeName, &volume{
				volid: storeID + ":backup/" + name, content: "backup", format: ext, size: g.diskBytes() * 3 / 10,
				vmid: g.vmid, ctime: started.Unix(), notes: notes, protected: protected, subtype: g.kind, guestConf: cloneConf(g.conf),
			})
		}
		return nil
	}), nil
}
