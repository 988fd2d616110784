# The admin profile, but every destructive call needs a confirmation by
# someone else: another key's holder or the operator at the host CLI.
package proxmox_mcp.policy

import data.proxmox_mcp.profiles.admin

decision := admin.decision if input.risk != "destructive"

decision := admin.decision if {
	input.risk == "destructive"
	admin.decision.effect != "allow"
}

decision := {
	"effect": "confirm",
	"reasons": ["destructive call: another person must confirm it"],
	"obligations": [{"type": "confirm", "approver": "other"}, {"type": "audit_arguments"}],
} if {
	input.risk == "destructive"
	admin.decision.effect == "allow"
}
