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
