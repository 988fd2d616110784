package policy

import (
	"net/netip"
	"testing"
)

// Each address's class, at the edges of the ranges.
func TestClassifyAddr(t *testing.T) {
	for _, tc := range []struct{ addr, class string }{
		{"8.8.8.8", OutsidePublic},
		{"2606:4700::1111", OutsidePublic},
		{"100.63.255.255", OutsidePublic},
		{"100.64.0.0", OutsideCGNAT},
		{"100.127.255.255", OutsideCGNAT},
		{"100.128.0.0", OutsidePublic},
		{"172.15.255.255", OutsidePublic},
		{"172.16.0.1", OutsidePrivate},
		{"172.31.255.255", OutsidePrivate},
		{"172.32.0.1", OutsidePublic},
		{"10.0.0.1", OutsidePrivate},
		{"192.168.1.1", OutsidePrivate},
		{"127.0.0.1", OutsideLoopback},
		{"127.255.255.254", OutsideLoopback},
		{"::1", OutsideLoopback},
		{"::ffff:127.0.0.1", OutsideLoopback},
		{"::ffff:8.8.8.8", OutsidePublic},
		{"169.254.169.254", OutsideLinkLocal},
		{"fe80::1", OutsideLinkLocal},
		{"ff02::1", OutsideLinkLocal},
		{"0.0.0.0", OutsideUnspecified},
		{"0.1.2.3", OutsideUnspecified},
		{"::", OutsideUnspecified},
		{"fd00::1", OutsideUniqueLocal},
		{"fc00::1", OutsideUniqueLocal},
		{"fec0::1", OutsideUniqueLocal},
		{"224.0.0.1", OutsideLinkLocal}, // the link-local multicast block
		{"239.1.1.1", OutsideMulticast},
		{"ff0e::1", OutsideMulticast},
		{"255.255.255.255", OutsideReserved},
		{"240.0.0.1", OutsideReserved},
		{"192.0.2.1", OutsideReserved},
		{"198.18.0.1", OutsideReserved},
		{"2001:db8::1", OutsideReserved},
		{"::7f00:1", OutsideReserved}, // IPv4-compatible
		{"64:ff9b::7f00:1", OutsideLoopback},
		{"64:ff9b::a9fe:a9fe", OutsideLinkLocal},
		{"64:ff9b::808:808", OutsidePublic},
		{"2002:c0a8:101::1", OutsidePrivate}, // 6to4 of 192.168.1.1
		{"2002:808:808::1", OutsidePublic},
	} {
		if got := ClassifyAddr(netip.MustParseAddr(tc.addr)); got != tc.class {
			t.Errorf("%s: %s, want %s", tc.addr, got, tc.class)
		}
	}
	if ClassifyAddr(netip.Addr{}) != OutsideInvalid {
		t.Error("the zero address is not invalid")
	}
	if OutsideRank(OutsidePublic) != 0 || OutsideRank("something else") <= OutsideRank(OutsideInvalid) {
		t.Error("ranks: public first, an unknown class last")
	}
}
