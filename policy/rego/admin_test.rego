package proxmox_mcp.profiles.admin_test

import data.proxmox_mcp.profiles.admin

no_guard := {"evaluated": true, "hits": []}

call(method, path, risk) := {
	"method": method, "path": path, "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false}, "guard": no_guard,
}

test_api_calls_are_allowed if {
	admin.decision.effect == "allow" with input as call("DELETE", "/nodes/{node}/qemu/{vmid}", "destructive")
	admin.decision.effect == "allow" with input as call("POST", "/access/users/{userid}/token/{tokenid}", "write")
	admin.decision.effect == "allow" with input as call("POST", "/nodes/{node}/qemu/{vmid}/vncproxy", "write")
	admin.decision.effect == "allow" with input as call("GET", "/cluster/acme/plugins/{id}", "read")
}

test_host_shells_are_denied if {
	every path in ["/nodes/{node}/vncshell", "/nodes/{node}/termproxy", "/nodes/{node}/spiceshell", "/nodes/{node}/execute", "/nodes/{node}/qemu/{vmid}/monitor"] {
		d := admin.decision with input as call("POST", path, "destructive")
		d.effect == "deny"
		contains(d.reasons[0], "host shell")
	}
	admin.decision.effect == "deny" with input as call("GET", "/nodes/{node}/vncwebsocket", "read")
}

test_hookscript_is_denied if {
	req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write"), {"params": {"hookscript": "local:snippets/h.sh"}})
	admin.decision.effect == "deny" with input as req
}

# One item of each kind, as the daemon builds them (policy/hostreach.go).
reach_items := [
	{"param": "hookscript", "kind": "hookscript", "value": "local:snippets/h.sh", "detail": "runs the host script local:snippets/h.sh as root at each step of guest 100's life"},
	{"param": "args", "kind": "qemu_args", "value": "-foo", "detail": "passes raw arguments to the host's QEMU process: -foo"},
	{"param": "hostpci0", "kind": "pci_passthrough", "value": "0000:01:00.0", "detail": "passes the host's PCI device 0000:01:00.0 to the guest"},
	{"param": "usb0", "kind": "usb_host", "value": "host=1234:5678", "detail": "passes the host's USB device 1234:5678 to the guest"},
	{"param": "serial0", "kind": "serial_host", "value": "/dev/ttyS0", "detail": "passes the host's serial device /dev/ttyS0 to the guest"},
	{"param": "parallel0", "kind": "parallel_host", "value": "/dev/parport0", "detail": "passes the host's parallel device /dev/parport0 to the guest"},
	{"param": "ivshmem", "kind": "host_shared_memory", "value": "size=32,name=chan", "detail": "shares memory with the host and with every VM given the same name: size=32,name=chan"},
	{"param": "scsi1", "kind": "host_disk", "value": "/dev/sda", "detail": "gives the guest the host's device or file /dev/sda as a disk"},
	{"param": "mp0", "kind": "bind_mount", "value": "/srv,mp=/mnt", "detail": "bind-mounts the host directory /srv into the container"},
	{"param": "dev0", "kind": "device_passthrough", "value": "/dev/ttyUSB0", "detail": "passes the host device /dev/ttyUSB0 into the container"},
	{"param": "lxc.apparmor.profile", "kind": "raw_lxc", "value": "unconfined", "detail": "sets a raw LXC key, which PVE does not check"},
	{"param": "unprivileged", "kind": "privileged", "value": "0", "detail": "makes guest 200 a privileged container (its root is the host's root)"},
	{"param": "features", "kind": "container_features", "value": "keyctl=1", "detail": "turns on keyctl, which widens the container's reach into the host's kernel"},
	{"param": "map", "kind": "host_mapping", "value": "node=pve1,path=/srv", "detail": "maps the host directory node=pve1,path=/srv for every guest given the mapping"},
	{"param": "force", "kind": "overwrite_vmid", "value": "1", "detail": "lets the call overwrite the existing guest 100"},
	{"param": "protection", "kind": "protection_off", "value": "0", "detail": "turns PVE's protection of guest 100 off"},
]

test_reaching_the_host_is_denied_naming_each_item if {
	every r in reach_items {
		req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write"), {"params": {r.param: r.value}, "reaches_host": [r]})
		d := admin.decision with input as req
		d.effect == "deny"
		d.reasons == [concat("", ["admin keys may not let a guest reach the host: the call reaches the host from a guest (", r.param, " ", r.detail, " (", r.kind, ")); a policy must allow this explicitly"])]
	}
}

test_every_item_is_named if {
	req := object.union(call("POST", "/nodes/{node}/qemu", "destructive"), {"reaches_host": [reach_items[1], reach_items[3]]})
	d := admin.decision with input as req
	d.effect == "deny"
	contains(d.reasons[0], "args passes raw arguments to the host's QEMU process: -foo (qemu_args); usb0 passes the host's USB device 1234:5678 to the guest (usb_host)")
}

test_no_items_is_allowed if {
	req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write"), {"params": {"usb0": "mapping=foo"}, "reaches_host": []})
	admin.decision.effect == "allow" with input as req
}

test_backup_host_paths_stay_denied if {
	every p in ["script", "dumpdir", "tmpdir"] {
		req := object.union(call("POST", "/nodes/{node}/vzdump", "write"), {"params": {p: "/root/x"}, "reaches_host": []})
		d := admin.decision with input as req
		d.effect == "deny"
		contains(d.reasons[0], "host paths")
	}
}

test_guard_comes_before_host_reach if {
	req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write"), {
		"reaches_host": [reach_items[7]],
		"guard": {"evaluated": true, "hits": [{"kind": "device", "value": "/dev/sda", "param": "scsi1"}]},
	})
	d := admin.decision with input as req
	d.effect == "deny"
	contains(d.reasons[0], "cannot request break-glass")
}

test_no_breakglass if {
	req := object.union(call("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", "destructive"), {"guard": {"evaluated": true, "hits": [{"kind": "volume", "value": "local-lvm:model-repo", "param": "volume"}]}})
	d := admin.decision with input as req
	d.effect == "deny"
	contains(d.reasons[0], "cannot request break-glass")
}

test_guard_does_not_apply_to_reads if {
	req := object.union(call("GET", "/nodes/{node}/storage/{storage}/content/{volume}", "read"), {"guard": {"evaluated": true, "hits": [{"kind": "volume", "value": "local-lvm:model-repo", "param": "volume"}]}})
	admin.decision.effect == "allow" with input as req
}

host(op, path, risk, hits) := {
	"tool": "proxmox_host_file_write", "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": {"evaluated": true, "hits": hits},
	"host": {"op": op, "path": path, "root": "/etc"},
}

test_host_files_are_allowed if {
	admin.host_decision.effect == "allow" with input as host("file.read", "/etc/pve/storage.cfg", "read", [])
	admin.host_decision.effect == "allow" with input as host("file.write", "/etc/default/grub", "write", [])
}

test_host_writes_to_the_repository_are_denied if {
	d := admin.host_decision with input as host("file.write", "/mnt/model-repo/a", "write", [{"kind": "path", "value": "/mnt/model-repo", "param": "path"}])
	d.effect == "deny"
	contains(d.reasons[0], "admin keys cannot request break-glass")
}

test_other_host_operations_are_denied if {
	admin.host_decision.effect == "deny" with input as host("exec.run", "/usr/bin/bash", "destructive", [])
}

service(op, unit, action, risk) := {
	"tool": {"service.status": "proxmox_host_service", "service.control": "proxmox_host_service_control"}[op], "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": {"evaluated": true, "hits": []},
	"host": {"op": op, "path": "", "root": "", "unit": unit, "action": action},
}

test_services_are_controlled if {
	admin.host_decision.effect == "allow" with input as service("service.status", "pveproxy.service", "", "read")
	admin.host_decision.effect == "allow" with input as service("service.control", "cron.service", "restart", "destructive")
}

test_pve_services_need_confirmation if {
	d := admin.host_decision with input as service("service.control", "pve-cluster.service", "stop", "destructive")
	d.effect == "confirm"
	contains(d.reasons[0], "pve-cluster.service")
}
