package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
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

// EndpointFacts are facts of the endpoint from the schema.
type EndpointFacts struct {
	Risk              schema.Risk // the highest class any call can have
	ExposeCredentials bool
	Download          bool
}

// Targets are the objects a call names: path variables and parameters,
// including storages inside volume ids and disk property strings. Each list
// is sorted and free of duplicates. A call that acts on objects it does not
// name (vzdump all=1) has empty lists: a policy that restricts a target
// must also require the list to be non-empty.
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
	Kind  string `json:"kind"`  // path, volume, device, storage
	Value string `json:"value"` // what was found, e.g. /mnt/model-repo
	Param string `json:"param"` // the parameter or target it was found in
}

// BuildInput assembles the input of a call to ep with the given path
// variables (from Registry.Match) and validated arguments.
func BuildInput(ep *schema.Endpoint, concrete string, vars map[string]string, args map[string]any, p Principal, guard Guard, now time.Time) Input {
	return Input{
		Principal:    p,
		Tool:         ep.Tool,
		Method:       ep.Method,
		Path:         ep.Path,
		ConcretePath: concrete,
		Params:       args,
		Risk:         ep.CallRisk(args),
		Endpoint:     EndpointFacts{Risk: ep.Risk, ExposeCredentials: ep.ExposeCredentials, Download: ep.DownloadAllowed},
		Targets:      TargetsOf(ep, vars, args),
		Guard:        guard,
		Time:         now,
	}
}

// TargetsOf extracts the targets of a call: path variables and parameters
// of these names, and the storages of volume ids.
func TargetsOf(ep *schema.Endpoint, vars map[string]string, args map[string]any) Targets {
	var (
		nodeParams    = [...]string{"node", "target", "target-node"}
		vmidParams    = [...]string{"vmid", "newid", "target-vmid"}
		storageParams = [...]string{"storage", "target-storage", "targetstorage"}
		poolParams    = [...]string{"pool", "poolid"}
		pathParams    = [...]string{"path", "file", "filename", "dir"}
		serviceParams = [...]string{"service"}
		commandParams = [...]string{"command", "cmd"}
	)
	var t Targets
	get := func(name string) (any, bool) {
		if v, ok := vars[name]; ok {
			return v, true
		}
		v, ok := args[name]
		return v, ok && v != nil
	}
	for _, n := range nodeParams {
		if v, ok := get(n); ok && (n != "target" || isNodeParam(ep, n)) {
			t.Nodes = appendStrings(t.Nodes, v)
		}
	}
	for _, n := range vmidParams {
		if v, ok := get(n); ok {
			t.VMIDs = appendVMIDs(t.VMIDs, v)
		}
	}
	for _, n := range storageParams {
		if v, ok := get(n); ok {
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
		}
	}
	for _, n := range poolParams {
		if v, ok := get(n); ok {
			t.Pools = appendStrings(t.Pools, v)
		}
	}
	for _, n := range pathParams {
		if v, ok := get(n); ok {
			t.Paths = appendStrings(t.Paths, v)
		}
	}
	for _, n := range serviceParams {
		if v, ok := get(n); ok {
			t.Services = appendStrings(t.Services, v)
		}
	}
	for _, n := range commandParams {
		if v, ok := get(n); ok {
			t.Commands = append(t.Commands, strings.Join(strs(v), " "))
		}
	}
	// Volume ids name their storage: path variables ({volume}) and
	// parameters whose format is a volume id or a disk property string.
	if v, ok := vars["volume"]; ok {
		t.Storages = appendVolumeStorage(t.Storages, v)
	}
	for name, v := range args {
		p := paramOf(ep, name)
		if p == nil {
			continue
		}
		switch {
		case strings.HasPrefix(p.Format, "pve-volume-id"):
			for _, s := range strs(v) {
				t.Storages = appendVolumeStorage(t.Storages, s)
			}
		case p.Properties != nil:
			for _, s := range strs(v) {
				if vol := volumeOfPropertyString(p, s); vol != "" {
					t.Storages = appendVolumeStorage(t.Storages, vol)
				}
			}
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

// isNodeParam reports whether a parameter named target is a node (migrate)
// rather than something else (a storage of move_volume, a path).
func isNodeParam(ep *schema.Endpoint, name string) bool {
	p := ep.Param(name)
	return p != nil && p.Format == "pve-node"
}

// paramOf finds the schema of an argument, numbered keys included (net0 →
// net[n]).
func paramOf(ep *schema.Endpoint, name string) *schema.Param {
	if p := ep.Param(name); p != nil {
		return p
	}
	prefix := strings.TrimRightFunc(name, func(r rune) bool { return '0' <= r && r <= '9' })
	if prefix == name || prefix == "" {
		return nil
	}
	return ep.Param(prefix + "[n]")
}

// volumeOfPropertyString returns the volume of a disk or mount point
// property string: the value of its default key (a bare first item) or of
// a sub-key named file or volume.
func volumeOfPropertyString(p *schema.Param, s string) string {
	var def string
	for _, k := range p.Properties.Keys {
		if k.DefaultKey {
			def = k.Name
		}
	}
	if def != "file" && def != "volume" && p.Properties.Key("file") == nil && p.Properties.Key("volume") == nil {
		return ""
	}
	for i, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(item, "=")
		switch {
		case !ok && i == 0 && (def == "file" || def == "volume"):
			return item
		case ok && (k == "file" || k == "volume"):
			return v
		}
	}
	return ""
}

// appendVolumeStorage adds the storage of a volume id storage:volume; an
// absolute path or a device has none.
func appendVolumeStorage(out []string, vol string) []string {
	if dec, err := url.PathUnescape(vol); err == nil {
		vol = dec
	}
	st, _, ok := strings.Cut(vol, ":")
	if !ok || st == "" || strings.HasPrefix(vol, "/") {
		return out
	}
	return append(out, st)
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

// Value converts the input to the Rego value policies see. It is built
// directly as an AST (no JSON round trip): this is on every call's path.
func (in *Input) Value() (ast.Value, error) {
	var params ast.Value = ast.NewObject()
	if len(in.Params) > 0 {
		var err error
		if params, err = ast.InterfaceToValue(in.Params); err != nil {
			return nil, fmt.Errorf("policy input: params: %w", err)
		}
	}
	p := in.Principal
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
	t := in.Targets
	// Evaluation never modifies its input: the empty lists share one term.
	empty := ast.NewTerm(ast.NewArray())
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
	targets := ast.NewObject(
		list("nodes", t.Nodes),
		ast.Item(ast.InternedTerm("vmids"), vmids),
		list("storages", t.Storages),
		list("pools", t.Pools),
		list("paths", t.Paths),
		list("services", t.Services),
		list("commands", t.Commands),
	)
	hits := make([]*ast.Term, len(in.Guard.Hits))
	for i, h := range in.Guard.Hits {
		hits[i] = ast.NewTerm(ast.NewObject(
			strItem("kind", h.Kind),
			strItem("value", h.Value),
			strItem("param", h.Param),
		))
	}
	hitsTerm := empty
	if len(hits) > 0 {
		hitsTerm = ast.NewTerm(ast.NewArray(hits...))
	}
	guard := ast.NewObject(
		boolItem("evaluated", in.Guard.Evaluated),
		ast.Item(ast.InternedTerm("hits"), hitsTerm),
	)
	endpoint := ast.NewObject(
		strItem("risk", in.Endpoint.Risk.String()),
		boolItem("expose_credentials", in.Endpoint.ExposeCredentials),
		boolItem("download", in.Endpoint.Download),
	)
	return ast.NewObject(
		item("principal", principal),
		strItem("tool", in.Tool),
		strItem("method", in.Method),
		strItem("path", in.Path),
		strItem("concrete_path", in.ConcretePath),
		item("params", params),
		strItem("risk", in.Risk.String()),
		item("endpoint", endpoint),
		item("targets", targets),
		item("guard", guard),
		item("time", timeValue(in.Time)),
	), nil
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
		"targets", "nodes", "vmids", "storages", "pools", "paths", "services", "commands",
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
