# An allow-list of host commands for one person, and files under one
# directory.
#
# alice may run a few commands of her own beyond the reviewed diagnostics:
# ZFS snapshot listings, the upgradable packages, an NVMe SMART log, and one
# script through the system's Python, which this policy names by its path
# (an interpreter runs only where the allowing reason names it). Everyone
# bound to this policy may read and write files under /srv/app, with the
# protected-repository guard still applying. API calls: reads only.
package proxmox_mcp.policy

import data.proxmox_mcp.lib

default decision := {"effect": "deny", "reasons": ["this policy allows reads of the API only"], "obligations": []}

decision := lib.allow("reads of the API") if {
	input.risk == "read"
	not lib.returns_secrets
}

default host_decision := {"effect": "deny", "reasons": ["only alice's commands, the reviewed diagnostics and files under /srv/app"], "obligations": []}

alice if input.principal.name == "alice"

# The commands alice may run, each by the program's real path and its whole
# argument shape.
alice_commands := [
	["/usr/sbin/zfs", "list", "-t", "snapshot", "-o", "name,used,creation"],
	["/usr/bin/apt", "list", "--upgradable"],
]

alice_command if {
	some c in alice_commands
	input.host.command.path == c[0]
	lib.host_args == array.slice(c, 1, count(c))
}

alice_command if {
	lib.host_program("nvme")
	count(lib.host_args) == 2
	lib.host_args[0] == "smart-log"
	regex.match(`^/dev/nvme[0-9]{1,2}$`, lib.host_args[1])
}

host_decision := lib.allow("alice may run her reviewed commands") if {
	lib.host_exec
	alice
	count(input.host.command.writable) == 0
	alice_command
}

# The interpreter is named by its path in the reason, as the engine asks.
host_decision := lib.allow(sprintf("alice may run the report script with %s", [input.host.command.path])) if {
	lib.host_exec
	alice
	regex.match(`^/usr/bin/python3(\.[0-9]+)?$`, input.host.command.path)
	lib.host_args == ["/srv/app/report.py"]
	input.host.command.writable == ["/srv/app/reports"]
}

host_decision := lib.allow("the reviewed diagnostic commands") if lib.host_diagnostic

host_decision := lib.allow("files under /srv/app") if {
	lib.host_file_op
	lib.host_path_in("/srv/app")
	not lib.guard_hit
}
