package tools

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Names of the tools that are not one endpoint each.
const (
	ToolSearch       = "proxmox_api_search"
	ToolDescribe     = "proxmox_api_describe"
	ToolCall         = "proxmox_api_call"
	ToolGet          = "proxmox_api_get"
	ToolSchemaStatus = "proxmox_schema_status"
	ToolTaskWait     = "proxmox_task_wait"
	ToolResources    = "proxmox_cluster_resources"
	ToolGuestStatus  = "proxmox_guest_status"
	ToolGuestPower   = "proxmox_guest_power"
)

// hints are the four MCP annotations, always set explicitly (mcp-go's
// defaults claim every tool is destructive and not read-only).
type hints struct{ readOnly, destructive, idempotent, openWorld bool }

func annotate(title string, h hints) mcp.ToolOption {
	b := func(v bool) *bool { return &v }
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    b(h.readOnly),
		DestructiveHint: b(h.destructive),
		IdempotentHint:  b(h.idempotent),
		OpenWorldHint:   b(h.openWorld),
	})
}

// endpointHints derives the annotations of an endpoint from its risk class
// and method: reads are read-only and idempotent, PUT and DELETE are
// idempotent, destructive ones say so, and only the endpoints that fetch
// from outside the cluster (URLs, registries) are open-world.
func endpointHints(ep *schema.Endpoint) hints {
	return hints{
		readOnly:    ep.Risk == schema.RiskRead,
		destructive: ep.Risk == schema.RiskDestructive,
		idempotent:  ep.Method != "POST",
		openWorld:   ep.Facts.ReachesOutside,
	}
}

// catalog builds the tool set of the mode for a registry.
func (s *Server) catalog(reg *schema.Registry) []server.ServerTool {
	search := server.ServerTool{Tool: searchTool(s.opts.Mode), Handler: s.handleSearch}
	call := server.ServerTool{Tool: callTool(s.opts.Mode), Handler: s.handleCall}
	get := server.ServerTool{Tool: getTool(s.opts.Mode), Handler: s.handleGet}
	if s.opts.Mode == ModeSearch {
		return []server.ServerTool{search, get, call}
	}
	list := []server.ServerTool{
		search, get, call,
		{Tool: describeTool(), Handler: s.handleDescribe},
		{Tool: schemaStatusTool(), Handler: s.handleSchemaStatus},
		{Tool: taskWaitTool(), Handler: s.handleTaskWait},
		{Tool: withOutput(resourcesTool(reg), reg, "GET", "/cluster/resources"), Handler: s.handleResources},
		{Tool: withOutput(guestStatusTool(), reg, "GET", "/nodes/{node}/qemu/{vmid}/status/current", "/nodes/{node}/lxc/{vmid}/status/current"), Handler: s.handleGuestStatus},
		{Tool: withOutput(guestPowerTool(), reg, "POST", "/nodes/{node}/qemu/{vmid}/status/start", "/nodes/{node}/lxc/{vmid}/status/start"), Handler: s.handleGuestPower},
		{Tool: approveTool(), Handler: s.handleApprove},
	}
	if s.opts.Mode == ModeCompact {
		// In expanded mode every endpoint is a tool of its own, so the
		// curated tools, each one or two endpoints, would list them twice
		// (about 60 KB for a root key on PVE 9.1).
		list = append(list, s.curatedTools(reg)...)
		list = append(list, s.consoleTools(reg)...)
	}
	list = append(list, s.jobTools()...)
	list = append(list, s.contractTools()...)
	list = append(list, s.hostTools()...)
	list = append(list, s.breakglassTools()...)
	list = append(list, server.ServerTool{Tool: guestExecTool(), Handler: s.handleGuestExec})
	if s.opts.Mode == ModeExpanded {
		for _, ep := range reg.Endpoints() {
			list = append(list, server.ServerTool{Tool: endpointTool(ep), Handler: s.handleEndpoint})
		}
	}
	return list
}

// alwaysVisible are the tools every authenticated caller sees, whatever
// its policy: the generic tools (they answer only about visible endpoints)
// and the extra tools of Options.
func (s *Server) alwaysVisible(name string) bool {
	switch name {
	case ToolSearch, ToolGet, ToolCall, ToolDescribe, ToolSchemaStatus, ToolTaskWait, ToolOperation, ToolJournal:
		return true
	}
	return s.extra[name]
}

// toolVisible decides whether a caller sees a tool: endpoint tools when
// their endpoint is visible, curated tools when an endpoint they use is,
// the generic tools always (they answer only about visible endpoints), and
// the extra tools of Options always.
func (s *Server) toolVisible(name string, v visibility) bool {
	if s.extra[name] {
		return true
	}
	for _, family := range []func(string, visibility) (bool, bool){s.curatedVisible, s.jobVisible, s.consoleVisible} {
		if show, known := family(name, v); known {
			return show
		}
	}
	switch name {
	case ToolSearch, ToolGet, ToolCall, ToolDescribe, ToolSchemaStatus, ToolTaskWait:
		return true
	case ToolResources:
		return v["get_cluster_resources"] != nil
	case ToolGuestStatus:
		return v["get_cluster_resources"] != nil && (v["get_nodes_qemu_status_current"] != nil || v["get_nodes_lxc_status_current"] != nil)
	case ToolApprove, ToolPlanApply, ToolUndo:
		// Whoever may make some change may approve another key's change
		// (each approval checks the approver's policy for that call), apply
		// a plan or undo an operation; with the switches refusing writes
		// there is nothing to approve, apply or undo.
		return s.switchRefusal("POST") == "" && v.writes()
	case ToolReconcile:
		// Settling outcomes reads PVE only, so it stays when the switches
		// refuse writes (that is when a lost answer is settled; the
		// visibility then holds no writes to tell by), but a key that can
		// write nothing has no writes of its own to settle.
		return v.writes() || s.switchRefusal("POST") != ""
	case ToolGuestPower:
		if v["get_cluster_resources"] == nil {
			return false
		}
		for _, kind := range []string{"qemu", "lxc"} {
			for _, a := range powerActions {
				if v["post_nodes_"+kind+"_status_"+a] != nil {
					return true
				}
			}
		}
		return false
	}
	return v[name] != nil
}

var powerActions = []string{"start", "stop", "shutdown", "reboot", "suspend", "resume", "reset"}

// Shaping arguments every calling tool takes.
func shapeProperties(prefix string) map[string]any {
	return map[string]any{
		prefix + "fields": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
			"description": "Keep only these keys of each object."},
		prefix + "omit": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
			"description": "Drop these keys of each object."},
		prefix + "limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 5000,
			"description": "Most items (default 200)."},
		prefix + "offset": map[string]any{"type": "integer", "minimum": 0,
			"description": "Items to skip (an answer's next_offset)."},
		prefix + "wait": map[string]any{"type": "integer", "minimum": 0, "maximum": 600,
			"description": "Seconds to follow the task it starts (progress notified); 0: its UPID at once."},
		prefix + "confirm": map[string]any{"type": "string",
			"description": "The token an answer asking for confirmation gave."},
		prefix + "dry_run": map[string]any{"type": "boolean",
			"description": "Decide, send nothing."},
		prefix + "operation_key": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$",
			"description": "Idempotency key: a retry returns the recorded operation."},
		prefix + "change": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$",
			"description": "The change it belongs to (undone together)."},
		prefix + "keep_plan": map[string]any{"type": "boolean",
			"description": "With dry_run: keep the preview as a plan (proxmox_plan_apply)."},
	}
}

// rawSchema sets the input schema as JSON (and drops the default struct
// schema mcp.NewTool starts with; mcp-go refuses both at once).
func rawSchema(v map[string]any) mcp.ToolOption {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tools: schema: %v", err))
	}
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{}
		t.RawInputSchema = b
	}
}

func searchTool(m Mode) mcp.Tool {
	props := map[string]any{
		"query":    map[string]any{"type": "string", "minLength": 1, "description": "What you want to do, e.g. \"start vm\" or \"snapshot\"."},
		"method":   map[string]any{"type": "string", "enum": []string{"GET", "POST", "PUT", "DELETE"}, "description": "Only this HTTP method."},
		"max_risk": map[string]any{"type": "string", "enum": []string{"read", "write", "destructive"}, "description": "Only endpoints up to this risk."},
		"limit":    map[string]any{"type": "integer", "minimum": 1, "maximum": 50, "description": fmt.Sprintf("Most results (default %d).", searchDefaultLimit)},
	}
	desc := "Search the Proxmox VE API for endpoints your key may use, ranked by relevance. Returns tool name, method, path template, risk and summary."
	root := map[string]any{"type": "object", "properties": props, "required": []string{"query"}, "additionalProperties": false}
	if m == ModeSearch {
		// With no describe tool in this mode, search also describes.
		for k, v := range describeProps() {
			if k != "tool" && k != "method" && k != "path" {
				props[k] = v
			}
		}
		props["describe"] = map[string]any{"type": "string", "description": "Instead of searching, describe this endpoint (its tool name, as a search gives it): parameters with types and rules, returns, permission."}
		delete(root, "required")
		desc += " With describe set to a tool name, describes that endpoint instead (parameters in pages: section params, offset)."
	}
	return mcp.NewTool(ToolSearch,
		mcp.WithDescription(desc),
		rawSchema(root),
		annotate("Search the Proxmox API", hints{readOnly: true, idempotent: true}),
	)
}

func describeProps() map[string]any {
	return map[string]any{
		"tool":    map[string]any{"type": "string", "description": "The endpoint's tool name, as search gives it."},
		"method":  map[string]any{"type": "string", "enum": []string{"GET", "POST", "PUT", "DELETE"}},
		"path":    map[string]any{"type": "string", "description": "A path template (/nodes/{node}/qemu) or a concrete path."},
		"section": map[string]any{"type": "string", "enum": []string{"summary", "params", "returns"}, "description": "summary (default), params (all parameters, paged) or returns."},
		"param":   map[string]any{"type": "string", "description": "Describe one parameter fully, with property-string keys (e.g. net[n])."},
		"offset":  map[string]any{"type": "integer", "minimum": 0, "description": "First parameter of the page, for section params."},
	}
}

func describeTool() mcp.Tool {
	return mcp.NewTool(ToolDescribe,
		mcp.WithDescription("Describe one endpoint: its parameters with types and rules, its return value and the permission PVE checks. Large parameter lists come in pages (offset)."),
		rawSchema(map[string]any{"type": "object", "properties": describeProps(), "additionalProperties": false}),
		annotate("Describe a Proxmox API endpoint", hints{readOnly: true, idempotent: true}),
	)
}

func callTool(m Mode) mcp.Tool {
	see := ToolDescribe
	if m == ModeSearch {
		see = ToolSearch + " with describe"
	}
	props := map[string]any{
		"method": map[string]any{"type": "string", "enum": []string{"GET", "POST", "PUT", "DELETE"}, "description": "POST, PUT or DELETE; GET is still accepted, but reads belong in " + ToolGet + ", the read-only tool."},
		"path":   map[string]any{"type": "string", "description": "A concrete API path, e.g. /nodes/pve1/qemu/100/status/start. Percent-encode '/' inside a value (%2F)."},
		"params": map[string]any{"type": "object", "description": "The endpoint's parameters (see " + see + ")."},
	}
	for k, v := range shapeProperties("") {
		props[k] = v
	}
	desc := "Call the Proxmox VE API to change something (POST, PUT, DELETE; reads go through " + ToolGet + ", which changes nothing). Arguments are checked against the endpoint's schema and your policy before anything is sent; a refusal says why. Long-running calls return a UPID (wait to follow it)."
	root := map[string]any{"type": "object", "properties": props, "required": []string{"method", "path"}, "additionalProperties": false}
	if m == ModeSearch {
		// With no approve tool in this mode, the call tool approves.
		props["approve"] = map[string]any{
			"type": "object", "description": "Instead of calling, show (approve false) or approve (approve true) another key's call that its policy holds for a second principal; method and path are then not given.",
			"properties": map[string]any{
				"token":   map[string]any{"type": "string", "minLength": 1, "description": "The confirmation token the requester was given."},
				"approve": map[string]any{"type": "boolean", "description": "true approves; false (default) only shows the call."},
			},
			"required": []string{"token"}, "additionalProperties": false,
		}
		delete(root, "required")
		desc += " With approve, shows or approves another key's held call instead."
	}
	return mcp.NewTool(ToolCall,
		mcp.WithDescription(desc),
		rawSchema(root),
		annotate("Call the Proxmox API", hints{destructive: true, openWorld: true}),
	)
}

// getArgs are the arguments of proxmox_api_get: a read takes no write
// controls (wait, dry_run, operation_key, change, keep_plan).
var getArgs = []string{"path", "params", "fields", "omit", "limit", "offset", "confirm"}

// getTool is the read tool: GET only, so it is read-only and idempotent
// whatever the path. It is open-world because two GET endpoints make PVE
// fetch from outside the cluster (query-url-metadata, query-oci-repo-tags).
func getTool(m Mode) mcp.Tool {
	see := ToolDescribe
	if m == ModeSearch {
		see = ToolSearch + " with describe"
	}
	props := map[string]any{
		"path":   map[string]any{"type": "string", "description": "A concrete API path, e.g. /nodes/pve1/qemu/100/config. Percent-encode '/' inside a value (%2F)."},
		"params": map[string]any{"type": "object", "description": "The endpoint's query parameters (see " + see + ")."},
	}
	shape := shapeProperties("")
	for _, k := range getArgs[2:] {
		props[k] = shape[k]
	}
	return mcp.NewTool(ToolGet,
		mcp.WithDescription("Read from the Proxmox VE API (GET): the path is checked against the endpoint's schema and your policy; nothing is changed. Shape big answers with fields, omit, limit and offset."),
		rawSchema(map[string]any{"type": "object", "properties": props, "required": []string{"path"}, "additionalProperties": false}),
		annotate("Read the Proxmox API", hints{readOnly: true, idempotent: true, openWorld: true}),
	)
}

func schemaStatusTool() mcp.Tool {
	return mcp.NewTool(ToolSchemaStatus,
		mcp.WithDescription("Which PVE API schema the server uses: source, sha256, counts, when loaded, and the last error."),
		rawSchema(map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}),
		annotate("API schema status", hints{readOnly: true, idempotent: true}),
	)
}

func taskWaitTool() mcp.Tool {
	return mcp.NewTool(ToolTaskWait,
		mcp.WithDescription("Follow a PVE task (UPID) until it ends or the timeout passes, with progress notifications; returns its exit status and the end of its log."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"upid":            map[string]any{"type": "string", "description": "The task's UPID."},
				"timeout_seconds": map[string]any{"type": "integer", "minimum": 1, "maximum": 600, "description": "How long to wait (default 60)."},
			},
			"required":             []string{"upid"},
			"additionalProperties": false,
		}),
		annotate("Wait for a PVE task", hints{readOnly: true, idempotent: true}),
	)
}

// resourcesTool takes several types at once (PVE's type takes one); its
// values are the registry's.
func resourcesTool(reg *schema.Registry) mcp.Tool {
	var kinds []string
	if ep := reg.Lookup("GET", "/cluster/resources"); ep != nil && ep.Param("type") != nil {
		kinds = ep.Param("type").Enum
	}
	props := map[string]any{
		"type": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": kinds}, "minItems": 1,
			"description": "Only these kinds of resource, such as [\"vm\", \"node\"] (vm is VMs and containers)."},
	}
	for k, v := range shapeProperties("") {
		if k == "fields" || k == "omit" || k == "limit" || k == "offset" {
			props[k] = v
		}
	}
	return mcp.NewTool(ToolResources,
		mcp.WithDescription("Every guest, node and storage of the cluster (GET /cluster/resources): id, type (qemu, lxc, node, storage, sdn), node, status, name, vmid, "+
			"cpu, maxcpu, mem, maxmem, disk, maxdisk, uptime, template, tags, pool, storage, content."),
		rawSchema(map[string]any{"type": "object", "properties": props, "additionalProperties": false}),
		annotate("Cluster resources", hints{readOnly: true, idempotent: true}),
	)
}

func guestStatusTool() mcp.Tool {
	return mcp.NewTool(ToolGuestStatus,
		mcp.WithDescription("Status of a VM or container by VM ID, wherever it runs (finds the node and type). By default the answer has "+strings.Join(guestStatusFields, ", ")+
			"; fields picks others (a VM's blockstat, ballooninfo, proxmox-support, nics are several KB), omit drops keys from the whole answer, all: true gives it whole."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"vmid":   map[string]any{"type": "integer", "minimum": 100, "maximum": 999999999},
				"fields": shapeProperties("")["fields"],
				"omit":   shapeProperties("")["omit"],
				"all":    map[string]any{"type": "boolean", "description": "The whole status, every key PVE gives."},
			},
			"required":             []string{"vmid"},
			"additionalProperties": false,
		}),
		annotate("Guest status", hints{readOnly: true, idempotent: true}),
	)
}

// guestStatusFields are the keys of proxmox_guest_status's answer by
// default: a VM's whole status is 4.8 KB, most of it block and balloon
// statistics.
var guestStatusFields = []string{"vmid", "name", "status", "qmpstatus", "uptime", "cpu", "cpus", "mem", "maxmem", "disk", "maxdisk",
	"netin", "netout", "diskread", "diskwrite", "lock", "tags", "template", "ha"}

func guestPowerTool() mcp.Tool {
	return mcp.NewTool(ToolGuestPower,
		mcp.WithDescription("Start, stop, shut down, reboot, suspend, resume or reset a VM or container by VM ID. stop and reset are hard (destructive); shutdown is graceful."),
		rawSchema(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"vmid":          map[string]any{"type": "integer", "minimum": 100, "maximum": 999999999},
				"action":        map[string]any{"type": "string", "enum": powerActions},
				"wait":          map[string]any{"type": "integer", "minimum": 0, "maximum": 600, "description": "Seconds to wait for the task (default 0)."},
				"confirm":       map[string]any{"type": "string", "description": "A confirmation token, when asked for one."},
				"operation_key": shapeProperties("")["operation_key"],
			},
			"required":             []string{"vmid", "action"},
			"additionalProperties": false,
		}),
		annotate("Guest power", hints{destructive: true}),
	)
}

// endpointTool is the expanded-mode tool of one endpoint: its real input
// schema (schema.Endpoint.InputSchema), PVE's description, the four
// annotations, and the control arguments (proxmox_api_call's shaping and
// control arguments with a leading _, which no PVE parameter uses) named
// by one patternProperties key, since spelling each out again in each of
// 646 tools would more than double the list; the server's instructions
// and proxmox_api_call's schema say what they mean and take. The method
// and path are the tool's name and its describe; no title repeats them.
func endpointTool(ep *schema.Endpoint) mcp.Tool {
	var in map[string]any
	if err := json.Unmarshal(ep.InputSchema(), &in); err != nil {
		panic(fmt.Sprintf("tools: input schema of %s: %v", ep.Key(), err))
	}
	extra := shapeProperties("_")
	if ep.Method == "GET" {
		delete(extra, "_wait")
		delete(extra, "_confirm")
		delete(extra, "_operation_key")
		delete(extra, "_change")
		delete(extra, "_keep_plan")
	} else {
		for _, k := range []string{"_fields", "_omit", "_limit", "_offset"} {
			delete(extra, k)
		}
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, strings.TrimPrefix(k, "_"))
	}
	sort.Strings(names)
	patterns, _ := in["patternProperties"].(map[string]any)
	if patterns == nil {
		patterns = map[string]any{}
		in["patternProperties"] = patterns
	}
	patterns["^_("+strings.Join(names, "|")+")$"] = map[string]any{}
	desc := strings.TrimSpace(ep.Description)
	if desc == "" {
		desc = ep.Handler
	}
	return mcp.NewTool(ep.Tool,
		mcp.WithDescription(desc),
		rawSchema(in),
		annotate("", endpointHints(ep)),
	)
}
