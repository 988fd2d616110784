# Commands inside containers 100 to 199 only, each confirmed.
#
# An operator of a group of containers may run commands in them (through
# pct exec, by the root helper), never in a VM or another container, and
# confirms each one; shells, interpreters and launchers stay refused unless
# a reason names them (none here). API calls: reads of those guests.
package proxmox_mcp.policy

import data.proxmox_mcp.lib

default decision := {"effect": "deny", "reasons": ["only reads of guests 100-199"], "obligations": []}

decision := lib.allow("reads of guests 100-199") if {
	input.risk == "read"
	not lib.returns_secrets
	count(input.targets.vmids) > 0
	every id in input.targets.vmids {
		id >= 100
		id <= 199
	}
}

default host_decision := {"effect": "deny", "reasons": ["only commands inside containers 100-199"], "obligations": []}

host_decision := lib.confirm(sprintf("run %v inside container %d", [input.host.command.argv, input.host.guest.vmid])) if {
	lib.host_guest_exec
	input.host.guest.type == "lxc"
	input.host.guest.vmid >= 100
	input.host.guest.vmid <= 199
}
