package policy

import (
	"container/list"
	"sync"
)

// visCache keeps the visibility answers of the most recently used
// (policy, registry, principal class) keys, up to a bound: when it is full
// the least recently used answer goes.
type visCache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // of *visEntry, most recently used first
	entries map[string]*list.Element
	stats   VisibilityStats
}

type visEntry struct {
	key      string
	registry string // Registry.SHA256
	tools    []string
}

func newVisCache(max int) *visCache {
	return &visCache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the answer of key and marks it used.
func (c *visCache) get(key string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		c.stats.Misses++
		return nil, false
	}
	c.stats.Hits++
	c.order.MoveToFront(el)
	return el.Value.(*visEntry).tools, true
}

// put stores the answer of key for a registry, evicting the least recently
// used answer when the cache is full.
func (c *visCache) put(key, registry string, tools []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		el.Value.(*visEntry).tools = tools
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*visEntry).key)
		c.stats.Evictions++
	}
	c.entries[key] = c.order.PushFront(&visEntry{key: key, registry: registry, tools: tools})
}

// dropRegistry removes the answers for a registry: one swapped out would
// otherwise keep an answer per policy and class of principal until the
// least recently used went, and each swap would add as many.
func (c *visCache) dropRegistry(registry string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if en := el.Value.(*visEntry); en.registry == registry {
			c.order.Remove(el)
			delete(c.entries, en.key)
		}
		el = next
	}
}

// update changes the statistics under the lock.
func (c *visCache) update(f func(*VisibilityStats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

func (c *visCache) snapshot() VisibilityStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries = c.order.Len()
	return s
}

// VisibilityStats count what Engine.VisibleTools did since the engine
// started.
type VisibilityStats struct {
	// Entries is the number of answers cached now.
	Entries int
	// Hits and Misses count lookups of the cache.
	Hits, Misses int64
	// Computations counts answers computed (a miss waits for the one
	// computation of its key in progress, or starts it).
	Computations int64
	// Failures counts computations that failed (a timeout among them).
	Failures int64
	// Evictions counts answers dropped to make room.
	Evictions int64
	// Evaluated, Witnessed and Partial count the classes of cases decided
	// by evaluation on what is known, by a witness call, and by partial
	// evaluation (see visibility.go).
	Evaluated, Witnessed, Partial int64
}
