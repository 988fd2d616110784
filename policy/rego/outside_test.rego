package proxmox_mcp.profiles.outside_test

import data.proxmox_mcp.profiles.admin
import data.proxmox_mcp.profiles.operator
import data.proxmox_mcp.profiles.read_only
import data.proxmox_mcp.profiles.root

no_guard := {"evaluated": true, "hits": []}

target(class) := {"param": "url", "value": "https://mirror.example/debian.iso", "host": "mirror.example", "addresses": ["192.0.2.1"], "class": class, "detail": ""}

download(outside) := {
	"method": "POST", "path": "/nodes/{node}/storage/{storage}/download-url", "risk": "write",
	"params": {"url": "https://mirror.example/debian.iso", "content": "iso", "filename": "debian.iso"},
	"endpoint": {"reaches_outside": true, "returns_secrets": false}, "guard": no_guard,
	"outside": outside, "reaches_host": [],
}

metadata(outside) := object.union(download(outside), {"method": "GET", "path": "/nodes/{node}/query-url-metadata", "risk": "read"})

refused := ["private", "loopback", "link_local", "unspecified", "cgnat", "unique_local", "multicast", "reserved", "unresolved", "invalid"]

test_admin_and_root_download_from_public_addresses if {
	admin.decision.effect == "allow" with input as download([target("public")])
	root.decision.effect == "allow" with input as download([target("public")])
}

test_admin_and_root_refuse_every_other_class if {
	every class in refused {
		d := admin.decision with input as download([target(class)])
		d.effect == "deny"
		contains(d.reasons[0], class)
		contains(d.reasons[0], "url https://mirror.example/debian.iso")
		r := root.decision with input as download([target(class)])
		r.effect == "deny"
	}
}

test_one_private_target_among_public_ones_is_refused if {
	admin.decision.effect == "deny" with input as download([target("public"), target("private")])
}

test_reads_that_fetch_refuse_private_targets if {
	read_only.decision.effect == "allow" with input as metadata([target("public")])
	operator.decision.effect == "allow" with input as metadata([target("public")])
	every class in refused {
		read_only.decision.effect == "deny" with input as metadata([target(class)])
		operator.decision.effect == "deny" with input as metadata([target(class)])
	}
}

test_read_only_and_operator_do_not_download if {
	read_only.decision.effect == "deny" with input as download([target("public")])
	operator.decision.effect == "deny" with input as download([target("public")])
}

test_calls_that_stay_inside_are_unchanged if {
	inside := {"method": "GET", "path": "/nodes/{node}/status", "risk": "read", "params": {}, "endpoint": {}, "guard": no_guard}
	read_only.decision.effect == "allow" with input as inside
	admin.decision.effect == "allow" with input as inside
}

test_the_reason_says_why_a_name_did_not_resolve if {
	t := object.union(target("unresolved"), {"detail": "mirror.example does not resolve: i/o timeout"})
	d := admin.decision with input as download([t])
	contains(d.reasons[0], "(host mirror.example, unresolved: mirror.example does not resolve: i/o timeout)")
}
