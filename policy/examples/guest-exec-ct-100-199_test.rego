package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

guest(type, vmid, argv) := {
	"principal": {"name": "carol"}, "risk": "destructive", "guard": {"evaluated": true, "hits": []},
	"host": {"op": "guest.exec", "guest": {"vmid": vmid, "type": type, "node": "pve1"}, "command": {"path": argv[0], "argv": argv, "cwd": "/", "class": "", "writable": [], "timeout_sec": 60}},
}

test_containers_in_range_confirm if {
	d := policy.host_decision with input as guest("lxc", 150, ["systemctl", "restart", "nginx"])
	d.effect == "confirm"
	d.reasons == [`run ["systemctl", "restart", "nginx"] inside container 150`]
}

test_others_are_denied if {
	policy.host_decision.effect == "deny" with input as guest("lxc", 200, ["id"])
	policy.host_decision.effect == "deny" with input as guest("lxc", 99, ["id"])
	policy.host_decision.effect == "deny" with input as guest("qemu", 150, ["id"])
}

test_host_commands_are_denied if {
	policy.host_decision.effect == "deny" with input as {"principal": {"name": "carol"}, "risk": "destructive", "guard": {"evaluated": true, "hits": []}, "host": {"op": "command.exec", "command": {"path": "/usr/bin/id", "argv": ["id"], "writable": []}}}
}
