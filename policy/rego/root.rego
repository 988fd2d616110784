# root: everything, still under the protected-repository guard: a call that
# touches the repository needs break-glass.
package proxmox_mcp.profiles.root

import data.proxmox_mcp.lib

decision := lib.breakglass(lib.guard_reason) if lib.guard_hit

decision := {"effect": "allow", "reasons": ["root keys may do anything"], "obligations": []} if not lib.guard_hit
