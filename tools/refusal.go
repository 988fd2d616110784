package tools

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// refuseDecision journals and answers a call the policy denied or held for
// break-glass. The PVE API is public (its schema is on every host), so the
// answer says plainly that the endpoint exists, what refused the call and
// why, and which built-in profiles would allow this very call: an agent
// learns whom to ask instead of searching for another path. lead, when
// set, replaces the first line.
func (s *Server) refuseDecision(ctx context.Context, audit AuditCall, c Caller, p *plan.Plan, lead string) *mcp.CallToolResult {
	ep, d := p.Endpoint, p.Decision
	if lead == "" {
		lead = fmt.Sprintf("Refused: %s %s exists (tool %s), but %s does not allow this call. Nothing was sent.", ep.Method, p.Path, ep.Tool, decidedBy(c, d))
	}
	alts := s.alternatives(ctx, c, p)
	text := lead + "\n" + reasonsText(d)
	if len(alts) > 0 {
		text += "\nWhat would allow it: a key with " + strings.Join(alts, "; or ") + "."
	} else {
		text += "\nNo built-in profile allows this call as it is."
	}
	res := s.refuse(ctx, audit, journal.OutcomeDenied, text)
	res.StructuredContent = map[string]any{
		"status": "denied", "effect": string(d.Effect), "method": ep.Method, "path": p.Path, "tool": ep.Tool,
		"policy": d.Policy, "reasons": d.Reasons, "allowed_by": alts,
	}
	if r := p.Input.ReachesHost; len(r) > 0 {
		res.StructuredContent.(map[string]any)["reaches_host"] = r
	}
	return res
}

// decidedBy names what decided: the key's profile or custom policy.
func decidedBy(c Caller, d policy.Decision) string {
	switch {
	case c.Binding.Policy != "":
		return "your key's policy " + d.Policy
	case c.Binding.Profile != "":
		return "your key's profile " + c.Binding.Profile
	}
	return "policy " + d.Policy
}

// alternatives lists the built-in profiles, other than the caller's own,
// under which this same call would not be denied, with what they would
// still ask for.
func (s *Server) alternatives(ctx context.Context, c Caller, p *plan.Plan) []string {
	var out []string
	for _, prof := range policy.Profiles() {
		if c.Binding.Policy == "" && prof == c.Binding.Profile {
			continue
		}
		in := p.Input
		in.Principal.Profile, in.Principal.Policy = prof, ""
		d := s.opts.Policy.Decide(ctx, policy.Binding{Profile: prof}, &in)
		switch d.Effect {
		case policy.Allow:
			out = append(out, "profile "+prof)
		case policy.Confirm:
			if approverOf(d) == "other" {
				out = append(out, "profile "+prof+", with another principal's approval")
			} else {
				out = append(out, "profile "+prof+", with confirmation")
			}
		case policy.DryRun:
			out = append(out, "profile "+prof+", as a dry run only")
		case policy.Breakglass:
			out = append(out, "profile "+prof+", only through the break-glass procedure on the host")
		}
	}
	return out
}

func flatten(v url.Values) map[string]any {
	out := make(map[string]any, len(v))
	for k, vals := range v {
		if len(vals) == 1 {
			out[k] = vals[0]
		} else {
			out[k] = vals
		}
	}
	return out
}
