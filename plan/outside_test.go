package plan

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// fakeResolver answers from a table; a name not in it does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	if network != "ip" {
		return nil, errors.New("asked for " + network + ", not both families")
	}
	names, ok := f[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, n := range names {
		out = append(out, netip.MustParseAddr(n))
	}
	return out, nil
}

// Every address a host resolves to counts: the class is the least public.
func TestOutsideClassifiesEveryAddress(t *testing.T) {
	ep := &schema.Endpoint{Method: "POST", Path: "/nodes/{node}/storage/{storage}/download-url"}
	pull := &schema.Endpoint{Method: "POST", Path: "/nodes/{node}/storage/{storage}/oci-registry-pull"}
	r := fakeResolver{
		"mirror.example":       {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"both.example":         {"93.184.215.14", "10.0.0.5"},
		"v6only.example":       {"fd12:3456::1"},
		"mapped.example":       {"::ffff:127.0.0.1"},
		"meta.example":         {"169.254.169.254"},
		"cgnat.example":        {"100.100.1.1"},
		"nat64.example":        {"64:ff9b::a00:1"},
		"registry.example":     {"192.168.1.2"},
		"registry-1.docker.io": {"44.208.254.194"},
		"localhost":            {"127.0.0.1", "::1"},
	}
	for _, tc := range []struct {
		ep    *schema.Endpoint
		param string
		value string
		class string
	}{
		{ep, "url", "https://mirror.example/debian.iso", policy.OutsidePublic},
		{ep, "url", "https://both.example/x.iso", policy.OutsidePrivate},
		{ep, "url", "http://v6only.example/x.iso", policy.OutsideUniqueLocal},
		{ep, "url", "http://mapped.example/x.iso", policy.OutsideLoopback},
		{ep, "url", "http://meta.example/latest/meta-data", policy.OutsideLinkLocal},
		{ep, "url", "http://cgnat.example/", policy.OutsideCGNAT},
		{ep, "url", "http://nat64.example/", policy.OutsidePrivate},
		{ep, "url", "http://127.0.0.1:8006/", policy.OutsideLoopback},
		{ep, "url", "http://[::1]/", policy.OutsideLoopback},
		{ep, "url", "http://[::ffff:10.1.2.3]/", policy.OutsidePrivate},
		{ep, "url", "http://0.0.0.0/", policy.OutsideUnspecified},
		{ep, "url", "http://[fe80::1%25eth0]/", policy.OutsideLinkLocal},
		{ep, "url", "http://2130706433/", policy.OutsideUnresolved}, // 127.0.0.1 to inet_aton: not resolved here, so refused
		{ep, "url", "http://nowhere.example/", policy.OutsideUnresolved},
		{ep, "url", "ftp://mirror.example/", policy.OutsideInvalid},
		{ep, "url", "https:///x", policy.OutsideInvalid},
		{pull, "reference", "registry.example/library/debian:13", policy.OutsidePrivate},
		{pull, "reference", "debian:13", policy.OutsidePublic},
		{pull, "reference", "localhost:5000/debian:13", policy.OutsideLoopback},
	} {
		got := outside(context.Background(), r, tc.ep, map[string]any{tc.param: tc.value})
		if len(got) != 1 || got[0].Class != tc.class || got[0].Param != tc.param {
			t.Errorf("%s: %+v, want class %s", tc.value, got, tc.class)
		}
	}
	if got := outside(context.Background(), r, &schema.Endpoint{Method: "GET", Path: "/version"}, nil); got != nil {
		t.Errorf("an endpoint that stays inside: %+v", got)
	}
}

// localhost is a name: it resolves to loopback.
func TestOutsideLocalhostResolves(t *testing.T) {
	ep := &schema.Endpoint{Method: "POST", Path: "/nodes/{node}/storage/{storage}/download-url"}
	got := outside(context.Background(), fakeResolver{"localhost": {"127.0.0.1", "::1"}}, ep, map[string]any{"url": "http://LOCALHOST./x"})
	if len(got) != 1 || got[0].Class != policy.OutsideLoopback || len(got[0].Addresses) != 2 || got[0].Host != "localhost" {
		t.Fatalf("%+v", got)
	}
}
