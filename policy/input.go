package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Input is the document a policy decides on (input in Rego). docs/policy.md
// specifies every field.
type Input struct {
	Principal    Principal
	Tool         string
	Method       string
	Path         string // the template, /nodes/{node}/qemu/{vmid}/status/start
	ConcretePath string // /nodes/pve1/qemu/100/status/start
	Params       map[string]any
	Risk         schema.Risk // of this call, given its parameters
	Endpoint     EndpointFacts
	Targets      Targets
	Guard        Guard
	Time         time.Time

	// ReachesHost lists how the call reaches the host from a guest
	// (ReachesHost); the engine confirms such a call even when a policy
	// allows it.
	ReachesHost []HostReach

	// Outside lists the places outside the cluster the call makes PVE
	// fetch from (input.outside), each with the class of its addresses;
	// the call plan resolves them (package plan), as policy does no
	// network I/O.
	Outside []OutsideTarget

	// Host is set for a host operation of the root helper (input.host;
	// null for an API call), which only a policy's host_decision decides
	// (Compiled.DecideHost).
	Host *HostOp
}

// HostOp is a host operation as the root helper canonicalized it: what a
// policy's host_decision sees.
type HostOp struct {
	// Op is the operation: file.stat, file.list, file.read, file.write,
	// service.status, service.control, command.exec, guest.exec.
	Op string
	// Path is the canonical path (package host), and Root the allowed
	// root it lies beneath (file operations).
	Path, Root string
	// Unit is the unit as systemd names it, and Action what
	// service.control does to it (start, stop, restart, reload, enable,
	// disable).
	Unit, Action string
	// Command is what command.exec (on the host) or guest.exec (inside a
	// guest) runs; nil for other operations.
	Command *Command
	// Guest is the guest guest.exec runs in.
	Guest *GuestRef
	// Breakglass is the request a break-glass step is about
	// (input.host.breakglass); nil for other operations.
	Breakglass *BreakglassRef
}

// BreakglassRef is the break-glass request a step is about: its id, its
// operation's kind and who asked, so that a policy can refuse approvals
// between keys it knows to be one person's.
type BreakglassRef struct {
	ID, Kind string
	// RequesterKeyID, RequesterName and RequesterLineage are the
	// requesting key's id, name and lineage (the first key of its
	// rotations).
	RequesterKeyID, RequesterName, RequesterLineage string
}

// value is input.host.breakglass.
func (b *BreakglassRef) value() ast.Value {
	if b == nil {
		return ast.Null{}
	}
	return ast.NewObject(strItem("id", b.ID), strItem("kind", b.Kind),
		item("requester", ast.NewObject(strItem("key_id", b.RequesterKeyID), strItem("name", b.RequesterName), strItem("lineage", b.RequesterLineage))))
}

// Command is a command as the helper resolved it (input.host.command).
type Command struct {
	// Path is the executable's canonical absolute path (symbolic links
	// resolved, on the host; inside a guest, as given); Argv the whole
	// argument vector, Argv[0] as the caller wrote it.
	Path string
	Argv []string
	// Cwd is the canonical working directory ("/" when none was asked).
	Cwd string
	// Class says when the executable runs other programs or code:
	// "shell", "interpreter", "launcher" (runs a program named in its
	// arguments: env, xargs, find -exec, nsenter, systemd-run, ...), or
	// "" for none of these. Such a command runs only when the allowing
	// decision names Path in a reason.
	Class string
	// Writable are the canonical paths the command may write (everything
	// else is read-only to it).
	Writable []string
	// TimeoutSec is how long it may run.
	TimeoutSec int
}

// GuestRef is a guest: its VMID, type (qemu or lxc) and node.
type GuestRef struct {
	VMID int
	Type string
	Node string
}

// hostValue is input.host.
func (h *HostOp) value() ast.Value {
	if h == nil {
		return ast.Null{}
	}
	return ast.NewObject(
		strItem("op", h.Op),
		strItem("path", h.Path),
		strItem("root", h.Root),
		strItem("unit", h.Unit),
		strItem("action", h.Action),
		item("command", h.Command.value()),
		item("guest", h.Guest.value()),
		item("breakglass", h.Breakglass.value()),
	)
}

// value is input.host.command.
func (c *Command) value() ast.Value {
	if c == nil {
		return ast.Null{}
	}
	return ast.NewObject(
		strItem("path", c.Path),
		item("argv", strArray(c.Argv)),
		strItem("cwd", c.Cwd),
		strItem("class", c.Class),
		item("writable", strArray(c.Writable)),
		intItem("timeout_sec", c.TimeoutSec),
	)
}

// value is input.host.guest.
func (g *GuestRef) value() ast.Value {
	if g == nil {
		return ast.Null{}
	}
	return ast.NewObject(intItem("vmid", g.VMID), strItem("type", g.Type), strItem("node", g.Node))
}

// Principal is who makes the call.
type Principal struct {
	KeyID     string
	Name      string
	Profile   string
	Policy    string
	Transport string // stdio, loopback, lan, tailnet
	Source    string // the client's address; empty on stdio
	// Tailnet is set for calls that arrive over the Tailnet.
	Tailnet *TailnetIdentity
}

// TailnetIdentity is what tsnet's WhoIs says about the caller.
type TailnetIdentity struct {
	// User is the node owner's login name, alice@example.com; for a tagged
	// node it is Tailscale's pseudo-user "tagged-devices", so authorize
	// tagged nodes by Tags.
	User string `json:"user"`
	// Node is the calling machine's MagicDNS name without the tailnet
	// domain: laptop.
	Node string `json:"node"`
	// Tags are the node's ACL tags (tag:ci), sorted; none for a node
	// owned by a user.
	Tags []string `json:"tags,omitempty"`
	// Capabilities are the application capabilities the tailnet policy
	// grants the caller on this node (the "app" of a grant, WhoIs's
	// CapMap): capability name -> the granted values, as decoded JSON.
	Capabilities map[string][]any `json:"capabilities,omitempty"`
}

// cacheKey is a canonical encoding of the identity: two identities have
// the same key only when every field, each capability value included, is
// the same.
func (t *TailnetIdentity) cacheKey() (string, error) {
	c := *t
	c.Tags = slices.Clone(t.Tags)
	slices.Sort(c.Tags)
	// encoding/json writes map keys sorted and values compacted.
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("policy: tailnet identity: %w", err)
	}
	return string(b), nil
}

// value is the identity as the input's principal.tailnet.
func (t *TailnetIdentity) value() (ast.Value, error) {
	tags := make([]*ast.Term, len(t.Tags))
	for i, tag := range t.Tags {
		tags[i] = ast.StringTerm(tag)
	}
	caps := ast.NewObject()
	for name, vals := range t.Capabilities {
		if vals == nil {
			vals = []any{}
		}
		v, err := ast.InterfaceToValue(vals)
		if err != nil {
			return nil, fmt.Errorf("policy input: principal.tailnet.capabilities[%q]: %w", name, err)
		}
		caps.Insert(ast.StringTerm(name), ast.NewTerm(v))
	}
	return ast.NewObject(
		strItem("user", t.User),
		strItem("node", t.Node),
		item("tags", ast.NewArray(tags...)),
		item("capabilities", caps),
	), nil
}

// EndpointFacts are facts of the endpoint from the schema (schema.Facts).
type EndpointFacts struct {
	Risk              schema.Risk // the highest class any call can have
	ExposeCredentials bool
	Download          bool
	// ReturnsSecrets: the answer can carry a secret, a ticket or a
	// console (PVE's expose_credentials, or an endpoint known to).
	ReturnsSecrets bool
	// ReachesOutside: PVE fetches from outside the cluster for the call.
	ReachesOutside bool
	// ConfigEdit: the call edits a configuration PVE guards with a digest.
	ConfigEdit bool
}

// FactsOf are the facts of ep the input carries.
func FactsOf(ep *schema.Endpoint) EndpointFacts {
	return EndpointFacts{Risk: ep.Risk, ExposeCredentials: ep.ExposeCredentials, Download: ep.DownloadAllowed,
		ReturnsSecrets: ep.Facts.ReturnsSecrets, ReachesOutside: ep.Facts.ReachesOutside, ConfigEdit: ep.Facts.ConfigEdit}
}

// Targets are the objects a call names: path variables and parameters,
// the storages inside volume ids and disk property strings, and the guests
// that own the volumes named. Each list is sorted and free of duplicates.
// A call that acts on objects it does not name (vzdump all=1) has empty
// lists: a policy that restricts a target must also require the list to
// be non-empty.
type Targets struct {
	Nodes    []string
	VMIDs    []int
	Storages []string
	Pools    []string
	Paths    []string
	Services []string
	Commands []string
}

// Guard is what the protected-repository guard found. The break-glass
// component fills it for every call; until it has run, Evaluated is false
// and every call that is not a read is denied.
type Guard struct {
	Evaluated bool
	Hits      []GuardHit
}

// GuardHit is one way a call touches the protected repository.
type GuardHit struct {
	Kind  string `json:"kind"`  // path, volume, device, storage, guest, unresolved, …
	Value string `json:"value"` // what was found, e.g. /mnt/model-repo
	Param string `json:"param"` // the parameter or target it was found in
}

// BuildInput assembles the input of a call to ep. concrete is the
// canonical path (the template with each variable filled in, as the call
// plan writes it) and values the call's parameters as validated
// (schema.Validated.Values: typed by the schema, path variables included);
// vars are the path variables, for calls whose values omit them.
func BuildInput(ep *schema.Endpoint, concrete string, vars map[string]string, values map[string]any, p Principal, guard Guard, now time.Time) Input {
	return Input{
		Principal:    p,
		Tool:         ep.Tool,
		Method:       ep.Method,
		Path:         ep.Path,
		ConcretePath: concrete,
		Params:       values,
		Risk:         ep.CallRisk(values),
		Endpoint:     FactsOf(ep),
		Targets:      TargetsOf(ep, vars, values),
		ReachesHost:  ReachesHost(ep, vars, values),
		Guard:        guard,
		Time:         now,
	}
}

// TargetsOf extracts the targets of a call from the parameters the schema
// says name them (schema.Facts.Targets): nodes, guests, storages, pools,
// host paths, services and commands, and from each volume id (a parameter,
// the {volume} path variable, the volume of a disk or mount point) its
// storage and the guests it belongs to (vm-900-disk-0 names guest 900). A
// disk or mount point that is a host path (/dev/sdb, /mnt/data) is a path
// target.
func TargetsOf(ep *schema.Endpoint, vars map[string]string, values map[string]any) Targets {
	var t Targets
	add := func(name string, v any) {
		kind, ok := ep.TargetKind(name)
		if !ok {
			return
		}
		switch kind {
		case schema.TargetNode:
			t.Nodes = appendStrings(t.Nodes, v)
		case schema.TargetVMID:
			t.VMIDs = appendVMIDs(t.VMIDs, v)
		case schema.TargetStorage:
			for _, s := range strs(v) {
				// targetstorage is a map "src:dst,src2:dst2" or one id.
				for item := range strings.SplitSeq(s, ",") {
					if _, dst, ok := strings.Cut(item, ":"); ok {
						item = dst
					}
					if item != "" && item != "1" {
						t.Storages = append(t.Storages, item)
					}
				}
			}
		case schema.TargetPool:
			t.Pools = appendStrings(t.Pools, v)
		case schema.TargetPath:
			t.Paths = appendStrings(t.Paths, v)
		case schema.TargetService:
			t.Services = appendStrings(t.Services, v)
		case schema.TargetCommand:
			t.Commands = append(t.Commands, strings.Join(strs(v), " "))
		case schema.TargetVolume:
			for _, s := range strs(v) {
				t.addVolume(s)
			}
		case schema.TargetDisk:
			p := ep.ParamFor(name)
			for _, s := range strs(v) {
				for _, vol := range schema.VolumesOfDisk(p, s) {
					t.addVolume(vol)
				}
			}
		}
	}
	for name, v := range values {
		if v != nil {
			add(name, v)
		}
	}
	for name, v := range vars {
		if _, given := values[name]; !given {
			add(name, v)
		}
	}
	t.Nodes = sortUniq(t.Nodes)
	t.Storages = sortUniq(t.Storages)
	t.Pools = sortUniq(t.Pools)
	t.Paths = sortUniq(t.Paths)
	t.Services = sortUniq(t.Services)
	t.Commands = sortUniq(t.Commands)
	slices.Sort(t.VMIDs)
	t.VMIDs = slices.Compact(t.VMIDs)
	return t
}

// addVolume adds what a volume id names: its storage and owning guests.
// An absolute path (a device, a bind mount) is a path target; anything
// else that is not a volume id (none, cdrom) names nothing.
func (t *Targets) addVolume(vol string) {
	if vol == "" {
		return
	}
	if strings.HasPrefix(vol, "/") {
		t.Paths = append(t.Paths, vol)
		return
	}
	id, err := schema.ParseVolumeID(vol)
	if err != nil {
		// Not a volume id PVE would parse; its storage is still the part
		// before the colon, as PVE's parse_volume_id reads it.
		if st, _, ok := strings.Cut(vol, ":"); ok && st != "" {
			t.Storages = append(t.Storages, st)
		}
		return
	}
	t.Storages = append(t.Storages, id.Storage)
	t.VMIDs = append(t.VMIDs, id.VMIDs()...)
}

func appendStrings(out []string, v any) []string {
	for _, s := range strs(v) {
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// appendVMIDs reads a vmid, a number or a list "100,101" or "100 101".
func appendVMIDs(out []int, v any) []int {
	for _, s := range strs(v) {
		for item := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
			if n, err := strconv.Atoi(item); err == nil && n > 0 {
				out = append(out, n)
			}
		}
	}
	return out
}

// strs turns a parameter value into strings.
func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, strs(e)...)
		}
		return out
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return []string{strconv.FormatInt(int64(x), 10)}
		}
		return []string{strconv.FormatFloat(x, 'g', -1, 64)}
	case int:
		return []string{strconv.Itoa(x)}
	case int64:
		return []string{strconv.FormatInt(x, 10)}
	case bool:
		if x {
			return []string{"1"}
		}
		return []string{"0"}
	case nil:
		return nil
	}
	return []string{fmt.Sprint(v)}
}

func sortUniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// value is the principal as the input's principal.
func (p Principal) value() (ast.Object, error) {
	principal := ast.NewObject(
		strItem("key_id", p.KeyID),
		strItem("name", p.Name),
		strItem("profile", p.Profile),
		strItem("policy", p.Policy),
		strItem("transport", p.Transport),
		strItem("source", p.Source),
	)
	if p.Tailnet != nil {
		tn, err := p.Tailnet.value()
		if err != nil {
			return nil, err
		}
		principal.Insert(ast.InternedTerm("tailnet"), ast.NewTerm(tn))
	}
	return principal, nil
}

// Value converts the input to the Rego value policies see. It is built
// directly as an AST (no JSON round trip): this is on every call's path.
func (in *Input) Value() (ast.Value, error) { return in.value(nil) }

// value is Value with the parts that repeat from call to call taken from
// ps (nil: every part built anew).
func (in *Input) value(ps *inputParts) (ast.Value, error) {
	params, err := ps.params(in.Params)
	if err != nil {
		return nil, fmt.Errorf("policy input: params: %w", err)
	}
	principal, err := ps.principal(in.Principal)
	if err != nil {
		return nil, err
	}
	// Evaluation never modifies its input: the empty lists share one term.
	empty := ps.empty()
	return ast.NewObject(
		ast.Item(ast.InternedTerm("principal"), principal),
		strItem("tool", in.Tool),
		strItem("method", in.Method),
		strItem("path", in.Path),
		strItem("concrete_path", in.ConcretePath),
		ast.Item(ast.InternedTerm("params"), params),
		strItem("risk", in.Risk.String()),
		ast.Item(ast.InternedTerm("endpoint"), ps.endpoint(in.Endpoint)),
		item("targets", targetsValue(in.Targets, empty)),
		ast.Item(ast.InternedTerm("reaches_host"), reachValue(in.ReachesHost, empty)),
		ast.Item(ast.InternedTerm("outside"), outsideValue(in.Outside, empty)),
		ast.Item(ast.InternedTerm("guard"), ps.guard(in.Guard)),
		ast.Item(ast.InternedTerm("time"), ps.time(in.Time)),
		item("host", in.Host.value()),
	), nil
}

// targetsValue is input.targets; empty is the empty list.
func targetsValue(t Targets, empty *ast.Term) ast.Value {
	list := func(k string, s []string) [2]*ast.Term {
		if len(s) == 0 {
			return ast.Item(ast.InternedTerm(k), empty)
		}
		return item(k, strArray(s))
	}
	vmids := empty
	if len(t.VMIDs) > 0 {
		terms := make([]*ast.Term, len(t.VMIDs))
		for i, v := range t.VMIDs {
			terms[i] = ast.InternedTerm(v)
		}
		vmids = ast.NewTerm(ast.NewArray(terms...))
	}
	return ast.NewObject(
		list("nodes", t.Nodes),
		ast.Item(ast.InternedTerm("vmids"), vmids),
		list("storages", t.Storages),
		list("pools", t.Pools),
		list("paths", t.Paths),
		list("services", t.Services),
		list("commands", t.Commands),
	)
}

// guardValue is input.guard; empty is the empty list.
func guardValue(g Guard, empty *ast.Term) ast.Value {
	hits := empty
	if len(g.Hits) > 0 {
		terms := make([]*ast.Term, len(g.Hits))
		for i, h := range g.Hits {
			terms[i] = ast.NewTerm(ast.NewObject(
				strItem("kind", h.Kind),
				strItem("value", h.Value),
				strItem("param", h.Param),
			))
		}
		hits = ast.NewTerm(ast.NewArray(terms...))
	}
	return ast.NewObject(
		boolItem("evaluated", g.Evaluated),
		ast.Item(ast.InternedTerm("hits"), hits),
	)
}

// endpointValue is input.endpoint.
func endpointValue(f EndpointFacts) ast.Value {
	return ast.NewObject(
		strItem("risk", f.Risk.String()),
		boolItem("expose_credentials", f.ExposeCredentials),
		boolItem("download", f.Download),
		boolItem("returns_secrets", f.ReturnsSecrets),
		boolItem("reaches_outside", f.ReachesOutside),
		boolItem("config_edit", f.ConfigEdit),
	)
}

// timeValue is the call's time in the engine's zone.
func timeValue(t time.Time) ast.Value {
	name, offset := t.Zone()
	return ast.NewObject(
		strItem("rfc3339", t.Format(time.RFC3339)),
		item("unix", ast.Number(strconv.FormatInt(t.Unix(), 10))),
		strItem("weekday", t.Weekday().String()),
		intItem("hour", t.Hour()),
		intItem("minute", t.Minute()),
		strItem("zone", name),
		intItem("utc_offset_seconds", offset),
	)
}

// inputKeys are the object keys of the input document; compile interns
// them in OPA's term table so that building an input allocates no key.
func inputKeys() []string {
	return []string{
		"principal", "key_id", "name", "profile", "policy", "transport", "source", "tailnet", "user", "node", "tags", "capabilities",
		"tool", "method", "path", "concrete_path", "params", "risk", "endpoint", "expose_credentials", "download",
		"returns_secrets", "reaches_outside", "config_edit",
		"targets", "nodes", "vmids", "storages", "pools", "paths", "services", "commands",
		"reaches_host", "detail", "host", "op", "outside", "addresses", "class", "root", "unit", "action",
		"guard", "evaluated", "hits", "kind", "value", "param",
		"time", "rfc3339", "unix", "weekday", "hour", "minute", "zone", "utc_offset_seconds",
		"read", "write", "destructive", "GET", "POST", "PUT", "DELETE", "loopback", "stdio", "lan",
		"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
	}
}

func item(k string, v ast.Value) [2]*ast.Term { return ast.Item(ast.InternedTerm(k), ast.NewTerm(v)) }

func strItem(k, v string) [2]*ast.Term { return ast.Item(ast.InternedTerm(k), ast.InternedTerm(v)) }

func boolItem(k string, v bool) [2]*ast.Term {
	return ast.Item(ast.InternedTerm(k), ast.InternedTerm(v))
}

func intItem(k string, v int) [2]*ast.Term { return ast.Item(ast.InternedTerm(k), ast.InternedTerm(v)) }

func strArray(s []string) ast.Value {
	terms := make([]*ast.Term, len(s))
	for i, v := range s {
		terms[i] = ast.InternedTerm(v)
	}
	return ast.NewArray(terms...)
}
