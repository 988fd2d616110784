package policy

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// principalSlots is how many principals' input parts a policy keeps: a
// direct-mapped table (a key's slot is a hash of its id), so that a key
// making many calls builds its part once, in bounded memory, without a
// lock on the decision's path.
const principalSlots = 64

// inputParts keeps the parts of the input document that repeat from call
// to call, as OPA values shared by every evaluation of one policy (OPA
// never modifies its input, and the values' lazy state is guarded by
// sync.Once): the empty list and object, the endpoint's facts, the guard
// that found nothing, the principal of recent keys, and the time of the
// last call's second. A part is reused only when everything it is built
// from is equal, so a document built with the parts equals one built
// anew (Input.Value); TestInputPartsEncodeAsBefore checks that.
//
// A nil *inputParts builds every part anew.
type inputParts struct {
	emptyArray, emptyObject *ast.Term
	// guards are {evaluated, hits: []} for evaluated false and true.
	guards [2]*ast.Term
	// endpoints holds the facts object of each risk class and combination
	// of the five flags, filled on first use.
	endpoints [(schema.RiskDestructive + 1) << 5]atomic.Pointer[ast.Term]

	seed       maphash.Seed
	principals [principalSlots]atomic.Pointer[principalPart]
	second     atomic.Pointer[timePart]
}

// principalPart is the input's principal of one principal without a
// Tailnet identity (an identity holds maps, which a cache could only
// compare at the cost of building the part).
type principalPart struct {
	p Principal
	v *ast.Term
}

// timePart is the input's time of one second in one zone: every field of
// input.time is a function of the Unix second, the zone's name and its
// offset.
type timePart struct {
	unix   int64
	zone   string
	offset int
	v      *ast.Term
}

func newInputParts() *inputParts {
	ps := &inputParts{
		emptyArray:  ast.NewTerm(ast.NewArray()),
		emptyObject: ast.NewTerm(ast.NewObject()),
		seed:        maphash.MakeSeed(),
	}
	for i := range ps.guards {
		ps.guards[i] = ast.NewTerm(guardValue(Guard{Evaluated: i == 1}, ps.emptyArray))
	}
	return ps
}

// empty is the empty list.
func (ps *inputParts) empty() *ast.Term {
	if ps == nil {
		return ast.NewTerm(ast.NewArray())
	}
	return ps.emptyArray
}

// params is input.params.
func (ps *inputParts) params(params map[string]any) (*ast.Term, error) {
	if len(params) > 0 {
		v, err := ast.InterfaceToValue(params)
		if err != nil {
			return nil, err
		}
		return ast.NewTerm(v), nil
	}
	if ps == nil {
		return ast.NewTerm(ast.NewObject()), nil
	}
	return ps.emptyObject, nil
}

// principal is input.principal.
func (ps *inputParts) principal(p Principal) (*ast.Term, error) {
	if ps == nil || p.Tailnet != nil {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return ast.NewTerm(v), nil
	}
	slot := &ps.principals[maphash.String(ps.seed, p.KeyID)%principalSlots]
	if e := slot.Load(); e != nil && e.p == p {
		return e.v, nil
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	e := &principalPart{p: p, v: ast.NewTerm(v)}
	slot.Store(e)
	return e.v, nil
}

// endpoint is input.endpoint.
func (ps *inputParts) endpoint(f EndpointFacts) *ast.Term {
	if ps == nil || f.Risk > schema.RiskDestructive {
		return ast.NewTerm(endpointValue(f))
	}
	i := int(f.Risk)<<5 | bit(f.ExposeCredentials)<<4 | bit(f.Download)<<3 | bit(f.ReturnsSecrets)<<2 |
		bit(f.ReachesOutside)<<1 | bit(f.ConfigEdit)
	if t := ps.endpoints[i].Load(); t != nil {
		return t
	}
	t := ast.NewTerm(endpointValue(f))
	ps.endpoints[i].Store(t)
	return t
}

// guard is input.guard.
func (ps *inputParts) guard(g Guard) *ast.Term {
	if ps == nil || len(g.Hits) > 0 {
		return ast.NewTerm(guardValue(g, ps.empty()))
	}
	return ps.guards[bit(g.Evaluated)]
}

// time is input.time.
func (ps *inputParts) time(t time.Time) *ast.Term {
	if ps == nil {
		return ast.NewTerm(timeValue(t))
	}
	unix := t.Unix()
	zone, offset := t.Zone()
	if e := ps.second.Load(); e != nil && e.unix == unix && e.offset == offset && e.zone == zone {
		return e.v
	}
	e := &timePart{unix: unix, zone: zone, offset: offset, v: ast.NewTerm(timeValue(t))}
	ps.second.Store(e)
	return e.v
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}
