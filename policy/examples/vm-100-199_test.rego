package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

call(method, path, risk, vmids, storages) := {
	"method": method, "path": path, "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false},
	"targets": {"vmids": vmids, "storages": storages},
	"guard": {"evaluated": true, "hits": []},
}

test_start_in_range if {
	policy.decision.effect == "allow" with input as call("POST", "/nodes/{node}/qemu/{vmid}/status/start", "write", [150], [])
}

test_start_out_of_range if {
	policy.decision.effect == "deny" with input as call("POST", "/nodes/{node}/qemu/{vmid}/status/start", "write", [200], [])
	policy.decision.effect == "deny" with input as call("POST", "/nodes/{node}/qemu/{vmid}/status/start", "write", [99], [])
}

test_clone_into_range_on_local_lvm if {
	policy.decision.effect == "allow" with input as call("POST", "/nodes/{node}/qemu/{vmid}/clone", "write", [120, 121], ["local-lvm"])
}

test_clone_out_of_range_or_other_storage if {
	policy.decision.effect == "deny" with input as call("POST", "/nodes/{node}/qemu/{vmid}/clone", "write", [120, 300], ["local-lvm"])
	policy.decision.effect == "deny" with input as call("POST", "/nodes/{node}/qemu/{vmid}/clone", "write", [120, 121], ["ceph"])
}

test_change_without_guest_is_denied if {
	policy.decision.effect == "deny" with input as call("POST", "/nodes/{node}/vzdump", "write", [], [])
}

test_destructive_needs_confirmation if {
	policy.decision.effect == "confirm" with input as call("DELETE", "/nodes/{node}/qemu/{vmid}", "destructive", [130], [])
}

test_reads if {
	policy.decision.effect == "allow" with input as call("GET", "/nodes/{node}/qemu/{vmid}/config", "read", [130], [])
	policy.decision.effect == "allow" with input as call("GET", "/cluster/resources", "read", [], [])
	policy.decision.effect == "deny" with input as call("GET", "/nodes/{node}/qemu/{vmid}/config", "read", [230], [])
}
