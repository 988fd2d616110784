# read-only: reads, except reads that return secrets, tickets or consoles.
package proxmox_mcp.profiles.read_only

import data.proxmox_mcp.lib

default decision := {
	"effect": "deny",
	"reasons": ["read-only keys may only read; this call changes state"],
	"obligations": [],
}

decision := lib.deny("read-only keys may not use endpoints that return secrets, tickets or consoles") if {
	lib.returns_secrets
}

decision := lib.allow("read-only keys may read") if {
	input.risk == "read"
	not lib.returns_secrets
}
