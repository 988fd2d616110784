package plan

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Resolver resolves a host name to its addresses (net.Resolver's
// LookupNetIP: network "ip" asks for IPv4 and IPv6).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// outsideParams are the parameters by which a call makes PVE fetch from
// outside the cluster: a URL, or an OCI image reference whose first part
// may name a registry.
var outsideParams = map[string]string{
	"POST /nodes/{node}/storage/{storage}/download-url":      "url",
	"GET /nodes/{node}/query-url-metadata":                   "url",
	"POST /nodes/{node}/storage/{storage}/oci-registry-pull": "reference",
	"GET /nodes/{node}/query-oci-repo-tags":                  "reference",
}

// resolveTimeout bounds the resolution of one target.
const resolveTimeout = 5 * time.Second

// outside classifies the targets outside the cluster a call names: each
// host name is resolved and every address it resolves to counts; the
// target's class is the least public of them (policy.OutsideClasses).
// The daemon resolves now, and PVE resolves again when it fetches: a name
// whose answer changes in between (DNS rebinding) is not caught here.
func outside(ctx context.Context, r Resolver, ep *schema.Endpoint, values map[string]any) []policy.OutsideTarget {
	param, ok := outsideParams[ep.Key()]
	if !ok {
		return nil
	}
	raw, _ := values[param].(string)
	if raw == "" {
		return nil
	}
	t := policy.OutsideTarget{Param: param, Value: raw}
	host, err := outsideHost(param, raw)
	if err != nil {
		t.Class, t.Detail = policy.OutsideInvalid, err.Error()
		return []policy.OutsideTarget{t}
	}
	t.Host = host
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if r == nil {
		t.Class, t.Detail = policy.OutsideUnresolved, "no resolver"
		return []policy.OutsideTarget{t}
	} else {
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		addrs, err = r.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil || len(addrs) == 0 {
			t.Class, t.Detail = policy.OutsideUnresolved, fmt.Sprintf("%s does not resolve: %v", host, err)
			return []policy.OutsideTarget{t}
		}
	}
	t.Class = policy.OutsidePublic
	for _, a := range addrs {
		c := policy.ClassifyAddr(a)
		t.Addresses = append(t.Addresses, a.Unmap().String())
		if policy.OutsideRank(c) > policy.OutsideRank(t.Class) {
			t.Class = c
		}
	}
	slices.Sort(t.Addresses)
	t.Addresses = slices.Compact(t.Addresses)
	return []policy.OutsideTarget{t}
}

// outsideHost is the host a URL or an OCI reference names: an OCI
// reference without a registry part is Docker Hub's.
func outsideHost(param, raw string) (string, error) {
	if param == "reference" {
		first, _, hasSlash := strings.Cut(raw, "/")
		if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
			return "registry-1.docker.io", nil
		}
		raw = "https://" + first
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("the scheme must be http or https")
	}
	host := u.Hostname()
	if host == "" {
		return "", errors.New("the URL names no host")
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), nil
}
