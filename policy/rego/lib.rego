# The library every policy is compiled with: what the built-in profiles
# share, and what custom policies may import (import data.proxmox_mcp.lib).
#
# Endpoint sets are written as one rule body per endpoint comparing
# input.path and input.method with constants: OPA's rule index then picks
# the matching body in one hash lookup, where a set literal would be built
# anew on every evaluation. docs/policy.md lists them with the reason for
# each group.
package proxmox_mcp.lib

# The call's endpoint answers with a secret, a ticket, or a console or
# tunnel into a guest or the host: a fact of the endpoint that the daemon
# computes from the schema (PVE's expose_credentials flag, and the
# endpoints docs/policy.md lists), so that every policy reads one answer.
returns_secrets if input.endpoint.returns_secrets

returns_secrets if input.endpoint.expose_credentials

# The call gives a root shell on the host, or runs commands or API calls
# as root there without a decision per call.

is_host_root if {
	input.path == "/nodes/{node}/vncshell"
	input.method == "POST"
}

is_host_root if {
	input.path == "/nodes/{node}/termproxy"
	input.method == "POST"
}

is_host_root if {
	input.path == "/nodes/{node}/spiceshell"
	input.method == "POST"
}

is_host_root if {
	input.path == "/nodes/{node}/vncwebsocket"
	input.method == "GET"
}

is_host_root if {
	input.path == "/nodes/{node}/execute"
	input.method == "POST"
}

is_host_root if {
	input.path == "/nodes/{node}/qemu/{vmid}/monitor"
	input.method == "POST"
}

# The call makes the host run a script or write a host path as root: a
# guest hook script, vzdump's hook script, dump or temporary directory.
# (A guest's hookscript is an item of reaches_host too.)
sets_host_path if input.params.hookscript != null

sets_host_path if input.params.script != null

sets_host_path if input.params.dumpdir != null

sets_host_path if input.params.tmpdir != null

# The call makes PVE fetch from a place outside the cluster that is not
# public: input.outside lists each place (download-url and
# query-url-metadata's url, oci-registry-pull and query-oci-repo-tags'
# reference) with the class of the least public address its host resolves
# to (public, reserved, multicast, cgnat, unique_local, private,
# link_local, loopback, unspecified, unresolved, invalid; docs/policy.md).
# The call plan lists one for every call of these endpoints (the parameter
# is required). The built-in profiles refuse such a call; a custom policy
# may allow a class or a host explicitly.
outside_refused if input.outside[_].class != "public"

outside_items := concat("; ", [outside_item(t) | some t in input.outside; t.class != "public"])

outside_item(t) := sprintf("%s %s (host %s, %s)", [t.param, t.value, t.host, t.class]) if t.detail == ""

outside_item(t) := sprintf("%s %s (host %s, %s: %s)", [t.param, t.value, t.host, t.class, t.detail]) if t.detail != ""

outside_reason := concat("", [
	"the call makes PVE fetch from a place that is not a public address (",
	outside_items,
	"); the built-in profiles fetch only from public addresses, a custom policy may allow others (input.outside)",
])

# The call reaches the host from a guest: input.reaches_host lists each
# way, as {param, kind, value, detail} (docs/policy.md lists the kinds:
# hookscript, qemu_args, pci_passthrough, usb_host, serial_host,
# parallel_host, host_shared_memory, host_disk, bind_mount, device_passthrough, raw_lxc,
# privileged, container_features, host_mapping, overwrite_vmid,
# protection_off). The built-in profiles refuse such a call unless they are
# root; a custom policy allows one explicitly by checking every item, and
# the engine then asks the caller to confirm it.
reaches_host if input.reaches_host[0]

# The call reaches the host in a way of this kind.
reaches_host_kind(kind) if input.reaches_host[_].kind == kind

# The items as reasons name them (the engine writes the same text).
reaches_host_items := concat("; ", [sprintf("%s %s (%s)", [r.param, r.detail, r.kind]) | some r in input.reaches_host])

reaches_host_reason := concat("", [
	"the call reaches the host from a guest (",
	reaches_host_items,
	"); a policy must allow this explicitly",
])

# The protected-repository guard found this call touching the repository
# and the call is not a read.
guard_hit if {
	input.risk != "read"
	input.guard.hits[0]
}

# Guest power actions, snapshots and backups: what operator adds to reads.

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/start"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/shutdown"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/reboot"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/suspend"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/resume"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/stop"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/status/reset"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/status/start"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/status/shutdown"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/status/reboot"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/status/suspend"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/status/resume"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/status/stop"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/snapshot"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config"
	input.method == "PUT"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}"
	input.method == "DELETE"
}

guest_operation if {
	input.path == "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/snapshot"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/config"
	input.method == "PUT"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}"
	input.method == "DELETE"
}

guest_operation if {
	input.path == "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback"
	input.method == "POST"
}

guest_operation if {
	input.path == "/nodes/{node}/vzdump"
	input.method == "POST"
}

# Decisions, built here so that policies word them alike.
allow(reason) := {"effect": "allow", "reasons": [reason], "obligations": []}

deny(reason) := {"effect": "deny", "reasons": [reason], "obligations": []}

confirm(reason) := {"effect": "confirm", "reasons": [reason], "obligations": [{"type": "confirm", "approver": "self"}]}

breakglass(reason) := {"effect": "breakglass", "reasons": [reason], "obligations": []}

guard_reason := concat("", [
	"the call touches the protected repository (",
	concat(", ", [h.value | some h in input.guard.hits]),
	")",
])

# Host operations of the root helper (input.host; null for an API call),
# decided by a policy's host_decision rule alone: a policy without one
# decides none. The path is the helper's canonical path, beneath an allowed
# root the helper enforces (input.host.root), and never one of the files
# refused whatever the policy.

# The operation only reads a file or a directory.
host_file_read if input.host.op == "file.read"

host_file_read if input.host.op == "file.stat"

host_file_read if input.host.op == "file.list"

# The operation reads or writes a file or a directory.
host_file_op if host_file_read

host_file_op if input.host.op == "file.write"

# The operation's path is dir or lies beneath it (both canonical).
host_path_in(dir) if input.host.path == dir

host_path_in(dir) if startswith(input.host.path, concat("", [dir, "/"]))

# The operation reads a unit's status (and its last journal lines).
host_service_status if input.host.op == "service.status"

# The operation starts, stops, restarts, reloads, enables or disables a
# unit (input.host.action), named as systemd names it.
host_service_control if input.host.op == "service.control"

# PVE's own services: controlling them takes the node's API, its cluster
# file system, corosync or HA away, so the profiles ask for confirmation.
pve_core_unit if input.host.unit == "pve-cluster.service"

pve_core_unit if input.host.unit == "corosync.service"

pve_core_unit if input.host.unit == "pveproxy.service"

pve_core_unit if input.host.unit == "pvedaemon.service"

pve_core_unit if input.host.unit == "pvestatd.service"

pve_core_unit if input.host.unit == "pvescheduler.service"

pve_core_unit if input.host.unit == "pve-ha-lrm.service"

pve_core_unit if input.host.unit == "pve-ha-crm.service"

# The operation runs a command on the host (input.host.command: path, the
# canonical program; argv, argv[0] as written; cwd; class; writable;
# timeout_sec). A command whose class is shell, interpreter or launcher
# runs only when the deciding reason names its path (the engine enforces
# it over every policy).
host_exec if input.host.op == "command.exec"

# The command's program is the system's name (in /usr/bin or /usr/sbin).
host_program(name) if input.host.command.path == concat("/", ["/usr/bin", name])

host_program(name) if input.host.command.path == concat("/", ["/usr/sbin", name])

# The command's arguments after the program.
host_args := array.slice(input.host.command.argv, 1, count(input.host.command.argv))

# The reviewed diagnostic commands: programs that only read, each with
# fixed argument shapes, writing no path.
host_diagnostic if {
	host_exec
	count(input.host.command.writable) == 0
	some d in host_diagnostics
	host_program(d[0])
	host_args == array.slice(d, 1, count(d))
}

# smartctl -j -a DEV, for a whole disk.
host_diagnostic if {
	host_exec
	count(input.host.command.writable) == 0
	host_program("smartctl")
	count(host_args) == 3
	array.slice(host_args, 0, 2) == ["-j", "-a"]
	regex.match(`^/dev/(sd[a-z]{1,3}|vd[a-z]{1,3}|hd[a-z]|nvme[0-9]{1,3}(n[0-9]{1,3})?)$`, host_args[2])
}

# journalctl -u UNIT -n N -o json [--no-pager], N at most 1000.
host_diagnostic if {
	host_exec
	count(input.host.command.writable) == 0
	host_program("journalctl")
	a := host_args
	count(a) >= 6
	count(a) <= 7
	a[0] == "-u"
	regex.match(`^[A-Za-z0-9][A-Za-z0-9:_.@\\-]{0,254}$`, a[1])
	a[2] == "-n"
	regex.match(`^([1-9][0-9]{0,2}|1000)$`, a[3])
	array.slice(a, 4, 6) == ["-o", "json"]
	array.slice(a, 6, count(a)) in [[], ["--no-pager"]]
}

# zpool status [-x] POOL.
host_diagnostic if {
	host_exec
	count(input.host.command.writable) == 0
	host_program("zpool")
	host_args[0] == "status"
	pools := [a | some a in array.slice(host_args, 1, count(host_args)); a != "-x"]
	count(pools) == 1
	count(host_args) <= 3
	regex.match(`^[A-Za-z][A-Za-z0-9_.:-]{0,254}$`, pools[0])
}

host_diagnostics := [
	["pveversion"], ["pveversion", "-v"], ["pveversion", "--verbose"],
	["zpool", "status"], ["zpool", "status", "-x"], ["zpool", "list"], ["zpool", "list", "-v"], ["zfs", "list"],
	["lsblk"], ["lsblk", "-J"], ["lsblk", "-J", "-O"],
	["df"], ["df", "-h"], ["df", "-hT"], ["df", "-i"], ["df", "-P"],
	["ip", "-j", "addr"], ["ip", "-j", "link"], ["ip", "-j", "route"], ["ip", "-j", "neigh"], ["ip", "-j", "-6", "route"],
	["uptime"], ["free", "-m"], ["free", "-h"], ["uname", "-a"], ["lscpu", "-J"], ["findmnt", "-J"],
	["pvecm", "status"], ["pvecm", "nodes"], ["pvesm", "status"], ["qm", "list"], ["pct", "list"], ["ha-manager", "status"],
	["lvs", "--readonly", "--reportformat", "json"], ["vgs", "--readonly", "--reportformat", "json"], ["pvs", "--readonly", "--reportformat", "json"],
	["sensors", "-j"], ["nvme", "list", "-o", "json"],
]

# The operation runs a command inside a guest (proxmox_guest_exec): in a
# VM through its QEMU guest agent, in a container through pct exec.
# input.host.guest is the guest ({vmid, type: qemu or lxc, node}) and
# input.host.command the command (path: argv[0] as given, which the guest
# resolves; argv; cwd "/"; class; timeout_sec). A shell, interpreter or
# launcher runs only when the deciding reason names its path, as on the
# host.
host_guest_exec if input.host.op == "guest.exec"
