package proxmox_mcp.profiles.guest_exec_test

# proxmox_guest_exec (input.host.op guest.exec) in each built-in profile:
# read-only never, operator with confirmation in every guest it may power,
# admin and root always. The engine still denies a shell, interpreter or
# launcher whose path no reason names (policy/eval.go applyRunsOthers).

import data.proxmox_mcp.profiles.admin
import data.proxmox_mcp.profiles.operator
import data.proxmox_mcp.profiles.read_only
import data.proxmox_mcp.profiles.root

guest_exec(kind, vmid, argv) := {
	"tool": "proxmox_guest_exec", "method": "", "path": "", "risk": "destructive", "params": {},
	"endpoint": {}, "guard": {"evaluated": true, "hits": []},
	"host": {
		"op": "guest.exec", "path": "", "root": "",
		"guest": {"vmid": vmid, "type": kind, "node": "pve1"},
		"command": {"path": argv[0], "argv": argv, "cwd": "/", "class": "", "writable": [], "timeout_sec": 60},
	},
}

test_read_only_may_not_exec_in_guests if {
	d := read_only.host_decision with input as guest_exec("qemu", 100, ["uname", "-a"])
	d.effect == "deny"
	read_only.host_decision.effect == "deny" with input as guest_exec("lxc", 200, ["true"])
}

test_operator_execs_in_guests_with_confirmation if {
	d := operator.host_decision with input as guest_exec("qemu", 100, ["systemctl", "status", "nginx"])
	d.effect == "confirm"
	d.obligations == [{"type": "confirm", "approver": "self"}]
	d.reasons == ["running a command inside qemu guest 100 needs confirmation"]
	c := operator.host_decision with input as guest_exec("lxc", 200, ["true"])
	c.effect == "confirm"
	c.reasons == ["running a command inside lxc guest 200 needs confirmation"]
}

test_operator_host_exec_is_not_guest_exec if {
	# The same program on the host is a host command, not a guest's.
	req := object.union(guest_exec("qemu", 100, ["rm", "-rf", "/srv"]), {"host": {"op": "command.exec", "guest": null}})
	operator.host_decision.effect == "deny" with input as req
}

test_admin_and_root_exec_in_guests if {
	admin.host_decision.effect == "allow" with input as guest_exec("qemu", 100, ["apt-get", "update"])
	admin.host_decision.effect == "allow" with input as guest_exec("lxc", 200, ["true"])
	root.host_decision.effect == "allow" with input as guest_exec("qemu", 102, ["true"])
}
