// Package breakglass owns the protected model repository: the guard that
// finds every ordinary call touching it (so the policy refuses it), and, in
// time, the two-confirmation protocol and the signed one-shot runner that
// change it on purpose.
//
// The guard matches what a call names against the protected paths,
// volumes and devices and against everything derived from them in PVE's
// view: the storages over or under them, the volume ids of a protected LV
// on every LVM storage of its volume group, the volume group and thin
// pool, the physical volumes, partitions and parent disks and their
// /dev/disk/by-id aliases, the guests whose configuration (current,
// pending or in a snapshot) holds any of them and the guests that own a
// protected volume by name. What it cannot resolve in PVE's view it
// reports as a hit of kind "unresolved", so the call is refused.
package breakglass

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Protected is what the guard protects.
type Protected struct {
	// Paths are directories or files; everything below a path is protected.
	Paths []string
	// Volumes are storage volume IDs (storage:name) or LVs (vg/lv).
	Volumes []string
	// Devices are block devices (/dev/sdb, /dev/disk/by-id/…): the disk or
	// partition PVE's disk list names so.
	Devices []string
}

// DefaultMaxAge is how old the inventory may be when a call that is not a
// read is decided.
const DefaultMaxAge = 10 * time.Second

// Options are the guard's dependencies.
type Options struct {
	// PVE reads PVE's view: the inventory and, at decision time, the
	// configuration of the guests a call targets. With something
	// protected and no reader, every call that is not a read is refused.
	PVE Reader
	// MaxAge bounds the inventory's age at a decision (DefaultMaxAge
	// when zero).
	MaxAge time.Duration
	// ResolvePath resolves a path in PVE's view (ResolvePath when nil).
	ResolvePath func(string) (string, error)
	// Logger hears of inventory refreshes that fail; discarded when nil.
	Logger *slog.Logger
}

// Guard inspects calls for references to the protected repository.
type Guard struct {
	protected   Protected
	pve         Reader
	maxAge      time.Duration
	resolvePath func(string) (string, error)
	log         *slog.Logger

	cur    atomic.Pointer[inventory]
	flight singleflight.Group
}

// lvmName is an LVM VG or LV name (what pve-storage's parse_lvm_name and
// LVM accept).
var lvmName = regexp.MustCompile(`^[a-zA-Z0-9+_.][a-zA-Z0-9+_.\-]*$`)

// NewGuard prepares a guard. It checks the protected names; it reads
// nothing until a call needs the inventory.
func NewGuard(p Protected, opts Options) (*Guard, error) {
	g := &Guard{pve: opts.PVE, maxAge: opts.MaxAge, resolvePath: opts.ResolvePath, log: opts.Logger}
	if g.maxAge <= 0 {
		g.maxAge = DefaultMaxAge
	}
	if g.resolvePath == nil {
		g.resolvePath = ResolvePath
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	for i, path := range p.Paths {
		if !filepath.IsAbs(path) {
			return nil, fmt.Errorf("breakglass: protected.paths[%d]: %q must be an absolute path", i, path)
		}
		g.protected.Paths = append(g.protected.Paths, filepath.Clean(path))
	}
	for i, d := range p.Devices {
		if c := filepath.Clean(d); c != d || !strings.HasPrefix(d, "/dev/") {
			return nil, fmt.Errorf("breakglass: protected.devices[%d]: %q must be a clean path under /dev/", i, d)
		}
		g.protected.Devices = append(g.protected.Devices, d)
	}
	for i, v := range p.Volumes {
		if strings.Contains(v, ":") {
			if _, err := schema.ParseVolumeID(v); err != nil {
				return nil, fmt.Errorf("breakglass: protected.volumes[%d]: %w", i, err)
			}
		} else if vg, lv, ok := strings.Cut(v, "/"); !ok || !lvmName.MatchString(vg) || !lvmName.MatchString(lv) {
			return nil, fmt.Errorf("breakglass: protected.volumes[%d]: %q must be a volume id (storage:name) or an LV (vg/lv)", i, v)
		}
		g.protected.Volumes = append(g.protected.Volumes, v)
	}
	return g, nil
}

// Empty reports whether nothing is protected.
func (g *Guard) Empty() bool {
	return len(g.protected.Paths)+len(g.protected.Volumes)+len(g.protected.Devices) == 0
}

// lvs are the protected volumes written as vg/lv.
func (g *Guard) lvs() []string {
	var out []string
	for _, v := range g.protected.Volumes {
		if !strings.Contains(v, ":") {
			out = append(out, v)
		}
	}
	return out
}

// errNoReader is the inventory error when no PVE token is configured.
var errNoReader = errors.New("no PVE token is configured to read it")

// inventory returns an inventory no older than maxAge, reading a new one
// (once, for every caller waiting) when needed.
func (g *Guard) inventory(ctx context.Context) (*inventory, error) {
	if g.pve == nil {
		return nil, errNoReader
	}
	if inv := g.cur.Load(); inv != nil && time.Since(inv.at) < g.maxAge {
		return inv, nil
	}
	ch := g.flight.DoChan("inventory", func() (any, error) {
		if inv := g.cur.Load(); inv != nil && time.Since(inv.at) < g.maxAge {
			return inv, nil
		}
		inv, err := g.load(context.WithoutCancel(ctx))
		if err != nil {
			g.log.Warn("breakglass: the protected repository's inventory cannot be read; calls that are not reads are refused", "err", err)
			return nil, err
		}
		g.cur.Store(inv)
		return inv, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*inventory), nil
	}
}

func (g *Guard) now() time.Time { return time.Now() }

// Check looks at every value a call names (path variables, arguments,
// items of lists and fields of property strings) and at what the call
// targets (guests, storages, volume groups, thin pools, directory units),
// and reports each reference to the protected repository, direct or
// derived, and everything it could not resolve. A read reports nothing
// (the policy ignores the guard for reads) and reads no inventory. It
// always reports that it ran.
func (g *Guard) Check(ctx context.Context, ep *schema.Endpoint, vars map[string]string, args map[string]any) policy.Guard {
	out := policy.Guard{Evaluated: true}
	if g.Empty() || ep != nil && ep.Method == "GET" && ep.CallRisk(args) == schema.RiskRead {
		return out
	}
	c := &call{g: g, ep: ep, vars: vars, args: args, seen: map[policy.GuardHit]bool{}, vmids: map[int]string{}}
	inv, err := g.inventory(ctx)
	if err != nil {
		c.hit("protected", mark{"unresolved", fmt.Sprintf("the protected repository's inventory cannot be read from PVE: %v", err)})
		return c.result()
	}
	c.inv = inv
	for _, m := range inv.unresolved {
		c.hit("protected", m)
	}
	c.values()
	c.endpoint()
	c.guests(ctx)
	return c.result()
}

// call is one Check.
type call struct {
	g     *Guard
	inv   *inventory
	ep    *schema.Endpoint
	vars  map[string]string
	args  map[string]any
	hits  []policy.GuardHit
	seen  map[policy.GuardHit]bool
	vmids map[int]string // targeted guests, to the parameter naming them
}

func (c *call) hit(param string, m mark) {
	h := policy.GuardHit{Kind: m.kind, Value: m.reason, Param: param}
	if !c.seen[h] {
		c.seen[h] = true
		c.hits = append(c.hits, h)
	}
}

func (c *call) result() policy.Guard {
	slices.SortFunc(c.hits, func(a, b policy.GuardHit) int {
		return strings.Compare(a.Param+"\x00"+a.Kind+"\x00"+a.Value, b.Param+"\x00"+b.Kind+"\x00"+b.Value)
	})
	return policy.Guard{Evaluated: true, Hits: c.hits}
}

func (c *call) target(id int, param string) {
	if _, ok := c.vmids[id]; !ok {
		c.vmids[id] = param
	}
}

// path is the endpoint's template ("" without one).
func (c *call) path() string {
	if c.ep == nil {
		return ""
	}
	return c.ep.Path
}

func (c *call) format(name string) string {
	if c.ep == nil {
		return ""
	}
	if p := c.ep.Param(name); p != nil {
		return p.Format
	}
	return ""
}

// strs flattens an argument into its string values.
func strs(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		var out []string
		for _, it := range x {
			out = append(out, strs(it)...)
		}
		return out
	case []string:
		return x
	case map[string]any:
		var out []string
		for _, k := range sortedKeys(x) {
			out = append(out, strs(x[k])...)
		}
		return out
	}
	return []string{scalar(v)}
}

// arg is an argument's string value ("" when absent).
func (c *call) arg(name string) string {
	if v, ok := c.vars[name]; ok {
		return v
	}
	return strings.Join(strs(c.args[name]), ",")
}

func (c *call) flag(name string) bool {
	v := c.arg(name)
	return v == "1" || v == "true"
}

// values inspects every value of the call for paths, devices and volume
// ids; the guests volume ids name become targets.
func (c *call) values() {
	node := c.vars["node"]
	if node == "" {
		node = c.arg("node")
	}
	noPaths := strings.HasPrefix(c.path(), "/access")
	inspect := func(param, value string) {
		add := func(m mark) { c.hit(param, m) }
		if noPaths {
			// ACL paths (/vms/100) are not filesystem paths.
			for _, p := range pieces(value) {
				if !strings.HasPrefix(p, "/") {
					c.g.inspectValue(c.inv, node, p, add, func(id int) { c.target(id, param) })
				}
			}
			return
		}
		c.g.inspectValue(c.inv, node, value, add, func(id int) { c.target(id, param) })
	}
	for _, name := range sortedKeys(c.vars) {
		v := c.vars[name]
		if name == "volume" && c.vars["storage"] != "" && !strings.Contains(v, ":") {
			v = c.vars["storage"] + ":" + v
		}
		inspect(name, v)
	}
	for _, name := range sortedKeys(c.args) {
		// Prose cannot attach anything, and a secret (a certificate's
		// private key) must not reach a hit, which the journal keeps.
		if freeText[name] || c.ep != nil && c.ep.Secret(name) || c.ep == nil && schema.SecretParam("", name) {
			continue
		}
		for _, v := range strs(c.args[name]) {
			inspect(name, v)
		}
	}
}

// vmidParams are the formats and names of parameters that name guests.
var vmidFormats = map[string]bool{"pve-vmid": true, "pve-vmid-list": true, "pve-ha-resource-or-vm-id": true, "pve-ha-resource-id-list": true}

var vmidNames = map[string]bool{"vmid": true, "newid": true, "target-vmid": true, "vms": true, "sid": true, "resources": true}

// storageFormats are the formats of parameters that name storages.
var storageFormats = map[string]bool{"pve-storage-id": true, "pve-storage-id-list": true, "storage-pair-list": true}

var storageNames = map[string]bool{"storage": true, "target-storage": true, "targetstorage": true, "vmstatestorage": true,
	"statestorage": true, "import-working-storage": true, "storages": true}

// guestRef reads "900", "vm:900", "ct:900", a replication job "900-0".
var guestRef = regexp.MustCompile(`^(?:(?:vm|ct):)?([1-9][0-9]{0,8})(?:-[0-9]+)?$`)

// endpoint finds what the call targets by its path and parameters:
// guests, storages, volume groups, thin pools, ZFS pools, directory
// units.
func (c *call) endpoint() {
	path := c.path()
	node := c.vars["node"]
	// Guests.
	if id := c.vars["vmid"]; id != "" {
		if n, err := strconv.Atoi(id); err == nil {
			c.target(n, "vmid")
		}
	}
	if id := c.vars["id"]; id != "" && strings.Contains(path, "/replication/") {
		if m := guestRef.FindStringSubmatch(id); m != nil {
			n, _ := strconv.Atoi(m[1])
			c.target(n, "id")
		}
	}
	if sid := c.vars["sid"]; sid != "" {
		if m := guestRef.FindStringSubmatch(sid); m != nil {
			n, _ := strconv.Atoi(m[1])
			c.target(n, "sid")
		}
	}
	for _, name := range sortedKeys(c.args) {
		f := c.format(name)
		if name == "exclude" || !(vmidFormats[f] || f == "" && vmidNames[name] || name == "id" && f == "pve-replication-job-id") {
			continue
		}
		for _, v := range strs(c.args[name]) {
			for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\x00' }) {
				if m := guestRef.FindStringSubmatch(item); m != nil {
					n, _ := strconv.Atoi(m[1])
					c.target(n, name)
				}
			}
		}
	}
	c.bulk(path, node)
	// Storages.
	storages := map[string]string{}
	if s := c.vars["storage"]; s != "" {
		storages[s] = "storage"
	}
	for _, name := range sortedKeys(c.args) {
		f := c.format(name)
		if !(storageFormats[f] || f == "" && storageNames[name]) || strings.HasPrefix(path, "/nodes/{node}/disks/") {
			continue
		}
		for _, v := range strs(c.args[name]) {
			for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ':' || r == ' ' }) {
				if _, ok := storages[item]; !ok {
					storages[item] = name
				}
			}
		}
	}
	for _, id := range sortedKeys(storages) {
		if m, ok := c.inv.whole[id]; ok {
			c.hit(storages[id], m)
		}
		if m, ok := c.inv.config[id]; ok && path == "/storage/{storage}" {
			c.hit(storages[id], m)
		}
	}
	// Volume groups and thin pools a storage definition uses.
	if path == "/storage" || path == "/storage/{storage}" {
		if vg := c.arg("vgname"); vg != "" {
			for _, name := range sortedKeys(c.inv.nodes) {
				v := c.inv.nodes[name]
				if m, ok := v.vgMarks[vg]; ok {
					c.hit("vgname", m)
				}
				if m, ok := v.thinMarks[vg+"/"+c.arg("thinpool")]; ok {
					c.hit("thinpool", m)
				}
			}
		}
	}
	if !strings.HasPrefix(path, "/nodes/{node}/disks/") {
		return
	}
	v := c.inv.nodes[node]
	if v == nil || v.err != nil {
		reason := fmt.Sprintf("the disks of node %s are not in the inventory (offline or not a node)", node)
		if v != nil {
			reason = fmt.Sprintf("the disks of node %s cannot be read: %v", node, v.err)
		}
		c.hit("node", mark{"unresolved", reason})
		return
	}
	name := c.vars["name"]
	switch path {
	case "/nodes/{node}/disks/lvm/{name}":
		if m, ok := v.vgMarks[name]; ok {
			c.hit("name", m)
		}
	case "/nodes/{node}/disks/lvmthin/{name}":
		vg := c.arg("volume-group")
		if m, ok := v.thinMarks[vg+"/"+name]; ok {
			c.hit("name", m)
		}
		if m, ok := v.wholeVGs[vg]; ok {
			c.hit("volume-group", m)
		}
	case "/nodes/{node}/disks/zfs/{name}":
		if v.zfsUnknown != "" {
			c.hit("name", mark{"unresolved", v.zfsUnknown})
		}
	case "/nodes/{node}/disks/directory/{name}":
		if m, ok := v.unitMarks[name]; ok {
			c.hit("name", m)
		}
		c.g.inspectPath(c.inv, node, "/mnt/pve/"+name, func(m mark) { c.hit("name", m) })
	}
}

var nodeBulk = regexp.MustCompile(`^/nodes/\{node\}/(?:startall|stopall|suspendall|migrateall)$`)

// bulk targets the guests an action on many reaches when it lists none:
// start/stop/suspend/migrate all of a node or the cluster, backups of all
// guests or of a pool.
func (c *call) bulk(path, node string) {
	all := func(param string, onNode string, pool string) {
		exclude := map[int]bool{}
		for _, item := range strings.FieldsFunc(c.arg("exclude"), func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
			if n, err := strconv.Atoi(item); err == nil {
				exclude[n] = true
			}
		}
		for _, id := range sortedKeys(c.inv.guests) {
			gi := c.inv.guests[id]
			if exclude[id] || onNode != "" && gi.node != onNode || pool != "" && gi.pool != pool {
				continue
			}
			c.target(id, param)
		}
	}
	switch {
	case nodeBulk.MatchString(path):
		if c.arg("vms") == "" {
			all("vms", node, "")
		}
	case strings.HasPrefix(path, "/cluster/bulk-action/guest/"):
		if c.arg("vms") == "" {
			all("vms", "", "")
		}
	case path == "/nodes/{node}/vzdump" || path == "/cluster/backup" || path == "/cluster/backup/{id}":
		onNode := node
		if path != "/nodes/{node}/vzdump" {
			onNode = c.arg("node")
		}
		if c.flag("all") {
			all("all", onNode, "")
		}
		if pool := c.arg("pool"); pool != "" {
			all("pool", onNode, pool)
		}
	}
}

// guests decides on every targeted guest: it owns a protected volume by
// name, or its configuration, read now, holds something protected.
func (c *call) guests(ctx context.Context) {
	ids := sortedKeys(c.vmids)
	type answer struct {
		holds []mark
		err   error
	}
	answers := make([]answer, len(ids))
	located := make([]*guestInfo, len(ids))
	for i, id := range ids {
		located[i] = c.locate(ctx, id)
	}
	sem := make(chan struct{}, parallelReads)
	var wg sync.WaitGroup
	for i, gi := range located {
		if gi == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			answers[i].holds, answers[i].err = c.g.guestHolds(ctx, c.inv, gi)
		})
	}
	wg.Wait()
	for i, id := range ids {
		param := c.vmids[id]
		if m, ok := c.inv.owners[id]; ok {
			c.hit(param, m)
		}
		gi := located[i]
		if gi == nil {
			continue
		}
		if err := answers[i].err; err != nil {
			if errors.Is(err, errNoGuest) {
				continue
			}
			c.hit(param, mark{"unresolved", fmt.Sprintf("the configuration of %s cannot be read: %v", guestLabel(gi.typ, id), err)})
			continue
		}
		for _, m := range answers[i].holds {
			c.hit(param, m)
		}
	}
}

// locate finds where a guest lives now: the call's own path for
// /nodes/{node}/{qemu|lxc}/{vmid}/…, else the inventory, else
// /cluster/resources read now (a guest created since). nil when no such
// guest exists.
func (c *call) locate(ctx context.Context, id int) *guestInfo {
	if c.vars["vmid"] == strconv.Itoa(id) && c.vars["node"] != "" {
		for _, typ := range []string{"qemu", "lxc"} {
			if strings.HasPrefix(c.path(), "/nodes/{node}/"+typ+"/{vmid}") {
				return &guestInfo{vmid: id, node: c.vars["node"], typ: typ}
			}
		}
	}
	if gi, ok := c.inv.guests[id]; ok {
		return gi
	}
	var resources []struct {
		VMID int    `json:"vmid"`
		Node string `json:"node"`
		Type string `json:"type"`
	}
	if err := c.g.pve.Get(ctx, "/cluster/resources", url.Values{"type": {"vm"}}, &resources); err != nil {
		c.hit(c.vmids[id], mark{"unresolved", fmt.Sprintf("guest %d is not in the inventory and the cluster's guests cannot be read: %v", id, err)})
		return nil
	}
	for _, r := range resources {
		if r.VMID == id {
			return &guestInfo{vmid: id, node: r.Node, typ: r.Type}
		}
	}
	return nil
}
