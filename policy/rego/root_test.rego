package proxmox_mcp.profiles.root_test

import data.proxmox_mcp.profiles.root

call(method, path, risk, hits) := {
	"method": method, "path": path, "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false}, "guard": {"evaluated": true, "hits": hits},
}

test_everything_is_allowed if {
	root.decision.effect == "allow" with input as call("POST", "/nodes/{node}/termproxy", "destructive", [])
	root.decision.effect == "allow" with input as call("POST", "/nodes/{node}/execute", "destructive", [])
	root.decision.effect == "allow" with input as call("GET", "/version", "read", [])
}

test_guard_needs_breakglass if {
	hits := [{"kind": "path", "value": "/mnt/model-repo", "param": "path"}]
	d := root.decision with input as call("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", "destructive", hits)
	d.effect == "breakglass"
	d.reasons == ["the call touches the protected repository (/mnt/model-repo)"]
}

test_guard_lets_reads_through if {
	hits := [{"kind": "path", "value": "/mnt/model-repo", "param": "path"}]
	root.decision.effect == "allow" with input as call("GET", "/nodes/{node}/storage/{storage}/content", "read", hits)
}

usb_host := {"param": "usb0", "kind": "usb_host", "value": "host=1234:5678", "detail": "passes the host's USB device 1234:5678 to the guest"}

force := {"param": "force", "kind": "overwrite_vmid", "value": "1", "detail": "lets the call overwrite the existing guest 100"}

test_reaching_the_host_needs_confirmation if {
	req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write", []), {"reaches_host": [usb_host, force]})
	d := root.decision with input as req
	d.effect == "confirm"
	d.obligations == [{"type": "confirm", "approver": "self"}]
	d.reasons == ["root keys confirm each call by which a guest reaches the host: usb0 passes the host's USB device 1234:5678 to the guest (usb_host); force lets the call overwrite the existing guest 100 (overwrite_vmid)"]
}

test_guard_needs_breakglass_even_when_reaching_the_host if {
	hits := [{"kind": "device", "value": "/dev/pve/model-repo", "param": "usb0"}]
	req := object.union(call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write", hits), {"reaches_host": [usb_host]})
	root.decision.effect == "breakglass" with input as req
}

host(op, path, risk, hits) := {
	"tool": "proxmox_host_file_write", "method": "", "path": "", "risk": risk, "params": {},
	"endpoint": {}, "guard": {"evaluated": true, "hits": hits},
	"host": {"op": op, "path": path, "root": "/"},
}

test_host_operations_are_allowed if {
	root.host_decision.effect == "allow" with input as host("file.write", "/etc/network/interfaces", "write", [])
}

test_host_writes_to_the_repository_need_breakglass if {
	root.host_decision.effect == "breakglass" with input as host("file.write", "/mnt/model-repo/a", "write", [{"kind": "path", "value": "/mnt/model-repo", "param": "path"}])
}

test_root_runs_commands_but_not_writable_repository_paths if {
	c := {"path": "/usr/bin/rm", "argv": ["rm", "/srv/x"], "cwd": "/", "class": "", "writable": ["/srv"], "timeout_sec": 60}
	root.host_decision.effect == "allow" with input as object.union(host("command.exec", "", "destructive", []), {"host": {"op": "command.exec", "command": c}})
	hits := [{"kind": "path", "value": "/mnt/model-repo", "param": "writable[0]"}]
	root.host_decision.effect == "breakglass" with input as object.union(host("command.exec", "", "destructive", hits), {"host": {"op": "command.exec", "command": c}})
}
