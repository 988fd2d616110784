package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// ReachKind is one way a call lets a guest reach the host (or takes away
// a safeguard PVE keeps around a guest).
type ReachKind string

// The ways a call reaches the host. Each is what PVE itself reserves to
// root@pam (qemu-server's API2/Qemu.pm and pve-container's LXC.pm refuse
// them to every other user and to every API token), or what takes PVE's
// own protection away.
const (
	// ReachHookscript: a guest's hookscript, a script the host runs as
	// root at each step of the guest's life.
	ReachHookscript ReachKind = "hookscript"
	// ReachQemuArgs: args, raw arguments to the host's QEMU process
	// (-chardev, -device, -fsdev reach any host file or device).
	ReachQemuArgs ReachKind = "qemu_args"
	// ReachPCI: hostpciN naming a host PCI device (host=), or a ROM file
	// read from the host (romfile=). A cluster mapping (mapping=) alone is
	// not: PVE checks Mapping.Use on it, and defining one is ReachMapping.
	ReachPCI ReachKind = "pci_passthrough"
	// ReachUSB: usbN naming a host USB device or port (host=). SPICE
	// redirection (host=spice) and a cluster mapping (mapping=) are not.
	ReachUSB ReachKind = "usb_host"
	// ReachSerial: serialN naming a host device (/dev/...); socket is not.
	ReachSerial ReachKind = "serial_host"
	// ReachParallel: parallelN, always a host device.
	ReachParallel ReachKind = "parallel_host"
	// ReachSharedMemory: ivshmem, a shared memory file on the host
	// (/dev/shm/pve-shm-NAME) that the host and any VM given the same name
	// can read and write.
	ReachSharedMemory ReachKind = "host_shared_memory"
	// ReachHostDisk: a QEMU disk (or cdrom) that is a host path, or
	// imports one (import-from=/...): the guest gets a host block device
	// or file, or a copy of it.
	ReachHostDisk ReachKind = "host_disk"
	// ReachBindMount: an LXC mount point (mpN, rootfs) whose volume is a
	// host path: a bind mount of a host directory, or a host device.
	ReachBindMount ReachKind = "bind_mount"
	// ReachDevice: an LXC devN, a host device node passed into the
	// container.
	ReachDevice ReachKind = "device_passthrough"
	// ReachRawLXC: a raw lxc.* key. PVE's API accepts none (its schema
	// has no such property and refuses unknown ones; a restore copies them
	// from the backup for root@pam only); a call that carries one anyway
	// is this item.
	ReachRawLXC ReachKind = "raw_lxc"
	// ReachPrivileged: a container whose root is the host's root:
	// unprivileged=0, deleting unprivileged, or a restore that does not
	// say unprivileged=1 (it keeps the backup's setting).
	ReachPrivileged ReachKind = "privileged"
	// ReachFeatures: an LXC feature that widens the container's reach
	// into the host's kernel: nesting, keyctl, fuse, mknod, force_rw_sys
	// turned on, mount= with any file system type.
	ReachFeatures ReachKind = "container_features"
	// ReachMapping: a cluster-wide mapping of host devices or directories
	// (/cluster/mapping/{pci,usb,dir}), which guests then use by name.
	ReachMapping ReachKind = "host_mapping"
	// ReachOverwrite: a create or restore with force=1, which replaces an
	// existing guest of that VMID.
	ReachOverwrite ReachKind = "overwrite_vmid"
	// ReachProtectionOff: turning PVE's protection flag off (protection=0
	// on a config edit or restore, or delete=protection).
	ReachProtectionOff ReachKind = "protection_off"
)

// HostReach is one way a call reaches the host from a guest.
type HostReach struct {
	// Param is the argument, by its wire name: usb0, mp0, delete.
	Param string    `json:"param"`
	Kind  ReachKind `json:"kind"`
	// Value is what the call sets: the argument's value, or the part of
	// it that reaches the host (nesting=1 of features, protection of
	// delete).
	Value string `json:"value"`
	// Detail says in words what it does on the host.
	Detail string `json:"detail"`
}

// String is the item as reasons name it: "PARAM DETAIL (KIND)". The
// library's lib.reaches_host_items writes the same text.
func (r HostReach) String() string { return r.Param + " " + r.Detail + " (" + string(r.Kind) + ")" }

// reachText is the items as reasons name them, joined by "; ".
func reachText(items []HostReach) string {
	parts := make([]string, len(items))
	for i, r := range items {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}

// guestEndpoint is what ReachesHost knows of an endpoint that writes a
// guest's configuration or a host mapping.
type guestEndpoint int

const (
	notGuest guestEndpoint = iota
	qemuCreate
	qemuConfig
	lxcCreate
	lxcConfig
	hostMapping
)

func classify(ep *schema.Endpoint) guestEndpoint {
	// Method and path apart: ep.Key() would build a string on every call.
	switch ep.Method {
	case "POST":
		switch ep.Path {
		case "/nodes/{node}/qemu":
			return qemuCreate
		case "/nodes/{node}/qemu/{vmid}/config":
			return qemuConfig
		case "/nodes/{node}/lxc":
			return lxcCreate
		case "/cluster/mapping/pci", "/cluster/mapping/usb", "/cluster/mapping/dir":
			return hostMapping
		}
	case "PUT":
		switch ep.Path {
		case "/nodes/{node}/qemu/{vmid}/config":
			return qemuConfig
		case "/nodes/{node}/lxc/{vmid}/config":
			return lxcConfig
		case "/cluster/mapping/pci/{id}", "/cluster/mapping/usb/{id}", "/cluster/mapping/dir/{id}":
			return hostMapping
		}
	}
	return notGuest
}

// ReachesHost lists each way a call of ep with values (the arguments as
// validated: schema.Validated.Values, typed by the schema, numbered keys
// by wire name; vars are the path variables, for values that omit them)
// reaches the host from a guest: the settings PVE keeps to
// root@pam (hook scripts, QEMU args, host PCI, USB, serial and parallel
// devices, shared memory with the host, host disks, bind mounts and devices of containers, raw lxc
// keys, privileged containers, container features), cluster mappings of
// host devices, a create or restore that overwrites an existing guest,
// and turning PVE's protection off. It reads guest creates and restores
// (POST /nodes/{node}/qemu and /lxc), config edits (PUT and POST …/config)
// and mapping definitions; other endpoints (clones among them: their
// arguments set none of these) have none. Where a value cannot be read
// the way PVE reads it, it counts: an item is left out only when the value
// certainly does not reach the host. The items are sorted by parameter,
// kind and value.
func ReachesHost(ep *schema.Endpoint, vars map[string]string, values map[string]any) []HostReach {
	class := classify(ep)
	if class == notGuest || len(values) == 0 {
		return nil
	}
	var out []HostReach
	add := func(param string, kind ReachKind, value, detail string) {
		out = append(out, HostReach{Param: param, Kind: kind, Value: value, Detail: detail})
	}
	guest := "the guest"
	if id := cmp.Or(firstStr(values["vmid"]), vars["vmid"]); id != "" {
		guest = "guest " + id
	}
	if class == hostMapping {
		what := map[string]string{"pci": "PCI device", "usb": "USB device", "dir": "directory"}[strings.Split(ep.Path, "/")[3]]
		for _, entry := range strs(values["map"]) {
			add("map", ReachMapping, entry, fmt.Sprintf("maps the host %s %s for every guest given the mapping", what, entry))
		}
		return sortReach(out)
	}
	qemu := class == qemuCreate || class == qemuConfig
	create := class == qemuCreate || class == lxcCreate
	restore := false
	switch class {
	case qemuCreate:
		// PVE's $is_restore = !!$archive.
		if a, present := values["archive"]; present {
			s, isStr := a.(string)
			restore = !isStr || (s != "" && s != "0")
		}
	case lxcCreate:
		if v, present := values["restore"]; present {
			restore = !isFalse(v)
		}
	}
	for _, name := range sortedKeys(values) {
		v := values[name]
		if v == nil {
			continue
		}
		s := strings.Join(strs(v), ",")
		prefix := indexPrefix(name)
		switch {
		case name == "hookscript":
			add(name, ReachHookscript, s, "runs the host script "+s+" as root at each step of "+guest+"'s life")
		case name == "protection" && !create && !isTrue(v):
			add(name, ReachProtectionOff, s, "turns PVE's protection of "+guest+" off")
		case name == "protection" && restore && !isTrue(v):
			add(name, ReachProtectionOff, s, "restores "+guest+" without the protection its backup may have")
		case name == "delete":
			for _, key := range splitList(s) {
				switch {
				case key == "protection":
					add(name, ReachProtectionOff, key, "removes protection, which turns PVE's protection of "+guest+" off")
				case key == "unprivileged" && !qemu:
					add(name, ReachPrivileged, key, "removes unprivileged, which makes "+guest+" a privileged container (its root is the host's root)")
				}
			}
		case name == "force" && create && !isFalse(v):
			add(name, ReachOverwrite, s, "lets the call overwrite the existing "+guest)
		case qemu && name == "args":
			add(name, ReachQemuArgs, s, "passes raw arguments to the host's QEMU process: "+s)
		case qemu && prefix == "hostpci":
			pciReach(name, s, add)
		case qemu && prefix == "usb":
			usbReach(name, s, add)
		case qemu && prefix == "serial" && s != "socket":
			add(name, ReachSerial, s, "passes the host's serial device "+s+" to the guest")
		case qemu && prefix == "parallel":
			add(name, ReachParallel, s, "passes the host's parallel device "+s+" to the guest")
		case qemu && name == "ivshmem":
			add(name, ReachSharedMemory, s, "shares memory with the host and with every VM given the same name: "+s)
		case qemu && isQemuDrive(name, prefix):
			for _, vol := range driveVolumes(s) {
				switch {
				case !isHostPath(vol.path):
				case vol.imported:
					add(name, ReachHostDisk, s, "copies the host file "+strings.TrimSpace(vol.path)+" into a disk of the guest")
				default:
					add(name, ReachHostDisk, s, "gives the guest the host's device or file "+strings.TrimSpace(vol.path)+" as a disk")
				}
			}
		case !qemu && (name == "rootfs" || prefix == "mp"):
			for _, vol := range driveVolumes(s) {
				if !isHostPath(vol.path) {
					continue
				}
				path := strings.TrimSpace(vol.path)
				what := "bind-mounts the host directory "
				if strings.HasPrefix(path, "/dev/") {
					what = "mounts the host device "
				}
				add(name, ReachBindMount, s, what+path+" into the container")
			}
		case !qemu && prefix == "dev":
			path := s
			if def, kv, ok := propertyString(s); ok {
				path = cmp.Or(kv["path"], def)
			}
			add(name, ReachDevice, s, "passes the host device "+path+" into the container")
		case !qemu && (name == "lxc" || strings.HasPrefix(name, "lxc.")):
			add(name, ReachRawLXC, s, "sets a raw LXC key, which PVE does not check")
		case !qemu && name == "unprivileged" && !isTrue(v):
			add(name, ReachPrivileged, s, "makes "+guest+" a privileged container (its root is the host's root)")
		case !qemu && name == "features":
			// nesting alone in a new unprivileged container is PVE's own
			// default (the GUI sets it): the container's root is an
			// unprivileged user of the host, so nested namespaces stay
			// inside it. Anywhere else it counts.
			unprivCreate := class == lxcCreate && !restore && unprivilegedCreate(ep, values)
			featureReach(name, s, unprivCreate, add)
		}
	}
	if class == lxcCreate && values["unprivileged"] == nil {
		switch {
		case restore:
			add("unprivileged", ReachPrivileged, "", "is not given: the restore keeps the backup's setting, so "+guest+
				" is a privileged container (its root is the host's root) if its backup was; say unprivileged=1")
		case !ep.Facts.CreatesUnprivileged:
			add("unprivileged", ReachPrivileged, "", "is not given: this PVE's default for a new container is 0, so "+guest+
				" would be a privileged container (its root is the host's root); say unprivileged=1")
		}
	}
	return sortReach(out)
}

// pciReach: hostpciN reaches the host unless it names a mapping only
// (qemu-server's check_hostpci_perm: host= and romfile= are root@pam's).
func pciReach(name, s string, add func(string, ReachKind, string, string)) {
	def, kv, ok := propertyString(s)
	host := cmp.Or(kv["host"], def)
	switch {
	case !ok:
		add(name, ReachPCI, s, "is not a property string PVE reads as a mapping only, so it may name a host PCI device")
	case host != "":
		add(name, ReachPCI, s, "passes the host's PCI device "+host+" to the guest")
	case kv["mapping"] == "":
		add(name, ReachPCI, s, "names neither a host device nor a mapping")
	}
	if rom, has := kv["romfile"]; ok && has {
		add(name, ReachPCI, s, "loads the host file "+rom+" (under /usr/share/kvm) as the device's ROM")
	}
}

// usbReach: usbN reaches the host unless it is SPICE redirection or a
// mapping only (qemu-server's check_usb_perm).
func usbReach(name, s string, add func(string, ReachKind, string, string)) {
	def, kv, ok := propertyString(s)
	host := cmp.Or(kv["host"], def)
	_, hasMapping := kv["mapping"]
	switch {
	case !ok:
		add(name, ReachUSB, s, "is not a property string PVE reads as SPICE or a mapping, so it may name a host USB device")
	case host != "" && strings.EqualFold(host, "spice") && !hasMapping:
	case host == "" && hasMapping && kv["mapping"] != "":
	case host != "" && !strings.EqualFold(host, "spice"):
		what := "device"
		if !strings.Contains(host, ":") {
			what = "port"
		}
		add(name, ReachUSB, s, "passes the host's USB "+what+" "+host+" to the guest")
	default:
		add(name, ReachUSB, s, "is neither SPICE redirection nor a mapping alone")
	}
}

// unprivilegedCreate: a container create that makes an unprivileged
// container, by saying so or by this PVE's default.
func unprivilegedCreate(ep *schema.Endpoint, values map[string]any) bool {
	if v, ok := values["unprivileged"]; ok {
		return isTrue(v)
	}
	return ep.Facts.CreatesUnprivileged
}

// featureReach: each feature of an LXC features string that is turned on
// (nesting not, in a new unprivileged container: unprivCreate).
func featureReach(name, s string, unprivCreate bool, add func(string, ReachKind, string, string)) {
	def, kv, ok := propertyString(s)
	if !ok || def != "" {
		add(name, ReachFeatures, s, "is not a features string PVE would read, so it may widen the container's reach into the host")
		return
	}
	for _, k := range sortedKeys(kv) {
		v := kv[k]
		if k == "mount" {
			if strings.TrimSpace(v) != "" {
				add(name, ReachFeatures, k+"="+v, "lets the container mount file systems of type "+v+" (a loop device or NFS reaches the host)")
			}
			continue
		}
		b, known := parseBoolean(v)
		if known && (!b || (k == "nesting" && unprivCreate)) {
			continue
		}
		add(name, ReachFeatures, k+"="+v, "turns on "+k+", which widens the container's reach into the host's kernel")
	}
}

// driveVolume is a volume of a disk or mount point; imported: the source
// of an import-from.
type driveVolume struct {
	path     string
	imported bool
}

// driveVolumes returns the volumes of a disk or mount point, read the
// way PVE reads them: a part without '=' (the default key, file or volume),
// the values of file= and volume=, and the source of import-from=. Every
// part is read, even of a value PVE would refuse, so that nothing that
// names a host path is missed.
func driveVolumes(s string) []driveVolume {
	var out []driveVolume
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			out = append(out, driveVolume{path: part})
		case k == "file" || k == "volume":
			out = append(out, driveVolume{path: v})
		case k == "import-from":
			out = append(out, driveVolume{path: v, imported: true})
		}
	}
	return out
}

// isQemuDrive: a QEMU disk key (ide, sata, scsi, virtio, unused, efidisk,
// tpmstate) or cdrom.
func isQemuDrive(name, prefix string) bool {
	switch prefix {
	case "ide", "sata", "scsi", "virtio", "unused", "efidisk", "tpmstate":
		return true
	}
	return name == "cdrom"
}

// isHostPath: PVE reads a volume that starts with '/' as a host path.
func isHostPath(v string) bool { return strings.HasPrefix(strings.TrimSpace(v), "/") }

// indexPrefix is the prefix of a numbered key (usb of usb0), or "".
func indexPrefix(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 {
		return ""
	}
	return name[:i]
}

// propertyString reads a property string as PVE's parse_property_string
// does: comma-separated parts, empty ones skipped, "key=value" (the key
// up to the first '=', a non-empty value) or one part without '=' for the
// default key. A duplicate key, a second default part or a part with an
// empty value makes it unreadable (PVE refuses it): ok is false.
func propertyString(s string) (def string, kv map[string]string, ok bool) {
	kv = map[string]string{}
	hasDef := false
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, isKV := strings.Cut(part, "=")
		switch {
		case isKV && k != "" && v != "":
			if _, dup := kv[k]; dup {
				return "", nil, false
			}
			kv[k] = v
		case !isKV && !hasDef:
			def, hasDef = part, true
		default:
			return "", nil, false
		}
	}
	return def, kv, true
}

// parseBoolean is PVE's parse_boolean: 1, on, yes, true and 0, off, no,
// false, in any case.
func parseBoolean(s string) (value, known bool) {
	switch strings.ToLower(s) {
	case "1", "on", "yes", "true":
		return true, true
	case "0", "off", "no", "false":
		return false, true
	}
	return false, false
}

// isTrue: v is certainly true (a validated boolean, or its spellings).
func isTrue(v any) bool {
	b, known := boolOf(v)
	return known && b
}

// isFalse: v is certainly false.
func isFalse(v any) bool {
	b, known := boolOf(v)
	return known && !b
}

func boolOf(v any) (value, known bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		return parseBoolean(x)
	case int:
		return x != 0, true
	case int64:
		return x != 0, true
	case float64:
		return x != 0, true
	}
	return false, false
}

// splitList is PVE's split_list for a configid list: on NUL when there is
// one, else on commas, semicolons and white space.
func splitList(s string) []string {
	if strings.Contains(s, "\x00") {
		return strings.Split(s, "\x00")
	}
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
	})
}

func firstStr(v any) string {
	if s := strs(v); len(s) > 0 {
		return s[0]
	}
	return ""
}

func sortReach(items []HostReach) []HostReach {
	slices.SortStableFunc(items, func(a, b HostReach) int {
		return cmp.Or(strings.Compare(a.Param, b.Param), strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Value, b.Value))
	})
	return slices.Compact(items)
}

// reachValue is the items as the input's reaches_host.
func reachValue(items []HostReach, empty *ast.Term) *ast.Term {
	if len(items) == 0 {
		return empty
	}
	terms := make([]*ast.Term, len(items))
	for i, r := range items {
		terms[i] = ast.NewTerm(ast.NewObject(
			strItem("param", r.Param),
			strItem("kind", string(r.Kind)),
			strItem("value", r.Value),
			strItem("detail", r.Detail),
		))
	}
	return ast.NewTerm(ast.NewArray(terms...))
}
