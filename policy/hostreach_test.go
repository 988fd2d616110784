package policy

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// reach is an item without its detail, for comparisons.
type reach struct{ param, kind, value string }

func reachesOf(t *testing.T, reg *schema.Registry, method, path string, args map[string]any) ([]HostReach, *schema.Endpoint, map[string]string) {
	t.Helper()
	ep, vars, err := reg.Match(method, path)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]any{}
	for k, v := range vars {
		all[k] = v
	}
	for k, v := range args {
		all[k] = v
	}
	checked, err := ep.Check(all)
	if err != nil {
		t.Fatalf("%s %s %v: the schema refuses the call: %v", method, path, args, err)
	}
	return ReachesHost(ep, vars, checked.Values), ep, vars
}

func short(items []HostReach) []reach {
	var out []reach
	for _, r := range items {
		out = append(out, reach{r.Param, string(r.Kind), r.Value})
	}
	return out
}

// Each way a call reaches the host, over the real PVE 9.1 schema, with the
// arguments validated as the call plan validates them; and the values that
// look alike but do not reach the host (a USB or PCI mapping, SPICE, a
// serial socket, a mount point on a volume, a feature turned off).
func TestReachesHost(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	const (
		vmConf = "/nodes/pve1/qemu/100/config"
		ctConf = "/nodes/pve1/lxc/200/config"
	)
	backup := "backup:backup/vzdump-qemu-100-2026_11_29-10_00_00.vma.zst"
	ctBackup := "backup:backup/vzdump-lxc-200-2026_11_29-10_00_00.tar.zst"
	tmpl := "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	tests := []struct {
		name         string
		method, path string
		args         map[string]any
		want         []reach
	}{
		// QEMU config edits, PUT and POST alike.
		{"hookscript", "PUT", vmConf, map[string]any{"hookscript": "local:snippets/x.sh"}, []reach{{"hookscript", "hookscript", "local:snippets/x.sh"}}},
		{"args", "PUT", vmConf, map[string]any{"args": "-foo"}, []reach{{"args", "qemu_args", "-foo"}}},
		{"args async", "POST", vmConf, map[string]any{"args": "-chardev file,id=x,path=/etc/shadow"}, []reach{{"args", "qemu_args", "-chardev file,id=x,path=/etc/shadow"}}},
		{"usb host id", "PUT", vmConf, map[string]any{"usb0": "host=1234:5678"}, []reach{{"usb0", "usb_host", "host=1234:5678"}}},
		{"usb default key", "PUT", vmConf, map[string]any{"usb1": "1234:5678,usb3=1"}, []reach{{"usb1", "usb_host", "1234:5678,usb3=1"}}},
		{"usb host port", "POST", vmConf, map[string]any{"usb2": "host=1-2.3"}, []reach{{"usb2", "usb_host", "host=1-2.3"}}},
		{"usb host and mapping", "PUT", vmConf, map[string]any{"usb0": "host=1234:5678,mapping=foo"}, []reach{{"usb0", "usb_host", "host=1234:5678,mapping=foo"}}},
		{"usb mapping", "PUT", vmConf, map[string]any{"usb0": "mapping=foo"}, nil},
		{"usb mapping usb3", "PUT", vmConf, map[string]any{"usb0": "mapping=foo,usb3=1"}, nil},
		{"usb spice", "PUT", vmConf, map[string]any{"usb0": "spice", "usb1": "host=SPICE"}, nil},
		{"pci host", "PUT", vmConf, map[string]any{"hostpci0": "0000:01:00.0,pcie=1"}, []reach{{"hostpci0", "pci_passthrough", "0000:01:00.0,pcie=1"}}},
		{"pci host key", "PUT", vmConf, map[string]any{"hostpci1": "host=01:00.0;02:00.0,x-vga=1"}, []reach{{"hostpci1", "pci_passthrough", "host=01:00.0;02:00.0,x-vga=1"}}},
		{"pci mapping", "PUT", vmConf, map[string]any{"hostpci0": "mapping=gpu,pcie=1"}, nil},
		{"pci mapping with a rom file", "PUT", vmConf, map[string]any{"hostpci0": "mapping=gpu,romfile=vbios.bin"}, []reach{{"hostpci0", "pci_passthrough", "mapping=gpu,romfile=vbios.bin"}}},
		{"serial device", "PUT", vmConf, map[string]any{"serial0": "/dev/ttyS0"}, []reach{{"serial0", "serial_host", "/dev/ttyS0"}}},
		{"serial socket", "PUT", vmConf, map[string]any{"serial0": "socket"}, nil},
		{"parallel", "PUT", vmConf, map[string]any{"parallel0": "/dev/parport0"}, []reach{{"parallel0", "parallel_host", "/dev/parport0"}}},
		{"shared memory", "PUT", vmConf, map[string]any{"ivshmem": "size=32,name=chan"}, []reach{{"ivshmem", "host_shared_memory", "size=32,name=chan"}}},
		{"host block device", "PUT", vmConf, map[string]any{"scsi1": "/dev/sdb,backup=0"}, []reach{{"scsi1", "host_disk", "/dev/sdb,backup=0"}}},
		{"host file by key", "PUT", vmConf, map[string]any{"virtio1": "file=/var/lib/vz/x.raw"}, []reach{{"virtio1", "host_disk", "file=/var/lib/vz/x.raw"}}},
		{"import of a host file", "POST", vmConf, map[string]any{"scsi2": "local-lvm:0,import-from=/root/disk.qcow2"}, []reach{{"scsi2", "host_disk", "local-lvm:0,import-from=/root/disk.qcow2"}}},
		{"cdrom from a host path", "PUT", vmConf, map[string]any{"ide2": "/root/x.iso,media=cdrom"}, []reach{{"ide2", "host_disk", "/root/x.iso,media=cdrom"}}},
		{"disks on volumes", "PUT", vmConf, map[string]any{"scsi1": "local-lvm:vm-100-disk-1,size=8G", "scsi2": "local-lvm:4", "ide2": "none,media=cdrom",
			"scsi3": "local-lvm:0,import-from=local:import/disk.qcow2"}, nil},
		{"protection off", "PUT", vmConf, map[string]any{"protection": false}, []reach{{"protection", "protection_off", "0"}}},
		{"protection on", "PUT", vmConf, map[string]any{"protection": true}, nil},
		{"delete protection", "PUT", vmConf, map[string]any{"delete": "net1;protection"}, []reach{{"delete", "protection_off", "protection"}}},
		{"delete other keys", "POST", vmConf, map[string]any{"delete": "usb0,hostpci0,args,hookscript"}, nil},
		{"ordinary edit", "PUT", vmConf, map[string]any{"memory": "4096", "cores": 2, "net0": "virtio,bridge=vmbr0", "vga": "serial0", "rng0": "source=/dev/urandom", "virtiofs0": "share1"}, nil},
		{"several at once", "PUT", vmConf, map[string]any{"args": "-foo", "usb0": "host=1234:5678", "serial1": "/dev/ttyS1"},
			[]reach{{"args", "qemu_args", "-foo"}, {"serial1", "serial_host", "/dev/ttyS1"}, {"usb0", "usb_host", "host=1234:5678"}}},

		// QEMU creates and restores.
		{"restore over a guest", "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 100, "archive": backup, "force": 1}, []reach{{"force", "overwrite_vmid", "1"}}},
		{"restore", "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 150, "archive": backup}, nil},
		{"restore without protection", "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 150, "archive": backup, "protection": 0}, []reach{{"protection", "protection_off", "0"}}},
		{"create without protection", "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 150, "protection": 0, "memory": 2048}, nil},
		{"create with passthrough", "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 150, "hostpci0": "01:00.0", "hookscript": "local:snippets/h.sh"},
			[]reach{{"hookscript", "hookscript", "local:snippets/h.sh"}, {"hostpci0", "pci_passthrough", "01:00.0"}}},

		// Containers.
		{"bind mount", "PUT", ctConf, map[string]any{"mp0": "/srv,mp=/mnt"}, []reach{{"mp0", "bind_mount", "/srv,mp=/mnt"}}},
		{"bind mount by key", "PUT", ctConf, map[string]any{"mp1": "volume=/etc,mp=/mnt/etc,ro=1"}, []reach{{"mp1", "bind_mount", "volume=/etc,mp=/mnt/etc,ro=1"}}},
		{"device mount", "PUT", ctConf, map[string]any{"mp2": "/dev/sdb1,mp=/mnt/disk"}, []reach{{"mp2", "bind_mount", "/dev/sdb1,mp=/mnt/disk"}}},
		{"volume mount points", "PUT", ctConf, map[string]any{"mp0": "local-lvm:vm-200-disk-1,mp=/mnt", "mp1": "local-lvm:8,mp=/data", "rootfs": "local-lvm:vm-200-disk-0,size=8G"}, nil},
		{"device", "PUT", ctConf, map[string]any{"dev0": "/dev/ttyUSB0", "dev1": "path=/dev/dri/renderD128,gid=44"},
			[]reach{{"dev0", "device_passthrough", "/dev/ttyUSB0"}, {"dev1", "device_passthrough", "path=/dev/dri/renderD128,gid=44"}}},
		{"features", "PUT", ctConf, map[string]any{"features": "nesting=1,keyctl=1,fuse=0"},
			[]reach{{"features", "container_features", "keyctl=1"}, {"features", "container_features", "nesting=1"}}},
		{"features mount and mknod", "PUT", ctConf, map[string]any{"features": "mount=nfs;cifs,mknod=yes,force_rw_sys=1"},
			[]reach{{"features", "container_features", "force_rw_sys=1"}, {"features", "container_features", "mknod=yes"}, {"features", "container_features", "mount=nfs;cifs"}}},
		{"features off", "PUT", ctConf, map[string]any{"features": "nesting=0,keyctl=off"}, nil},
		{"privileged", "PUT", ctConf, map[string]any{"unprivileged": false}, []reach{{"unprivileged", "privileged", "0"}}},
		{"delete unprivileged", "PUT", ctConf, map[string]any{"delete": "unprivileged"}, []reach{{"delete", "privileged", "unprivileged"}}},
		{"container protection off", "PUT", ctConf, map[string]any{"protection": "0"}, []reach{{"protection", "protection_off", "0"}}},
		{"container hookscript", "PUT", ctConf, map[string]any{"hookscript": "local:snippets/ct.sh"}, []reach{{"hookscript", "hookscript", "local:snippets/ct.sh"}}},
		// PVE 9 creates an unprivileged container unless told otherwise.
		{"create", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "features": "nesting=0"}, nil},
		{"create unprivileged", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "unprivileged": 1}, nil},
		// PVE's default for a new unprivileged container.
		{"create unprivileged with nesting", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "unprivileged": 1, "features": "nesting=1"}, nil},
		{"create unprivileged with keyctl", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "unprivileged": 1, "features": "nesting=1,keyctl=1"},
			[]reach{{"features", "container_features", "keyctl=1"}}},
		{"create with nesting, privilege unsaid", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "features": "nesting=1"}, nil},
		{"create privileged with nesting", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "unprivileged": 0, "features": "nesting=1"},
			[]reach{{"features", "container_features", "nesting=1"}, {"unprivileged", "privileged", "0"}}},
		{"create privileged", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "unprivileged": 0}, []reach{{"unprivileged", "privileged", "0"}}},
		{"create with a bind mount", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "rootfs": "local-lvm:8", "unprivileged": 1, "mp0": "/srv/share,mp=/share"},
			[]reach{{"mp0", "bind_mount", "/srv/share,mp=/share"}}},
		{"rootfs on a host path", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": tmpl, "unprivileged": 1, "rootfs": "/srv/ct300"}, []reach{{"rootfs", "bind_mount", "/srv/ct300"}}},
		{"restore keeping the backup's privileges", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": ctBackup, "restore": 1}, []reach{{"unprivileged", "privileged", ""}}},
		{"restore unprivileged", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": ctBackup, "restore": 1, "unprivileged": 1}, nil},
		{"restore over a container", "POST", "/nodes/pve1/lxc", map[string]any{"vmid": 200, "ostemplate": ctBackup, "restore": true, "unprivileged": true, "force": true, "protection": false},
			[]reach{{"force", "overwrite_vmid", "1"}, {"protection", "protection_off", "0"}}},

		// Mappings of host devices and directories.
		{"usb mapping", "POST", "/cluster/mapping/usb", map[string]any{"id": "foo", "map": []any{"id=1234:5678,node=pve1"}}, []reach{{"map", "host_mapping", "id=1234:5678,node=pve1"}}},
		{"dir mapping", "PUT", "/cluster/mapping/dir/share1", map[string]any{"map": []any{"node=pve1,path=/", "node=pve2,path=/srv"}},
			[]reach{{"map", "host_mapping", "node=pve1,path=/"}, {"map", "host_mapping", "node=pve2,path=/srv"}}},
		{"mapping description", "PUT", "/cluster/mapping/pci/gpu", map[string]any{"description": "the GPU"}, nil},

		// Clones copy a configuration; their arguments set none of these.
		{"qemu clone", "POST", "/nodes/pve1/qemu/100/clone", map[string]any{"newid": 120, "full": 1, "target": "pve2"}, nil},
		{"lxc clone", "POST", "/nodes/pve1/lxc/200/clone", map[string]any{"newid": 220}, nil},
		{"a read", "GET", vmConf, map[string]any{"current": 1}, nil},
		{"force elsewhere", "DELETE", "/nodes/pve1/lxc/200", map[string]any{"force": 1}, nil},
		{"physical removal is no overwrite", "PUT", vmConf, map[string]any{"delete": "scsi1", "force": 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, _, _ := reachesOf(t, reg, tt.method, tt.path, tt.args)
			if got := short(items); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReachesHost = %v\nwant %v", got, tt.want)
			}
			for _, r := range items {
				if r.Detail == "" || strings.ContainsAny(r.Detail, "\n") {
					t.Errorf("%s: detail %q", r.Param, r.Detail)
				}
			}
		})
	}
}

// The same endpoints and values read alike on PVE 8.4.5.
func TestReachesHostPVE8(t *testing.T) {
	reg := fixtureRegistry(t, "pve-8.4.5/apidoc.js")
	for _, tt := range []struct {
		method, path string
		args         map[string]any
		want         []reach
	}{
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "host=1234:5678", "args": "-foo"}, []reach{{"args", "qemu_args", "-foo"}, {"usb0", "usb_host", "host=1234:5678"}}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "mapping=foo", "hostpci0": "mapping=gpu"}, nil},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp0": "/srv,mp=/mnt", "features": "nesting=1"}, []reach{{"features", "container_features", "nesting=1"}, {"mp0", "bind_mount", "/srv,mp=/mnt"}}},
		{"POST", "/nodes/pve1/lxc", map[string]any{"vmid": 200, "ostemplate": "backup:backup/vzdump-lxc-200-2025_01_01-00_00_00.tar.zst", "restore": 1, "unprivileged": 1, "force": 1}, []reach{{"force", "overwrite_vmid", "1"}}},
		// PVE 8 creates a privileged container unless told otherwise.
		{"POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "features": "nesting=1"},
			[]reach{{"features", "container_features", "nesting=1"}, {"unprivileged", "privileged", ""}}},
		{"POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "unprivileged": 1, "features": "nesting=1"}, nil},
	} {
		items, _, _ := reachesOf(t, reg, tt.method, tt.path, tt.args)
		if got := short(items); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s %v: %v\nwant %v", tt.method, tt.path, tt.args, got, tt.want)
		}
	}
}

// What an item says names the guest, the host object and what it does.
func TestReachesHostDetails(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	tests := []struct {
		method, path string
		args         map[string]any
		want         string
	}{
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "host=1234:5678"}, "usb0 passes the host's USB device 1234:5678 to the guest (usb_host)"},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "host=2-1.4"}, "usb0 passes the host's USB port 2-1.4 to the guest (usb_host)"},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"protection": 0}, "protection turns PVE's protection of guest 100 off (protection_off)"},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"scsi0": "local-lvm:0,import-from=/etc/pve/priv/authkey.key"},
			"scsi0 copies the host file /etc/pve/priv/authkey.key into a disk of the guest (host_disk)"},
		{"POST", "/nodes/pve1/qemu", map[string]any{"vmid": 101, "archive": "backup:backup/vzdump-qemu-101-2026_11_29-10_00_00.vma.zst", "force": true},
			"force lets the call overwrite the existing guest 101 (overwrite_vmid)"},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp0": "/srv,mp=/mnt"}, "mp0 bind-mounts the host directory /srv into the container (bind_mount)"},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp0": "/dev/sdb1,mp=/mnt"}, "mp0 mounts the host device /dev/sdb1 into the container (bind_mount)"},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"dev0": "path=/dev/kvm"}, "dev0 passes the host device /dev/kvm into the container (device_passthrough)"},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"delete": "unprivileged"},
			"delete removes unprivileged, which makes guest 200 a privileged container (its root is the host's root) (privileged)"},
		{"POST", "/cluster/mapping/dir", map[string]any{"id": "root", "map": []any{"node=pve1,path=/"}},
			"map maps the host directory node=pve1,path=/ for every guest given the mapping (host_mapping)"},
	}
	for _, tt := range tests {
		items, _, _ := reachesOf(t, reg, tt.method, tt.path, tt.args)
		if len(items) != 1 || items[0].String() != tt.want {
			t.Errorf("%s %s %v: %v\nwant %s", tt.method, tt.path, tt.args, items, tt.want)
		}
	}
}

// Every spelling PVE accepts of a boolean gives the same items: the
// values are read as validated.
func TestReachesHostSpellings(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	backup := "backup:backup/vzdump-qemu-100-2026_11_29-10_00_00.vma.zst"
	for _, v := range []any{true, 1, 1.0, "1"} {
		items, _, _ := reachesOf(t, reg, "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 100, "archive": backup, "force": v})
		if got := short(items); !reflect.DeepEqual(got, []reach{{"force", "overwrite_vmid", "1"}}) {
			t.Errorf("force=%#v: %v", v, got)
		}
	}
	for _, v := range []any{false, 0, 0.0, "0"} {
		items, _, _ := reachesOf(t, reg, "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"protection": v})
		if got := short(items); !reflect.DeepEqual(got, []reach{{"protection", "protection_off", "0"}}) {
			t.Errorf("protection=%#v: %v", v, got)
		}
		items, _, _ = reachesOf(t, reg, "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 100, "archive": backup, "force": v})
		if len(items) != 0 {
			t.Errorf("force=%#v: %v", v, items)
		}
	}
}

// A raw lxc.* key cannot reach PVE through the API: the schema of the
// container endpoints has no such property and refuses unknown ones. Were
// one to arrive anyway (a schema that accepted it), it is an item.
func TestRawLXCKeys(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	for _, path := range []string{"/nodes/pve1/lxc/200/config", "/nodes/pve1/lxc"} {
		method := "PUT"
		if path == "/nodes/pve1/lxc" {
			method = "POST"
		}
		ep, vars, err := reg.Match(method, path)
		if err != nil {
			t.Fatal(err)
		}
		args := map[string]any{"lxc.apparmor.profile": "unconfined", "node": "pve1", "vmid": 200, "ostemplate": "local:vztmpl/x.tar.zst"}
		if _, err := ep.Check(args); err == nil || !strings.Contains(err.Error(), "lxc.apparmor.profile") {
			t.Errorf("%s %s: the schema accepts a raw lxc key (%v)", method, path, err)
		}
		items := ReachesHost(ep, vars, map[string]any{"lxc.apparmor.profile": "unconfined", "lxc": "x", "unprivileged": true})
		if got := short(items); !reflect.DeepEqual(got, []reach{{"lxc", "raw_lxc", "x"}, {"lxc.apparmor.profile", "raw_lxc", "unconfined"}}) {
			t.Errorf("%s %s: %v", method, path, got)
		}
	}
	// On a VM, lxc.* means nothing (and PVE refuses it).
	ep, vars, _ := reg.Match("PUT", "/nodes/pve1/qemu/100/config")
	if items := ReachesHost(ep, vars, map[string]any{"lxc.apparmor.profile": "unconfined"}); len(items) != 0 {
		t.Errorf("qemu: %v", items)
	}
}

// A value PVE would not parse as a harmless one counts: an item is left
// out only when the value certainly does not reach the host.
func TestReachesHostUnreadableValues(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ep, vars, _ := reg.Match("PUT", "/nodes/pve1/qemu/100/config")
	ct, ctVars, _ := reg.Match("PUT", "/nodes/pve1/lxc/200/config")
	tests := []struct {
		ep     *schema.Endpoint
		vars   map[string]string
		values map[string]any
		kind   ReachKind
	}{
		{ep, vars, map[string]any{"usb0": "mapping=foo,mapping=bar"}, ReachUSB},
		{ep, vars, map[string]any{"usb0": "mapping="}, ReachUSB},
		{ep, vars, map[string]any{"usb0": "usb3=1"}, ReachUSB},
		{ep, vars, map[string]any{"hostpci0": "pcie=1"}, ReachPCI},
		{ep, vars, map[string]any{"hostpci0": "mapping=a,mapping=b"}, ReachPCI},
		{ep, vars, map[string]any{"scsi1": "local-lvm:vm-100-disk-1,file=/dev/sda"}, ReachHostDisk},
		{ct, ctVars, map[string]any{"features": "nesting"}, ReachFeatures},
		{ct, ctVars, map[string]any{"features": "nesting=maybe"}, ReachFeatures},
		{ct, ctVars, map[string]any{"features": "keyctl=1,keyctl=0"}, ReachFeatures},
		{ct, ctVars, map[string]any{"unprivileged": "perhaps"}, ReachPrivileged},
		{ct, ctVars, map[string]any{"protection": []any{"0"}}, ReachProtectionOff},
	}
	for _, tt := range tests {
		items := ReachesHost(tt.ep, tt.vars, tt.values)
		if len(items) == 0 || items[0].Kind != tt.kind {
			t.Errorf("%v: %v, want an item of kind %s", tt.values, items, tt.kind)
		}
	}
}

// The input carries the items as input.reaches_host, and the library's
// lib.reaches_host_items names them as HostReach.String does.
func TestInputReachesHost(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	ep, vars, err := reg.Match("PUT", "/nodes/pve1/qemu/100/config")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"node": "pve1", "vmid": int64(100), "usb0": "host=1234:5678", "args": "-foo"}
	in := BuildInput(ep, "/nodes/pve1/qemu/100/config", vars, values, Principal{KeyID: "k", Transport: "loopback"}, Guard{Evaluated: true}, time.Unix(0, 0))
	if len(in.ReachesHost) != 2 {
		t.Fatalf("BuildInput: ReachesHost = %v", in.ReachesHost)
	}
	src := header + `decision := lib.deny(concat("|", [lib.reaches_host_items, json.marshal(input.reaches_host)])) if lib.reaches_host_kind("usb_host")` + "\n"
	c, err := CompileCustom(context.Background(), "echo.rego", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Decide(context.Background(), &in, 0)
	want := reachText(in.ReachesHost) + `|[{"detail":"passes raw arguments to the host's QEMU process: -foo","kind":"qemu_args","param":"args","value":"-foo"},` +
		`{"detail":"passes the host's USB device 1234:5678 to the guest","kind":"usb_host","param":"usb0","value":"host=1234:5678"}]`
	if d.Effect != Deny || len(d.Reasons) != 1 || d.Reasons[0] != want {
		t.Errorf("Decide = %+v\nwant the reason %s", d, want)
	}
}

// The engine confirms, for every policy, a call that reaches the host:
// an allow becomes a confirmation by the caller that names the items; a
// confirmation by another, a dry run and break-glass stand; a deny stands,
// with the items named when its reasons do not name them.
func TestEngineConfirmsHostReach(t *testing.T) {
	ctx := context.Background()
	reg := fixtureRegistry(t, pve91)
	compile := func(name, src string) *Compiled {
		t.Helper()
		c, err := CompileCustom(ctx, name, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	all := compile("allow-all.rego", allowAll)
	notify := compile("notify.rego", "package proxmox_mcp.policy\n\n"+`decision := {"effect": "allow", "reasons": ["ok"], "obligations": [{"type": "notify", "message": "hi"}]} if input.method != ""`+"\n")
	other := compile("other.rego", "package proxmox_mcp.policy\n\n"+`decision := {"effect": "confirm", "reasons": ["ask"], "obligations": [{"type": "confirm", "approver": "other"}]} if input.method != ""`+"\n")
	dry := compile("dry.rego", "package proxmox_mcp.policy\n\n"+`decision := {"effect": "dry_run", "reasons": ["preview"], "obligations": []} if input.method != ""`+"\n")
	naming := compile("naming.rego", header+`decision := lib.allow(concat("", ["explicitly: ", lib.reaches_host_items])) if input.method != ""`+"\n")
	builtins := compileBuiltins(t)

	ep, vars, err := reg.Match("PUT", "/nodes/pve1/qemu/100/config")
	if err != nil {
		t.Fatal(err)
	}
	build := func(values map[string]any) *Input {
		in := BuildInput(ep, "/nodes/pve1/qemu/100/config", vars, values, Principal{KeyID: "k", Transport: "loopback"}, Guard{Evaluated: true}, time.Unix(0, 0))
		return &in
	}
	usb := build(map[string]any{"usb0": "host=1234:5678"})
	mapped := build(map[string]any{"usb0": "mapping=foo"})
	items := "usb0 passes the host's USB device 1234:5678 to the guest (usb_host)"
	confirmSelf := []Obligation{{Type: "confirm", Approver: "self"}}
	tests := []struct {
		name        string
		c           *Compiled
		in          *Input
		effect      Effect
		obligations []Obligation
		reasons     []string
	}{
		{"allow-all reaching the host", all, usb, Confirm, confirmSelf,
			[]string{"all", "the call reaches the host from a guest (" + items + "): policy allow-all.rego allows it, and such a call runs only once confirmed"}},
		{"allow-all not reaching it", all, mapped, Allow, []Obligation{}, []string{"all"}},
		{"allow with notify", notify, usb, Confirm, []Obligation{{Type: "notify", Message: "hi"}, {Type: "confirm", Approver: "self"}}, nil},
		{"confirm by another", other, usb, Confirm, []Obligation{{Type: "confirm", Approver: "other"}}, []string{"ask", "the call reaches the host from a guest (" + items + ")"}},
		{"dry run", dry, usb, DryRun, []Obligation{}, nil},
		{"allow naming the items", naming, usb, Confirm, confirmSelf,
			[]string{"explicitly: " + items, "policy naming.rego allows this call, which reaches the host from a guest: it runs only once confirmed"}},
		{"read-only", builtins[ReadOnly], usb, Deny, []Obligation{},
			[]string{"read-only keys may only read; this call changes state", "the call reaches the host from a guest (" + items + "); a policy must allow this explicitly"}},
		{"operator", builtins[Operator], usb, Deny, []Obligation{}, nil},
		{"admin", builtins[Admin], usb, Deny, []Obligation{},
			[]string{"admin keys may not let a guest reach the host: the call reaches the host from a guest (" + items + "); a policy must allow this explicitly"}},
		{"admin, mapping", builtins[Admin], mapped, Allow, []Obligation{}, nil},
		{"root", builtins[Root], usb, Confirm, confirmSelf,
			[]string{"root keys confirm each call by which a guest reaches the host: " + items}},
		{"root, mapping", builtins[Root], mapped, Allow, []Obligation{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.c.Decide(ctx, tt.in, 0)
			if d.Effect != tt.effect || !reflect.DeepEqual(d.Obligations, tt.obligations) {
				t.Fatalf("Decide = %+v, want %s with %v", d, tt.effect, tt.obligations)
			}
			if tt.reasons != nil && !reflect.DeepEqual(d.Reasons, tt.reasons) {
				t.Errorf("reasons = %q\nwant %q", d.Reasons, tt.reasons)
			}
			if tt.in == usb && !strings.Contains(strings.Join(d.Reasons, " "), items) {
				t.Errorf("the reasons do not name the item: %q", d.Reasons)
			}
		})
	}
	// The guard still has the last word.
	hit := build(map[string]any{"usb0": "host=1234:5678"})
	hit.Guard = Guard{Evaluated: true, Hits: []GuardHit{{Kind: "device", Value: "/dev/bus/usb/001/002", Param: "usb0"}}}
	if d := all.Decide(ctx, hit, 0); d.Effect != Deny {
		t.Errorf("guard hit: %+v", d)
	}
}

// The golden decisions show every profile's answer to a call of each kind
// of item (appended to decisions-pve-9.1.golden by TestGoldenDecisions).
func hostReachGolden(t *testing.T, reg *schema.Registry, compiled map[string]*Compiled) string {
	t.Helper()
	backup := "backup:backup/vzdump-qemu-100-2026_11_29-10_00_00.vma.zst"
	ctBackup := "backup:backup/vzdump-lxc-200-2026_11_29-10_00_00.tar.zst"
	cases := []struct {
		method, path string
		args         map[string]any
	}{
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"hookscript": "local:snippets/x.sh"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"args": "-foo"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"hostpci0": "0000:01:00.0"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"hostpci0": "mapping=gpu"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "host=1234:5678"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "mapping=foo"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"serial0": "/dev/ttyS0"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"serial0": "socket"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"parallel0": "/dev/parport0"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"scsi1": "/dev/sdb"}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"protection": false}},
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"delete": "protection"}},
		{"POST", "/nodes/pve1/qemu", map[string]any{"vmid": 100, "archive": backup, "force": true}},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp0": "/srv,mp=/mnt"}},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp0": "local-lvm:8,mp=/mnt"}},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"dev0": "/dev/ttyUSB0"}},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"features": "nesting=1"}},
		{"PUT", "/nodes/pve1/lxc/200/config", map[string]any{"unprivileged": false}},
		{"POST", "/nodes/pve1/lxc", map[string]any{"vmid": 300, "ostemplate": ctBackup, "restore": true}},
		{"POST", "/cluster/mapping/usb", map[string]any{"id": "foo", "map": []any{"id=1234:5678,node=pve1"}}},
	}
	var b strings.Builder
	b.WriteString("# Calls by which a guest reaches the host (policy/hostreach_test.go): the items, then each profile's decision.\n")
	for _, c := range cases {
		items, ep, vars := reachesOf(t, reg, c.method, c.path, c.args)
		var kinds []string
		for _, r := range items {
			kinds = append(kinds, r.Param+":"+string(r.Kind))
		}
		fmt.Fprintf(&b, "%-6s %s %v\n  items: %s\n ", c.method, c.path, c.args, cmp.Or(strings.Join(kinds, " "), "none"))
		for _, prof := range Profiles() {
			p := Principal{KeyID: "golden0000000000", Name: "golden", Profile: prof, Transport: "loopback", Source: "127.0.0.1"}
			all := map[string]any{}
			for k, v := range vars {
				all[k] = v
			}
			for k, v := range c.args {
				all[k] = v
			}
			checked, err := ep.Check(all)
			if err != nil {
				t.Fatal(err)
			}
			in := BuildInput(ep, c.path, vars, checked.Values, p, Guard{Evaluated: true}, time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC))
			fmt.Fprintf(&b, " %s=%s", prof, compiled[prof].Decide(context.Background(), &in, time.Second).Effect)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The example that allows one USB device for one guest, on inputs built
// from real calls: the allowed call needs the caller's confirmation (the
// engine's), every other host reach is admin's deny.
func TestExampleUSBPassthrough(t *testing.T) {
	ctx := context.Background()
	reg := fixtureRegistry(t, pve91)
	src, err := os.ReadFile("examples/usb-passthrough.rego")
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileCustom(ctx, "usb-passthrough@v1", src)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tier != Admin {
		t.Errorf("tier %s, want admin", c.Tier)
	}
	tests := []struct {
		method, path string
		args         map[string]any
		want         Effect
	}{
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"usb0": "host=1234:5678"}, Confirm},
		{"POST", "/nodes/pve1/qemu/150/config", map[string]any{"usb1": "0x1234:0x5678,usb3=1"}, Confirm},
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"usb0": "host=1234:5678", "args": "-foo"}, Deny},
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"usb0": "host=1234:5678", "scsi1": "local-lvm:vm-900-disk-0"}, Deny},
		{"PUT", "/nodes/pve1/qemu/151/config", map[string]any{"usb0": "host=1234:5678"}, Deny},
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"usb0": "host=1-2"}, Deny},
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"usb0": "mapping=foo"}, Allow},
		{"PUT", "/nodes/pve1/qemu/150/config", map[string]any{"memory": "4096"}, Allow},
	}
	for _, tt := range tests {
		ep, vars, err := reg.Match(tt.method, tt.path)
		if err != nil {
			t.Fatal(err)
		}
		all := map[string]any{"node": vars["node"], "vmid": vars["vmid"]}
		for k, v := range tt.args {
			all[k] = v
		}
		checked, err := ep.Check(all)
		if err != nil {
			t.Fatal(err)
		}
		in := BuildInput(ep, tt.path, vars, checked.Values, Principal{KeyID: "k", Policy: "usb-passthrough", Transport: "loopback"}, Guard{Evaluated: true}, time.Unix(0, 0))
		if d := c.Decide(ctx, &in, 0); d.Effect != tt.want {
			t.Errorf("%s %s %v: %+v, want %s", tt.method, tt.path, tt.args, d, tt.want)
		}
	}
}

// ReachesHost runs for every call the plan builds: a call of another
// endpoint, an ordinary config edit, and one that reaches the host.
func BenchmarkReachesHost(b *testing.B) {
	reg := fixtureRegistry(b, pve91)
	for _, bc := range []struct {
		name, method, path string
		values             map[string]any
	}{
		{"other-endpoint", "POST", "/nodes/pve1/qemu/100/status/start", map[string]any{"node": "pve1", "vmid": int64(100), "timeout": int64(30)}},
		{"config-edit", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"node": "pve1", "vmid": int64(100), "memory": "4096", "cores": int64(2),
			"net0": "virtio,bridge=vmbr0", "scsi1": "local-lvm:vm-100-disk-1,size=8G", "usb0": "mapping=foo"}},
		{"reaches-host", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"node": "pve1", "vmid": int64(100), "args": "-foo",
			"usb0": "host=1234:5678", "hostpci0": "0000:01:00.0,pcie=1", "scsi1": "/dev/sdb"}},
	} {
		ep, vars, err := reg.Match(bc.method, bc.path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ReachesHost(ep, vars, bc.values)
			}
		})
	}
}
