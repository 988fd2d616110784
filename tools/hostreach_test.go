package tools

import (
	"strings"
	"testing"
)

// hostReachCalls are calls by which a guest reaches the host, each with
// the item its refusal or confirmation must name.
var hostReachCalls = []struct {
	name   string
	method string
	path   string
	params map[string]any
	item   string
}{
	{"hookscript", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"hookscript": "local:snippets/x.sh"},
		"hookscript runs the host script local:snippets/x.sh as root at each step of guest 100's life (hookscript)"},
	{"args", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"args": "-foo"},
		"args passes raw arguments to the host's QEMU process: -foo (qemu_args)"},
	{"usb", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"usb0": "host=1234:5678"},
		"usb0 passes the host's USB device 1234:5678 to the guest (usb_host)"},
	{"bind mount", "PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp0": "/srv,mp=/mnt"},
		"mp0 bind-mounts the host directory /srv into the container (bind_mount)"},
	{"restore over a guest", "POST", "/nodes/pve1/qemu", map[string]any{"vmid": 100, "archive": "backup:backup/vzdump-qemu-100-2026_11_29-10_00_00.vma.zst", "force": 1},
		"force lets the call overwrite the existing guest 100 (overwrite_vmid)"},
}

// Regression: admin allowed args, host USB devices, bind mounts and
// restores over an existing guest (and refused a hookscript without
// naming it). Every call that reaches the host is refused to an admin key
// with a reason naming the item, and nothing is sent.
func TestAdminRefusesHostReach(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	for _, tt := range hostReachCalls {
		t.Run(tt.name, func(t *testing.T) {
			before := h.sim.Writes()
			res, content := call(t, c, ctx, ToolCall, map[string]any{"method": tt.method, "path": tt.path, "params": tt.params})
			txt := text(res)
			if !res.IsError || !strings.Contains(txt, tt.item) || !strings.Contains(txt, "a policy must allow this explicitly") {
				t.Errorf("not refused naming %q:\n%s", tt.item, txt)
			}
			if items, _ := content["reaches_host"].([]any); len(items) == 0 {
				t.Errorf("the refusal's structured content does not list the items: %v", content)
			}
			if n := h.sim.Writes() - before; n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// A root key is asked to confirm each of them, with the item named; the
// confirmation is bound to the call like any other. Once confirmed the
// call goes to PVE, whose own check still refuses a host USB device to
// any API token.
func TestRootConfirmsHostReach(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("root")
	for _, tt := range hostReachCalls {
		t.Run(tt.name, func(t *testing.T) {
			before := h.sim.Writes()
			res, content := call(t, c, ctx, ToolCall, map[string]any{"method": tt.method, "path": tt.path, "params": tt.params})
			if res.IsError || content["status"] != "confirmation_required" || content["approver"] != "self" || !strings.Contains(text(res), tt.item) {
				t.Fatalf("no confirmation naming %q: %s", tt.item, text(res))
			}
			if items, _ := content["reaches_host"].([]any); len(items) == 0 {
				t.Errorf("the confirmation's structured content does not list the items: %v", content)
			}
			if n := h.sim.Writes() - before; n != 0 {
				t.Errorf("%d requests sent before the confirmation", n)
			}
		})
	}
	usb := map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": map[string]any{"usb0": "host=1234:5678"}}
	_, content := call(t, c, ctx, ToolCall, usb)
	token, _ := content["confirm"].(string)
	other := map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": map[string]any{"usb0": "host=1234:5679"}, "confirm": token}
	if res, _ := call(t, c, ctx, ToolCall, other); !res.IsError || !strings.Contains(text(res), "issued for a different call") {
		t.Errorf("the token of usb0=host=1234:5678 fit another device: %s", text(res))
	}
	usb["confirm"] = token
	if res, _ := call(t, c, ctx, ToolCall, usb); !res.IsError || !strings.Contains(text(res), "only root can set 'usb0' config for real devices") {
		t.Errorf("confirmed call: %s", text(res))
	}
}

// The engine confirms a host reach for every policy: a custom policy that
// allows everything gets a confirmation too.
func TestAllowAllPolicyConfirmsHostReach(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.activate("allow-all", "package proxmox_mcp.policy\n\ntier := \"admin\"\n\n"+`decision := {"effect": "allow", "reasons": ["everything"], "obligations": []}`+"\n")
	c, ctx := h.as("", "allow-all")
	for _, tt := range hostReachCalls {
		res, content := call(t, c, ctx, ToolCall, map[string]any{"method": tt.method, "path": tt.path, "params": tt.params})
		if res.IsError || content["status"] != "confirmation_required" || !strings.Contains(text(res), tt.item) ||
			!strings.Contains(text(res), "policy allow-all@v1 allows it, and such a call runs only once confirmed") {
			t.Errorf("%s: %s", tt.name, text(res))
		}
	}
}

// Look-alikes that do not reach the host stay admin's: a USB device by
// cluster mapping, a mount point on a volume, a serial socket.
func TestAdminAllowsWhatDoesNotReachTheHost(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c, ctx := h.as("admin")
	for _, tt := range []struct {
		path   string
		params map[string]any
	}{
		{"/nodes/pve1/qemu/100/config", map[string]any{"usb0": "mapping=foo"}},
		{"/nodes/pve1/qemu/100/config", map[string]any{"serial0": "socket"}},
		{"/nodes/pve1/lxc/200/config", map[string]any{"mp0": "local-lvm:8,mp=/mnt"}},
	} {
		res, content := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": tt.path, "params": tt.params, "dry_run": true})
		if res.IsError || content["dry_run"] != true {
			t.Errorf("%s %v: %s", tt.path, tt.params, text(res))
		}
	}
}
