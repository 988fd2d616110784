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
