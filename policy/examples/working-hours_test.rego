package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

start_at(weekday, hour) := {
	"method": "POST", "path": "/nodes/{node}/qemu/{vmid}/status/start", "risk": "write", "params": {},
	"endpoint": {"expose_credentials": false}, "targets": {"vmids": [100]},
	"guard": {"evaluated": true, "hits": []},
	"time": {"weekday": weekday, "hour": hour, "minute": 0},
}

test_weekday_office_hours if {
	policy.decision.effect == "allow" with input as start_at("Tuesday", 9)
	policy.decision.effect == "allow" with input as start_at("Friday", 17)
}

test_evening_and_weekend if {
	d := policy.decision with input as start_at("Tuesday", 18)
	d.effect == "deny"
	"outside working hours (Mon-Fri 08:00-18:00) keys are read-only" in d.reasons
	policy.decision.effect == "deny" with input as start_at("Saturday", 10)
	policy.decision.effect == "deny" with input as start_at("Monday", 7)
}

test_reads_at_night if {
	night := object.union(start_at("Sunday", 3), {"method": "GET", "path": "/nodes/{node}/qemu", "risk": "read"})
	policy.decision.effect == "allow" with input as night
}
