package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// LAN is a TLS listener on a private-LAN address. Its certificate comes
// from the local CA (`proxmox-mcp pki init`).
type LAN struct {
	// Address is IP:port on an RFC 1918 (10/8, 172.16/12, 192.168/16) or
	// IPv6 unique-local (fc00::/7) address; never a public or unspecified
	// one.
	Address string `json:"address"`
	// Names are the DNS names clients use for this address; they go into
	// the server certificate and are the Host values accepted besides the
	// address itself.
	Names []string `json:"names,omitempty"`
	// AllowedOrigins are browser origins allowed to call (none by default).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
}

// Tailnet is the embedded Tailscale node (tsnet): no host tailscaled is
// needed.
type Tailnet struct {
	// Hostname is the node's name on the tailnet ("proxmox-mcp").
	Hostname string `json:"hostname,omitempty"`
	// AuthKeyFile holds a Tailscale auth key (mode 0600) for the first
	// login; without it the daemon logs a login URL to visit.
	AuthKeyFile string `json:"auth_key_file,omitempty"`
	// Ephemeral makes the node disappear from the tailnet when it stops.
	Ephemeral bool `json:"ephemeral,omitzero"`
	// StateDir keeps the node's identity (<state_dir>/tailnet).
	StateDir string `json:"state_dir,omitempty"`
	// ControlURL is the coordination server (Tailscale's when empty; a
	// headscale URL otherwise).
	ControlURL string `json:"control_url,omitempty"`
	// LogUpload sends tailscaled's logs to Tailscale (off by default).
	LogUpload bool `json:"log_upload,omitzero"`
	// Port is the port MCP is served on; 0 (the default) means 443 when
	// the tailnet gives the node HTTPS certificates, 80 when it does not
	// (see ServePort).
	Port int `json:"port,omitzero"`
	// AllowedOrigins are browser origins allowed to call (none by default).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
}

// The Tailnet ports when listen.tailnet.port is 0.
const (
	DefaultTailnetHTTPSPort = 443
	DefaultTailnetHTTPPort  = 80
)

// ServePort is the port MCP is served on over the Tailnet: Port when it is
// set, else 443 when the tailnet gives HTTPS certificates and 80 when it
// does not.
func (t *Tailnet) ServePort(https bool) int {
	switch {
	case t.Port != 0:
		return t.Port
	case https:
		return DefaultTailnetHTTPSPort
	default:
		return DefaultTailnetHTTPPort
	}
}

// PKI locates the local CA.
type PKI struct {
	// Dir holds the CA (its key root-only) and the server certificate and
	// key the daemon reads (/etc/proxmox-mcp/pki).
	Dir string `json:"dir,omitempty"`
}

// DefaultPKIDir is where `pki init` writes the CA and certificates.
const DefaultPKIDir = DefaultDir + "/pki"

// PKIDir is the PKI directory.
func (c *Config) PKIDir() string {
	if c.PKI.Dir != "" {
		return c.PKI.Dir
	}
	return DefaultPKIDir
}

// TailnetStateDir is the Tailnet node's state directory.
func (c *Config) TailnetStateDir() string {
	if t := c.Listen.Tailnet; t != nil && t.StateDir != "" {
		return t.StateDir
	}
	return filepath.Join(c.StateDir, "tailnet")
}

// TailnetLoginURLFile is where the daemon writes the Tailnet node's login
// URL while the node waits for one: in the node's state directory, mode
// 0600, readable by root and the daemon's user only (whoever opens the URL
// can attach the node to their own tailnet).
func (c *Config) TailnetLoginURLFile() string {
	return filepath.Join(c.TailnetStateDir(), "login-url")
}

// Duration is a time.Duration written as Go writes it ("30s", "2m").
type Duration time.Duration

// UnmarshalText reads a duration such as "90s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"30s\" or \"2m\"", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as Go does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Std is the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Defaults of the HTTP guards.
const (
	DefaultRatePerKey         = 100
	DefaultBurstPerKey        = 200
	DefaultRatePerSource      = 50
	DefaultBurstPerSource     = 100
	DefaultMaxSessions        = 256
	DefaultMaxSessionsPerKey  = 16
	DefaultSessionIdleTimeout = 30 * time.Minute
	DefaultReadHeaderTimeout  = 10 * time.Second
	DefaultReadTimeout        = 60 * time.Second
	DefaultIdleTimeout        = 2 * time.Minute
	DefaultTailnetHostname    = "proxmox-mcp"
)

// privateLAN are the prefixes a LAN listener may bind.
var privateLAN = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

// CheckLANAddress requires IP:port on an RFC 1918 or IPv6 ULA address.
func CheckLANAddress(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not IP:port (for IPv6, [fd00::1]:port): %v", addr, err)
	}
	ip := ap.Addr().Unmap()
	switch {
	case ip.IsUnspecified():
		return fmt.Errorf("%q binds every address, public ones included; name one private address", addr)
	case ip.IsLoopback():
		return fmt.Errorf("%q is a loopback address; use listen.loopback", addr)
	}
	for _, p := range privateLAN {
		if p.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("%q is not a private-LAN address (10/8, 172.16/12, 192.168/16, fc00::/7): a LAN listener never binds a public address", addr)
}

// checkListeners validates the LAN and Tailnet listeners.
func (c *Config) checkListeners() error {
	seen := map[string]bool{}
	for i, l := range c.Listen.LAN {
		field := fmt.Sprintf("listen.lan[%d]", i)
		if err := CheckLANAddress(l.Address); err != nil {
			return fmt.Errorf("field %q: %w", field+".address", err)
		}
		if seen[l.Address] {
			return fmt.Errorf("field %q: %q is listed twice", field+".address", l.Address)
		}
		seen[l.Address] = true
		for j, n := range l.Names {
			if !validDNSName(n) {
				return fmt.Errorf("field %q: %q is not a DNS name", fmt.Sprintf("%s.names[%d]", field, j), n)
			}
		}
		if err := checkOrigins(field+".allowed_origins", l.AllowedOrigins); err != nil {
			return err
		}
	}
	if t := c.Listen.Tailnet; t != nil {
		if t.Hostname != "" && (!validDNSName(t.Hostname) || strings.Contains(t.Hostname, ".")) {
			return fmt.Errorf("field \"listen.tailnet.hostname\": %q must be one DNS label (letters, digits, '-')", t.Hostname)
		}
		for _, f := range []struct{ name, path string }{{"listen.tailnet.auth_key_file", t.AuthKeyFile}, {"listen.tailnet.state_dir", t.StateDir}} {
			if f.path != "" {
				if err := checkFile(f.path); err != nil {
					return fmt.Errorf("field %q: %w", f.name, err)
				}
			}
		}
		if t.ControlURL != "" {
			u, err := url.Parse(t.ControlURL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return fmt.Errorf("field \"listen.tailnet.control_url\": %q is not an http(s) URL", t.ControlURL)
			}
		}
		if t.Port < 0 || t.Port > 65535 {
			return fmt.Errorf("field \"listen.tailnet.port\": %d is not a port", t.Port)
		}
		if err := checkOrigins("listen.tailnet.allowed_origins", t.AllowedOrigins); err != nil {
			return err
		}
	}
	if c.PKI.Dir != "" {
		if err := checkDir(c.PKI.Dir); err != nil {
			return fmt.Errorf("field \"pki.dir\": %w", err)
		}
	}
	return c.HTTP.check()
}

func (h HTTP) check() error {
	if h.MaxBodyBytes != 0 && (h.MaxBodyBytes < 64<<10 || h.MaxBodyBytes > 64<<20) {
		return fmt.Errorf("field \"http.max_body_bytes\": %d is outside %d to %d", h.MaxBodyBytes, 64<<10, 64<<20)
	}
	for _, f := range []struct {
		name string
		rate float64
	}{{"http.rate_per_key", h.RatePerKey}, {"http.rate_per_source", h.RatePerSource}} {
		if f.rate < 0 {
			return fmt.Errorf("field %q: %v must not be negative", f.name, f.rate)
		}
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"http.burst_per_key", h.BurstPerKey}, {"http.burst_per_source", h.BurstPerSource}, {"http.max_sessions", h.MaxSessions},
		{"http.max_sessions_per_key", h.MaxSessionsPerKey}} {
		if f.n < 0 {
			return fmt.Errorf("field %q: %d must not be negative", f.name, f.n)
		}
	}
	if g := h.Guards(); g.MaxSessionsPerKey > g.MaxSessions {
		return fmt.Errorf("field \"http.max_sessions_per_key\": %d is over http.max_sessions (%d): one key's quota is a share of the sessions there are", g.MaxSessionsPerKey, g.MaxSessions)
	}
	for _, f := range []struct {
		name string
		d    Duration
		min  time.Duration
	}{
		{"http.session_idle_timeout", h.SessionIdleTimeout, time.Minute},
		{"http.read_header_timeout", h.ReadHeaderTimeout, time.Second},
		{"http.read_timeout", h.ReadTimeout, time.Second},
		{"http.idle_timeout", h.IdleTimeout, time.Second},
	} {
		if f.d != 0 && f.d.Std() < f.min {
			return fmt.Errorf("field %q: %s is below %s", f.name, f.d.Std(), f.min)
		}
	}
	return nil
}

// Guards are the HTTP limits with their defaults filled in.
func (h HTTP) Guards() HTTP {
	g := h
	if g.MaxBodyBytes == 0 {
		g.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if g.RatePerKey == 0 {
		g.RatePerKey = DefaultRatePerKey
	}
	if g.BurstPerKey == 0 {
		g.BurstPerKey = DefaultBurstPerKey
	}
	if g.RatePerSource == 0 {
		g.RatePerSource = DefaultRatePerSource
	}
	if g.BurstPerSource == 0 {
		g.BurstPerSource = DefaultBurstPerSource
	}
	if g.MaxSessions == 0 {
		g.MaxSessions = DefaultMaxSessions
	}
	if g.MaxSessionsPerKey == 0 {
		// The default quota, within a cap set below it.
		g.MaxSessionsPerKey = min(DefaultMaxSessionsPerKey, g.MaxSessions)
	}
	for _, d := range []struct {
		p   *Duration
		def time.Duration
	}{
		{&g.SessionIdleTimeout, DefaultSessionIdleTimeout}, {&g.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{&g.ReadTimeout, DefaultReadTimeout}, {&g.IdleTimeout, DefaultIdleTimeout},
	} {
		if *d.p == 0 {
			*d.p = Duration(d.def)
		}
	}
	return g
}

func checkOrigins(field string, origins []string) error {
	for i, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("field %q: %q is not an origin (scheme://host[:port])", fmt.Sprintf("%s[%d]", field, i), o)
		}
	}
	return nil
}

// validDNSName accepts names such as pve1, pve1.lan or mcp.example.com.
func validDNSName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, label := range strings.Split(n, ".") {
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
