package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

call(method, risk, principal) := {
	"principal": principal,
	"method": method, "path": "/nodes/{node}/qemu/{vmid}/status/start", "risk": risk, "params": {},
	"endpoint": {"expose_credentials": false, "risk": risk}, "guard": {"evaluated": true, "hits": []},
	"targets": {"nodes": ["pve1"], "vmids": [100], "storages": [], "pools": [], "paths": [], "services": [], "commands": []},
}

tailnet(user, caps) := {"transport": "tailnet", "tailnet": {"user": user, "node": "n", "tags": [], "capabilities": caps}}

grant(profile) := {"example.com/cap/proxmox-mcp": [{"profile": profile}]}

test_alice_by_name if {
	policy.decision.effect == "allow" with input as call("POST", "write", tailnet("alice@example.com", {}))
}

test_operator_grant if {
	policy.decision.effect == "allow" with input as call("POST", "write", tailnet("bob@example.com", grant("operator")))
}

test_read_only_grant_reads_only if {
	policy.decision.effect == "allow" with input as call("GET", "read", tailnet("tagged-devices", grant("read-only")))
	policy.decision.effect == "deny" with input as call("POST", "write", tailnet("tagged-devices", grant("read-only")))
}

test_the_most_privileged_grant_wins if {
	caps := {"example.com/cap/proxmox-mcp": [{"profile": "read-only"}, {"profile": "operator"}]}
	policy.decision.effect == "allow" with input as call("POST", "write", tailnet("bob@example.com", caps))
}

test_no_grant_no_access if {
	policy.decision.effect == "deny" with input as call("GET", "read", tailnet("bob@example.com", {}))
	policy.decision.effect == "deny" with input as call("GET", "read", tailnet("bob@example.com", {"example.com/cap/other": [{"profile": "operator"}]}))
	policy.decision.effect == "deny" with input as call("GET", "read", {"transport": "lan", "source": "192.168.1.20"})
	policy.decision.effect == "deny" with input as call("GET", "read", {"transport": "loopback"})
}
