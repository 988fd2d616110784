# Rights decided on the Tailnet: alice@example.com, by name, is an operator;
# any other caller gets the profile that a grant of the tailnet policy file
# gives it on this node, and nothing without one. Never over the LAN or
# loopback.
#
# The grant, in the tailnet policy file (ACLs):
#
#	"grants": [{
#		"src": ["group:pve-readers", "tag:ci"],
#		"dst": ["tag:proxmox-mcp"],
#		"app": {"example.com/cap/proxmox-mcp": [{"profile": "read-only"}]},
#	}]
#
# arrives as input.principal.tailnet.capabilities["example.com/cap/proxmox-mcp"]:
# a list with one value per grant that applies.
package proxmox_mcp.policy

import data.proxmox_mcp.profiles.operator
import data.proxmox_mcp.profiles.read_only

# The PVE token the daemon calls with for this policy's keys: operator's, the
# most any caller gets here (read-only callers are held to reads by the
# read-only profile's decisions).
tier := "operator"

capability := "example.com/cap/proxmox-mcp"

tailnet if input.principal.transport == "tailnet"

granted contains g.profile if {
	tailnet
	some g in input.principal.tailnet.capabilities[capability]
}

profile := "operator" if {
	tailnet
	input.principal.tailnet.user == "alice@example.com"
} else := "operator" if {
	"operator" in granted
} else := "read-only" if {
	"read-only" in granted
}

decision := operator.decision if profile == "operator"

decision := read_only.decision if profile == "read-only"

decision := {
	"effect": "deny",
	"reasons": [concat("", ["only alice@example.com, or a Tailnet caller granted ", capability, " on this node, may use this key"])],
	"obligations": [],
} if {
	not profile
}
