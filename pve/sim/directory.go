package sim

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// routes is the table of semantic handlers.
func (s *Sim) routes() map[string]handler {
	h := map[string]handler{}
	add := func(key string, fn handler) { h[key] = fn }
	s.nodeRoutes(add)
	s.clusterRoutes(add)
	s.taskRoutes(add)
	s.guestRoutes(add)
	s.agentRoutes(add)
	s.storageRoutes(add)
	s.diskRoutes(add)
	s.monitorRoutes(add)
	s.consoleRoutes(add)
	return h
}

// directoryHandler answers PVE's index methods: a GET whose return schema
// links to its children and whose children are all literal path segments
// lists them, keyed as the link says ([{"subdir": "config"}, …]).
func (s *Sim) directoryHandler(ep *schema.Endpoint) handler {
	if ep.Method != "GET" || len(ep.Returns) == 0 {
		return nil
	}
	var ret struct {
		Links []struct {
			Href string `json:"href"`
			Rel  string `json:"rel"`
		} `json:"links"`
	}
	if json.Unmarshal(ep.Returns, &ret) != nil || len(ret.Links) == 0 || ret.Links[0].Rel != "child" {
		return nil
	}
	key := strings.Trim(ret.Links[0].Href, "{}")
	children := s.children(ep.Path)
	if len(children) == 0 {
		return nil
	}
	for _, c := range children {
		if strings.HasPrefix(c, "{") {
			return nil // a collection of objects, not a directory
		}
	}
	return func(*request) (any, error) {
		list := make([]map[string]any, 0, len(children))
		for _, c := range children {
			list = append(list, map[string]any{key: c})
		}
		return list, nil
	}
}

// children lists the next path segments under a template, from the schema.
func (s *Sim) children(template string) []string {
	prefix := strings.TrimSuffix(template, "/") + "/"
	var out []string
	for _, ep := range s.reg.Endpoints() {
		rest, ok := strings.CutPrefix(ep.Path, prefix)
		if !ok || rest == "" {
			continue
		}
		seg, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(out, seg) {
			out = append(out, seg)
		}
	}
	slices.Sort(out)
	return out
}
