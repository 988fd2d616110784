package tools

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// ProtectedGuests are guests every write to which needs a second
// principal's approval, whatever the key's profile (config
// changes.protected_guests).
type ProtectedGuests struct {
	VMIDs []int
	Tags  []string
}

func (pg ProtectedGuests) empty() bool { return len(pg.VMIDs) == 0 && len(pg.Tags) == 0 }

// guestInfo is where a guest is and how it is tagged, as PVE's cluster
// resources say.
type guestInfo struct {
	node, kind string // kind: qemu or lxc
	tags       []string
}

// guestDirectory answers where guests are, from GET /cluster/resources
// read with the least privileged token, kept for a moment and read by one
// request at a time however many calls ask.
type guestDirectory struct {
	pve PVE
	now func() time.Time
	ttl time.Duration

	flight singleflight.Group
	mu     sync.Mutex
	at     time.Time
	guests map[int]guestInfo
}

// guestTTL is how long the directory trusts what it read.
const guestTTL = 2 * time.Second

func newGuestDirectory(p PVE, now func() time.Time) *guestDirectory {
	return &guestDirectory{pve: p, now: now, ttl: guestTTL}
}

// lookup returns the guests, read again when older than the bound or when
// fresh is set.
func (g *guestDirectory) lookup(ctx context.Context, fresh bool) (map[int]guestInfo, error) {
	g.mu.Lock()
	if !fresh && g.guests != nil && g.now().Sub(g.at) < g.ttl {
		m := g.guests
		g.mu.Unlock()
		return m, nil
	}
	g.mu.Unlock()
	v, err, _ := g.flight.Do("resources", func() (any, error) {
		m, err := g.read(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		g.guests, g.at = m, g.now()
		g.mu.Unlock()
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[int]guestInfo), nil
}

func (g *guestDirectory) read(ctx context.Context) (map[int]guestInfo, error) {
	var client *pve.Client
	var err error
	for _, t := range []Tier{TierReadOnly, TierOperator, TierAdmin, TierRoot} {
		if client, err = g.pve.Client(t); err == nil {
			break
		}
	}
	if client == nil {
		return nil, fmt.Errorf("no PVE token to read the cluster's guests: %w", err)
	}
	var list []map[string]any
	if err := client.Get(ctx, "/cluster/resources", map[string][]string{"type": {"vm"}}, &list); err != nil {
		return nil, fmt.Errorf("read the cluster's guests: %w", err)
	}
	out := make(map[int]guestInfo, len(list))
	for _, r := range list {
		id, _ := scalarText(r["vmid"])
		n, err := strconv.Atoi(id)
		if err != nil {
			continue
		}
		node, _ := r["node"].(string)
		kind, _ := r["type"].(string)
		var tags []string
		if t, _ := r["tags"].(string); t != "" {
			tags = strings.FieldsFunc(t, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
		}
		out[n] = guestInfo{node: node, kind: kind, tags: tags}
	}
	return out, nil
}

// protectedReasons says why a write's guests are protected: a protected
// VMID among its targets, or a guest with a protected tag.
func (s *Server) protectedReasons(ctx context.Context, p *plan.Plan) ([]string, error) {
	pg := s.currentProtected()
	if pg.empty() || len(p.Input.Targets.VMIDs) == 0 {
		return nil, nil
	}
	var out []string
	var guests map[int]guestInfo
	for _, id := range p.Input.Targets.VMIDs {
		if slices.Contains(pg.VMIDs, id) {
			out = append(out, fmt.Sprintf("guest %d is protected (changes.protected_guests.vmids): a second principal must approve every change to it", id))
			continue
		}
		if len(pg.Tags) == 0 {
			continue
		}
		if guests == nil {
			var err error
			if guests, err = s.guests.lookup(ctx, false); err != nil {
				return nil, err
			}
		}
		for _, tag := range guests[id].tags {
			if slices.Contains(pg.Tags, tag) {
				out = append(out, fmt.Sprintf("guest %d is tagged %q, a protected tag (changes.protected_guests.tags): a second principal must approve every change to it", id, tag))
				break
			}
		}
	}
	return out, nil
}

// SetProtected changes the protected guests (a reload).
func (s *Server) SetProtected(pg ProtectedGuests) {
	s.mu.Lock()
	s.protected = pg
	s.mu.Unlock()
}

func (s *Server) currentProtected() ProtectedGuests {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protected
}

// guestPath reports the node and guest of a path /nodes/{node}/qemu|lxc/{vmid}/…
func guestPath(p *plan.Plan) (node, kind string, vmid int, ok bool) {
	segs := strings.Split(strings.TrimPrefix(p.Endpoint.Path, "/"), "/")
	if len(segs) < 4 || segs[0] != "nodes" || segs[1] != "{node}" || (segs[2] != "qemu" && segs[2] != "lxc") || segs[3] != "{vmid}" {
		return "", "", 0, false
	}
	id, err := strconv.Atoi(p.Vars["vmid"])
	if err != nil {
		return "", "", 0, false
	}
	return p.Vars["node"], segs[2], id, true
}

// moved finds where the guest a write names lives now, when that is not
// the node the path names (guests migrate): the path on the node it is on.
// It reads the cluster's guests afresh before it says so.
func (s *Server) moved(ctx context.Context, p *plan.Plan) (node string, ok bool) {
	named, kind, id, isGuest := guestPath(p)
	if !isGuest || p.Endpoint.Method == "GET" {
		return "", false
	}
	guests, err := s.guests.lookup(ctx, false)
	if err != nil {
		return "", false
	}
	g, found := guests[id]
	if !found || g.node == named {
		return "", false
	}
	if guests, err = s.guests.lookup(ctx, true); err != nil {
		return "", false
	}
	if g, found = guests[id]; !found || g.node == named || g.kind != kind || g.node == "" {
		return "", false
	}
	return g.node, true
}
