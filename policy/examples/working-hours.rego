# The operator profile during working hours (Monday to Friday, 08:00 to
# 18:00 in the daemon's time zone); outside them, read-only.
package proxmox_mcp.policy

import data.proxmox_mcp.profiles.operator
import data.proxmox_mcp.profiles.read_only

working_hours if {
	input.time.weekday in {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
	input.time.hour >= 8
	input.time.hour < 18
}

decision := operator.decision if working_hours

decision := object.union(read_only.decision, {"reasons": array.concat(read_only.decision.reasons, ["outside working hours (Mon-Fri 08:00-18:00) keys are read-only"])}) if {
	not working_hours
}
