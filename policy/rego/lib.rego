# The library every policy is compiled with: what the built-in profiles
# share, and what custom policies may import (import data.proxmox_mcp.lib).
package proxmox_mcp.lib

# Sets of endpoints are objects from the path template to the methods:
# input.method in set[input.path] is one indexed lookup.

# Endpoints whose answer carries a secret, a ticket, or a console or tunnel
# into a guest or the host. Reads of these are not "reads" for the
# read-only and operator profiles. PVE's own expose_credentials flag adds
# every endpoint it marks, including those of future versions.
secret_endpoints := {
	# authentication tickets and API token secrets
	"/access/ticket": {"POST"},
	"/access/vncticket": {"POST"},
	"/access/openid/login": {"POST"},
	"/access/users/{userid}/token/{tokenid}": {"POST"},
	"/access/tfa/{userid}": {"POST"},
	# guest consoles and migration tunnels (tickets, then a live session)
	"/nodes/{node}/qemu/{vmid}/vncproxy": {"POST"},
	"/nodes/{node}/qemu/{vmid}/termproxy": {"POST"},
	"/nodes/{node}/qemu/{vmid}/spiceproxy": {"POST"},
	"/nodes/{node}/qemu/{vmid}/vncwebsocket": {"GET"},
	"/nodes/{node}/qemu/{vmid}/mtunnel": {"POST"},
	"/nodes/{node}/qemu/{vmid}/mtunnelwebsocket": {"GET"},
	"/nodes/{node}/lxc/{vmid}/vncproxy": {"POST"},
	"/nodes/{node}/lxc/{vmid}/termproxy": {"POST"},
	"/nodes/{node}/lxc/{vmid}/spiceproxy": {"POST"},
	"/nodes/{node}/lxc/{vmid}/vncwebsocket": {"GET"},
	"/nodes/{node}/lxc/{vmid}/mtunnel": {"POST"},
	"/nodes/{node}/lxc/{vmid}/mtunnelwebsocket": {"GET"},
	# host consoles
	"/nodes/{node}/vncshell": {"POST"},
	"/nodes/{node}/termproxy": {"POST"},
	"/nodes/{node}/spiceshell": {"POST"},
	"/nodes/{node}/vncwebsocket": {"GET"},
	# contents of guest files, guest command output, cloud-init user data
	# (password hashes, SSH keys), files restored from backups
	"/nodes/{node}/qemu/{vmid}/agent/file-read": {"GET"},
	"/nodes/{node}/qemu/{vmid}/agent/exec-status": {"GET"},
	"/nodes/{node}/qemu/{vmid}/cloudinit/dump": {"GET"},
	"/nodes/{node}/storage/{storage}/file-restore/download": {"GET"},
	# ACME DNS plugins return their provider API credentials
	"/cluster/acme/plugins": {"GET"},
	"/cluster/acme/plugins/{id}": {"GET"},
}

returns_secrets if input.endpoint.expose_credentials

returns_secrets if input.method in secret_endpoints[input.path]

# Calls that give a root shell on the host, or run arbitrary commands or API
# calls as root there without a per-call decision: denied to every profile
# but root.
host_root := {
	"/nodes/{node}/vncshell": {"POST"},
	"/nodes/{node}/termproxy": {"POST"},
	"/nodes/{node}/spiceshell": {"POST"},
	"/nodes/{node}/vncwebsocket": {"GET"},
	"/nodes/{node}/execute": {"POST"},
	# the QEMU monitor can run host commands (migrate "exec:...")
	"/nodes/{node}/qemu/{vmid}/monitor": {"POST"},
}

is_host_root if input.method in host_root[input.path]

# Parameters that make the host run a script or write to a host path as
# root (hook scripts, vzdump's script, dump and temporary directories).
host_path_params := ["hookscript", "script", "dumpdir", "tmpdir"]

sets_host_path if {
	some p in host_path_params
	input.params[p] != null
}

# The protected-repository guard found this call touching the repository
# and the call is not a read.
guard_hit if {
	input.risk != "read"
	input.guard.hits[0]
}

# Guest power actions, snapshots and backups: what operator adds to reads.
guest_power := {
	"/nodes/{node}/qemu/{vmid}/status/start": {"POST"},
	"/nodes/{node}/qemu/{vmid}/status/shutdown": {"POST"},
	"/nodes/{node}/qemu/{vmid}/status/reboot": {"POST"},
	"/nodes/{node}/qemu/{vmid}/status/suspend": {"POST"},
	"/nodes/{node}/qemu/{vmid}/status/resume": {"POST"},
	"/nodes/{node}/qemu/{vmid}/status/stop": {"POST"},
	"/nodes/{node}/qemu/{vmid}/status/reset": {"POST"},
	"/nodes/{node}/lxc/{vmid}/status/start": {"POST"},
	"/nodes/{node}/lxc/{vmid}/status/shutdown": {"POST"},
	"/nodes/{node}/lxc/{vmid}/status/reboot": {"POST"},
	"/nodes/{node}/lxc/{vmid}/status/suspend": {"POST"},
	"/nodes/{node}/lxc/{vmid}/status/resume": {"POST"},
	"/nodes/{node}/lxc/{vmid}/status/stop": {"POST"},
}

guest_snapshots := {
	"/nodes/{node}/qemu/{vmid}/snapshot": {"POST"},
	"/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config": {"PUT"},
	"/nodes/{node}/qemu/{vmid}/snapshot/{snapname}": {"DELETE"},
	"/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback": {"POST"},
	"/nodes/{node}/lxc/{vmid}/snapshot": {"POST"},
	"/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/config": {"PUT"},
	"/nodes/{node}/lxc/{vmid}/snapshot/{snapname}": {"DELETE"},
	"/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback": {"POST"},
}

backups := {"/nodes/{node}/vzdump": {"POST"}}

# Decisions, built here so that every profile words them alike.
allow(reason) := {"effect": "allow", "reasons": [reason], "obligations": []}

deny(reason) := {"effect": "deny", "reasons": [reason], "obligations": []}

confirm(reason) := {"effect": "confirm", "reasons": [reason], "obligations": [{"type": "confirm", "approver": "self"}]}

breakglass(reason) := {"effect": "breakglass", "reasons": [reason], "obligations": []}

guard_reason := concat("", [
	"the call touches the protected repository (",
	concat(", ", [h.value | some h in input.guard.hits]),
	")",
])
