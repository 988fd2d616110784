package breakglass

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// freeText are configuration keys and call parameters that hold prose,
// names or secrets, never a volume, path or device.
var freeText = map[string]bool{
	"description": true, "comment": true, "notes": true, "notes-template": true, "tags": true, "name": true, "hostname": true,
	"sshkeys": true, "ssh-public-keys": true, "password": true, "cipassword": true, "ciuser": true, "searchdomain": true,
	"nameserver": true, "digest": true, "meta": true, "smbios1": true, "vmgenid": true, "lock": true, "parent": true, "snaptime": true,
}

// configEntry is one value of a guest's configuration.
type configEntry struct {
	key, value, where string
}

// guestLabel is how hits name a guest: vm 900, ct 200.
func guestLabel(typ string, vmid int) string {
	if typ == "lxc" {
		return "ct " + strconv.Itoa(vmid)
	}
	return "vm " + strconv.Itoa(vmid)
}

// errNoGuest reports that PVE has no such guest where it was looked for.
var errNoGuest = errors.New("no such guest")

// guestHolds reads a guest's configuration as PVE has it now (current and
// pending values, the raw lxc keys of a container, every snapshot) and
// lists what of the repository it holds, one mark per slot.
func (g *Guard) guestHolds(ctx context.Context, inv *inventory, gi *guestInfo) ([]mark, error) {
	base := pve.Path("nodes", gi.node, gi.typ, strconv.Itoa(gi.vmid))
	var entries []configEntry
	var pending []struct {
		Key     string `json:"key"`
		Value   any    `json:"value"`
		Pending any    `json:"pending"`
	}
	if err := g.pve.Get(ctx, base+"/pending", nil, &pending); err != nil {
		var apiErr *pve.APIError
		if errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "does not exist") {
			return nil, fmt.Errorf("%s on node %s: %w", guestLabel(gi.typ, gi.vmid), gi.node, errNoGuest)
		}
		return nil, err
	}
	for _, p := range pending {
		if p.Value != nil {
			entries = append(entries, configEntry{p.Key, scalar(p.Value), ""})
		}
		if p.Pending != nil {
			entries = append(entries, configEntry{p.Key, scalar(p.Pending), " (pending)"})
		}
	}
	if gi.typ == "lxc" {
		// The raw lxc.* keys are only in the configuration itself.
		var conf map[string]any
		if err := g.pve.Get(ctx, base+"/config", nil, &conf); err != nil {
			return nil, err
		}
		entries = append(entries, rawLXC(conf, "")...)
	}
	var snaps []struct {
		Name string `json:"name"`
	}
	if err := g.pve.Get(ctx, base+"/snapshot", nil, &snaps); err != nil {
		return nil, err
	}
	for _, s := range snaps {
		if s.Name == "current" {
			continue
		}
		var conf map[string]any
		if err := g.pve.Get(ctx, base+"/config", url.Values{"snapshot": {s.Name}}, &conf); err != nil {
			return nil, err
		}
		where := " (snapshot " + s.Name + ")"
		for _, k := range sortedKeys(conf) {
			if k != "lxc" {
				entries = append(entries, configEntry{k, scalar(conf[k]), where})
			}
		}
		entries = append(entries, rawLXC(conf, where)...)
	}
	slices.SortStableFunc(entries, func(a, b configEntry) int { return strings.Compare(a.key, b.key) })
	label := guestLabel(gi.typ, gi.vmid)
	var holds []mark
	seen := map[string]bool{}
	for _, e := range entries {
		for _, m := range g.inspectConfigValue(inv, gi.node, e.key, e.value) {
			kind := "guest"
			if m.kind == "unresolved" {
				kind = "unresolved"
			}
			h := mark{kind, fmt.Sprintf("%s %s%s holds %s", label, e.key, e.where, m.reason)}
			if !seen[h.reason] {
				seen[h.reason] = true
				holds = append(holds, h)
			}
		}
	}
	return holds, nil
}

// rawLXC lists the raw lxc.* keys of a container configuration
// ("lxc": [[key, value], …]).
func rawLXC(conf map[string]any, where string) []configEntry {
	raw, _ := conf["lxc"].([]any)
	var out []configEntry
	for _, item := range raw {
		pair, _ := item.([]any)
		if len(pair) == 2 {
			out = append(out, configEntry{scalar(pair[0]), scalar(pair[1]), where})
		}
	}
	return out
}

// inspectConfigValue finds what one configuration value reaches: volumes,
// paths and devices in it; the paths of a virtiofs directory mapping; a
// block device a container is allowed by number, which PVE's API cannot
// name.
func (g *Guard) inspectConfigValue(inv *inventory, node, key, value string) []mark {
	if freeText[key] {
		return nil
	}
	var out []mark
	add := func(m mark) { out = append(out, m) }
	switch {
	case strings.HasPrefix(key, "virtiofs"):
		dirid, _, _ := strings.Cut(value, ",")
		dirid = strings.TrimPrefix(dirid, "dirid=")
		paths, ok := inv.dirMaps[dirid]
		if !ok {
			add(mark{"unresolved", fmt.Sprintf("directory mapping %s, which is not defined", dirid)})
		}
		for _, p := range paths {
			g.inspectPath(inv, node, p, add)
		}
	case strings.HasPrefix(key, "lxc.cgroup") && strings.Contains(key, "devices.allow"):
		if f := strings.Fields(value); len(f) > 0 && (f[0] == "b" || f[0] == "a") {
			add(mark{"unresolved", fmt.Sprintf("block devices by number (%s), which PVE's API cannot name", value)})
		}
	}
	g.inspectValue(inv, node, value, add, nil)
	return out
}

// pieces splits a value into what may name an object: the value, its
// comma, semicolon, space or newline separated parts, and the values of
// key=value parts.
func pieces(value string) []string {
	out := []string{strings.TrimSpace(value)}
	for _, part := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' || r == '\t' }) {
		out = append(out, part)
		if _, v, ok := strings.Cut(part, "="); ok {
			out = append(out, v)
		}
	}
	return out
}

// inspectValue checks every piece of one value: paths and devices, and
// volume ids (whose owners go to vmids when it is not nil).
func (g *Guard) inspectValue(inv *inventory, node, value string, add func(mark), vmids func(int)) {
	for _, p := range pieces(value) {
		if p == "" {
			continue
		}
		if strings.HasPrefix(p, "/") {
			g.inspectPath(inv, node, p, add)
			continue
		}
		storage, _, ok := strings.Cut(p, ":")
		if _, defined := inv.storageConf[storage]; !ok || !defined {
			continue
		}
		vol, err := schema.ParseVolumeID(p)
		if err != nil {
			add(mark{"unresolved", fmt.Sprintf("volume %s (%v)", p, err)})
			continue
		}
		if m, ok := inv.volumes[vol.String()]; ok {
			add(m)
		}
		if m, ok := inv.whole[vol.Storage]; ok {
			add(mark{m.kind, fmt.Sprintf("%s is on %s", vol.String(), m.reason)})
		}
		if vmids != nil {
			for _, id := range vol.VMIDs() {
				vmids(id)
			}
		}
	}
}

// inspectPath checks a path: a device under /dev in PVE's disk list, any
// other path as it resolves, against the protected paths (at, under or
// above one).
func (g *Guard) inspectPath(inv *inventory, node, p string, add func(mark)) {
	c := filepath.Clean(p)
	if within(c, "/dev") {
		g.inspectDevice(inv, node, c, add)
		return
	}
	candidates := []string{c}
	real, err := g.resolvePath(c)
	if err != nil {
		add(mark{"unresolved", fmt.Sprintf("path %s, which cannot be resolved in PVE's view (%v)", c, err)})
	} else if real != c {
		candidates = append(candidates, real)
	}
	for _, cand := range candidates {
		for _, pm := range inv.paths {
			switch {
			case within(cand, pm.path):
				add(mark{pm.kind, fmt.Sprintf("%s, at or under %s", cand, pm.reason)})
			case within(pm.path, cand):
				add(mark{pm.kind, fmt.Sprintf("%s, above %s", cand, pm.reason)})
			}
		}
	}
}

// inspectDevice checks a device name in PVE's view of the node (of every
// node when the call names none): a protected name or alias, a name of a
// protected device, an LV on a protected volume group. A name PVE does
// not report (/dev/dm-7, an unknown by-id or by-uuid link) is unresolved.
func (g *Guard) inspectDevice(inv *inventory, node, dev string, add func(mark)) {
	if charDevice.MatchString(dev) {
		return
	}
	views := map[string]*nodeView{}
	if v, ok := inv.nodes[node]; ok {
		views[node] = v
	} else {
		views = inv.nodes
	}
	known := false
	var unreadable []string
	for _, name := range sortedKeys(views) {
		v := views[name]
		if v.err != nil {
			unreadable = append(unreadable, name)
			continue
		}
		if m, ok := v.devices[dev]; ok {
			if !strings.HasPrefix(m.reason, dev) {
				m.reason = dev + ", " + m.reason
			}
			add(m)
			known = true
			continue
		}
		if real, ok := v.known[dev]; ok {
			known = true
			if m, ok := v.devices[real]; ok {
				add(mark{m.kind, dev + ", " + m.reason})
			}
			continue
		}
		vg, lv, ok := lvOfPath(dev)
		if !ok || !v.vgs[vg] {
			continue
		}
		known = true
		if m, ok := v.wholeVGs[vg]; ok {
			add(mark{m.kind, fmt.Sprintf("%s, an LV of %s", dev, m.reason)})
		}
		if m, ok := inv.lvs[vg+"/"+lv]; ok {
			add(mark{"device", fmt.Sprintf("%s, %s", dev, m.reason)})
		}
	}
	if !known {
		where := "any node"
		if len(views) == 1 {
			where = "node " + node
		}
		msg := fmt.Sprintf("device %s, which is not in PVE's disk list or LVM of %s", dev, where)
		if len(unreadable) > 0 {
			msg += " (unreadable: " + strings.Join(unreadable, ", ") + ")"
		}
		add(mark{"unresolved", msg})
	}
}

// lvOfPath reads /dev/VG/LV and /dev/mapper/VG-LV.
func lvOfPath(dev string) (vg, lv string, ok bool) {
	rest, _ := strings.CutPrefix(dev, "/dev/")
	if name, isMapper := strings.CutPrefix(rest, "mapper/"); isMapper {
		return mapperName(name)
	}
	vg, lv, ok = strings.Cut(rest, "/")
	if !ok || lv == "" || strings.Contains(lv, "/") {
		return "", "", false
	}
	return vg, lv, true
}
