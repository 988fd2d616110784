package config

import (
	"fmt"
	"net/netip"
)

// DefaultMetricsAddress is where the Prometheus listener binds when
// metrics.address is empty: loopback, beside the MCP listener's 8765.
const DefaultMetricsAddress = "127.0.0.1:9765"

// Metrics is the Prometheus listener (docs/metrics.md): /metrics on a
// listener of its own, without a key, so it binds loopback by default and
// otherwise only a private-LAN address; it serves counts and durations,
// never a secret, a path or a caller's text.
type Metrics struct {
	// Address is IP:port on loopback (127.0.0.0/8, ::1) or a private-LAN
	// address (10/8, 172.16/12, 192.168/16, fc00::/7); DefaultMetricsAddress
	// when empty. Port 0 picks a free port (tests).
	Address string `json:"address,omitempty"`
	// Disabled turns the listener off; the daemon still counts, and
	// `proxmox-mcp status` shows less.
	Disabled bool `json:"disabled,omitzero"`
}

func (m Metrics) check() error {
	if m.Address == "" {
		return nil
	}
	ap, err := netip.ParseAddrPort(m.Address)
	if err != nil {
		return fmt.Errorf("field \"metrics.address\": %q is not IP:port (for IPv6, [::1]:port): %v", m.Address, err)
	}
	if ap.Addr().Unmap().IsLoopback() {
		return nil
	}
	if err := CheckLANAddress(m.Address); err != nil {
		return fmt.Errorf("field \"metrics.address\": %w (the metrics listener has no key: loopback or a private-LAN address only)", err)
	}
	return nil
}

// MetricsAddress is the Prometheus listener's address, or "" when
// metrics.disabled is set.
func (c *Config) MetricsAddress() string {
	switch {
	case c.Metrics.Disabled:
		return ""
	case c.Metrics.Address != "":
		return c.Metrics.Address
	}
	return DefaultMetricsAddress
}

// effective spells out the default address.
func (m Metrics) effective() Metrics {
	if !m.Disabled && m.Address == "" {
		m.Address = DefaultMetricsAddress
	}
	return m
}
