package tools

import (
	"sync"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// visCacheEntries bounds the visibility maps kept for one registry; past it
// the cache starts again empty (the policy engine keeps the answers, so a
// map costs one build from them).
const visCacheEntries = 4096

// visCache keeps the visibility maps built for the registry the tool set
// serves. Each map points at that registry's endpoints, so a map kept for a
// registry swapped out would keep the whole registry alive (4–5 MiB of a
// PVE 9.1 schema): Refresh starts the cache again for the new registry, and
// a map built for another one (a call that began before the swap) is used
// once and not kept.
type visCache struct {
	mu  sync.Mutex
	reg *schema.Registry
	m   map[visCacheKey]visibility
}

// visCacheKey identifies one visibility answer of the cache's registry: the
// engine's cached slice (by its first element's address and length) and
// the switches.
type visCacheKey struct {
	first *string
	n     int
	sw    Switches
}

// reset empties the cache for reg, the registry now served.
func (c *visCache) reset(reg *schema.Registry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reg = reg
	c.m = map[visCacheKey]visibility{}
}

// get returns the map kept for key of reg.
func (c *visCache) get(reg *schema.Registry, key visCacheKey) (visibility, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reg != c.reg {
		return nil, false
	}
	v, ok := c.m[key]
	return v, ok
}

// put keeps the map of key when reg is the registry served.
func (c *visCache) put(reg *schema.Registry, key visCacheKey, v visibility) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reg != c.reg {
		return
	}
	if len(c.m) >= visCacheEntries {
		clear(c.m)
	}
	c.m[key] = v
}
