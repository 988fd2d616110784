# Admin rights for one person on the Tailnet, alice@example.com, and for no
# one else: not over the LAN, not on loopback, not another Tailnet user.
package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

allowed_user := "alice@example.com"

from_alice if {
	input.principal.transport == "tailnet"
	input.principal.tailnet.user == allowed_user
}

decision := admin.decision if from_alice

decision := {
	"effect": "deny",
	"reasons": [concat("", ["only ", allowed_user, " over the Tailnet may use this key"])],
	"obligations": [],
} if {
	not from_alice
}
