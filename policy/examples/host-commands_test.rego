package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

cmd(who, path, argv, writable) := {
	"principal": {"name": who}, "risk": "destructive", "guard": {"evaluated": true, "hits": []},
	"host": {"op": "command.exec", "command": {"path": path, "argv": argv, "cwd": "/", "class": "", "writable": writable, "timeout_sec": 60}},
}

file(op, path, risk) := {
	"principal": {"name": "bob"}, "risk": risk, "guard": {"evaluated": true, "hits": []},
	"host": {"op": op, "path": path, "root": "/srv"},
}

test_alice_runs_her_commands if {
	policy.host_decision.effect == "allow" with input as cmd("alice", "/usr/sbin/zfs", ["zfs", "list", "-t", "snapshot", "-o", "name,used,creation"], [])
	policy.host_decision.effect == "allow" with input as cmd("alice", "/usr/sbin/nvme", ["nvme", "smart-log", "/dev/nvme0"], [])
	d := policy.host_decision with input as cmd("alice", "/usr/bin/python3.13", ["python3", "/srv/app/report.py"], ["/srv/app/reports"])
	d.effect == "allow"
	contains(d.reasons[0], "/usr/bin/python3.13")
}

test_others_do_not if {
	policy.host_decision.effect == "deny" with input as cmd("bob", "/usr/sbin/zfs", ["zfs", "list", "-t", "snapshot", "-o", "name,used,creation"], [])
	policy.host_decision.effect == "deny" with input as cmd("alice", "/usr/sbin/zfs", ["zfs", "destroy", "rpool/data@x"], [])
	policy.host_decision.effect == "deny" with input as cmd("alice", "/usr/bin/python3.13", ["python3", "-c", "print(1)"], [])
	policy.host_decision.effect == "deny" with input as cmd("alice", "/usr/bin/python3.13", ["python3", "/srv/app/report.py"], ["/srv"])
}

test_diagnostics_for_everyone if {
	policy.host_decision.effect == "allow" with input as cmd("bob", "/usr/bin/df", ["df", "-h"], [])
}

test_files_under_srv_app if {
	policy.host_decision.effect == "allow" with input as file("file.write", "/srv/app/app.conf", "write")
	policy.host_decision.effect == "allow" with input as file("file.read", "/srv/app", "read")
	policy.host_decision.effect == "deny" with input as file("file.read", "/srv/application/x", "read")
	policy.host_decision.effect == "deny" with input as file("file.read", "/etc/hostname", "read")
}
