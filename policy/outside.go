package policy

import (
	"net/netip"

	"github.com/open-policy-agent/opa/v1/ast"
)

// OutsideTarget is a place outside the cluster a call makes PVE fetch
// from (input.outside): the parameter naming it, its host, every address
// the host resolved to, and the class of the least public of them.
type OutsideTarget struct {
	Param, Value, Host string
	Addresses          []string
	Class              string
	// Detail says why the class is unresolved or invalid.
	Detail string
}

// The classes of an outside target, from public to the least public.
const (
	OutsidePublic      = "public"
	OutsideReserved    = "reserved"     // documentation, benchmarking, 240/4, broadcast, discard, IPv4-compatible
	OutsideMulticast   = "multicast"    // 224/4, ff00::/8
	OutsideCGNAT       = "cgnat"        // 100.64/10, the shared address space of RFC 6598
	OutsideUniqueLocal = "unique_local" // fc00::/7, and the deprecated site-local fec0::/10
	OutsidePrivate     = "private"      // 10/8, 172.16/12, 192.168/16
	OutsideLinkLocal   = "link_local"   // 169.254/16 (cloud metadata services), fe80::/10
	OutsideLoopback    = "loopback"     // 127/8, ::1
	OutsideUnspecified = "unspecified"  // 0/8, ::
	OutsideUnresolved  = "unresolved"   // the host name did not resolve
	OutsideInvalid     = "invalid"      // no host could be read from the value
)

var outsideRanks = map[string]int{
	OutsidePublic: 0, OutsideReserved: 1, OutsideMulticast: 2, OutsideCGNAT: 3, OutsideUniqueLocal: 4, OutsidePrivate: 5,
	OutsideLinkLocal: 6, OutsideLoopback: 7, OutsideUnspecified: 8, OutsideUnresolved: 9, OutsideInvalid: 10,
}

// OutsideRank orders the classes: higher is less public.
func OutsideRank(class string) int {
	if r, ok := outsideRanks[class]; ok {
		return r
	}
	return len(outsideRanks)
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	siteLocal = netip.MustParsePrefix("fec0::/10")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
	reserved  = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("::/96"), netip.MustParsePrefix("100::/64"), netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("2001::/23"), netip.MustParsePrefix("3fff::/20"),
	}
)

// ClassifyAddr is the class of one address. An IPv4-mapped IPv6 address
// is its IPv4 address; a NAT64 or 6to4 address is the class of the IPv4
// address it carries when that is less public.
func ClassifyAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return OutsideInvalid
	case a.IsUnspecified() || thisNet.Contains(a):
		return OutsideUnspecified
	case a.IsLoopback():
		return OutsideLoopback
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return OutsideLinkLocal
	case cgnat.Contains(a):
		return OutsideCGNAT
	case a.Is6() && (a.IsPrivate() || siteLocal.Contains(a)):
		return OutsideUniqueLocal
	case a.IsPrivate():
		return OutsidePrivate
	case a.IsMulticast():
		return OutsideMulticast
	}
	if a.Is6() {
		if v4, ok := embeddedV4(a); ok {
			if c := ClassifyAddr(v4); c != OutsidePublic {
				return c
			}
		}
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return OutsideReserved
		}
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return OutsideReserved
	}
	return OutsidePublic
}

// embeddedV4 is the IPv4 address a NAT64 (64:ff9b::/96, 64:ff9b:1::/48)
// or 6to4 (2002::/16) address carries.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a) || nat64Loc.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// outsideValue is input.outside.
func outsideValue(ts []OutsideTarget, empty *ast.Term) *ast.Term {
	if len(ts) == 0 {
		return empty
	}
	terms := make([]*ast.Term, len(ts))
	for i, t := range ts {
		terms[i] = ast.NewTerm(ast.NewObject(
			strItem("param", t.Param), strItem("value", t.Value), strItem("host", t.Host),
			item("addresses", strArray(t.Addresses)), strItem("class", t.Class), strItem("detail", t.Detail),
		))
	}
	return ast.NewTerm(ast.NewArray(terms...))
}
