# root: everything, still under the protected-repository guard: a call that
# touches the repository needs break-glass, and a call by which a guest
# reaches the host (lib.reaches_host) needs the caller's confirmation.
package proxmox_mcp.profiles.root

import data.proxmox_mcp.lib

decision := lib.breakglass(lib.guard_reason) if lib.guard_hit

decision := lib.confirm(concat("", ["root keys confirm each call by which a guest reaches the host: ", lib.reaches_host_items])) if {
	not lib.guard_hit
	lib.reaches_host
}

decision := lib.deny(concat("", ["root keys too: ", lib.outside_reason])) if {
	not lib.guard_hit
	not lib.reaches_host
	lib.outside_refused
}

decision := {"effect": "allow", "reasons": ["root keys may do anything"], "obligations": []} if {
	not lib.guard_hit
	not lib.reaches_host
	not lib.outside_refused
}

# Host operations: all of them, but what the guard protects (break-glass)
# and what the helper refuses whatever the policy.
host_decision := lib.breakglass(lib.guard_reason) if lib.guard_hit

host_decision := lib.allow("root keys may do anything on the host but what is always refused") if not lib.guard_hit
