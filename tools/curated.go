package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// curated is one curated tool, declared: the endpoint it calls (per kind
// of guest where VMs and containers each have theirs), which of the
// endpoint's parameters it takes as they are, and which of the calling
// tools' control arguments. Its input schema is made of the registry's
// own parameter schemas, its call goes through callEndpoint (validation,
// policy, confirmation, journal, shaping, task wait), and its output
// schema is the answer's envelope around the endpoint's return schema.
type curated struct {
	name, title, desc string
	method            string
	// path is the endpoint of a node or of the cluster; qemu and lxc are
	// a guest's, per kind (one of them empty: the tool is for that kind
	// only).
	path, qemu, lxc string
	// vmid: the tool takes a VM ID and finds the guest's node (and kind)
	// in the caller's view of /cluster/resources. node: it takes a node.
	// target: the VM ID may be a new guest's (its node is given, or the
	// existing guest's; prepare says the kind).
	vmid, node, target bool
	// params are the endpoint's parameters the tool takes as arguments.
	params []string
	// fixed are parameters the tool always sends.
	fixed map[string]any
	// controls are the control arguments (shapeProperties) it takes.
	controls []string
	// own are arguments of the tool's own, read by prepare; required
	// those of them that must be given.
	own      map[string]any
	required []string
	// prepare reads the tool's own arguments into the call.
	prepare func(a map[string]any, cc *curatedCall) error
	// extra are answer keys beside the envelope's.
	extra map[string]any
	// handler, when set, serves the tool instead of one call of its
	// endpoint.
	handler func(s *Server, cs *curated) server.ToolHandlerFunc
	// idempotent, when set, overrides what the endpoints' methods say.
	idempotent *bool
}

// curatedCall is what one call of a curated tool sends.
type curatedCall struct {
	node, kind string
	vmid       int
	params     map[string]any
	shape      *shaping
	transform  func(any) any
	// vmidText sends the VM ID as the endpoint's string parameter
	// (vzdump's list of VM IDs) instead of as a path variable.
	vmidText bool
}

var (
	readObject = []string{"fields", "omit"}
	readList   = []string{"fields", "omit", "limit", "offset"}
	writeTask  = []string{"wait", "confirm", "dry_run", "operation_key", "change"}
	writeSync  = []string{"confirm", "dry_run", "keep_plan", "operation_key", "change"}
	notIdem    = false
)

// Names of the curated tools.
const (
	ToolNodeStatus       = "proxmox_node_status"
	ToolNodeDisks        = "proxmox_node_disks"
	ToolNodeDiskSmart    = "proxmox_node_disk_smart"
	ToolNodeNetwork      = "proxmox_node_network"
	ToolNodeJournal      = "proxmox_node_journal"
	ToolNodeSyslog       = "proxmox_node_syslog"
	ToolNodeUpdates      = "proxmox_node_updates"
	ToolGuestConfig      = "proxmox_guest_config"
	ToolGuestConfigSet   = "proxmox_guest_config_set"
	ToolSnapshotList     = "proxmox_snapshot_list"
	ToolSnapshotCreate   = "proxmox_snapshot_create"
	ToolSnapshotDelete   = "proxmox_snapshot_delete"
	ToolSnapshotRollback = "proxmox_snapshot_rollback"
	ToolBackupCreate     = "proxmox_backup_create"
	ToolBackupList       = "proxmox_backup_list"
	ToolBackupRestore    = "proxmox_backup_restore"
	ToolGuestClone       = "proxmox_guest_clone"
	ToolGuestTemplate    = "proxmox_guest_template"
	ToolGuestResize      = "proxmox_guest_resize"
	ToolGuestMigrate     = "proxmox_guest_migrate"
	ToolClusterTasks     = "proxmox_cluster_tasks"
	ToolTaskLog          = "proxmox_task_log"
	ToolClusterLog       = "proxmox_cluster_log"
	ToolHAStatus         = "proxmox_ha_status"
	ToolStorageContent   = "proxmox_storage_content"
)

const guestBase = "/nodes/{node}/"

func qemuPath(rest string) string { return guestBase + "qemu/{vmid}" + rest }
func lxcPath(rest string) string  { return guestBase + "lxc/{vmid}" + rest }

// curatedSpecs is the table of curated tools.
func curatedSpecs() []*curated {
	return []*curated{
		{name: ToolNodeStatus, title: "Node status and health", method: "GET", path: "/nodes/{node}/status", node: true, handler: (*Server).handleNodeStatus,
			desc: "A node's status and health: uptime, cpu, loadavg, memory, swap, rootfs (total, used, free), cpuinfo, kversion, pveversion; " +
				"and rrd, a summary of its RRD statistics over the timeframe (avg, max and last of cpu, iowait, loadavg, memused, memtotal, swapused, rootused, netin, netout, pressure*).",
			own: map[string]any{
				"timeframe": map[string]any{"type": "string", "enum": []string{"hour", "day", "week", "month", "year", "decade"}, "description": "Time frame of the RRD summary (default hour)."},
				"cf":        map[string]any{"type": "string", "enum": []string{"AVERAGE", "MAX"}, "description": "How PVE consolidates the RRD rows (default AVERAGE)."},
			},
			extra: map[string]any{"rrd": rrdSummarySchema(), "rrd_error": map[string]any{"type": "string"}}},
		{name: ToolNodeDisks, title: "Node disks", method: "GET", path: "/nodes/{node}/disks/list", node: true,
			params: []string{"type", "include-partitions", "skipsmart"}, controls: readList,
			desc: "A node's physical disks: devpath, model, serial, size, type (hdd, ssd, nvme), health (SMART), wearout, used (LVM, ZFS, partitions...), mounted. " + ToolNodeDiskSmart + " gives one disk's SMART data."},
		{name: ToolNodeDiskSmart, title: "A disk's SMART data", method: "GET", path: "/nodes/{node}/disks/smart", node: true,
			params: []string{"disk", "healthonly"}, controls: readObject,
			desc: "One disk's SMART data: health (PASSED, FAILED, UNKNOWN), type (ata: attributes with id, name, value, worst, threshold, raw; text: smartctl's text, for NVMe)."},
		{name: ToolNodeNetwork, title: "Node network", method: "GET", path: "/nodes/{node}/network", node: true,
			params: []string{"type"}, controls: readList,
			desc: "A node's network interfaces: iface, type (bridge, eth, bond, vlan...), active, autostart, method, address, netmask, cidr, gateway, bridge_ports, comments."},
		{name: ToolNodeJournal, title: "Node journal", method: "GET", path: "/nodes/{node}/journal", node: true,
			params: []string{"since", "until", "lastentries", "startcursor", "endcursor"}, controls: []string{"limit", "offset"},
			desc: "A node's systemd journal: lines of text, oldest first (the first and last are cursors for startcursor and endcursor). Give lastentries, or since and until."},
		{name: ToolNodeSyslog, title: "Node syslog", method: "GET", path: "/nodes/{node}/syslog", node: true,
			params: []string{"start", "limit", "since", "until", "service"}, controls: []string{"offset"},
			desc: "A node's system log: n (line number) and t (text) per line; service narrows it to one unit (pveproxy, pvedaemon, ...)."},
		{name: ToolNodeUpdates, title: "Node updates", method: "GET", path: "/nodes/{node}/apt/update", node: true, controls: readList,
			desc: "The package updates a node has (as of its last apt update): Package, Title, Version (new), OldVersion, Priority, Section, Origin."},
		{name: ToolGuestConfig, title: "Guest configuration", method: "GET", qemu: qemuPath("/config"), lxc: lxcPath("/config"), vmid: true,
			params: []string{"current", "snapshot"}, controls: readObject,
			desc: "A VM's or container's configuration by VM ID, with its digest (give it to " + ToolGuestConfigSet + " to change exactly this version): " +
				"name or hostname, memory, cores, sockets, cpu, disks (scsi0, virtio0, rootfs, mp0...), net0..., boot, ostype, onboot, tags, lock."},
		{name: ToolGuestConfigSet, title: "Change a guest's configuration", method: "PUT", qemu: qemuPath("/config"), lxc: lxcPath("/config"), vmid: true,
			params: []string{"delete", "digest", "revert"}, controls: writeSync,
			own: map[string]any{"set": map[string]any{"type": "object", "minProperties": 1,
				"description": "The options to set, as PVE names them: {\"memory\": 4096, \"net0\": \"virtio,bridge=vmbr0\"}. Each is checked against the kind's schema (" + ToolDescribe + " put_nodes_qemu_config or put_nodes_lxc_config)."}},
			prepare: prepareConfigSet,
			desc: "Set or delete options of a VM's or container's configuration by VM ID. The edit carries the digest it was planned against (yours, or the current one), " +
				"so a concurrent change is refused; evidence gives digest_before, digest_after and the changes."},
		{name: ToolSnapshotList, title: "Snapshots", method: "GET", qemu: qemuPath("/snapshot"), lxc: lxcPath("/snapshot"), vmid: true, controls: readList,
			desc: "A guest's snapshots by VM ID: name, description, snaptime, parent, vmstate (VMs); the entry named current is the running state."},
		{name: ToolSnapshotCreate, title: "Take a snapshot", method: "POST", qemu: qemuPath("/snapshot"), lxc: lxcPath("/snapshot"), vmid: true,
			params: []string{"snapname", "description", "vmstate"}, controls: writeTask,
			desc: "Take a snapshot of a VM or container by VM ID. Answers the task's upid; wait follows it."},
		{name: ToolSnapshotDelete, title: "Delete a snapshot", method: "DELETE", qemu: qemuPath("/snapshot/{snapname}"), lxc: lxcPath("/snapshot/{snapname}"), vmid: true,
			params: []string{"snapname", "force"}, controls: writeTask,
			desc: "Delete a snapshot of a VM or container by VM ID. Answers the task's upid; wait follows it."},
		{name: ToolSnapshotRollback, title: "Roll back to a snapshot", method: "POST", qemu: qemuPath("/snapshot/{snapname}/rollback"), lxc: lxcPath("/snapshot/{snapname}/rollback"), vmid: true,
			params: []string{"snapname", "start"}, controls: writeTask,
			desc: "Roll a VM or container back to a snapshot by VM ID: the state since the snapshot is lost. Answers the task's upid; wait follows it."},
		{name: ToolBackupCreate, title: "Back up a guest", method: "POST", path: "/nodes/{node}/vzdump", vmid: true,
			params: []string{"storage", "mode", "compress", "notes-template", "protected"}, controls: writeTask,
			prepare: func(_ map[string]any, cc *curatedCall) error { cc.vmidText = true; return nil },
			desc:    "Back up a VM or container by VM ID (vzdump on its node) to a backup storage. Answers the task's upid; wait follows it; " + ToolBackupList + " shows the archive."},
		{name: ToolBackupList, title: "Backups", method: "GET", path: "/nodes/{node}/storage/{storage}/content", node: true,
			params: []string{"storage", "vmid"}, fixed: map[string]any{"content": "backup"}, controls: readList,
			desc: "The backups on a storage of a node, of one guest with vmid: volid (give it to " + ToolBackupRestore + "), vmid, size, ctime, format, notes, protected, verification."},
		{name: ToolBackupRestore, title: "Restore a backup", method: "POST", qemu: "/nodes/{node}/qemu", lxc: "/nodes/{node}/lxc", target: true, required: []string{"vmid", "archive"},
			params: []string{"storage", "force", "unique", "start", "pool", "bwlimit", "unprivileged"}, controls: writeTask,
			own: map[string]any{
				"vmid":    map[string]any{"type": "integer", "minimum": 100, "maximum": 999999999, "description": "The VM ID to restore to: a new one, or an existing guest's with force (which overwrites it)."},
				"archive": map[string]any{"type": "string", "minLength": 1, "description": "The backup's volid, as " + ToolBackupList + " gives it (storage:backup/vzdump-qemu-... or vzdump-lxc-...); its name says whether it is a VM or a container."},
				"node":    map[string]any{"type": "string", "description": "The node to restore on; by default the node of the existing guest with this VM ID."},
			},
			prepare: prepareRestore,
			desc:    "Restore a backup archive as a VM or container (the archive's name says which). With force, overwrites the existing guest of that VM ID. Answers the task's upid; wait follows it."},
		{name: ToolGuestClone, title: "Clone a guest", method: "POST", qemu: qemuPath("/clone"), lxc: lxcPath("/clone"), vmid: true,
			params: []string{"newid", "name", "hostname", "description", "full", "target", "storage", "pool", "snapname", "format", "bwlimit"}, controls: writeTask,
			desc: "Clone a VM or container (or template) by VM ID to newid. Answers the task's upid; wait follows it."},
		{name: ToolGuestTemplate, title: "Make a template", method: "POST", qemu: qemuPath("/template"), lxc: lxcPath("/template"), vmid: true,
			params: []string{"disk"}, controls: writeTask, idempotent: &notIdem,
			desc: "Turn a stopped VM or container into a template by VM ID (for good: a template cannot be started). Answers the task's upid for a VM; wait follows it."},
		{name: ToolGuestResize, title: "Grow a guest's disk", method: "PUT", qemu: qemuPath("/resize"), lxc: lxcPath("/resize"), vmid: true,
			params: []string{"disk", "size", "digest"}, controls: writeTask, idempotent: &notIdem,
			desc: "Grow a disk of a VM or container by VM ID: size +4G adds, 40G sets (disks only grow). Answers the task's upid; wait follows it."},
		{name: ToolGuestMigrate, title: "Migrate a guest", method: "POST", qemu: qemuPath("/migrate"), lxc: lxcPath("/migrate"), vmid: true,
			params: []string{"target", "online", "with-local-disks", "targetstorage", "target-storage", "restart", "timeout", "bwlimit"}, controls: writeTask,
			desc: "Migrate a VM or container by VM ID to the node target (online: live, for a running VM; restart: a running container). Answers the task's upid; wait follows it."},
		{name: ToolClusterTasks, title: "Cluster tasks", method: "GET", path: "/cluster/tasks", controls: readList,
			own: map[string]any{
				"failed": map[string]any{"type": "boolean", "description": "Only tasks that ended with an error (not OK, not WARNINGS)."},
				"node":   map[string]any{"type": "string", "description": "Only this node's tasks."},
				"vmid":   map[string]any{"type": "integer", "minimum": 100, "maximum": 999999999, "description": "Only tasks of this guest."},
				"type":   map[string]any{"type": "string", "description": "Only this task type (qmstart, vzdump, qmigrate...)."},
			},
			prepare: prepareTaskFilter,
			desc:    "The cluster's recent tasks, newest first: upid, node, type, id (VM ID), user, starttime, endtime, status (OK, WARNINGS: n, or the error). failed keeps the failures; " + ToolTaskLog + " shows one's log."},
		{name: ToolTaskLog, title: "A task's log", method: "GET", path: "/nodes/{node}/tasks/{upid}/log",
			params: []string{"upid", "start", "limit"}, controls: []string{"offset"}, prepare: prepareTaskLog,
			desc: "A task's log by UPID (the node is read from it): n (line number) and t (text) per line. start and limit page through a long log."},
		{name: ToolClusterLog, title: "Cluster log", method: "GET", path: "/cluster/log", params: []string{"max"}, controls: readList,
			desc: "The cluster log, newest first: time, node, tag, user, pri, msg."},
		{name: ToolHAStatus, title: "HA status", method: "GET", path: "/cluster/ha/status/current", controls: readList,
			desc: "The HA manager's status: quorum (quorate), master, fencing, each node's lrm, and each HA resource (sid, state, crm_state, request_state, node)."},
		{name: ToolStorageContent, title: "Storage content", method: "GET", path: "/nodes/{node}/storage/{storage}/content", node: true,
			params: []string{"storage", "content", "vmid"}, controls: readList,
			desc: "What a storage of a node holds: volid, content (images, rootdir, iso, vztmpl, backup, snippets), format, size, used, vmid, ctime, notes."},
	}
}

// endpoints are the spec's endpoints in the registry, by kind ("" for a
// node's or the cluster's).
func (cs *curated) endpoints(reg *schema.Registry) map[string]*schema.Endpoint {
	out := map[string]*schema.Endpoint{}
	for kind, p := range map[string]string{"": cs.path, "qemu": cs.qemu, "lxc": cs.lxc} {
		if p == "" {
			continue
		}
		if ep := reg.Lookup(cs.method, p); ep != nil {
			out[kind] = ep
		}
	}
	return out
}

func (cs *curated) guest() bool { return cs.qemu != "" || cs.lxc != "" }

// args are the arguments the tool takes.
func (cs *curated) args() []string {
	var out []string
	if cs.vmid {
		out = append(out, "vmid")
	}
	if cs.node {
		out = append(out, "node")
	}
	out = append(out, cs.params...)
	for k := range cs.own {
		out = append(out, k)
	}
	out = append(out, cs.controls...)
	sort.Strings(out)
	return slices.Compact(out)
}

// curatedTools are the curated tools: one call for one day-to-day job,
// each over endpoints of the registry. A tool whose endpoints the registry
// lacks is not served.
func (s *Server) curatedTools(reg *schema.Registry) []server.ServerTool {
	var out []server.ServerTool
	for _, cs := range curatedSpecs() {
		eps := cs.endpoints(reg)
		if len(eps) == 0 {
			continue
		}
		handler := s.curatedHandler(cs)
		if cs.handler != nil {
			handler = cs.handler(s, cs)
		}
		out = append(out, server.ServerTool{Tool: cs.tool(reg, eps), Handler: handler})
	}
	return out
}

// curatedVisible says whether a caller with the visibility v sees the tool
// name: when it may use one of the tool's endpoints (and, for a tool that
// finds a guest by VM ID, read the cluster's resources). known is false
// for a tool not of this family.
func (s *Server) curatedVisible(name string, v visibility) (show, known bool) {
	return s.specVisible(curatedByName()[name], v)
}

// specVisible says whether a caller with the visibility v sees the tool
// of a spec (nil: not a tool of the spec's family, known false).
func (s *Server) specVisible(cs *curated, v visibility) (show, known bool) {
	if cs == nil {
		return false, false
	}
	if cs.vmid && v["get_cluster_resources"] == nil {
		return false, true
	}
	for _, ep := range cs.endpoints(s.registry()) {
		if v[ep.Tool] != nil {
			return true, true
		}
	}
	return false, true
}

// curatedByName is the table by tool name, made once: it is never changed.
var curatedByName = sync.OnceValue(func() map[string]*curated {
	out := map[string]*curated{}
	for _, cs := range curatedSpecs() {
		out[cs.name] = cs
	}
	return out
})

// tool is the MCP tool of a spec over its endpoints (the registry's, as
// endpoints gives them).
func (cs *curated) tool(_ *schema.Registry, eps map[string]*schema.Endpoint) mcp.Tool {
	h := hints{readOnly: true, idempotent: true}
	for _, ep := range eps {
		eh := endpointHints(ep)
		h.readOnly = h.readOnly && eh.readOnly
		h.destructive = h.destructive || eh.destructive
		h.idempotent = h.idempotent && eh.idempotent
		h.openWorld = h.openWorld || eh.openWorld
	}
	if cs.idempotent != nil {
		h.idempotent = *cs.idempotent
	}
	in := cs.inputSchema(eps)
	t := mcp.NewTool(cs.name, mcp.WithDescription(cs.desc), rawSchema(in), annotate(cs.title, h))
	t.RawOutputSchema = envelopeSchema(returnsSchema(eps), cs.extra)
	return t
}

// inputSchema is the tool's arguments: each endpoint parameter with the
// registry's own schema of it (a parameter of one kind of guest says so),
// the tool's own arguments and the control arguments.
func (cs *curated) inputSchema(eps map[string]*schema.Endpoint) map[string]any {
	props := map[string]any{}
	var required []string
	if cs.vmid {
		props["vmid"] = map[string]any{"type": "integer", "minimum": 100, "maximum": 999999999, "description": "VM or container ID (its node is found)."}
		required = append(required, "vmid")
	}
	if cs.node {
		props["node"] = map[string]any{"type": "string", "description": "A node's name."}
		required = append(required, "node")
	}
	kinds := slices.Sorted(maps.Keys(eps))
	for _, name := range cs.params {
		var have []string
		var schemas []map[string]any
		req := true
		for _, kind := range kinds {
			if p, preq := eps[kind].ParamSchema(name); p != nil {
				have = append(have, kind)
				schemas = append(schemas, p)
				req = req && preq
			}
		}
		if len(schemas) == 0 {
			continue
		}
		p := mergeParamSchemas(schemas)
		if len(kinds) > 1 && len(have) == 1 {
			p["description"] = strings.TrimSpace(fmt.Sprint(p["description"]) + " " + kindOnly(have[0]))
			if p["description"] == "<nil> "+kindOnly(have[0]) {
				p["description"] = kindOnly(have[0])
			}
			req = false
		}
		props[name] = p
		if req && name != "node" && name != "vmid" {
			required = append(required, name)
		}
	}
	for k, v := range cs.own {
		props[k] = v
	}
	required = append(required, cs.required...)
	shape := shapeProperties("")
	for _, k := range cs.controls {
		props[k] = shape[k]
	}
	root := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sort.Strings(required)
		root["required"] = slices.Compact(required)
	}
	return root
}

func kindOnly(kind string) string {
	if kind == "qemu" {
		return "VMs only."
	}
	return "Containers only."
}

// mergeParamSchemas is one parameter's schema where VMs and containers
// each have it: the same schema once, or the first kind's type with both
// descriptions.
func mergeParamSchemas(list []map[string]any) map[string]any {
	first := list[0]
	if len(list) == 1 || sameJSON(list[0], list[1]) {
		return first
	}
	out := map[string]any{}
	if first["type"] == list[1]["type"] && first["type"] != nil {
		out["type"] = first["type"]
	}
	d0, _ := first["description"].(string)
	d1, _ := list[1]["description"].(string)
	switch {
	case d0 == d1 || d1 == "":
		out["description"] = d0
	case d0 == "":
		out["description"] = d1
	default:
		out["description"] = "VMs: " + d0 + " Containers: " + d1
	}
	return out
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// curatedHandler calls the spec's endpoint with the caller's arguments.
func (s *Server) curatedHandler(cs *curated) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, a, err := s.callerArgs(ctx, req, cs.args()...)
		if err != nil {
			return nil, err
		}
		cc, err := cs.read(a)
		if err != nil {
			return nil, err
		}
		if bad := s.resolve(ctx, c, cs, a, cc); bad != nil {
			return bad, nil
		}
		ep, args, err := cs.request(s.registry(), cc)
		if err != nil {
			return s.argRefusal(ctx, c, cs, a, err), nil
		}
		if ep == nil {
			return errorResult(fmt.Sprintf("%s: the API schema has no %s endpoint for this guest; list the tools again", cs.name, cs.method)), nil
		}
		sh := cc.shape
		return s.callEndpoint(ctx, c, callRequest{tool: cs.name, method: ep.Method, endpoint: ep, args: args, shape: sh.shape,
			wait: sh.wait, confirm: sh.confirm, dryRun: sh.dryRun, operationKey: sh.operationKey, change: sh.change, keepPlan: sh.keepPlan,
			progressToken: progressToken(req), transform: cc.transform}), nil
	}
}

// read takes the arguments that need no lookup: the VM ID, the node, the
// endpoint's parameters, the tool's own and the control arguments.
func (cs *curated) read(a map[string]any) (*curatedCall, error) {
	cc := &curatedCall{params: map[string]any{}}
	if cs.vmid || cs.target {
		vmid, set, err := optInt(a, "vmid", 100, 999999999)
		if err != nil {
			return nil, err
		}
		if !set {
			return nil, argError("vmid", "is required")
		}
		cc.vmid = vmid
	}
	if cs.node {
		node, err := optString(a, "node")
		if err != nil {
			return nil, err
		}
		if node == "" {
			return nil, argError("node", "is required: a node's name, as proxmox_cluster_resources lists it")
		}
		cc.node = node
	}
	for _, p := range cs.params {
		if v, ok := a[p]; ok && v != nil {
			cc.params[p] = v
		}
	}
	for k, v := range cs.fixed {
		cc.params[k] = v
	}
	ctl := map[string]any{}
	for _, k := range cs.controls {
		if v, ok := a[k]; ok {
			ctl[k] = v
		}
	}
	sh, err := shapingArgs(ctl, "")
	if err != nil {
		return nil, err
	}
	cc.shape = &sh
	if cs.prepare != nil {
		if err := cs.prepare(a, cc); err != nil {
			return nil, err
		}
	}
	return cc, nil
}

// resolve finds the guest's node and kind from its VM ID, through the
// caller's own view of /cluster/resources.
func (s *Server) resolve(ctx context.Context, c Caller, cs *curated, a map[string]any, cc *curatedCall) *mcp.CallToolResult {
	switch {
	case cs.target:
		if cc.node != "" {
			return nil
		}
		n, _, bad := s.locateGuest(ctx, c, cs.name, cc.vmid)
		if bad != nil {
			bad.Content = []mcp.Content{mcp.NewTextContent(text(bad) + "\nargument node: is required to restore to a VM ID that no guest has.")}
			return bad
		}
		cc.node = n
	case cs.vmid:
		node, kind, bad := s.locateGuest(ctx, c, cs.name, cc.vmid)
		if bad != nil {
			return bad
		}
		cc.node, cc.kind = node, kind
	}
	return nil
}

// argRefusal journals and answers a bad argument found after the guest
// was looked up (the middleware journals only calls that wrote nothing).
func (s *Server) argRefusal(ctx context.Context, c Caller, cs *curated, a map[string]any, err error) *mcp.CallToolResult {
	outcome, text := journal.OutcomeInvalid, err.Error()
	if te, ok := err.(*toolError); ok {
		outcome = te.outcome
	}
	return s.refuse(ctx, AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: cs.name, Args: a}, outcome, text)
}

// prepareRestore reads the archive (its name says the kind) and the node
// to restore on.
func prepareRestore(a map[string]any, cc *curatedCall) error {
	archive, err := optString(a, "archive")
	if err != nil {
		return err
	}
	if archive == "" {
		return argError("archive", "is required: a backup's volid, as "+ToolBackupList+" gives it")
	}
	switch base := archive[strings.LastIndex(archive, "/")+1:]; {
	case strings.HasPrefix(base, "vzdump-qemu-") || strings.Contains(archive, "backup/vm/"):
		cc.kind = "qemu"
		cc.params["archive"] = archive
	case strings.HasPrefix(base, "vzdump-lxc-") || strings.Contains(archive, "backup/ct/"):
		cc.kind = "lxc"
		cc.params["ostemplate"], cc.params["restore"] = archive, true
	default:
		return argError("archive", "must name a VM's or a container's backup (vzdump-qemu-..., vzdump-lxc-..., or a PBS backup/vm/... or backup/ct/... volid)")
	}
	node, err := optString(a, "node")
	cc.node = node
	return err
}

// prepareTaskLog reads the node from the UPID.
func prepareTaskLog(_ map[string]any, cc *curatedCall) error {
	u, err := pve.ParseUPID(fmt.Sprint(cc.params["upid"]))
	if err != nil {
		return argError("upid", err.Error())
	}
	cc.node = u.Node
	return nil
}

// request is the endpoint and the arguments of the call: the kind's
// endpoint, the path variables, and a refusal of a parameter the kind
// does not have.
func (cs *curated) request(reg *schema.Registry, cc *curatedCall) (*schema.Endpoint, map[string]any, error) {
	path := cs.path
	if cs.guest() {
		path = map[string]string{"qemu": cs.qemu, "lxc": cs.lxc}[cc.kind]
		if path == "" {
			return nil, nil, argError("vmid", fmt.Sprintf("VM ID %d is a %s; %s is for %ss only", cc.vmid, kindName(cc.kind), cs.name, kindName(otherKind(cc.kind))))
		}
	}
	ep := reg.Lookup(cs.method, path)
	if ep == nil {
		return nil, nil, nil
	}
	args := make(map[string]any, len(cc.params)+2)
	for k, v := range cc.params {
		if ep.Param(k) == nil && slices.Contains(cs.params, k) {
			return nil, nil, argError(k, fmt.Sprintf("exists for %ss only; VM ID %d is a %s", kindName(otherKind(cc.kind)), cc.vmid, kindName(cc.kind)))
		}
		args[k] = v
	}
	if cc.node != "" {
		args["node"] = cc.node
	}
	if cc.vmid != 0 && (ep.Param("vmid") != nil) {
		args["vmid"] = cc.vmid
		if cc.vmidText {
			args["vmid"] = strconv.Itoa(cc.vmid)
		}
	}
	return ep, args, nil
}

func kindName(kind string) string {
	if kind == "lxc" {
		return "container"
	}
	return "VM"
}

func otherKind(kind string) string {
	if kind == "lxc" {
		return "qemu"
	}
	return "lxc"
}

// configReserved are the parameters of a configuration edit that set
// does not carry: the path's, and those the tool takes as arguments.
var configReserved = []string{"node", "vmid", "delete", "digest", "revert"}

func prepareConfigSet(a map[string]any, cc *curatedCall) error {
	set, ok := a["set"]
	if !ok || set == nil {
		if cc.params["delete"] == nil && cc.params["revert"] == nil {
			return argError("set", "is required unless delete or revert is given: the options to set, as an object")
		}
		return nil
	}
	m, ok := set.(map[string]any)
	if !ok || len(m) == 0 {
		return argError("set", "must be an object of at least one option, such as {\"memory\": 4096}")
	}
	for k, v := range m {
		if slices.Contains(configReserved, k) {
			return argError("set."+k, "is not set through set (node and vmid come from the VM ID; delete, digest and revert are arguments of their own)")
		}
		cc.params[k] = v
	}
	return nil
}

// prepareTaskFilter reads the cluster tasks' filters into a transform.
func prepareTaskFilter(a map[string]any, cc *curatedCall) error {
	failed, err := optBool(a, "failed")
	if err != nil {
		return err
	}
	node, err := optString(a, "node")
	if err != nil {
		return err
	}
	vmid, _, err := optInt(a, "vmid", 100, 999999999)
	if err != nil {
		return err
	}
	typ, err := optString(a, "type")
	if err != nil {
		return err
	}
	if !failed && node == "" && vmid == 0 && typ == "" {
		return nil
	}
	cc.transform = func(data any) any {
		list, ok := data.([]any)
		if !ok {
			return data
		}
		out := make([]any, 0, len(list))
		for _, it := range list {
			t, _ := it.(map[string]any)
			if taskMatches(t, failed, node, vmid, typ) {
				out = append(out, it)
			}
		}
		return out
	}
	return nil
}

func taskMatches(t map[string]any, failed bool, node string, vmid int, typ string) bool {
	if t == nil {
		return false
	}
	if failed {
		status, _ := t["status"].(string)
		if _, ended := t["endtime"]; !ended || status == "" {
			return false
		}
		if ok, _ := pve.ExitOutcome(status); ok {
			return false
		}
	}
	if node != "" && t["node"] != node {
		return false
	}
	if id, _ := scalarText(t["id"]); vmid != 0 && id != strconv.Itoa(vmid) {
		return false
	}
	return typ == "" || t["type"] == typ
}

// handleNodeStatus is proxmox_node_status: the node's status, then its
// RRD statistics summarised, each a call of its own (policy, journal).
func (s *Server) handleNodeStatus(cs *curated) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, a, err := s.callerArgs(ctx, req, cs.args()...)
		if err != nil {
			return nil, err
		}
		cc, err := cs.read(a)
		if err != nil {
			return nil, err
		}
		timeframe, cf := "hour", "AVERAGE"
		for name, into := range map[string]*string{"timeframe": &timeframe, "cf": &cf} {
			v, err := optString(a, name)
			if err != nil {
				return nil, err
			}
			if v != "" {
				*into = v
			}
		}
		reg := s.registry()
		status := reg.Lookup("GET", cs.path)
		res := s.callEndpoint(ctx, c, callRequest{tool: cs.name, method: "GET", endpoint: status, args: map[string]any{"node": cc.node}})
		content, ok := res.StructuredContent.(map[string]any)
		if res.IsError || !ok {
			return res, nil
		}
		rrdEp := reg.Lookup("GET", "/nodes/{node}/rrddata")
		if rrdEp == nil {
			content["rrd_error"] = "this PVE API has no /nodes/{node}/rrddata"
		} else {
			rrd := s.callEndpoint(ctx, c, callRequest{tool: cs.name, method: "GET", endpoint: rrdEp,
				args: map[string]any{"node": cc.node, "timeframe": timeframe, "cf": cf}, transform: summariseRRD(timeframe, cf)})
			if rc, ok := rrd.StructuredContent.(map[string]any); ok && !rrd.IsError {
				content["rrd"] = rc["data"]
			} else {
				content["rrd_error"] = text(rrd)
			}
		}
		return structured(fmt.Sprintf("Node %s: status and the RRD summary of the last %s.", cc.node, timeframe), content), nil
	}
}

// rrdSummarySchema is the schema of proxmox_node_status's rrd.
func rrdSummarySchema() map[string]any {
	num := map[string]any{"type": "number"}
	return map[string]any{"type": "object", "properties": map[string]any{
		"timeframe": map[string]any{"type": "string"}, "cf": map[string]any{"type": "string"},
		"points": map[string]any{"type": "integer"}, "from": map[string]any{"type": "integer"}, "to": map[string]any{"type": "integer"},
		"series": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "object",
			"properties": map[string]any{"avg": num, "max": num, "last": num}}},
	}}
}

// summariseRRD turns RRD rows into avg, max and last of each data source
// over the rows that have it: a day of rows is 1,440 entries.
func summariseRRD(timeframe, cf string) func(any) any {
	return func(data any) any {
		rows, ok := data.([]any)
		if !ok {
			return data
		}
		type acc struct {
			sum, max, last float64
			n              int
		}
		series := map[string]*acc{}
		var from, to float64
		for i, r := range rows {
			row, _ := r.(map[string]any)
			t, _ := row["time"].(float64)
			if i == 0 {
				from = t
			}
			to = t
			for k, v := range row {
				f, ok := v.(float64)
				if k == "time" || !ok || math.IsNaN(f) {
					continue
				}
				a := series[k]
				if a == nil {
					a = &acc{max: f}
					series[k] = a
				}
				a.sum += f
				a.max = max(a.max, f)
				a.last = f
				a.n++
			}
		}
		out := map[string]any{}
		for k, a := range series {
			out[k] = map[string]any{"avg": round3(a.sum / float64(a.n)), "max": round3(a.max), "last": round3(a.last)}
		}
		return map[string]any{"timeframe": timeframe, "cf": cf, "points": len(rows), "from": int64(from), "to": int64(to), "series": out}
	}
}

func round3(f float64) float64 {
	if math.Abs(f) >= 1000 {
		return math.Round(f)
	}
	return math.Round(f*1000) / 1000
}

// The output schemas. MCP clients validate structuredContent against a
// tool's outputSchema and throw on a mismatch, so the envelope admits
// every answer callEndpoint gives: data (shaped, paged), a started task
// (upid, with wait its task), a dry run, a confirmation asked for, an
// operation key's replay, notes and evidence; nothing is required. The
// data is typed from PVE's return schema, tolerant of how PVE answers
// (booleans as 0/1, numbers as strings, a value left out or null).

// envelopeSchema is the answer's envelope around the data's schema: the
// keys an agent acts on, typed; every other key an answer may carry is
// allowed as it is.
func envelopeSchema(data, extra map[string]any) json.RawMessage {
	str := map[string]any{"type": "string"}
	props := map[string]any{
		"data": data, "upid": str, "task": map[string]any{"type": "object"}, "evidence": map[string]any{"type": "object"},
		"next_offset": map[string]any{"type": "integer"}, "truncated": map[string]any{"type": "boolean"}, "status": str, "confirm": str,
	}
	for k, v := range extra {
		props[k] = v
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		panic(fmt.Sprintf("tools: output schema: %v", err))
	}
	return b
}

// returnsSchema is the data's schema from the endpoints' return schemas,
// one for VMs and containers together.
func returnsSchema(eps map[string]*schema.Endpoint) map[string]any {
	var out map[string]any
	for _, kind := range slices.Sorted(maps.Keys(eps)) {
		ep := eps[kind]
		if len(ep.Returns) == 0 {
			return map[string]any{}
		}
		ret, err := returnShape(ep.Returns)
		if err != nil {
			return map[string]any{}
		}
		s := tolerant(ret, 0)
		if out == nil {
			out = s
		} else {
			out = mergeTolerant(out, s)
		}
	}
	return out
}

// maxTypedKeys bounds the keys an object's schema lists: a guest's
// configuration has over a hundred, and listing them all would make each
// tools/list kilobytes longer for what the description already names.
const maxTypedKeys = 32

// tolerant converts a PVE return schema. The data itself is typed as
// declared (an object, or an array of its items); objects list their
// keys, none required and others allowed, up to maxTypedKeys; an object
// or array inside may also be null (PVE leaves some out as null); a
// scalar may come as any scalar (booleans as 0/1, numbers as strings), so
// it is named, not typed. Two levels of keys, then anything. No union
// types, so that Ajv in strict mode compiles it.
func tolerant(r map[string]any, depth int) map[string]any {
	s := typed(r, depth)
	if depth == 0 || s["type"] == nil {
		return s
	}
	return map[string]any{"anyOf": []any{map[string]any{"type": "null"}, s}}
}

// typed is a PVE return schema's object or array, not null.
func typed(r map[string]any, depth int) map[string]any {
	if depth > 2 {
		return map[string]any{}
	}
	switch r["type"] {
	case "object":
		out := map[string]any{"type": "object"}
		in, _ := r["properties"].(map[string]any)
		props := map[string]any{}
		for k, v := range in {
			if m, ok := v.(map[string]any); ok && !strings.ContainsAny(k, "[]") {
				props[k] = tolerant(m, depth+1)
			}
		}
		if len(props) > 0 && len(props) <= maxTypedKeys {
			out["properties"] = props
		}
		return out
	case "array":
		items := map[string]any{}
		if m, ok := r["items"].(map[string]any); ok {
			if depth == 0 {
				items = typed(m, 1) // the data's items, as declared
			} else {
				items = tolerant(m, depth+1)
			}
		}
		return map[string]any{"type": "array", "items": items}
	}
	return map[string]any{}
}

// mergeTolerant admits what either schema admits.
func mergeTolerant(a, b map[string]any) map[string]any {
	if len(a) == 0 || len(b) == 0 || !sameJSON(a["type"], b["type"]) || a["anyOf"] != nil || b["anyOf"] != nil {
		if sameJSON(a, b) {
			return a
		}
		return map[string]any{}
	}
	out := map[string]any{"type": a["type"]}
	if ia, ok := a["items"].(map[string]any); ok {
		ib, _ := b["items"].(map[string]any)
		out["items"] = mergeTolerant(ia, ib)
	}
	pa, _ := a["properties"].(map[string]any)
	pb, _ := b["properties"].(map[string]any)
	if len(pa)+len(pb) > 0 && len(pa)+len(pb) <= 2*maxTypedKeys {
		props := map[string]any{}
		for k, v := range pa {
			props[k] = v
		}
		for k, v := range pb {
			if prev, ok := props[k].(map[string]any); ok {
				props[k] = mergeTolerant(prev, v.(map[string]any))
			} else {
				props[k] = v
			}
		}
		if len(props) <= maxTypedKeys {
			out["properties"] = props
		}
	}
	return out
}

// withOutput gives a tool of the catalog the output schema of the
// endpoints it answers from (and its own data schema, when it transforms
// the answer).
func withOutput(t mcp.Tool, reg *schema.Registry, method string, paths ...string) mcp.Tool {
	eps := map[string]*schema.Endpoint{}
	for i, p := range paths {
		if ep := reg.Lookup(method, p); ep != nil {
			eps[strconv.Itoa(i)] = ep
		}
	}
	data := map[string]any{}
	if len(eps) > 0 {
		data = returnsSchema(eps)
	}
	t.RawOutputSchema = envelopeSchema(data, nil)
	return t
}
