package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// MaxToolNameLen is the longest tool name ToolName produces. MCP clients
// reject names over 64 characters and some prefix the server name
// ("mcp__proxmox__" is 14 characters), so names stay within 50.
const MaxToolNameLen = 50

// toolHashLen is the number of hex digits of the SHA-256 suffix that makes
// a shortened name unique.
const toolHashLen = 8

// toolNameChars is what tool names are made of.
var toolNameChars = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// ToolName is the deterministic MCP tool name of an endpoint. The rule:
//
//  1. the lower-case HTTP method (get, post, put, delete), then
//  2. each literal path segment, lower-cased, with every run of characters
//     outside [a-z0-9] turned into "_", and
//  3. the variable segments ({node}, {vmid}) left out, except a variable
//     that ends the path, which is written by its name;
//  4. all joined by "_".
//  5. A name longer than MaxToolNameLen keeps its first 41 characters and
//     gains "_" and the first 8 hex digits of SHA-256("METHOD /path/template").
//
// So GET /nodes/{node}/qemu/{vmid}/status/current is
// get_nodes_qemu_status_current and DELETE /nodes/{node}/qemu/{vmid} is
// delete_nodes_qemu_vmid. The name depends only on the method and the path
// template, so it is the same across restarts and PVE versions.
func ToolName(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	trimmed := strings.Trim(path, "/")
	segs := strings.Split(trimmed, "/")
	wrote := false
	for i, seg := range segs {
		if seg == "" {
			continue
		}
		if name, ok := templateVar(seg); ok {
			if i != len(segs)-1 {
				continue
			}
			seg = name
		}
		if word := toolWord(seg); word != "" {
			b.WriteByte('_')
			b.WriteString(word)
			wrote = true
		}
	}
	if !wrote {
		b.WriteString("_root")
	}
	name := b.String()
	if len(name) > MaxToolNameLen {
		name = hashedToolName(name, method, path)
	}
	return name
}

// toolWord lower-cases a segment and folds runs of other characters to "_".
func toolWord(seg string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToLower(seg) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
			continue
		}
		pendingSep = true
	}
	return b.String()
}

// hashedToolName shortens base to MaxToolNameLen with a hash of the
// endpoint's identity.
func hashedToolName(base, method, path string) string {
	sum := sha256.Sum256([]byte(strings.ToUpper(method) + " " + path))
	suffix := hex.EncodeToString(sum[:])[:toolHashLen]
	keep := MaxToolNameLen - toolHashLen - 1
	prefix := strings.TrimRight(base[:min(keep, len(base))], "_")
	return prefix + "_" + suffix
}

// assignToolNames names every endpoint. Should two endpoints ever share a
// name (a literal segment spelled like a variable elsewhere), both take the
// hashed form, which differs because their identities differ.
func assignToolNames(eps []*Endpoint) (map[string]*Endpoint, error) {
	groups := make(map[string][]*Endpoint, len(eps))
	for _, ep := range eps {
		name := ToolName(ep.Method, ep.Path)
		groups[name] = append(groups[name], ep)
	}
	byTool := make(map[string]*Endpoint, len(eps))
	for name, group := range groups {
		for _, ep := range group {
			ep.Tool = name
			if len(group) > 1 {
				ep.Tool = hashedToolName(name, ep.Method, ep.Path)
			}
			if other := byTool[ep.Tool]; other != nil {
				return nil, fmt.Errorf("tool name %q is shared by %s and %s", ep.Tool, other.Key(), ep.Key())
			}
			if !toolNameChars.MatchString(ep.Tool) {
				return nil, fmt.Errorf("tool name %q of %s has characters outside [a-zA-Z0-9_-]", ep.Tool, ep.Key())
			}
			byTool[ep.Tool] = ep
		}
	}
	return byTool, nil
}
