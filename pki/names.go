package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

// Names are the subject alternative names of the server certificate: the
// DNS names (lower case) and the IP addresses, each sorted and unique.
type Names struct {
	DNS []string
	IPs []netip.Addr
}

// ErrNoLAN is returned when the configuration has no LAN listener: there
// is nothing to issue a certificate for.
var ErrNoLAN = errors.New("no LAN listener is configured (listen.lan is empty): the server certificate names the LAN listeners' addresses; add one to the configuration first")

// NamesFor are the names the server certificate must carry for the LAN
// listeners: each listener's IP address and DNS names, and the host's
// hostname. hostname may be empty; a hostname that is not a DNS name is an
// error, as is a set without any DNS name (the CA's DNS constraint would
// then permit every name).
func NamesFor(lans []config.LAN, hostname string) (Names, error) {
	if len(lans) == 0 {
		return Names{}, ErrNoLAN
	}
	var n Names
	for i, l := range lans {
		ap, err := netip.ParseAddrPort(l.Address)
		if err != nil {
			return Names{}, fmt.Errorf("field \"listen.lan[%d].address\": %q is not IP:port: %w", i, l.Address, err)
		}
		n.IPs = append(n.IPs, ap.Addr().Unmap().WithZone(""))
		for j, name := range l.Names {
			name = normalizeDNS(name)
			if !validDNSName(name) {
				return Names{}, fmt.Errorf("field \"listen.lan[%d].names[%d]\": %q is not a DNS name", i, j, l.Names[j])
			}
			n.DNS = append(n.DNS, name)
		}
	}
	if hostname != "" {
		h := normalizeDNS(hostname)
		if !validDNSName(h) {
			return Names{}, fmt.Errorf("the host name %q is not a DNS name (letters, digits, '-' and dots): the certificate names the host by it", hostname)
		}
		n.DNS = append(n.DNS, h)
	}
	if len(n.DNS) == 0 {
		return Names{}, errors.New("the certificate needs at least one DNS name: give listen.lan[].names, or give the host a hostname")
	}
	return n.sorted(), nil
}

// NamesOf are the SANs of a certificate, as NamesFor makes them.
func NamesOf(c *x509.Certificate) Names {
	var n Names
	for _, d := range c.DNSNames {
		n.DNS = append(n.DNS, normalizeDNS(d))
	}
	for _, ip := range c.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			n.IPs = append(n.IPs, a.Unmap())
		}
	}
	return n.sorted()
}

func normalizeDNS(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".")) }

func (n Names) sorted() Names {
	out := Names{DNS: slices.Clone(n.DNS), IPs: slices.Clone(n.IPs)}
	slices.Sort(out.DNS)
	out.DNS = slices.Compact(out.DNS)
	slices.SortFunc(out.IPs, func(a, b netip.Addr) int { return a.Compare(b) })
	out.IPs = slices.Compact(out.IPs)
	return out
}

// Equal reports whether two sets of names are the same.
func (n Names) Equal(o Names) bool {
	a, b := n.sorted(), o.sorted()
	return slices.Equal(a.DNS, b.DNS) && slices.Equal(a.IPs, b.IPs)
}

// Strings lists the DNS names, then the addresses.
func (n Names) Strings() []string {
	out := slices.Clone(n.DNS)
	for _, ip := range n.IPs {
		out = append(out, ip.String())
	}
	return out
}

// String is the names separated by commas.
func (n Names) String() string { return strings.Join(n.Strings(), ", ") }

// diff lists the names of want that n lacks, and those n has beyond want.
func (n Names) diff(want Names) (added, dropped []string) {
	have, next := n.Strings(), want.Strings()
	for _, s := range next {
		if !slices.Contains(have, s) {
			added = append(added, s)
		}
	}
	for _, s := range have {
		if !slices.Contains(next, s) {
			dropped = append(dropped, s)
		}
	}
	return added, dropped
}

func (n Names) netIPs() []net.IP {
	out := make([]net.IP, 0, len(n.IPs))
	for _, ip := range n.IPs {
		out = append(out, net.IP(ip.AsSlice()))
	}
	return out
}

// PermittedIPRanges are the address ranges the CA may certify: RFC 1918,
// IPv6 unique-local, and loopback.
func PermittedIPRanges() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("::1/128"),
	}
}

func ipNets(ps []netip.Prefix) []*net.IPNet {
	out := make([]*net.IPNet, 0, len(ps))
	for _, p := range ps {
		bits := p.Addr().BitLen()
		out = append(out, &net.IPNet{IP: net.IP(p.Masked().Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)})
	}
	return out
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	addr, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if bits != addr.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(addr, ones), true
}

// dnsPermitted reports whether a DNS name falls under one of the constraints
// (the name itself or a subdomain of it, as RFC 5280 reads them).
func dnsPermitted(name string, constraints []string) bool {
	for _, c := range constraints {
		c = normalizeDNS(c)
		if strings.HasPrefix(c, ".") {
			if strings.HasSuffix(name, c) {
				return true
			}
			continue
		}
		if name == c || strings.HasSuffix(name, "."+c) {
			return true
		}
	}
	return false
}

// validDNSName accepts names such as pve1, pve1.lan or mcp.example.com.
func validDNSName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for label := range strings.SplitSeq(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
