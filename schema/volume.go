package schema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// VolumeID is a PVE volume id, storage:name, as pve-storage's
// parse_volume_id splits it, with what the name says about its owner.
type VolumeID struct {
	// Storage is the storage id before the first colon.
	Storage string
	// Name is everything after it (the plugin's volname).
	Name string
	// Content is the content type the name's shape implies (images, iso,
	// vztmpl, backup, snippets, import), or "" when no plugin's
	// parse_volname gives one (an allocation such as local-lvm:32, an
	// iSCSI LUN, a name no plugin accepts).
	Content string
	// OwnerVMID is the guest the volume belongs to (vm-100-disk-0,
	// 100/vm-100-disk-0.qcow2, vzdump-qemu-100-…, the clone of a linked
	// clone), 0 when the name names none.
	OwnerVMID int
	// BaseVMID is the owner of the base image of a linked clone
	// (base-100-disk-0/vm-101-disk-0, 100/base-100-disk-0.qcow2/101/…),
	// 0 otherwise.
	BaseVMID int
}

// String is the volume id as written.
func (v VolumeID) String() string { return v.Storage + ":" + v.Name }

// VMIDs lists the guests the volume id names: its owner and the owner of
// its base image, each once.
func (v VolumeID) VMIDs() []int {
	var out []int
	if v.OwnerVMID != 0 {
		out = append(out, v.OwnerVMID)
	}
	if v.BaseVMID != 0 && v.BaseVMID != v.OwnerVMID {
		out = append(out, v.BaseVMID)
	}
	return out
}

// The shapes of volnames, after pve-storage's parse_volname of each
// plugin (Plugin.pm for directory-like storages, LVMPlugin, LvmThinPlugin,
// ZFSPoolPlugin, RBDPlugin, PBSPlugin). The owner is captured as written
// and checked by vmidOf.
var (
	// Directory storages: vmid/name and the linked clone
	// basevmid/basename/vmid/name.
	reDirClone = regexp.MustCompile(`^(\d+)/(\S+)/(\d+)/(\S+)$`)
	reDirImage = regexp.MustCompile(`^(\d+)/(\S+)$`)
	// A file name in an images directory (parse_name_dir).
	reDirName = regexp.MustCompile(`^(?:vm-|base-|subvol-)?[^/\s]+\.(?:raw|qcow2|vmdk|subvol)$`)
	// vzdump archives name their guest; so do PBS snapshots of vm/ct.
	reVzdump    = regexp.MustCompile(`^vzdump-(?:openvz|lxc|qemu)-(\d+)-`)
	rePBSBackup = regexp.MustCompile(`^backup/([^\s_/]+)/([^\s_/]+)/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`)
	// Block storages (LVM, LVM-thin, ZFS, RBD): vm-N-…, base-N-…,
	// subvol-N-…, basevol-N-…, and a linked clone base-N-…/vm-M-….
	reBlockImage = regexp.MustCompile(`^(?:((?:base|basevol)-(\d+)-\S+)/)?((?:base|basevol|vm|subvol)-(\d+)-\S+)$`)
)

// ParseVolumeID splits a volume id as PVE does (the storage id is a letter,
// then letters, digits, '-', '_' or '.', ending in a letter or digit) and
// reads the guests its name belongs to. It refuses what PVE would not
// parse, and, because callers decide on the owner, a name whose owner is
// not a plain VM ID (a leading zero, more than nine digits, 0): such a
// name would reach PVE's ACLs under another path than the guest's.
func ParseVolumeID(s string) (VolumeID, error) {
	storage, name, ok := strings.Cut(s, ":")
	if !ok {
		return VolumeID{}, fmt.Errorf("volume id %q: want storage:name", s)
	}
	if !reStorageID.MatchString(storage) {
		return VolumeID{}, fmt.Errorf("volume id %q: storage id %q must start with a letter, hold only letters, digits, '-', '_' and '.', and end in a letter or digit", s, storage)
	}
	if name == "" {
		return VolumeID{}, fmt.Errorf("volume id %q: the volume name after %q is empty", s, storage+":")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return VolumeID{}, fmt.Errorf("volume id %q: the volume name holds a control character", s)
		}
	}
	v := VolumeID{Storage: storage, Name: name}
	var err error
	switch {
	case strings.HasPrefix(name, "iso/") && !strings.Contains(name[4:], "/"):
		v.Content = "iso"
	case strings.HasPrefix(name, "vztmpl/") && !strings.Contains(name[7:], "/"):
		v.Content = "vztmpl"
	case strings.HasPrefix(name, "snippets/") && !strings.Contains(name[9:], "/"):
		v.Content = "snippets"
	case strings.HasPrefix(name, "import/"):
		v.Content = "import"
	case rePBSBackup.MatchString(name):
		v.Content = "backup"
		m := rePBSBackup.FindStringSubmatch(name)
		if isDigits(m[2]) {
			v.OwnerVMID, err = vmidOf(s, m[2])
		}
	case strings.HasPrefix(name, "backup/") && !strings.Contains(name[7:], "/"):
		v.Content = "backup"
		if m := reVzdump.FindStringSubmatch(name[7:]); m != nil {
			v.OwnerVMID, err = vmidOf(s, m[1])
		}
	case reDirClone.MatchString(name):
		m := reDirClone.FindStringSubmatch(name)
		if reDirName.MatchString(m[2]) && reDirName.MatchString(m[4]) {
			v.Content = "images"
			if v.BaseVMID, err = vmidOf(s, m[1]); err == nil {
				v.OwnerVMID, err = vmidOf(s, m[3])
			}
		}
	case reDirImage.MatchString(name):
		m := reDirImage.FindStringSubmatch(name)
		if reDirName.MatchString(m[2]) {
			v.Content = "images"
			v.OwnerVMID, err = vmidOf(s, m[1])
		}
	case reBlockImage.MatchString(name):
		m := reBlockImage.FindStringSubmatch(name)
		v.Content = "images"
		if v.OwnerVMID, err = vmidOf(s, m[4]); err == nil && m[2] != "" {
			v.BaseVMID, err = vmidOf(s, m[2])
		}
	}
	if err != nil {
		return VolumeID{}, err
	}
	return v, nil
}

// vmidOf reads the owner digits of a volume name.
func vmidOf(volid, digits string) (int, error) {
	if len(digits) > 9 || digits[0] == '0' {
		return 0, fmt.Errorf("volume id %q: owner %q is not a VM ID (1 to 999999999, no leading zero)", volid, digits)
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, fmt.Errorf("volume id %q: owner %q: %w", volid, digits, err)
	}
	return n, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
