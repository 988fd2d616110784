package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// grant is a role of exactly these privileges on a path, propagated.
type grant struct {
	path  string
	privs []string
}

func g(path string, privs ...string) grant { return grant{path, privs} }

// token makes alice@pve!t, privilege-separated, whose user holds
// Administrator on / (so only the token's own grants limit it), with one
// role per grant.
func (e *permEnv) token(grants ...grant) Token {
	e.t.Helper()
	tok, err := e.s.AddToken("alice@pve!t", true)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.Grant("/", "alice@pve", "Administrator", true); err != nil {
		e.t.Fatal(err)
	}
	for i, gr := range grants {
		role := fmt.Sprintf("Test%d", i)
		e.s.mu.Lock()
		e.s.st.roleDefs[role] = privSet(gr.privs...)
		e.s.mu.Unlock()
		if err := e.s.Grant(gr.path, "alice@pve!t", role, true); err != nil {
			e.t.Fatal(err)
		}
	}
	return tok
}

// codeCase is a call by a token with exactly some privileges, decided by
// a check PVE makes in code (source names the PVE function); task, when
// set, is the exit status of the task the call starts.
type codeCase struct {
	name         string
	source       string
	grants       []grant
	setup        func(*permEnv)
	method, path string
	args         url.Values
	want         string
	task         string
	after        func(*testing.T, *permEnv)
}

const (
	ctTemplate = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	isoCDROM   = "local:iso/debian-12.8.0-amd64-netinst.iso,media=cdrom"
)

// Every in-code check the simulator makes, one privilege short and, where
// it matters, with it. Each refusal here reproduces a call the simulator
// answered ok (or refused with another message) when it applied the
// schema's permissions object alone; the ok cases guard against refusing
// more than PVE does.
func TestInCodeChecks(t *testing.T) {
	alloc150 := g("/vms/150", "VM.Allocate")
	space := func(sid string) grant { return g("/storage/"+sid, "Datastore.AllocateSpace") }
	ctBase := []grant{g("/vms/250", "VM.Allocate", "VM.Config.Disk", "VM.Config.Network"), space("local-lvm"), g("/storage/local", "Datastore.Audit")}
	ct := func(kv ...string) url.Values {
		return v(append([]string{"vmid", "250", "ostemplate", ctTemplate, "rootfs", "local-lvm:4"}, kv...)...)
	}
	cases := []codeCase{
		{name: "create: a new disk needs its storage", source: "qemu-server API2/Qemu.pm check_storage_access",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.Memory")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "memory", "512", "scsi0", "local-lvm:4"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "create: each option its class", source: "check_vm_modify_config_perm",
			grants: []grant{alloc150, space("local-lvm")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "memory", "512", "scsi0", "local-lvm:4"), want: denied("/vms/150, VM.Config.Memory")},
		{name: "create in a pool with the pool's privileges", source: "create_vm, check_vm_perm",
			grants: []grant{g("/pool/prod", "VM.Allocate", "VM.Config.Memory"), space("local-lvm")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "pool", "prod", "memory", "512", "scsi0", "local-lvm:4"), want: "ok"},
		{name: "create: the pool's VM.Allocate needs the pool named", source: "create_vm",
			grants: []grant{g("/pool/prod", "VM.Allocate", "VM.Config.Memory"), space("local-lvm")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "memory", "512"), want: bare},
		{name: "create: an unknown pool", source: "RPCEnvironment::check_pool_exist",
			grants: []grant{g("/vms", "VM.Allocate")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "pool", "nosuch"), want: denied("pool 'nosuch' does not exist")},
		{name: "create: a NIC needs its bridge", source: "QemuServer::check_bridge_access, GuestHelpers::check_vnet_access",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.Network")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "net0", "virtio,bridge=vmbr0"), want: denied("/sdn/zones/localnetwork/vmbr0, SDN.Use")},
		{name: "create: a tagged NIC needs its VLAN", source: "check_vnet_access",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.Network")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "net0", "virtio,bridge=vmbr0,tag=10"), want: denied("/sdn/zones/localnetwork/vmbr0/10, SDN.Use")},
		{name: "create: a trunk needs each VLAN", source: "check_vnet_access, get_tags_from_trunk",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.Network"), g("/sdn/zones/localnetwork/vmbr0/10", "SDN.Use")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "net0", "virtio,bridge=vmbr0,trunks=10;20"), want: denied("/sdn/zones/localnetwork/vmbr0/20, SDN.Use")},
		{name: "create: args is root@pam's", source: "check_vm_modify_config_perm",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.Options", "VM.Config.HWType")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "args", "-no-reboot"), want: "500 only root can set 'args' config"},
		{name: "create: startup needs Sys.Modify", source: "check_vm_modify_config_perm",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.Options")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "startup", "order=1"), want: denied("/, Sys.Modify")},
		{name: "create: a real serial port is root@pam's", source: "check_vm_create_serial_perm",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.HWType")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "serial0", "/dev/ttyS0"), want: "500 only root can set 'serial0' config for real devices"},
		{name: "create: a serial socket needs VM.Config.HWType", source: "check_vm_create_serial_perm",
			grants: []grant{g("/vms/150", "VM.Allocate", "VM.Config.HWType")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "serial0", "socket"), want: "ok"},
		{name: "create: a CD needs read access to the ISO's storage", source: "Storage::check_volume_access",
			grants: []grant{alloc150}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "ide2", isoCDROM), want: denied("/storage/local, Datastore.AllocateSpace|Datastore.Audit")},
		{name: "create: another guest's disk", source: "Storage::check_volume_access",
			grants: []grant{alloc150, g("/storage/local-lvm", "Datastore.Audit")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "scsi0", "local-lvm:vm-100-disk-0"), want: denied("/vms/100, VM.Config.Disk")},
		{name: "create: importing another guest's disk needs VM.Clone on it", source: "check_storage_access (import-from)",
			grants: []grant{alloc150, space("local-lvm")}, method: "POST", path: "/nodes/pve1/qemu",
			args: v("vmid", "150", "scsi0", "local-lvm:0,import-from=local-lvm:vm-100-disk-0"), want: denied("/vms/100, VM.Clone")},
		{name: "restore: the backed-up bridges are checked in the task", source: "QemuServer::check_restore_permissions",
			grants: []grant{g("/vms/9000", "VM.Backup"), space("local-lvm")}, setup: func(e *permEnv) { e.backup("pve1", "9000") },
			method: "POST", path: "/nodes/pve1/qemu", args: v("vmid", "9000", "archive", "{backup9000}", "force", "1", "storage", "local-lvm"),
			want: "ok", task: "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)",
			after: func(t *testing.T, e *permEnv) {
				if g := e.s.st.guests[9000]; g == nil || g.conf["name"] != "debian-12-template" {
					t.Errorf("a refused restore changed VM 9000: %+v", g)
				}
			}},

		{name: "CT create: privileged needs Sys.Modify", source: "pve-container API2/LXC.pm create_vm",
			grants: ctBase, method: "POST", path: "/nodes/pve1/lxc", args: ct("unprivileged", "0"), want: denied("/, Sys.Modify")},
		{name: "CT create: feature flags but nesting are root@pam's", source: "LXC::check_ct_modify_config_perm",
			grants: ctBase, method: "POST", path: "/nodes/pve1/lxc", args: ct("features", "nesting=1,keyctl=1"),
			want: denied("changing feature flags (except nesting) is only allowed for root@pam")},
		{name: "CT create: nesting needs VM.Allocate", source: "check_ct_modify_config_perm",
			grants: ctBase, method: "POST", path: "/nodes/pve1/lxc", args: ct("features", "nesting=1"), want: "ok"},
		{name: "CT create: a bind mount is root@pam's", source: "check_ct_modify_config_perm",
			grants: ctBase, method: "POST", path: "/nodes/pve1/lxc", args: ct("mp0", "/srv,mp=/mnt/srv"),
			want: denied("mount point type bind is only allowed for root@pam")},
		{name: "CT create: the root disk's storage", source: "check_ct_modify_config_perm",
			grants: []grant{g("/vms/250", "VM.Allocate", "VM.Config.Disk"), g("/storage/local", "Datastore.Audit")},
			method: "POST", path: "/nodes/pve1/lxc", args: ct(), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "CT create: the template needs read access", source: "Storage::check_volume_access",
			grants: []grant{g("/vms/250", "VM.Allocate", "VM.Config.Disk"), space("local-lvm")},
			method: "POST", path: "/nodes/pve1/lxc", args: ct(), want: denied("/storage/local, Datastore.AllocateSpace|Datastore.Audit")},
		{name: "CT config: the hostname is a network option", source: "check_ct_modify_config_perm",
			grants: []grant{g("/vms/201", "VM.Config.Options")}, method: "PUT", path: "/nodes/pve2/lxc/201/config",
			args: v("hostname", "x"), want: denied("/vms/201, VM.Config.Network")},
		{name: "CT config: device passthrough is root@pam's", source: "check_ct_modify_config_perm",
			grants: []grant{g("/vms/201", "VM.Config.Options", "VM.Config.Disk")}, method: "PUT", path: "/nodes/pve2/lxc/201/config",
			args: v("dev0", "/dev/ttyUSB0"), want: denied("configuring device passthrough is only allowed for root@pam")},

		{name: "config: each option its class", source: "update_vm_api, check_vm_modify_config_perm",
			grants: []grant{g("/vms/101", "VM.Config.Memory")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("name", "x"), want: denied("/vms/101, VM.Config.Options")},
		{name: "config: tags need VM.Config.Options", source: "GuestHelpers::assert_tag_permissions",
			grants: []grant{g("/vms/101", "VM.Config.Memory")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("tags", "a"), want: denied("/vms/101, VM.Config.Options")},
		{name: "config: a new disk needs its storage", source: "check_storage_access",
			grants: []grant{g("/vms/101", "VM.Config.Disk")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("scsi1", "local-lvm:4"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "config: a CD needs the ISO's storage", source: "check_storage_access, check_volume_access",
			grants: []grant{g("/vms/101", "VM.Config.CDROM")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("ide2", isoCDROM), want: denied("/storage/local, Datastore.AllocateSpace|Datastore.Audit")},
		{name: "config: a CD with read access to the ISO", source: "check_storage_access, check_drive_perms",
			grants: []grant{g("/vms/101", "VM.Config.CDROM"), g("/storage/local", "Datastore.Audit")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("ide2", isoCDROM), want: "ok"},
		{name: "config: deleting a disk needs VM.Config.Disk", source: "update_vm_api $updatefn, check_drive_perms",
			grants: []grant{g("/vms/100", "VM.Config.CDROM")}, method: "PUT", path: "/nodes/pve1/qemu/100/config",
			args: v("delete", "scsi0"), want: denied("/vms/100, VM.Config.Disk")},
		{name: "config (task): deleting a disk needs VM.Config.Disk", source: "update_vm_async, $updatefn in the worker",
			grants: []grant{g("/vms/100", "VM.Config.CDROM")}, method: "POST", path: "/nodes/pve1/qemu/100/config",
			args: v("delete", "scsi0"), want: "ok", task: "Permission check failed (/vms/100, VM.Config.Disk)",
			after: func(t *testing.T, e *permEnv) {
				if e.s.st.guests[100].conf["scsi0"] == "" || len(e.s.st.guests[100].pendDel) > 0 {
					t.Error("a refused config task deleted scsi0")
				}
			}},
		{name: "config: a NIC needs its bridge", source: "check_bridge_access",
			grants: []grant{g("/vms/101", "VM.Config.Network")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("net1", "virtio,bridge=vmbr0"), want: denied("/sdn/zones/localnetwork/vmbr0, SDN.Use")},
		{name: "config: changing a NIC needs its old bridge too", source: "$updatefn, check_bridge_access of the old value",
			grants: []grant{g("/vms/101", "VM.Config.Network"), g("/sdn/zones/localnetwork/vmbr1", "SDN.Use")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("net0", "virtio,bridge=vmbr1"), want: denied("/sdn/zones/localnetwork/vmbr0, SDN.Use")},
		{name: "config: destroying an owned unused disk needs its storage", source: "QemuServer::try_deallocate_drive",
			grants: []grant{g("/vms/102", "VM.Config.Disk")},
			setup: func(e *permEnv) {
				e.root("PUT", "/nodes/pve2/qemu/102/config", v("scsi1", "local-lvm:1"))
				e.root("PUT", "/nodes/pve2/qemu/102/config", v("delete", "scsi1"))
			},
			method: "PUT", path: "/nodes/pve2/qemu/102/config", args: v("delete", "unused0"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "config: a real serial port is root@pam's", source: "$updatefn (serial)",
			grants: []grant{g("/vms/101", "VM.Config.HWType")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("serial0", "/dev/ttyS0"), want: "500 only root can modify 'serial0' config for real devices"},
		{name: "config: a host USB device is root@pam's", source: "check_usb_perm",
			grants: []grant{g("/vms/101", "VM.Config.HWType")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("usb0", "host=1234:5678"), want: "500 only root can set 'usb0' config for real devices"},
		{name: "config: a mapped USB device needs Mapping.Use", source: "check_usb_perm",
			grants: []grant{g("/vms/101", "VM.Config.HWType")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("usb0", "mapping=stick"), want: denied("/mapping/usb/stick, Mapping.Use")},
		{name: "config: a mapped PCI device needs Mapping.Use", source: "check_hostpci_perm",
			grants: []grant{g("/vms/101", "VM.Config.HWType")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("hostpci0", "mapping=gpu"), want: denied("/mapping/pci/gpu, Mapping.Use")},
		{name: "config: a custom CPU model needs Mapping.Use", source: "check_cpu_model_access",
			grants: []grant{g("/vms/101", "VM.Config.CPU")}, method: "PUT", path: "/nodes/pve1/qemu/101/config",
			args: v("cpu", "custom-fast"), want: denied("/mapping/cpu/fast, Mapping.Use")},

		{name: "suspend to disk needs the state storage", source: "vm_suspend",
			grants: []grant{g("/vms/100", "VM.PowerMgmt", "VM.Config.Disk")}, method: "POST", path: "/nodes/pve1/qemu/100/status/suspend",
			args: v("todisk", "1"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "rollback with start needs VM.PowerMgmt", source: "qemu-server rollback",
			grants: []grant{g("/vms/100", "VM.Snapshot.Rollback")}, method: "POST", path: "/nodes/pve1/qemu/100/snapshot/before-upgrade/rollback",
			args: v("start", "1"), want: denied("/vms/100, VM.PowerMgmt")},
		{name: "rollback without start", source: "qemu-server rollback",
			grants: []grant{g("/vms/100", "VM.Snapshot.Rollback")}, method: "POST", path: "/nodes/pve1/qemu/100/snapshot/before-upgrade/rollback",
			want: "ok"},
		{name: "resize: the storage is checked in the task", source: "qemu-server resize_vm",
			grants: []grant{g("/vms/100", "VM.Config.Disk")}, method: "PUT", path: "/nodes/pve1/qemu/100/resize",
			args: v("disk", "scsi0", "size", "+1G"), want: "ok", task: "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)",
			after: func(t *testing.T, e *permEnv) {
				if !strings.HasSuffix(e.s.st.guests[100].conf["scsi0"], "size=32G") {
					t.Errorf("a refused resize grew the disk: %s", e.s.st.guests[100].conf["scsi0"])
				}
			}},
		{name: "CT resize: the disk parameter is an option", source: "pve-container resize_vm, check_ct_modify_config_perm",
			grants: []grant{g("/vms/200", "VM.Config.Disk")}, method: "PUT", path: "/nodes/pve1/lxc/200/resize",
			args: v("disk", "rootfs", "size", "+1G"), want: denied("/vms/200, VM.Config.Options")},
		{name: "CT resize: the storage", source: "pve-container resize_vm",
			grants: []grant{g("/vms/200", "VM.Config.Disk", "VM.Config.Options")}, method: "PUT", path: "/nodes/pve1/lxc/200/resize",
			args: v("disk", "rootfs", "size", "+1G"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},

		{name: "clone: the target storage of each disk", source: "check_storage_access_clone",
			grants: []grant{g("/vms/9000", "VM.Clone"), alloc150}, method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			args: v("newid", "150"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "clone: the bridges", source: "clone_vm, check_bridge_access",
			grants: []grant{g("/vms/9000", "VM.Clone"), alloc150, space("local-lvm")}, method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			args: v("newid", "150"), want: denied("/sdn/zones/localnetwork/vmbr0, SDN.Use")},
		{name: "clone: with every privilege", source: "clone_vm",
			grants: []grant{g("/vms/9000", "VM.Clone"), alloc150, space("local-lvm"), g("/sdn/zones/localnetwork/vmbr0", "SDN.Use")},
			method: "POST", path: "/nodes/pve1/qemu/9000/clone", args: v("newid", "150"), want: "ok"},
		{name: "clone: the pool's VM.Allocate counts only with the pool named", source: "exec_api2_perm_check or, require_param",
			grants: []grant{g("/vms/9000", "VM.Clone"), g("/pool/prod", "VM.Allocate")}, method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			args: v("newid", "150"), want: bare},
		{name: "clone: an unknown pool", source: "check_pool_exist",
			grants: []grant{g("/vms/9000", "VM.Clone"), alloc150, g("/pool", "VM.Allocate")}, method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			args: v("newid", "150", "pool", "nosuch"), want: denied("pool 'nosuch' does not exist")},
		{name: "CT clone: the bridges, in option order", source: "pve-container clone_vm",
			grants: []grant{g("/vms/201", "VM.Clone"), g("/vms/251", "VM.Allocate")}, method: "POST", path: "/nodes/pve2/lxc/201/clone",
			args: v("newid", "251"), want: denied("/sdn/zones/localnetwork/vmbr0, SDN.Use")},
		{name: "CT clone: each volume's storage", source: "pve-container clone_vm",
			grants: []grant{g("/vms/201", "VM.Clone"), g("/vms/251", "VM.Allocate"), g("/sdn/zones/localnetwork/vmbr0", "SDN.Use")},
			method: "POST", path: "/nodes/pve2/lxc/201/clone", args: v("newid", "251"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "migrate: a storage map needs VM.Config.Disk", source: "migrate_vm",
			grants: []grant{g("/vms/101", "VM.Migrate")}, method: "POST", path: "/nodes/pve1/qemu/101/migrate",
			args: v("target", "pve2", "targetstorage", "local-lvm"), want: denied("/vms/101, VM.Config.Disk")},
		{name: "migrate: each target storage", source: "check_storage_access_migrate",
			grants: []grant{g("/vms/101", "VM.Migrate", "VM.Config.Disk")}, method: "POST", path: "/nodes/pve1/qemu/101/migrate",
			args: v("target", "pve2", "targetstorage", "local-lvm"), want: denied("/storage/local-lvm, Datastore.AllocateSpace")},
		{name: "migrate: force is root@pam's", source: "migrate_vm",
			grants: []grant{g("/vms/101", "VM.Migrate")}, method: "POST", path: "/nodes/pve1/qemu/101/migrate",
			args: v("target", "pve2", "force", "1"), want: "400 force: Only root may use this option."},

		{name: "vzdump: a listed guest without VM.Backup fails the job", source: "VZDump::exec_backup",
			grants: []grant{space("backup"), g("/vms/100", "VM.Backup")}, method: "POST", path: "/nodes/pve1/vzdump",
			args: v("vmid", "100,101", "storage", "backup"), want: "ok", task: "Permission check failed (/vms/101, VM.Backup)",
			after: func(t *testing.T, e *permEnv) {
				if n := len(e.s.st.storage("backup").volumesOn("pve1")); n != 0 {
					t.Errorf("a refused backup job wrote %d archives", n)
				}
			}},
		{name: "vzdump all: guests without VM.Backup are skipped", source: "VZDump::exec_backup",
			grants: []grant{space("backup"), g("/vms/100", "VM.Backup")}, method: "POST", path: "/nodes/pve1/vzdump",
			args: v("all", "1", "storage", "backup"), want: "ok", task: "OK",
			after: func(t *testing.T, e *permEnv) {
				vols := e.s.st.storage("backup").volumesOn("pve1")
				if len(vols) != 1 || vols[0].vmid != 100 {
					t.Errorf("backups %+v, want only VM 100's", vols)
				}
			}},
		{name: "delete a backup without VM.Backup", source: "pve-storage Content.pm delete",
			grants: []grant{space("backup")}, setup: func(e *permEnv) { e.backup("pve1", "100") },
			method: "DELETE", path: "/nodes/pve1/storage/backup/content/{backup100}", want: denied("/vms/100, VM.Backup")},
		{name: "a volume of another storage than the path's", source: "Content.pm real_volume_id",
			grants: []grant{g("/", "Datastore.Allocate")}, method: "GET", path: "/nodes/pve1/storage/local/content/{disk100}",
			want: "400 volume: storage ID mismatch (local-lvm != local)"},

		{name: "stopping another's task needs Sys.Modify only", source: "pve-manager Tasks.pm stop_task",
			grants: []grant{g("/nodes/pve1", "Sys.Modify")}, setup: (*permEnv).foreignTask,
			method: "DELETE", path: "/nodes/pve1/tasks/{upid}", want: "ok"},
		{name: "reading another's task needs Sys.Audit", source: "Tasks.pm read_task_status",
			grants: []grant{g("/nodes/pve1", "Sys.Modify")}, setup: (*permEnv).foreignTask,
			method: "GET", path: "/nodes/pve1/tasks/{upid}/status", want: denied("/nodes/pve1, Sys.Audit")},
		{name: "another's permissions need Sys.Audit on /access", source: "AccessControl.pm permissions",
			grants: []grant{g("/vms/100", "VM.Audit")}, method: "GET", path: "/access/permissions",
			args: v("userid", "mcp@pve!operator"), want: denied("/access, Sys.Audit")},
		{name: "a token's user is not the token", source: "AccessControl.pm permissions",
			grants: []grant{g("/vms/100", "VM.Audit")}, method: "GET", path: "/access/permissions",
			args: v("userid", "alice@pve"), want: denied("/access, Sys.Audit")},
		{name: "perm-modify admits the allocation privilege", source: "RPCEnvironment::check_perm_modify",
			grants: []grant{g("/vms/100", "VM.Audit")}, method: "PUT", path: "/access/acl",
			args: v("path", "/vms/100", "roles", "PVEVMUser", "users", "bob@pve"), want: denied("/vms/100, Permissions.Modify|VM.Allocate")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newPermEnv(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			tok := e.token(tc.grants...)
			a := e.doAs(tok, tc.method, tc.path, tc.args)
			if got := a.String(); got != tc.want {
				t.Fatalf("%s %s %v (%s): %s, want %s", tc.method, tc.path, tc.args, tc.source, got, tc.want)
			}
			if tc.task != "" {
				var upid string
				if err := json.Unmarshal(a.data, &upid); err != nil || upid == "" {
					t.Fatalf("no task: %s", a.data)
				}
				if exit := e.finish(upid); exit != tc.task {
					t.Errorf("task exit %q, want %q (%s)", exit, tc.task, tc.source)
				}
			}
			if tc.after != nil {
				tc.after(t, e)
			}
		})
	}
}

// Reproduces: a token of root@pam was treated as root@pam, so
// root@pam!sim passed the root-only checks PVE makes against the
// authenticated ID (the token ID).
func TestRootTokenIsNotRoot(t *testing.T) {
	e := newPermEnv(t)
	if got := e.do("root@pam!sim", "GET", "/cluster/backup-info", nil).String(); got != denied("user != root@pam") {
		t.Errorf("an endpoint without permissions as root@pam!sim: %s", got)
	}
	if got := e.do("root@pam!sim", "POST", "/nodes/pve1/qemu/101/status/start", v("skiplock", "1")).String(); got != "400 skiplock: Only root may use this option." {
		t.Errorf("skiplock as root@pam!sim: %s", got)
	}
}

// list calls a GET as a token and decodes the list.
func (e *permEnv) list(tok Token, path string, args url.Values) []map[string]any {
	e.t.Helper()
	a := e.doAs(tok, "GET", path, args)
	if a.status != http.StatusOK {
		e.t.Fatalf("GET %s: %s", path, a)
	}
	var out []map[string]any
	if err := json.Unmarshal(a.data, &out); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return out
}

// The lists PVE filters per item in code, for a token that may audit VM
// 100 and nothing else (each reproduces what the simulator answered
// before: nodes with their load, a pool the token may not see, bridges,
// other users' log lines, cluster tasks by per-node rules, disk images
// and backups to an auditor).
func TestListsFilterPerItem(t *testing.T) {
	e := newPermEnv(t)
	tok := e.token(g("/vms/100", "VM.Audit"), g("/vms/101", "VM.PowerMgmt"), g("/nodes/pve1", "Sys.Audit"))
	own := e.doAs(tok, "POST", "/nodes/pve1/qemu/101/status/start", nil)
	if own.status != http.StatusOK {
		t.Fatalf("start: %s", own)
	}

	// pve-manager Nodes.pm index: every node, load only with Sys.Audit.
	nodes := e.list(tok, "/nodes", nil)
	if len(nodes) != 3 {
		t.Errorf("/nodes lists %d nodes, want all 3", len(nodes))
	}
	for _, n := range nodes {
		if _, hasCPU := n["cpu"]; hasCPU != (n["node"] == "pve1") {
			t.Errorf("node %v: load shown %v, want only with Sys.Audit (pve1)", n["node"], hasCPU)
		}
	}
	// Cluster.pm resources: VM 100 only, without the pool it may not audit.
	vms := e.list(tok, "/cluster/resources", v("type", "vm"))
	if len(vms) != 1 || vms[0]["vmid"] != float64(100) || vms[0]["pool"] != nil {
		t.Errorf("resources %v, want VM 100 without its pool", vms)
	}
	// Network.pm index: no bridge without SDN access.
	for _, ifc := range e.list(tok, "/nodes/pve1/network", nil) {
		if ifc["type"] == "bridge" {
			t.Errorf("bridge %v listed without SDN.Audit or SDN.Use", ifc["iface"])
		}
	}
	// Cluster.pm log: only the caller's own lines without Sys.Syslog.
	for _, l := range e.list(tok, "/cluster/log", nil) {
		if l["user"] != "alice@pve!t" {
			t.Errorf("log line of %v shown", l["user"])
		}
	}
	// Cluster.pm tasks: Sys.Audit on / or nothing (a token never owns by
	// its user's name).
	if tasks := e.list(tok, "/cluster/tasks", nil); len(tasks) != 0 {
		t.Errorf("cluster tasks %v without Sys.Audit on /", tasks)
	}
	// Tasks.pm node_tasks: all of pve1's with Sys.Audit on it, running
	// ones too with source all.
	if tasks := e.list(tok, "/nodes/pve1/tasks", v("source", "all")); len(tasks) == 0 {
		t.Error("node tasks empty with Sys.Audit on the node")
	}

	// Content.pm index: an auditor sees ISOs and templates, not disk
	// images (VM.Config.Disk) or backups (AllocateSpace and VM.Backup).
	e.backup("pve1", "100")
	count := func(tokID, storage string) int {
		tk, _ := e.s.Token(tokID)
		return len(e.list(tk, "/nodes/pve1/storage/"+storage+"/content", nil))
	}
	for _, tc := range []struct {
		tok     string
		storage string
		want    int
	}{
		{"mcp@pve!read-only", "local", 2}, {"mcp@pve!read-only", "local-lvm", 0}, {"mcp@pve!read-only", "backup", 0},
		{"mcp@pve!operator", "local-lvm", 0}, {"mcp@pve!operator", "backup", 1},
		{"mcp@pve!admin", "local-lvm", 4}, {"mcp@pve!admin", "backup", 1},
	} {
		if got := count(tc.tok, tc.storage); got != tc.want {
			t.Errorf("%s lists %d volumes on %s, want %d", tc.tok, got, tc.storage, tc.want)
		}
	}

	// AccessControl.pm permissions: the answer is about the subject.
	auditor := newPermEnv(t)
	at := auditor.token(g("/access", "Sys.Audit"))
	a := auditor.doAs(at, "GET", "/access/permissions", v("userid", "mcp@pve!operator", "path", "/vms/100"))
	var perms map[string]map[string]int
	if err := json.Unmarshal(a.data, &perms); err != nil || perms["/vms/100"]["VM.PowerMgmt"] != 1 {
		t.Errorf("the operator's privileges on /vms/100 read by an auditor: %s %s", a, a.data)
	}
}

// The cdrom parameter is ide2 with media=cdrom (resolve_cdrom_alias), and
// is checked as that drive: an ISO needs read access to its storage.
func TestCDROMAliasIsCheckedAsIDE2(t *testing.T) {
	e := newPermEnv(t)
	tok := e.token(g("/vms/101", "VM.Config.CDROM"))
	iso := "local:iso/debian-12.8.0-amd64-netinst.iso"
	if got := e.doAs(tok, "PUT", "/nodes/pve1/qemu/101/config", v("cdrom", iso)).String(); got != denied("/storage/local, Datastore.AllocateSpace|Datastore.Audit") {
		t.Errorf("cdrom=%s without access to local: %s", iso, got)
	}
	e.root("PUT", "/nodes/pve1/qemu/101/config", v("cdrom", iso))
	if conf := e.s.st.guests[101].conf; conf["ide2"] != iso+",media=cdrom" || conf["cdrom"] != "" {
		t.Errorf("cdrom was written as ide2=%q cdrom=%q", conf["ide2"], conf["cdrom"])
	}
}
