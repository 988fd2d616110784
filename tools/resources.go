package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// Resources and completions. The resources are read under the same rules
// as the tools: only an authenticated caller reads, every read that
// reaches PVE is planned, decided by the caller's policy and journaled as
// the tools' reads are (a refused read is an error, journaled with its
// outcome), and a read that reaches nothing (the schema's status, the
// caller's own journal rows) gets one row of its own. Completion offers
// only what the caller could read: nodes, guests and storages from its
// own view of /cluster/resources (a journaled, policy-checked read, kept
// briefly per caller), each kept only if the caller's policy would let it
// read that thing's summary.

// URIs of the resources and resource templates.
const (
	ResourceSchemaStatus = "proxmox://schema/status"
	ResourceJournal      = "proxmox://journal/recent"
	TemplateNode         = "proxmox://nodes/{node}"
	TemplateGuest        = "proxmox://guests/{vmid}"
	TemplateStorage      = "proxmox://nodes/{node}/storage/{storage}"
	// ToolCompletion names completion's reads in the journal.
	ToolCompletion = "completion/complete"
)

// journalResourceRows is how many of its rows the journal resource shows.
const journalResourceRows = 50

// maxCompletions is the most values one completion answers (the spec's
// bound).
const maxCompletions = 100

// guestSummaryFields are the keys of a guest's status/current a guest
// summary keeps (PVE's whole answer carries block statistics and balloon
// details too).
func guestSummaryFields() []string {
	return []string{"name", "vmid", "status", "qmpstatus", "cpu", "cpus", "mem", "maxmem", "disk", "maxdisk",
		"swap", "maxswap", "uptime", "tags", "lock", "ha", "template", "netin", "netout"}
}

// serveResources registers the resources, the templates and the
// completion of their arguments (and of the prompt's) on the MCP server.
// Its hooks are the server's only ones (server.WithHooks replaces them):
// another hook goes into this set.
func (s *Server) serveResources() {
	hooks := &server.Hooks{}
	hooks.AddAfterListResources(s.filterResources)
	hooks.AddAfterListResourceTemplates(s.filterTemplates)
	comp := completer{s}
	for _, o := range []server.ServerOption{
		server.WithResourceCapabilities(false, false),
		server.WithCompletions(),
		server.WithResourceCompletionProvider(comp),
		server.WithPromptCompletionProvider(comp),
		server.WithResourceHandlerMiddleware(s.journalEveryRead),
		server.WithResourceRecovery(),
		server.WithHooks(hooks),
	} {
		o(s.mcp)
	}
	res, tpl := s.resourceSet()
	s.mcp.AddResources(res...)
	s.mcp.AddResourceTemplates(tpl...)
}

// resourceSet is every resource and template: this file's and the jobs'.
func (s *Server) resourceSet() ([]server.ServerResource, []server.ServerResourceTemplate) {
	res := []server.ServerResource{{
		Resource: mcp.NewResource(ResourceSchemaStatus, "schema status",
			mcp.WithResourceDescription("The PVE API schema the daemon serves: source, origin, paths, methods, sha256, health and last error (as proxmox_schema_status)."),
			mcp.WithMIMEType("application/json")),
		Handler: s.readSchemaStatus,
	}}
	if s.opts.Ledger != nil {
		res = append(res, server.ServerResource{
			Resource: mcp.NewResource(ResourceJournal, "my journal rows",
				mcp.WithResourceDescription(fmt.Sprintf("The last %d journal rows of your key, oldest first (as proxmox_journal): time, kind, tool, method, path, decision, outcome, error, upid, operation.", journalResourceRows)),
				mcp.WithMIMEType("application/json")),
			Handler: s.readJournal,
		})
	}
	tpl := []server.ServerResourceTemplate{
		{Template: mcp.NewResourceTemplate(TemplateNode, "node summary",
			mcp.WithTemplateDescription("A node's status (GET /nodes/{node}/status): cpu, memory, rootfs, swap, load average, uptime, kernel and PVE version. Node names complete."),
			mcp.WithTemplateMIMEType("application/json")), Handler: s.readNode},
		{Template: mcp.NewResourceTemplate(TemplateGuest, "guest summary",
			mcp.WithTemplateDescription("A VM's or container's status, wherever it runs (GET /nodes/{node}/qemu|lxc/{vmid}/status/current): "+
				strings.Join(guestSummaryFields(), ", ")+", with its node and type. VMIDs complete."),
			mcp.WithTemplateMIMEType("application/json")), Handler: s.readGuest},
		{Template: mcp.NewResourceTemplate(TemplateStorage, "storage summary",
			mcp.WithTemplateDescription("A storage's status on a node (GET /nodes/{node}/storage/{storage}/status): type, content, total, used, avail, active, enabled, shared. Node and storage names complete."),
			mcp.WithTemplateMIMEType("application/json")), Handler: s.readStorage},
	}
	jr, jt := s.jobResources()
	return append(res, jr...), append(tpl, jt...)
}

// templateReads are the endpoints one of this file's templates reads,
// which the caller's policy must let it use for the template to be
// listed; ours is false for another template.
func templateReads(uri string) (reads [][2]string, ours bool) {
	switch uri {
	case TemplateNode:
		return [][2]string{{"GET", "/nodes/{node}/status"}}, true
	case TemplateGuest:
		return [][2]string{{"GET", "/cluster/resources"}, {"GET", "/nodes/{node}/qemu/{vmid}/status/current|/nodes/{node}/lxc/{vmid}/status/current"}}, true
	case TemplateStorage:
		return [][2]string{{"GET", "/nodes/{node}/storage/{storage}/status"}}, true
	}
	return nil, false
}

// filterResources leaves an unauthenticated caller no resources (mcp-go
// has no resource filter; its hook sees the page it answers).
func (s *Server) filterResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res == nil {
		return
	}
	if _, ok := CallerFrom(ctx); !ok {
		res.Resources = []mcp.Resource{}
	}
}

// filterTemplates lists a template only to a caller whose policy could
// ever allow the reads it makes; the jobs' templates their handlers
// decide.
func (s *Server) filterTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil {
		return
	}
	c, ok := CallerFrom(ctx)
	if !ok {
		res.ResourceTemplates = []mcp.ResourceTemplate{}
		return
	}
	var v visibility
	var verr error
	computed := false
	out := res.ResourceTemplates[:0:0]
	for _, t := range res.ResourceTemplates {
		reads, ours := templateReads(t.URITemplate.Raw())
		if !ours {
			out = append(out, t)
			continue
		}
		if !computed {
			v, verr = s.visible(ctx, c)
			computed = true
		}
		if verr == nil && s.readsVisible(v, reads) {
			out = append(out, t)
		}
	}
	res.ResourceTemplates = out
}

// readsVisible says whether every read (one of its |-separated templates)
// is among the visible endpoints.
func (s *Server) readsVisible(v visibility, reads [][2]string) bool {
	reg := s.registry()
	for _, r := range reads {
		found := false
		for _, path := range strings.Split(r[1], "|") {
			if ep := reg.Lookup(r[0], path); ep != nil && v[ep.Tool] != nil {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// resourceTool is the name a read of uri goes into the journal with: the
// template it matched, or the resource itself.
func resourceTool(uri string) string {
	switch {
	case strings.HasPrefix(uri, "proxmox://guests/"):
		return TemplateGuest
	case strings.HasPrefix(uri, "proxmox://nodes/") && strings.Contains(strings.TrimPrefix(uri, "proxmox://nodes/"), "/storage/"):
		return TemplateStorage
	case strings.HasPrefix(uri, "proxmox://nodes/"):
		return TemplateNode
	}
	return uri
}

// journalEveryRead writes the row of a read whose handler wrote none (the
// schema's status, the journal rows, a refusal before any endpoint), so
// that every read of a resource by a caller is in the journal; a row the
// journal refuses withholds the answer.
func (s *Server) journalEveryRead(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		m := &auditMark{}
		ctx = context.WithValue(ctx, auditMarkKey{}, m)
		start := s.opts.Now()
		contents, err := next(ctx, req)
		c, ok := CallerFrom(ctx)
		if m.done.Load() || !ok {
			return contents, err
		}
		out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(start)}
		var te *toolError
		switch {
		case errors.As(err, &te):
			out.Outcome, out.Error = te.outcome, te.text
		case err != nil:
			out.Outcome, out.Error = journal.OutcomeError, err.Error()
		}
		call := AuditCall{Time: start, Principal: c.Principal, Tool: resourceTool(req.Params.URI), Args: map[string]any{"uri": req.Params.URI}}
		if rerr := s.audit.Record(journalContext(ctx), call, out); rerr != nil {
			return nil, fmt.Errorf("the journal refused the record of this read, so its answer is withheld: %w", rerr)
		}
		return contents, err
	}
}

// jsonContents is a resource's JSON.
func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", uri, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// fromTool turns a tool's answer into a resource's: its structured
// content, or its text as the error of a refusal.
func fromTool(uri string, res *mcp.CallToolResult, err error) ([]mcp.ResourceContents, error) {
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, errors.New(text(res))
	}
	return jsonContents(uri, res.StructuredContent)
}

func (s *Server) readSchemaStatus(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	res, err := s.handleSchemaStatus(ctx, mcp.CallToolRequest{})
	return fromTool(req.Params.URI, res, err)
}

// readJournal is the caller's own rows, as proxmox_journal shows them.
func (s *Server) readJournal(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	call := mcp.CallToolRequest{}
	call.Params.Arguments = map[string]any{"limit": float64(journalResourceRows)}
	res, err := s.handleJournal(ctx, call)
	return fromTool(req.Params.URI, res, err)
}

// argument is one variable of a matched template.
func argument(req mcp.ReadResourceRequest, name string) string {
	switch v := req.Params.Arguments[name].(type) {
	case string:
		return v
	case []string:
		if len(v) == 1 {
			return v[0]
		}
	}
	return ""
}

func (s *Server) readNode(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	path := pve.Path("nodes", argument(req, "node"), "status")
	return s.readEndpoint(ctx, c, req.Params.URI, callRequest{tool: TemplateNode, method: "GET", path: path, args: map[string]any{}}, nil)
}

func (s *Server) readStorage(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	path := pve.Path("nodes", argument(req, "node"), "storage", argument(req, "storage"), "status")
	return s.readEndpoint(ctx, c, req.Params.URI, callRequest{tool: TemplateStorage, method: "GET", path: path, args: map[string]any{}}, nil)
}

// readGuest finds the guest in the caller's view of the cluster and reads
// its status there.
func (s *Server) readGuest(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	raw := argument(req, "vmid")
	vmid, err := strconv.Atoi(raw)
	if err != nil || vmid < 100 || vmid > 999999999 {
		return nil, &toolError{outcome: journal.OutcomeInvalid, text: fmt.Sprintf("argument vmid %q: want a VM or container ID, an integer from 100 to 999999999", raw)}
	}
	// Read afresh, as proxmox_guest_status does: a guest that migrated a
	// moment ago is read where it is now.
	view, err := s.views.get(ctx, s, c, TemplateGuest, true)
	if err != nil {
		return nil, err
	}
	g, ok := view.guest(vmid)
	if !ok {
		return nil, &toolError{outcome: journal.OutcomeError, text: fmt.Sprintf("no VM or container %d is visible to your key", vmid)}
	}
	fields := map[string]bool{}
	for _, f := range guestSummaryFields() {
		fields[f] = true
	}
	path := pve.Path("nodes", g.node, g.kind, strconv.Itoa(vmid), "status", "current")
	r := callRequest{tool: TemplateGuest, method: "GET", path: path, args: map[string]any{}, shape: Shape{Fields: fields}}
	return s.readEndpoint(ctx, c, req.Params.URI, r, map[string]any{"node": g.node, "type": g.kind})
}

// readEndpoint is one GET as the tools make it (planned, decided,
// journaled) whose answer is the resource, with the keys of also added to
// the object PVE answered. A read the policy would only dry-run is
// refused: a resource is what PVE answered or nothing.
func (s *Server) readEndpoint(ctx context.Context, c Caller, uri string, req callRequest, also map[string]any) ([]mcp.ResourceContents, error) {
	pr, refusal := s.prepare(ctx, c, req)
	if refusal != nil {
		return nil, errors.New(text(refusal))
	}
	if pr.dryRun {
		res := s.refuse(ctx, pr.audit, journal.OutcomeDenied, "Refused: your policy allows "+req.path+" only as a dry run, and a resource is what PVE answers. Nothing was sent.")
		return nil, errors.New(text(res))
	}
	res := s.dispatch(ctx, c, req, pr)
	if content, ok := res.StructuredContent.(map[string]any); ok && !res.IsError {
		if data, ok := content["data"].(map[string]any); ok {
			for k, v := range also {
				data[k] = v
			}
		}
	}
	return fromTool(uri, res, nil)
}

// viewTTL is how long a caller's view of the cluster serves completion
// and guest lookups before it is read again; viewEntries bounds the
// callers kept.
const (
	viewTTL     = 10 * time.Second
	viewEntries = 256
	// viewItems bounds the items of /cluster/resources one view keeps.
	viewItems = 20000
)

// clusterView is what one caller's read of /cluster/resources showed.
type clusterView struct {
	nodes    []string
	guests   []viewGuest
	storages []viewStorage
	// decided are the policy's decisions on its values' reads.
	decided decisions
}

type viewGuest struct {
	vmid       int
	node, kind string
}

type viewStorage struct{ node, storage string }

func (v *clusterView) guest(vmid int) (viewGuest, bool) {
	for _, g := range v.guests {
		if g.vmid == vmid {
			return g, true
		}
	}
	return viewGuest{}, false
}

// viewKey is whose view it is: the key, its binding and tier (a binding
// or tier changed by a reload is another view).
type viewKey struct {
	keyID   string
	binding policy.Binding
	tier    Tier
}

// views keeps each caller's view of the cluster briefly.
type views struct {
	mu sync.Mutex
	m  map[viewKey]viewEntry
}

type viewEntry struct {
	at   time.Time
	view *clusterView
}

// get returns the caller's view, read again (journaled under tool) when
// fresh is set or it is older than viewTTL. The read's row does not count
// as the row of the request that needed it: that request is journaled on
// its own.
func (vs *views) get(ctx context.Context, s *Server, c Caller, tool string, fresh bool) (*clusterView, error) {
	k := viewKey{keyID: c.Principal.KeyID, binding: c.Binding, tier: c.Tier}
	now := s.opts.Now()
	vs.mu.Lock()
	if e, ok := vs.m[k]; ok && !fresh && now.Sub(e.at) < viewTTL && now.Sub(e.at) >= 0 {
		vs.mu.Unlock()
		return e.view, nil
	}
	vs.mu.Unlock()
	v, err := s.readView(context.WithValue(ctx, auditMarkKey{}, &auditMark{}), c, tool)
	if err != nil {
		return nil, err
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.m == nil || len(vs.m) >= viewEntries {
		vs.m = map[viewKey]viewEntry{}
	}
	vs.m[k] = viewEntry{at: now, view: v}
	return v, nil
}

// readView reads /cluster/resources as the caller, journaled.
func (s *Server) readView(ctx context.Context, c Caller, tool string) (*clusterView, error) {
	pr, refusal := s.prepare(ctx, c, callRequest{tool: tool, method: "GET", path: "/cluster/resources", args: map[string]any{}})
	if refusal != nil {
		return nil, errors.New(text(refusal))
	}
	if pr.dryRun {
		return nil, errors.New(text(s.refuse(ctx, pr.audit, journal.OutcomeDenied, "Refused: your policy allows /cluster/resources only as a dry run. Nothing was sent.")))
	}
	client, err := s.opts.PVE.Client(c.Tier)
	if err != nil {
		return nil, errors.New(text(s.refuse(ctx, pr.audit, journal.OutcomeError, "no PVE token for tier "+string(c.Tier)+": "+err.Error())))
	}
	var list []map[string]any
	err = client.Get(ctx, pr.plan.Path, pr.plan.Wire(), &list)
	out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(pr.plan.Time)}
	if err != nil {
		return nil, errors.New(text(s.callFailed(ctx, pr.audit, "", out, pr.plan.Endpoint, err)))
	}
	if err := s.audit.Record(journalContext(ctx), pr.audit, out); err != nil {
		return nil, fmt.Errorf("the journal refused the record of the cluster's resources: %w", err)
	}
	return viewOf(list), nil
}

// viewOf keeps the nodes, guests and storages of /cluster/resources.
func viewOf(list []map[string]any) *clusterView {
	v := &clusterView{}
	seen := map[string]bool{}
	for _, r := range list[:min(len(list), viewItems)] {
		node, _ := r["node"].(string)
		switch typ, _ := r["type"].(string); typ {
		case "node":
			if node != "" && !seen[node] {
				seen[node] = true
				v.nodes = append(v.nodes, node)
			}
		case "qemu", "lxc":
			id, _ := scalarText(r["vmid"])
			if n, err := strconv.Atoi(id); err == nil && node != "" {
				v.guests = append(v.guests, viewGuest{vmid: n, node: node, kind: typ})
			}
		case "storage":
			if st, _ := r["storage"].(string); st != "" && node != "" {
				v.storages = append(v.storages, viewStorage{node: node, storage: st})
			}
		}
	}
	slices.Sort(v.nodes)
	slices.SortFunc(v.guests, func(a, b viewGuest) int { return a.vmid - b.vmid })
	return v
}

// completer answers completion/complete for the templates' arguments and
// the onboarding prompt's.
type completer struct{ s *Server }

func (cp completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if uri == TemplateJob && arg.Name == "id" {
		return cp.completeJob(ctx, arg.Value)
	}
	if _, ours := templateReads(uri); !ours {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return cp.complete(ctx, arg, cc)
}

func (cp completer) CompletePromptArgument(ctx context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt != PromptOnboarding {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return cp.complete(ctx, arg, cc)
}

// complete offers the values of node, vmid or storage that start with
// what the caller typed, from its own view, each one the caller's policy
// would let it read.
func (cp completer) complete(ctx context.Context, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	s := cp.s
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	view, err := s.views.get(ctx, s, c, ToolCompletion, false)
	if err != nil {
		return nil, fmt.Errorf("completion of %s: %w", arg.Name, err)
	}
	node := cc.Arguments["node"]
	var cands []candidate
	switch arg.Name {
	case "node":
		for _, n := range view.nodes {
			cands = append(cands, candidate{n, pve.Path("nodes", n, "status")})
		}
	case "vmid":
		for _, g := range view.guests {
			if node == "" || g.node == node {
				id := strconv.Itoa(g.vmid)
				cands = append(cands, candidate{id, pve.Path("nodes", g.node, g.kind, id, "status", "current")})
			}
		}
	case "storage":
		for _, st := range view.storages {
			if node == "" || st.node == node {
				cands = append(cands, candidate{st.storage, pve.Path("nodes", st.node, "storage", st.storage, "status")})
			}
		}
	default:
		return &mcp.Completion{Values: []string{}}, nil
	}
	return s.offer(ctx, c, &view.decided, cands, arg.Value), nil
}

// completeJob offers the ids of the caller's own newest jobs that start
// with prefix, from its journal rows (no other key's job is offered).
func (cp completer) completeJob(ctx context.Context, prefix string) (*mcp.Completion, error) {
	s := cp.s
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	jl := s.jobLedger()
	if jl == nil {
		return &mcp.Completion{Values: []string{}}, nil
	}
	jobs, err := jl.Jobs(ctx, c.Principal.KeyID, maxCompletions)
	if err != nil {
		return nil, fmt.Errorf("completion of id: %w", err)
	}
	values := []string{}
	for _, j := range jobs {
		if strings.HasPrefix(j.ID, prefix) {
			values = append(values, j.ID)
		}
	}
	return &mcp.Completion{Values: values, Total: len(values)}, nil
}

// candidate is a value and the read that shows it.
type candidate struct{ value, path string }

// maxCompletionChecks bounds the policy decisions one completion makes
// anew: a policy that refuses most of a large cluster's guests is not
// asked about each of them on one keystroke (a decision costs 40–400 µs;
// BenchmarkCompletionOffer). As many as the values one answer holds.
const maxCompletionChecks = maxCompletions

// decisions are the policy's answers on the reads of one view's values,
// kept as long as the view: the next keystrokes ask again of none.
type decisions struct {
	mu sync.Mutex
	m  map[string]bool
}

func (d *decisions) get(path string) (allowed, known bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	allowed, known = d.m[path]
	return allowed, known
}

func (d *decisions) put(path string, allowed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]bool{}
	}
	d.m[path] = allowed
}

// offer keeps the candidates that start with prefix and that the caller's
// policy allows reading, at most maxCompletions, each value once; hasMore
// says that more might be offered (the values or the new decisions ran
// out). The decisions are taken from, and added to, known.
func (s *Server) offer(ctx context.Context, c Caller, known *decisions, cands []candidate, prefix string) *mcp.Completion {
	out := &mcp.Completion{Values: []string{}}
	seen := map[string]bool{}
	checks := 0
	for _, cd := range cands {
		if seen[cd.value] || !strings.HasPrefix(cd.value, prefix) {
			continue
		}
		if len(out.Values) == maxCompletions {
			out.HasMore = true
			break
		}
		allowed, ok := known.get(cd.path)
		if !ok {
			if checks == maxCompletionChecks {
				out.HasMore = true
				break
			}
			checks++
			allowed = s.mayRead(ctx, c, cd.path)
			known.put(cd.path, allowed)
		}
		if allowed {
			seen[cd.value] = true
			out.Values = append(out.Values, cd.value)
		}
	}
	return out
}

// mayRead says whether the caller's policy allows a GET of path outright.
func (s *Server) mayRead(ctx context.Context, c Caller, path string) bool {
	p, err := s.planner.Build(ctx, c.planCaller(), plan.Request{Tool: ToolCompletion, Method: "GET", Path: path, Args: map[string]any{}})
	return err == nil && p.Decision.Effect == policy.Allow
}
