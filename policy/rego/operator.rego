# operator: the reads of read-only, guest power actions, snapshots and
# backups; destructive ones (hard stop, reset, rollback, snapshot deletion)
# need a confirmation.
#
# The rules are mutually exclusive rather than an else chain: tool
# visibility partially evaluates them, and separate rules let it prove
# that a tool is never allowed.
package proxmox_mcp.profiles.operator

import data.proxmox_mcp.lib

default decision := {
	"effect": "deny",
	"reasons": ["operator keys may read, power guests on and off, and take snapshots and backups; this call is none of these"],
	"obligations": [],
}

operator_call if lib.call in lib.guest_power

operator_call if lib.call in lib.guest_snapshots

operator_call if lib.call in lib.backups

decision := lib.deny(lib.guard_reason) if {
	operator_call
	lib.guard_hit
}

decision := lib.deny("operator keys may not use endpoints that return secrets, tickets or consoles") if {
	lib.returns_secrets
}

decision := lib.allow("operator keys may read") if {
	input.risk == "read"
	not lib.returns_secrets
}

decision := lib.deny("operator keys may not make the host run scripts or write host paths (hookscript, script, dumpdir, tmpdir)") if {
	operator_call
	not lib.guard_hit
	lib.sets_host_path
}

decision := lib.confirm("destructive guest action: confirm it") if {
	operator_call
	not lib.guard_hit
	not lib.sets_host_path
	input.risk == "destructive"
}

decision := lib.allow("operator keys may power guests, take snapshots and backups") if {
	operator_call
	not lib.guard_hit
	not lib.sets_host_path
	input.risk == "write"
}
