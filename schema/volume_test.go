package schema

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// volumeVectors are volume ids of every plugin's shape, as pve-storage's
// parse_volname reads them, with the owners they name.
var volumeVectors = []struct {
	in      string
	want    VolumeID
	wantErr string
}{
	// LVM and LVM-thin.
	{in: "local-lvm:vm-100-disk-0", want: VolumeID{Storage: "local-lvm", Name: "vm-100-disk-0", Content: "images", OwnerVMID: 100}},
	{in: "local-lvm:base-9000-disk-0", want: VolumeID{Storage: "local-lvm", Name: "base-9000-disk-0", Content: "images", OwnerVMID: 9000}},
	{in: "lvm:vm-900-disk-0.qcow2", want: VolumeID{Storage: "lvm", Name: "vm-900-disk-0.qcow2", Content: "images", OwnerVMID: 900}},
	{in: "local-lvm:vm-101-state-before-upgrade", want: VolumeID{Storage: "local-lvm", Name: "vm-101-state-before-upgrade", Content: "images", OwnerVMID: 101}},
	// ZFS and RBD: subvolumes and linked clones.
	{in: "local-zfs:subvol-200-disk-0", want: VolumeID{Storage: "local-zfs", Name: "subvol-200-disk-0", Content: "images", OwnerVMID: 200}},
	{in: "local-zfs:base-100-disk-0/vm-101-disk-0", want: VolumeID{Storage: "local-zfs", Name: "base-100-disk-0/vm-101-disk-0", Content: "images", OwnerVMID: 101, BaseVMID: 100}},
	{in: "tank:basevol-300-disk-0/subvol-301-disk-0", want: VolumeID{Storage: "tank", Name: "basevol-300-disk-0/subvol-301-disk-0", Content: "images", OwnerVMID: 301, BaseVMID: 300}},
	// Directory storages.
	{in: "local:100/vm-100-disk-0.qcow2", want: VolumeID{Storage: "local", Name: "100/vm-100-disk-0.qcow2", Content: "images", OwnerVMID: 100}},
	{in: "local:200/subvol-200-disk-0.subvol", want: VolumeID{Storage: "local", Name: "200/subvol-200-disk-0.subvol", Content: "images", OwnerVMID: 200}},
	{in: "nfs:100/base-100-disk-0.qcow2/101/vm-101-disk-0.qcow2", want: VolumeID{Storage: "nfs", Name: "100/base-100-disk-0.qcow2/101/vm-101-disk-0.qcow2", Content: "images", OwnerVMID: 101, BaseVMID: 100}},
	{in: "local:iso/debian-12.8.0-amd64-netinst.iso", want: VolumeID{Storage: "local", Name: "iso/debian-12.8.0-amd64-netinst.iso", Content: "iso"}},
	{in: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", want: VolumeID{Storage: "local", Name: "vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Content: "vztmpl"}},
	{in: "local:snippets/user-data.yaml", want: VolumeID{Storage: "local", Name: "snippets/user-data.yaml", Content: "snippets"}},
	{in: "local:import/disk one.ova/disk1.vmdk", want: VolumeID{Storage: "local", Name: "import/disk one.ova/disk1.vmdk", Content: "import"}},
	// Backups.
	{in: "backup:backup/vzdump-qemu-100-2025_11_29-08_00_00.vma.zst", want: VolumeID{Storage: "backup", Name: "backup/vzdump-qemu-100-2025_11_29-08_00_00.vma.zst", Content: "backup", OwnerVMID: 100}},
	{in: "backup:backup/vzdump-lxc-200-2025_11_29-08_00_00.tar.zst", want: VolumeID{Storage: "backup", Name: "backup/vzdump-lxc-200-2025_11_29-08_00_00.tar.zst", Content: "backup", OwnerVMID: 200}},
	{in: "local:backup/manual.tar", want: VolumeID{Storage: "local", Name: "backup/manual.tar", Content: "backup"}},
	{in: "pbs:backup/vm/100/2025-11-29T08:00:00Z", want: VolumeID{Storage: "pbs", Name: "backup/vm/100/2025-11-29T08:00:00Z", Content: "backup", OwnerVMID: 100}},
	{in: "pbs:backup/host/pve1/2025-11-29T08:00:00Z", want: VolumeID{Storage: "pbs", Name: "backup/host/pve1/2025-11-29T08:00:00Z", Content: "backup"}},
	// Names that name no guest.
	{in: "local-lvm:32", want: VolumeID{Storage: "local-lvm", Name: "32"}},
	{in: "iscsi:0.0.1.scsi-36001405abcdef", want: VolumeID{Storage: "iscsi", Name: "0.0.1.scsi-36001405abcdef"}},
	{in: "lvm:model", want: VolumeID{Storage: "lvm", Name: "model"}},
	{in: "local:100/notes.txt", want: VolumeID{Storage: "local", Name: "100/notes.txt"}},
	// Refused.
	{in: "vm-100-disk-0", wantErr: "want storage:name"},
	{in: "/dev/sdb", wantErr: "want storage:name"},
	{in: "1local:vm-100-disk-0", wantErr: "storage id \"1local\" must start with a letter"},
	{in: "local-:vm-100-disk-0", wantErr: "end in a letter or digit"},
	{in: "l:vm-100-disk-0", wantErr: "storage id \"l\""},
	{in: "local:", wantErr: "volume name after \"local:\" is empty"},
	{in: "local:vm-100-disk-0\n", wantErr: "control character"},
	{in: "local-lvm:vm-0100-disk-0", wantErr: "owner \"0100\" is not a VM ID"},
	{in: "local-lvm:vm-0-disk-0", wantErr: "owner \"0\" is not a VM ID"},
	{in: "local-lvm:vm-1000000000-disk-0", wantErr: "owner \"1000000000\" is not a VM ID"},
	{in: "local:backup/vzdump-qemu-00100-x.vma", wantErr: "owner \"00100\""},
}

func TestParseVolumeID(t *testing.T) {
	for _, tc := range volumeVectors {
		got, err := ParseVolumeID(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseVolumeID(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseVolumeID(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseVolumeID(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("ParseVolumeID(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestVolumeIDVMIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"local-zfs:base-100-disk-0/vm-101-disk-0", []int{101, 100}},
		{"local-lvm:vm-100-disk-0", []int{100}},
		{"local:iso/x.iso", nil},
	} {
		v, err := ParseVolumeID(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.VMIDs(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: VMIDs %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzParseVolumeID feeds arbitrary strings to the volume id parser, which
// sits on the trust boundary (it decides which guests a call names): it
// must never panic, and what it accepts must be a well-formed volume id
// whose owners are plain VM IDs written in the name.
func FuzzParseVolumeID(f *testing.F) {
	for _, v := range volumeVectors {
		f.Add(v.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVolumeID(s)
		if err != nil {
			if v != (VolumeID{}) {
				t.Fatalf("%q: a value with an error: %+v", s, v)
			}
			return
		}
		if v.String() != s || !reStorageID.MatchString(v.Storage) || v.Name == "" {
			t.Fatalf("%q: parsed as %+v", s, v)
		}
		for _, id := range v.VMIDs() {
			if id < 1 || id > 999999999 || !strings.Contains(v.Name, "-"+strconv.Itoa(id)+"-") && !strings.Contains(v.Name, strconv.Itoa(id)+"/") && !strings.Contains(v.Name, "/"+strconv.Itoa(id)) {
				t.Fatalf("%q: owner %d is not written in the name", s, id)
			}
		}
		again, err := ParseVolumeID(v.String())
		if err != nil || again != v {
			t.Fatalf("%q: reparsed as %+v, %v", s, again, err)
		}
	})
}
