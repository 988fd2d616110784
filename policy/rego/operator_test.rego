package proxmox_mcp.profiles.operator_test

import data.proxmox_mcp.profiles.operator

no_guard := {"evaluated": true, "hits": []}

call(method, path, risk) := {
	"method": method, "path": path, "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false}, "guard": no_guard,
}

test_reads_are_allowed if {
	operator.decision.effect == "allow" with input as call("GET", "/nodes/{node}/qemu/{vmid}/status/current", "read")
}

test_gentle_power_actions_are_allowed if {
	every a in ["start", "shutdown", "reboot", "suspend", "resume"] {
		operator.decision.effect == "allow" with input as call("POST", concat("", ["/nodes/{node}/qemu/{vmid}/status/", a]), "write")
	}
	operator.decision.effect == "allow" with input as call("POST", "/nodes/{node}/lxc/{vmid}/status/start", "write")
}

test_hard_stop_and_reset_need_confirmation if {
	d := operator.decision with input as call("POST", "/nodes/{node}/qemu/{vmid}/status/stop", "destructive")
	d.effect == "confirm"
	d.obligations == [{"type": "confirm", "approver": "self"}]
	operator.decision.effect == "confirm" with input as call("POST", "/nodes/{node}/qemu/{vmid}/status/reset", "destructive")
}

test_snapshots_and_backups if {
	operator.decision.effect == "allow" with input as call("POST", "/nodes/{node}/qemu/{vmid}/snapshot", "write")
	operator.decision.effect == "confirm" with input as call("POST", "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", "destructive")
	operator.decision.effect == "confirm" with input as call("DELETE", "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}", "destructive")
	operator.decision.effect == "allow" with input as call("POST", "/nodes/{node}/vzdump", "write")
}

test_vzdump_hook_script_is_denied if {
	req := object.union(call("POST", "/nodes/{node}/vzdump", "write"), {"params": {"script": "/root/x.sh"}})
	d := operator.decision with input as req
	d.effect == "deny"
	contains(d.reasons[0], "host paths")
}

test_other_changes_are_denied if {
	operator.decision.effect == "deny" with input as call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write")
	operator.decision.effect == "deny" with input as call("DELETE", "/nodes/{node}/qemu/{vmid}", "destructive")
	operator.decision.effect == "deny" with input as call("POST", "/nodes/{node}/qemu/{vmid}/vncproxy", "write")
}

test_guard_hit_denies_power_actions if {
	req := object.union(call("POST", "/nodes/{node}/qemu/{vmid}/status/start", "write"), {"guard": {"evaluated": true, "hits": [{"kind": "device", "value": "/dev/pve/model-repo", "param": "scsi1"}]}})
	d := operator.decision with input as req
	d.effect == "deny"
	contains(d.reasons[0], "/dev/pve/model-repo")
}

# A call by which a guest reaches the host is denied, whether it is a
# config edit or arrives on a guest operation's endpoint.
bind_mount := {"param": "mp0", "kind": "bind_mount", "value": "/srv,mp=/mnt", "detail": "bind-mounts the host directory /srv into the container"}

test_reaching_the_host_is_denied if {
	req := object.union(call("PUT", "/nodes/{node}/lxc/{vmid}/config", "write"), {"params": {"mp0": "/srv,mp=/mnt"}, "reaches_host": [bind_mount]})
	operator.decision.effect == "deny" with input as req
	create := object.union(call("POST", "/nodes/{node}/qemu", "destructive"), {"params": {"force": true}, "reaches_host": [{"param": "force", "kind": "overwrite_vmid", "value": "1", "detail": "lets the call overwrite the existing guest 100"}]})
	operator.decision.effect == "deny" with input as create
}

host(op, path, risk) := {
	"tool": "proxmox_host_file_read", "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": no_guard,
	"host": {"op": op, "path": path, "root": "/var/log"},
}

test_host_reads_under_var_log_are_allowed if {
	operator.host_decision.effect == "allow" with input as host("file.read", "/var/log/syslog", "read")
	operator.host_decision.effect == "allow" with input as host("file.list", "/var/log", "read")
	operator.host_decision.effect == "allow" with input as host("file.stat", "/var/log/pve/tasks/index", "read")
}

test_host_operations_elsewhere_are_denied if {
	operator.host_decision.effect == "deny" with input as host("file.read", "/etc/pve/storage.cfg", "read")
	# A sibling whose name starts like the directory is not in it.
	operator.host_decision.effect == "deny" with input as host("file.read", "/var/logs/x", "read")
	operator.host_decision.effect == "deny" with input as host("file.write", "/var/log/syslog", "write")
	operator.host_decision.effect == "deny" with input as host("file.list", "/var", "read")
}

service(op, unit, action, risk) := {
	"tool": {"service.status": "proxmox_host_service", "service.control": "proxmox_host_service_control"}[op], "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": no_guard,
	"host": {"op": op, "path": "", "root": "", "unit": unit, "action": action},
}

test_service_status_is_allowed if {
	operator.host_decision.effect == "allow" with input as service("service.status", "pveproxy.service", "", "read")
}

test_service_control_is_denied if {
	operator.host_decision.effect == "deny" with input as service("service.control", "cron.service", "restart", "destructive")
}
