package tools

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// PromptOnboarding walks a person through what their key allows.
const PromptOnboarding = "proxmox_onboarding"

func onboardingPrompt() mcp.Prompt {
	return mcp.NewPrompt(PromptOnboarding,
		mcp.WithPromptDescription("What your key may do on this Proxmox VE host, and how to start."),
		mcp.WithArgument("node", mcp.ArgumentDescription("A node the first steps' examples use (completes to the nodes you may read).")),
		mcp.WithArgument("vmid", mcp.ArgumentDescription("A VM or container the first steps' examples use (completes to the guests you may read).")))
}

// example is what the first steps' paths name: a node, and a guest on it.
type example struct {
	node, kind, vmid string
}

// onboardingExample is the example the prompt's arguments name, found in
// the caller's view of the cluster; pve1's VM 100 when they name none.
func (s *Server) onboardingExample(ctx context.Context, c Caller, args map[string]string) (example, error) {
	ex := example{node: "pve1", kind: "qemu", vmid: "100"}
	node, vmid := args["node"], args["vmid"]
	if node == "" && vmid == "" {
		return ex, nil
	}
	view, err := s.views.get(ctx, s, c, PromptOnboarding, false)
	if err != nil {
		return ex, err
	}
	if node != "" {
		if !slices.Contains(view.nodes, node) {
			return ex, fmt.Errorf("argument node %q: no node of that name is visible to your key", node)
		}
		ex.node = node
	}
	if vmid != "" {
		id, err := strconv.Atoi(vmid)
		if err != nil {
			return ex, fmt.Errorf("argument vmid %q: want a VM or container ID, an integer from 100 to 999999999", vmid)
		}
		g, ok := view.guest(id)
		if !ok {
			return ex, fmt.Errorf("argument vmid %q: no VM or container of that ID is visible to your key", vmid)
		}
		if node != "" && g.node != node {
			return ex, fmt.Errorf("argument vmid %q: the guest is on node %s, not on %s", vmid, g.node, node)
		}
		ex = example{node: g.node, kind: g.kind, vmid: vmid}
	}
	return ex, nil
}

// onboarding describes the caller's key, policy, tier, the daemon's
// switches and the endpoints it may use, by area and risk.
func (s *Server) onboarding(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	c, ok := CallerFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("no authenticated caller")
	}
	if c.Recheck != nil {
		fresh, err := c.Recheck(ctx)
		if err != nil {
			return nil, fmt.Errorf("your key is no longer accepted: %w", err)
		}
		c = fresh
	}
	visible, err := s.visible(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("the policy could not be evaluated: %w", err)
	}
	ex, err := s.onboardingExample(ctx, c, req.Params.Arguments)
	if err != nil {
		call := AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: PromptOnboarding, Args: promptArgs(req.Params.Arguments)}
		if rerr := s.audit.Record(journalContext(ctx), call, AuditOutcome{Outcome: journal.OutcomeInvalid, Error: err.Error()}); rerr != nil {
			return nil, fmt.Errorf("%w; the journal also refused the record: %w", err, rerr)
		}
		return nil, err
	}
	byRisk := map[schema.Risk]int{}
	areas := map[string]int{}
	for _, ep := range visible {
		byRisk[ep.Risk]++
		areas[area(ep.Path)]++
	}
	names := make([]string, 0, len(areas))
	for a := range areas {
		names = append(names, a)
	}
	sort.Slice(names, func(i, j int) bool {
		return areas[names[i]] > areas[names[j]] || areas[names[i]] == areas[names[j]] && names[i] < names[j]
	})
	var b strings.Builder
	p := c.Principal
	fmt.Fprintf(&b, "You are connected to a Proxmox VE host through proxmox-mcp as key %q (id %s), over %s.\n", p.Name, p.KeyID, p.Transport)
	fmt.Fprintf(&b, "Your key is bound to %s; its calls reach PVE with the %s-tier API token, so PVE's own permission check stands behind the policy.\n", c.Binding, c.Tier)
	sw := s.currentSwitches()
	switch {
	case sw.ReadOnly:
		b.WriteString("The daemon is in read-only mode: nothing can be changed, whatever the key.\n")
	case !sw.AllowMutations:
		b.WriteString("Mutations are turned off on this daemon (allow_mutations is false): you can read, not change.\n")
	}
	fmt.Fprintf(&b, "\nYou may use %d API endpoints: %d read, %d write, %d destructive.\n", len(visible), byRisk[schema.RiskRead], byRisk[schema.RiskWrite], byRisk[schema.RiskDestructive])
	if len(names) > 0 {
		var parts []string
		for _, n := range names[:min(8, len(names))] {
			parts = append(parts, fmt.Sprintf("%s (%d)", n, areas[n]))
		}
		fmt.Fprintf(&b, "By area: %s.\n", strings.Join(parts, ", "))
	}
	b.WriteString("\nHow to start:\n")
	for i, step := range s.onboardingSteps(ex) {
		fmt.Fprintf(&b, "%d. %s\n", i+1, step)
	}
	b.WriteString("Every call is recorded in the daemon's journal.")
	out := AuditOutcome{Outcome: journal.OutcomeOK}
	if err := s.audit.Record(journalContext(ctx), AuditCall{Time: s.opts.Now(), Principal: c.Principal, Tool: PromptOnboarding, Args: promptArgs(req.Params.Arguments)}, out); err != nil {
		return nil, fmt.Errorf("the journal refused the record of this request: %w", err)
	}
	return mcp.NewGetPromptResult("What this key may do, and how to start",
		[]mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(b.String()))}), nil
}

// area is the part of the API a path belongs to: guests, storage, …
func area(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 3 && segs[0] == "nodes":
		switch segs[2] {
		case "qemu":
			return "VMs"
		case "lxc":
			return "containers"
		case "storage", "disks":
			return "storage"
		case "tasks":
			return "tasks"
		case "ceph":
			return "Ceph"
		}
		return "nodes"
	case segs[0] == "cluster" && len(segs) >= 2:
		return "cluster " + segs[1]
	case segs[0] == "access":
		return "users and permissions"
	}
	return segs[0]
}

// promptArgs are a prompt's arguments as the journal records them.
func promptArgs(a map[string]string) map[string]any {
	if len(a) == 0 {
		return nil
	}
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	return out
}

// onboardingSteps are the first steps with the tools of the mode, their
// paths naming the example's node and guest.
func (s *Server) onboardingSteps(ex example) []string {
	guest := "/nodes/" + ex.node + "/" + ex.kind + "/" + ex.vmid
	call := "proxmox_api_get with a concrete path (" + guest + "/config) reads; proxmox_api_call with method (POST, PUT, DELETE),\n" +
		"   a concrete path (" + guest + "/status/start) and params makes a change.\n" +
		"   Everything is checked before it is sent; a refusal says which rule refused and why."
	if s.opts.Mode == ModeSearch {
		return []string{
			"proxmox_api_get /cluster/resources lists every guest, node and storage you may see.",
			`proxmox_api_search with what you want to do ("start vm", "snapshot", "backup") finds the endpoint.`,
			"proxmox_api_search with describe set to its tool name shows the parameters and their rules.",
			call,
			"Long-running calls return a UPID: pass wait (seconds) to follow the task, or read /nodes/{node}/tasks/{upid}/status with proxmox_api_get.",
		}
	}
	return []string{
		"proxmox_cluster_resources (or proxmox_api_get /cluster/resources) lists every guest, node and storage you may see.",
		`proxmox_api_search with what you want to do ("start vm", "snapshot", "backup") finds the endpoint.`,
		"proxmox_api_describe with its tool name shows the parameters and their rules.",
		call,
		"Long-running calls return a UPID: pass wait (seconds) to follow the task, or use proxmox_task_wait.",
	}
}
