# Guests 100 to 199 and the storage local-lvm only.
#
# Reads are allowed (no secrets, tickets or consoles) as long as every guest
# the call names is in range. A change must name at least one guest, every
# guest it names must be in 100-199, and every storage it names (including
# the storage of each disk) must be local-lvm. Destructive changes need a
# confirmation. Host shells and host paths stay closed.
package proxmox_mcp.policy

import data.proxmox_mcp.lib

default decision := {"effect": "deny", "reasons": ["only guests 100-199 on storage local-lvm"], "obligations": []}

in_range if {
	every id in input.targets.vmids {
		id >= 100
		id <= 199
	}
}

storage_ok if {
	every s in input.targets.storages {
		s == "local-lvm"
	}
}

decision := lib.allow("read of guests 100-199") if {
	input.risk == "read"
	not lib.returns_secrets
	in_range
}

decision := lib.allow("change to guests 100-199 on local-lvm") if {
	input.risk == "write"
	count(input.targets.vmids) > 0
	in_range
	storage_ok
	not lib.returns_secrets
	not lib.is_host_root
	not lib.sets_host_path
}

decision := lib.confirm("destructive change to guests 100-199: confirm it") if {
	input.risk == "destructive"
	count(input.targets.vmids) > 0
	in_range
	storage_ok
	not lib.returns_secrets
	not lib.is_host_root
	not lib.sets_host_path
}
