package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

call(method, path, risk) := {
	"method": method, "path": path, "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false}, "guard": {"evaluated": true, "hits": []},
}

test_writes_run if {
	policy.decision.effect == "allow" with input as call("PUT", "/nodes/{node}/qemu/{vmid}/config", "write")
}

test_destructive_needs_another_person if {
	d := policy.decision with input as call("DELETE", "/nodes/{node}/qemu/{vmid}", "destructive")
	d.effect == "confirm"
	{"type": "confirm", "approver": "other"} in d.obligations
}

test_host_shell_stays_denied if {
	policy.decision.effect == "deny" with input as call("POST", "/nodes/{node}/termproxy", "destructive")
}
