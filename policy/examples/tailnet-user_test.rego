package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

call(principal) := {
	"principal": principal,
	"method": "GET", "path": "/version", "risk": "read", "params": {},
	"endpoint": {"expose_credentials": false}, "guard": {"evaluated": true, "hits": []},
}

test_alice_on_the_tailnet if {
	policy.decision.effect == "allow" with input as call({"transport": "tailnet", "tailnet": {"user": "alice@example.com", "node": "laptop"}})
}

test_others_are_denied if {
	policy.decision.effect == "deny" with input as call({"transport": "tailnet", "tailnet": {"user": "mallory@example.com", "node": "x"}})
	policy.decision.effect == "deny" with input as call({"transport": "lan", "source": "192.168.1.20"})
	policy.decision.effect == "deny" with input as call({"transport": "loopback"})
}
