package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// handleDescribe is proxmox_api_describe. An endpoint's answer is always
// complete JSON: a summary, one parameter in full, the parameters in pages
// that fit the size cap, or the return schema (summarised if too large).
func (s *Server) handleDescribe(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, a, err := s.callerArgs(ctx, req, "tool", "method", "path", "section", "param", "offset")
	if err != nil {
		return nil, err
	}
	var tool, method, path, section, param string
	for name, dst := range map[string]*string{"tool": &tool, "method": &method, "path": &path, "section": &section, "param": &param} {
		v, err := optString(a, name)
		if err != nil {
			return nil, err
		}
		*dst = v
	}
	offset, _, err := optInt(a, "offset", 0, 100000)
	if err != nil {
		return nil, err
	}
	reg := s.registry()
	var ep *schema.Endpoint
	var matchErr error
	switch {
	case tool != "":
		if ep = reg.Tool(tool); ep == nil {
			return nil, argError("tool", fmt.Sprintf("no endpoint has the tool name %q; find one with %s", tool, ToolSearch))
		}
	case method != "" && path != "":
		if ep = reg.Lookup(method, path); ep == nil {
			ep, _, matchErr = reg.Match(method, path)
		}
		if ep == nil {
			return nil, argError("path", noEndpointText(method, path, matchErr))
		}
	default:
		return nil, argError("tool", "give the endpoint's tool name, or method and path")
	}
	res, err := s.describeEndpoint(ep, section, param, offset)
	if err != nil {
		return nil, err
	}
	// The schema is public: any endpoint is described. Whether this key's
	// policy could ever allow it is said beside the description.
	visible, verr := s.visible(ctx, c)
	usable := verr == nil && visible[ep.Tool] != nil
	if sc, ok := res.StructuredContent.(map[string]any); ok {
		sc["usable_by_your_key"] = usable
	}
	if !usable {
		note := "Note: your key's policy never allows this endpoint (or a daemon-wide switch refuses it); a call of it is refused and the answer says which profile would allow it.\n"
		if verr != nil {
			note = "Note: whether your key may use this endpoint could not be worked out (" + verr.Error() + ").\n"
		}
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				res.Content[0] = mcp.NewTextContent(note + tc.Text)
			}
		}
	}
	return res, nil
}

// describeEndpoint answers one section of an endpoint's description.
func (s *Server) describeEndpoint(ep *schema.Endpoint, section, param string, offset int) (*mcp.CallToolResult, error) {
	if param != "" {
		p := ep.Param(param)
		if p == nil {
			p = indexedParam(ep, param)
		}
		if p == nil {
			return nil, argError("param", fmt.Sprintf("%s %s has no parameter %q", ep.Method, ep.Path, param))
		}
		doc := paramDoc(p, true)
		return structured(fmt.Sprintf("%s %s: parameter %s.", ep.Method, ep.Path, p.Name), map[string]any{"tool": ep.Tool, "param": doc}), nil
	}
	switch section {
	case "", "summary":
		return s.describeSummary(ep), nil
	case "params":
		return s.describeParams(ep, offset), nil
	case "returns":
		return s.describeReturns(ep), nil
	}
	return nil, argError("section", "must be summary, params or returns")
}

// indexedParam finds net[n] when asked for net0 or net.
func indexedParam(ep *schema.Endpoint, name string) *schema.Param {
	for _, p := range ep.Params {
		if p.Indexed && (strings.TrimRight(name, "0123456789") == p.Prefix) {
			return p
		}
	}
	return nil
}

func (s *Server) describeSummary(ep *schema.Endpoint) *mcp.CallToolResult {
	var required []string
	brief := make([]any, 0, len(ep.Params))
	for _, p := range ep.Params {
		if p.Required() {
			required = append(required, p.Name)
		}
		brief = append(brief, map[string]any{"name": p.Name, "type": typeName(p), "required": p.Required()})
	}
	content := map[string]any{
		"tool": ep.Tool, "method": ep.Method, "path": ep.Path, "risk": ep.Risk.String(),
		"description": ep.Description, "required": required, "param_count": len(ep.Params),
		"allowtoken": ep.AllowToken, "returns_type": returnsType(ep),
	}
	if conds := ep.RiskConditions(); len(conds) > 0 {
		content["risk_conditions"] = conds
	}
	if ep.Permissions != nil {
		content["permissions"] = ep.Permissions
	}
	content["params"] = brief
	note := ""
	if jsonLen(content) > s.opts.Limits.MaxResultBytes/2 {
		delete(content, "params")
		note = " The parameter list is long: read it with section params (paged)."
	}
	return structured(fmt.Sprintf("%s %s (%s, %s): %d parameters, %d required.%s",
		ep.Method, ep.Path, ep.Tool, ep.Risk, len(ep.Params), len(required), note), content)
}

// describeParams returns as many full parameter docs from offset as fit
// the size cap, and where to continue.
func (s *Server) describeParams(ep *schema.Endpoint, offset int) *mcp.CallToolResult {
	if offset > len(ep.Params) {
		offset = len(ep.Params)
	}
	budget := s.opts.Limits.MaxResultBytes - 512
	var page []any
	used := 0
	next := offset
	for _, p := range ep.Params[offset:] {
		doc := paramDoc(p, false)
		n := jsonLen(doc) + 1
		if used+n > budget && len(page) > 0 {
			break
		}
		page = append(page, doc)
		used += n
		next++
	}
	content := map[string]any{"tool": ep.Tool, "method": ep.Method, "path": ep.Path, "params": page,
		"offset": offset, "total": len(ep.Params)}
	summary := fmt.Sprintf("%s %s: parameters %d to %d of %d.", ep.Method, ep.Path, offset+1, next, len(ep.Params))
	if next < len(ep.Params) {
		content["next_offset"] = next
		summary += fmt.Sprintf(" Continue with offset %d.", next)
	}
	return structured(summary, content)
}

func (s *Server) describeReturns(ep *schema.Endpoint) *mcp.CallToolResult {
	content := map[string]any{"tool": ep.Tool, "method": ep.Method, "path": ep.Path, "type": returnsType(ep)}
	var ret map[string]any
	if len(ep.Returns) > 0 && json.Unmarshal(ep.Returns, &ret) == nil {
		content["returns"] = ret
	}
	if jsonLen(content) > s.opts.Limits.MaxResultBytes {
		// Too large to send whole: the property names and types instead.
		props := map[string]any{}
		src := ret
		if items, ok := ret["items"].(map[string]any); ok {
			src = items
		}
		if pm, ok := src["properties"].(map[string]any); ok {
			for k, v := range pm {
				if vm, ok := v.(map[string]any); ok {
					props[k] = vm["type"]
				}
			}
		}
		content["returns"] = map[string]any{"type": ret["type"], "properties": props}
		content["summarised"] = true
	}
	return structured(fmt.Sprintf("%s %s returns %s.", ep.Method, ep.Path, returnsType(ep)), content)
}

func returnsType(ep *schema.Endpoint) string {
	var ret struct {
		Type  string `json:"type"`
		Items struct {
			Type string `json:"type"`
		} `json:"items"`
	}
	if len(ep.Returns) == 0 || json.Unmarshal(ep.Returns, &ret) != nil || ret.Type == "" {
		return "unspecified"
	}
	if ret.Type == "array" && ret.Items.Type != "" {
		return "array of " + ret.Items.Type
	}
	if ret.Type == "string" && ep.Method != "GET" {
		return "string (a task's UPID for long-running calls)"
	}
	return ret.Type
}

func typeName(p *schema.Param) string {
	switch {
	case p.Properties != nil:
		return "property string"
	case p.Type == "":
		return "string"
	}
	return p.Type
}

// paramDoc documents one parameter; full adds property-string sub-keys.
func paramDoc(p *schema.Param, full bool) map[string]any {
	d := map[string]any{"name": p.Name, "type": typeName(p), "required": p.Required()}
	if p.Description != "" {
		d["description"] = p.Description
	}
	if p.Format != "" {
		d["format"] = p.Format
	}
	if p.TypeText != "" {
		d["syntax"] = p.TypeText
	}
	if len(p.Enum) > 0 {
		d["enum"] = p.Enum
	}
	if p.Minimum != nil {
		d["minimum"] = *p.Minimum
	}
	if p.Maximum != nil {
		d["maximum"] = *p.Maximum
	}
	if p.MaxLength != nil {
		d["maxLength"] = *p.MaxLength
	}
	if len(p.Default) > 0 {
		d["default"] = json.RawMessage(p.Default)
	}
	if p.Pattern != "" {
		d["pattern"] = p.Pattern
	}
	if p.Requires != "" {
		d["requires"] = p.Requires
	}
	if p.Indexed {
		d["numbered"] = fmt.Sprintf("%s0, %s1, …", p.Prefix, p.Prefix)
		if p.IndexMax >= 0 {
			d["numbered"] = fmt.Sprintf("%s0 to %s%d", p.Prefix, p.Prefix, p.IndexMax)
		}
	}
	if p.Items != nil {
		d["items"] = paramDoc(p.Items, false)
	}
	if p.Properties != nil {
		var keys []any
		for _, k := range p.Properties.Keys {
			if full {
				kd := paramDoc(k, false)
				if k.DefaultKey {
					kd["default_key"] = true
				}
				if k.Alias != "" {
					// An alias has no schema of its own: it takes its
					// target's type, and is never required.
					kd["alias_of"] = k.Alias
					if target := p.Properties.Key(k.Alias); target != nil {
						kd["type"] = typeName(target)
					}
					if k.KeyAlias != "" {
						// e1000=<mac> also sets model=e1000.
						kd["sets_key"] = k.KeyAlias
					}
				}
				keys = append(keys, kd)
			} else {
				keys = append(keys, k.Name)
			}
		}
		d["keys"] = keys
		if !full {
			d["keys_detail"] = "describe with param " + p.Name + " for each key's rules"
		}
	}
	return d
}
