# The admin profile, and one way of reaching the host that admin refuses,
# allowed explicitly: passing the USB device 1234:5678 (vendor:product) of
# the host to VM 150, by a config edit of that VM alone. Any other item of
# input.reaches_host in the same call (another device, a USB port, args,
# a bind mount, …) leaves the call to admin, which denies it. The engine
# still asks the caller to confirm the call it allows.
package proxmox_mcp.policy

import data.proxmox_mcp.lib
import data.proxmox_mcp.profiles.admin

tier := "admin"

allowed_device := "1234:5678"

allowed_guest := 150

# The host device of a usbN value (host=ID, or ID as the default key), in
# lower case without 0x, as qemu-server's USB_ID_RE reads it.
usb_device(value) := lower(replace(id, "0x", "")) if {
	parts := [p | some p in split(value, ","); not contains(trim_prefix(p, "host="), "=")]
	count(parts) == 1
	id := trim_prefix(parts[0], "host=")
}

allowed_item(r) if {
	r.kind == "usb_host"
	regex.match(`^usb[0-9]+$`, r.param)
	usb_device(r.value) == allowed_device
}

allowed_call if {
	input.path in {"/nodes/{node}/qemu/{vmid}/config"}
	input.method in {"PUT", "POST"}
	input.targets.vmids == [allowed_guest]
	lib.reaches_host
	every r in input.reaches_host {
		allowed_item(r)
	}
	not lib.guard_hit
}

decision := lib.allow(concat("", [
	"the host's USB device ", allowed_device, " may be passed through to VM ", format_int(allowed_guest, 10),
	": ", lib.reaches_host_items,
])) if allowed_call

decision := admin.decision if not allowed_call
