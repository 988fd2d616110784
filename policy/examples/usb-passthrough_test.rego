package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

usb(param, value) := {"param": param, "kind": "usb_host", "value": value, "detail": "passes the host's USB device to the guest"}

edit(vmid, items) := {
	"method": "PUT", "path": "/nodes/{node}/qemu/{vmid}/config", "risk": "write",
	"params": {"node": "pve1", "vmid": vmid}, "targets": {"vmids": [vmid]},
	"endpoint": {"expose_credentials": false}, "guard": {"evaluated": true, "hits": []},
	"reaches_host": items,
}

test_the_device_on_the_guest_is_allowed if {
	every value in ["host=1234:5678", "1234:5678", "host=0x1234:0x5678,usb3=1", "host=1234:5678,usb3=1"] {
		d := policy.decision with input as edit(150, [usb("usb0", value)])
		d.effect == "allow"
		contains(d.reasons[0], "may be passed through to VM 150")
	}
	policy.decision.effect == "allow" with input as edit(150, [usb("usb3", "host=1234:5678"), usb("usb4", "1234:5678")])
}

test_another_device_port_or_guest_is_denied if {
	policy.decision.effect == "deny" with input as edit(150, [usb("usb0", "host=1234:5679")])
	policy.decision.effect == "deny" with input as edit(150, [usb("usb0", "host=1-2.3")])
	policy.decision.effect == "deny" with input as edit(151, [usb("usb0", "host=1234:5678")])
	policy.decision.effect == "deny" with input as object.union(edit(150, [usb("usb0", "host=1234:5678")]), {"targets": {"vmids": [150, 900]}})
}

test_anything_else_that_reaches_the_host_is_denied if {
	args := {"param": "args", "kind": "qemu_args", "value": "-foo", "detail": "passes raw arguments to the host's QEMU process: -foo"}
	d := policy.decision with input as edit(150, [usb("usb0", "host=1234:5678"), args])
	d.effect == "deny"
	contains(d.reasons[0], "args passes raw arguments")
	policy.decision.effect == "deny" with input as edit(150, [{"param": "hostpci0", "kind": "usb_host", "value": "1234:5678", "detail": "x"}])
}

test_admin_otherwise if {
	policy.decision.effect == "allow" with input as edit(151, [])
	policy.decision.effect == "deny" with input as object.union(edit(150, [usb("usb0", "host=1234:5678")]), {"guard": {"evaluated": true, "hits": [{"kind": "device", "value": "/dev/bus/usb/001/002", "param": "usb0"}]}})
}
