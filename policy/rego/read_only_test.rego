package proxmox_mcp.profiles.read_only_test

import data.proxmox_mcp.profiles.read_only

no_guard := {"evaluated": true, "hits": []}

call(method, path, risk) := {
	"method": method, "path": path, "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false}, "guard": no_guard,
}

# An endpoint the schema says answers with secrets (input.endpoint is
# filled by the daemon from schema.Facts, never by the caller).
secret_call(method, path, risk) := object.union(call(method, path, risk), {"endpoint": {"returns_secrets": true}})

test_reads_are_allowed if {
	read_only.decision.effect == "allow" with input as call("GET", "/nodes/{node}/qemu", "read")
	read_only.decision.effect == "allow" with input as call("GET", "/cluster/resources", "read")
}

test_writes_are_denied if {
	d := read_only.decision with input as call("POST", "/nodes/{node}/qemu/{vmid}/status/start", "write")
	d.effect == "deny"
	d.reasons == ["read-only keys may only read; this call changes state"]
	read_only.decision.effect == "deny" with input as call("DELETE", "/nodes/{node}/qemu/{vmid}", "destructive")
}

test_secret_reads_are_denied if {
	every path in [
		"/nodes/{node}/qemu/{vmid}/vncwebsocket",
		"/nodes/{node}/qemu/{vmid}/agent/file-read",
		"/nodes/{node}/qemu/{vmid}/cloudinit/dump",
		"/nodes/{node}/storage/{storage}/file-restore/download",
		"/cluster/acme/plugins/{id}",
		"/nodes/{node}/vncwebsocket",
	] {
		read_only.decision.effect == "deny" with input as secret_call("GET", path, "read")
	}
}

test_expose_credentials_is_denied if {
	req := object.union(call("GET", "/cluster/metrics/export", "read"), {"endpoint": {"expose_credentials": true}})
	d := read_only.decision with input as req
	d.effect == "deny"
	contains(d.reasons[0], "secrets")
}

test_a_risk_read_claim_on_a_ticket_endpoint_is_denied if {
	read_only.decision.effect == "deny" with input as secret_call("POST", "/access/ticket", "read")
}

# A call by which a guest reaches the host (input.reaches_host, filled by
# the daemon from the call's validated values) is denied; the engine adds
# a reason naming the items (policy/eval.go).
usb_host := {"param": "usb0", "kind": "usb_host", "value": "host=1234:5678", "detail": "passes the host's USB device 1234:5678 to the guest"}

test_reaching_the_host_is_denied if {
	req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write"), {"params": {"usb0": "host=1234:5678"}, "reaches_host": [usb_host]})
	read_only.decision.effect == "deny" with input as req
}

host(op, path, risk) := {
	"tool": "proxmox_host_file_read", "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": no_guard,
	"host": {"op": op, "path": path, "root": "/var/log"},
}

test_host_reads_under_var_log_are_allowed if {
	read_only.host_decision.effect == "allow" with input as host("file.read", "/var/log/syslog", "read")
	read_only.host_decision.effect == "allow" with input as host("file.list", "/var/log", "read")
	read_only.host_decision.effect == "allow" with input as host("file.stat", "/var/log/pve/tasks/index", "read")
}

test_host_operations_elsewhere_are_denied if {
	read_only.host_decision.effect == "deny" with input as host("file.read", "/etc/pve/storage.cfg", "read")
	# A sibling whose name starts like the directory is not in it.
	read_only.host_decision.effect == "deny" with input as host("file.read", "/var/logs/x", "read")
	read_only.host_decision.effect == "deny" with input as host("file.write", "/var/log/syslog", "write")
	read_only.host_decision.effect == "deny" with input as host("file.list", "/var", "read")
}

service(op, unit, action, risk) := {
	"tool": {"service.status": "proxmox_host_service", "service.control": "proxmox_host_service_control"}[op], "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": no_guard,
	"host": {"op": op, "path": "", "root": "", "unit": unit, "action": action},
}

test_service_status_is_allowed if {
	read_only.host_decision.effect == "allow" with input as service("service.status", "pveproxy.service", "", "read")
}

test_service_control_is_denied if {
	read_only.host_decision.effect == "deny" with input as service("service.control", "cron.service", "restart", "destructive")
}

cmd(path, argv, writable) := {
	"tool": "proxmox_host_exec", "method": "", "path": "", "risk": "destructive", "params": {},
	"endpoint": {}, "guard": no_guard,
	"host": {"op": "command.exec", "path": "", "root": "", "command": {"path": path, "argv": argv, "cwd": "/", "class": "", "writable": writable, "timeout_sec": 60}},
}

test_reviewed_diagnostics_are_allowed if {
	read_only.host_decision.effect == "allow" with input as cmd("/usr/bin/pveversion", ["pveversion", "-v"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/sbin/zpool", ["zpool", "status"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/sbin/zpool", ["/sbin/zpool", "status", "-x", "rpool"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/bin/lsblk", ["lsblk", "-J"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/sbin/smartctl", ["smartctl", "-j", "-a", "/dev/nvme0n1"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/bin/ip", ["ip", "-j", "addr"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/bin/journalctl", ["journalctl", "-u", "pveproxy.service", "-n", "50", "-o", "json"], [])
	read_only.host_decision.effect == "allow" with input as cmd("/usr/bin/journalctl", ["journalctl", "-u", "pveproxy", "-n", "1000", "-o", "json", "--no-pager"], [])
}

test_other_shapes_are_denied if {
	# Another argument shape of a reviewed program.
	read_only.host_decision.effect == "deny" with input as cmd("/usr/sbin/zpool", ["zpool", "destroy", "rpool"], [])
	read_only.host_decision.effect == "deny" with input as cmd("/usr/sbin/zpool", ["zpool", "status", "-x", "rpool", "tank"], [])
	read_only.host_decision.effect == "deny" with input as cmd("/usr/sbin/smartctl", ["smartctl", "-j", "-a", "/dev/sda", "-s", "on"], [])
	read_only.host_decision.effect == "deny" with input as cmd("/usr/sbin/smartctl", ["smartctl", "-j", "-a", "/etc/shadow"], [])
	read_only.host_decision.effect == "deny" with input as cmd("/usr/bin/journalctl", ["journalctl", "-u", "x", "-n", "1001", "-o", "json"], [])
	read_only.host_decision.effect == "deny" with input as cmd("/usr/bin/journalctl", ["journalctl", "-u", "--flush", "-n", "5", "-o", "json"], [])
	# The same name elsewhere than the system's directories.
	read_only.host_decision.effect == "deny" with input as cmd("/usr/local/bin/df", ["df"], [])
	# A diagnostic asking to write.
	read_only.host_decision.effect == "deny" with input as cmd("/usr/bin/df", ["df"], ["/srv"])
	read_only.host_decision.effect == "deny" with input as cmd("/usr/bin/rm", ["rm", "-rf", "/"], [])
}
