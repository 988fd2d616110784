# read-only: reads, except reads that return secrets, tickets or consoles.
#
# Decisions are literal objects and the rules are mutually exclusive
# (instead of an else chain): evaluation stays cheap, and tool visibility,
# which partially evaluates the rules, can prove a tool is never allowed.
package proxmox_mcp.profiles.read_only

import data.proxmox_mcp.lib

default decision := {
	"effect": "deny",
	"reasons": ["read-only keys may only read; this call changes state"],
	"obligations": [],
}

decision := {
	"effect": "deny",
	"reasons": ["read-only keys may not use endpoints that return secrets, tickets or consoles"],
	"obligations": [],
} if {
	lib.returns_secrets
}

decision := {"effect": "allow", "reasons": ["read-only keys may read"], "obligations": []} if {
	input.risk == "read"
	not lib.returns_secrets
	not lib.outside_refused
}

decision := lib.deny(concat("", ["read-only keys may not probe private networks: ", lib.outside_reason])) if {
	input.risk == "read"
	not lib.returns_secrets
	lib.outside_refused
}

# Host operations: files under /var/log and the services' status may be
# read, nothing else.
default host_decision := {
	"effect": "deny",
	"reasons": ["read-only keys may only read files under /var/log, the services' status and run the reviewed diagnostic commands on the host"],
	"obligations": [],
}

host_decision := lib.allow("read-only keys may read files under /var/log") if {
	lib.host_file_read
	lib.host_path_in("/var/log")
}

host_decision := lib.allow("read-only keys may read a service's status") if lib.host_service_status

host_decision := lib.allow("read-only keys may run the reviewed diagnostic commands") if lib.host_diagnostic
