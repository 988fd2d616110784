# admin: every API call, except host shells and root-only escapes (host
# consoles, /nodes/{node}/execute, the QEMU monitor, host scripts and host
# paths), settings by which a guest reaches the host (lib.reaches_host),
# and without break-glass: a call the protected-repository guard flags is
# denied.
#
# Decisions are literal objects and the rules are mutually exclusive
# (instead of an else chain): evaluation stays cheap, and tool visibility,
# which partially evaluates the rules, can prove a tool is never allowed.
package proxmox_mcp.profiles.admin

import data.proxmox_mcp.lib

decision := {
	"effect": "deny",
	"reasons": ["admin keys may not open a host shell or run commands as root on the host"],
	"obligations": [],
} if {
	lib.is_host_root
}

decision := lib.deny(concat("", [lib.guard_reason, "; admin keys cannot request break-glass"])) if {
	not lib.is_host_root
	lib.guard_hit
}

decision := lib.deny(concat("", ["admin keys may not let a guest reach the host: ", lib.reaches_host_reason])) if {
	not lib.is_host_root
	not lib.guard_hit
	lib.reaches_host
}

decision := {
	"effect": "deny",
	"reasons": ["admin keys may not make the host run scripts or write host paths (hookscript, script, dumpdir, tmpdir)"],
	"obligations": [],
} if {
	not lib.is_host_root
	not lib.guard_hit
	not lib.reaches_host
	lib.sets_host_path
}

decision := lib.deny(concat("", ["admin keys may not make PVE fetch from private networks: ", lib.outside_reason])) if {
	not lib.is_host_root
	not lib.guard_hit
	not lib.reaches_host
	not lib.sets_host_path
	lib.outside_refused
}

decision := {"effect": "allow", "reasons": ["admin keys may make any API call"], "obligations": []} if {
	not lib.is_host_root
	not lib.guard_hit
	not lib.reaches_host
	not lib.sets_host_path
	not lib.outside_refused
}

# Host operations: files beneath the allowed roots may be read and written
# (the helper enforces the roots and refuses the secrets), nothing the
# guard protects; services controlled, PVE's own with confirmation.
default host_decision := {
	"effect": "deny",
	"reasons": ["admin keys may read and write files, control services and run the reviewed diagnostic commands on the host; this host operation is none of these"],
	"obligations": [],
}

host_decision := lib.deny(concat("", [lib.guard_reason, "; admin keys cannot request break-glass"])) if {
	lib.host_file_op
	lib.guard_hit
}

host_decision := lib.allow("admin keys may read and write files beneath the allowed roots") if {
	lib.host_file_op
	not lib.guard_hit
}

host_decision := lib.allow("admin keys may read a service's status") if lib.host_service_status

host_decision := lib.confirm(concat("", ["controlling ", input.host.unit, ", one of PVE's own services, needs confirmation"])) if {
	lib.host_service_control
	lib.pve_core_unit
}

host_decision := lib.allow("admin keys may control services") if {
	lib.host_service_control
	not lib.pve_core_unit
}

host_decision := lib.allow("admin keys may run the reviewed diagnostic commands") if lib.host_diagnostic

host_decision := lib.allow("admin keys may run commands inside guests") if lib.host_guest_exec
