# operator: the reads of read-only, guest power actions, snapshots and
# backups; destructive ones (hard stop, reset, rollback, snapshot deletion)
# need a confirmation.
#
# Decisions are literal objects and the rules are mutually exclusive
# (instead of an else chain): evaluation stays cheap, and tool visibility,
# which partially evaluates the rules, can prove a tool is never allowed.
package proxmox_mcp.profiles.operator

import data.proxmox_mcp.lib

default decision := {
	"effect": "deny",
	"reasons": ["operator keys may read, power guests on and off, and take snapshots and backups; this call is none of these"],
	"obligations": [],
}

decision := {
	"effect": "deny",
	"reasons": ["operator keys may not use endpoints that return secrets, tickets or consoles"],
	"obligations": [],
} if {
	lib.returns_secrets
}

decision := {"effect": "allow", "reasons": ["operator keys may read"], "obligations": []} if {
	input.risk == "read"
	not lib.returns_secrets
	not lib.outside_refused
}

decision := lib.deny(concat("", ["operator keys may not probe private networks: ", lib.outside_reason])) if {
	input.risk == "read"
	not lib.returns_secrets
	lib.outside_refused
}

decision := lib.deny(lib.guard_reason) if {
	lib.guest_operation
	lib.guard_hit
}

decision := {
	"effect": "deny",
	"reasons": ["operator keys may not make the host run scripts or write host paths (hookscript, script, dumpdir, tmpdir)"],
	"obligations": [],
} if {
	lib.guest_operation
	not lib.guard_hit
	lib.sets_host_path
}

decision := {
	"effect": "confirm",
	"reasons": ["destructive guest action: confirm it"],
	"obligations": [{"type": "confirm", "approver": "self"}],
} if {
	lib.guest_operation
	input.risk == "destructive"
	not lib.guard_hit
	not lib.sets_host_path
}

decision := {"effect": "allow", "reasons": ["operator keys may power guests, take snapshots and backups"], "obligations": []} if {
	lib.guest_operation
	input.risk == "write"
	not lib.guard_hit
	not lib.sets_host_path
}

# Host operations: files under /var/log and the services' status may be
# read, nothing else.
default host_decision := {
	"effect": "deny",
	"reasons": ["operator keys may only read files under /var/log, the services' status and run the reviewed diagnostic commands on the host"],
	"obligations": [],
}

host_decision := lib.allow("operator keys may read files under /var/log") if {
	lib.host_file_read
	lib.host_path_in("/var/log")
}

host_decision := lib.allow("operator keys may read a service's status") if lib.host_service_status

host_decision := lib.allow("operator keys may run the reviewed diagnostic commands") if lib.host_diagnostic

# Commands inside guests: in the same guests operator keys may power (all
# of them), each with the caller's confirmation.
host_decision := lib.confirm(concat("", ["running a command inside ", input.host.guest.type, " guest ", format_int(input.host.guest.vmid, 10), " needs confirmation"])) if lib.host_guest_exec
