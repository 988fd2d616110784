package installer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// Mode is the exposure: which listeners the daemon serves besides
// loopback.
type Mode string

// The exposure modes.
const (
	ModeLocal     Mode = "local"     // loopback only
	ModeLAN       Mode = "lan"       // plus TLS on a private LAN address
	ModeTailscale Mode = "tailscale" // plus the embedded Tailnet node
	ModeBoth      Mode = "both"      // LAN and Tailnet
)

// Modes lists the modes.
func Modes() []Mode { return []Mode{ModeLocal, ModeLAN, ModeTailscale, ModeBoth} }

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.TrimSpace(s))
	if !slices.Contains(Modes(), m) {
		return "", fmt.Errorf("mode %q is not one of local, lan, tailscale or both", s)
	}
	return m, nil
}

// LAN reports whether the mode serves a LAN listener.
func (m Mode) LAN() bool { return m == ModeLAN || m == ModeBoth }

// Tailnet reports whether the mode runs the Tailnet node.
func (m Mode) Tailnet() bool { return m == ModeTailscale || m == ModeBoth }

// modeOf is the mode a configuration's listeners amount to.
func modeOf(c *config.Config) Mode {
	lan, tn := len(c.Listen.LAN) > 0, c.Listen.Tailnet != nil
	switch {
	case lan && tn:
		return ModeBoth
	case lan:
		return ModeLAN
	case tn:
		return ModeTailscale
	}
	return ModeLocal
}

// What install puts where.
const (
	// ServiceUser runs the daemon; its group has the same name.
	ServiceUser = systemd.DefaultUser
	// PVEUser owns the daemon's PVE API tokens.
	PVEUser = "proxmox-mcp@pve"
	// OperatorRole is the custom PVE role of the operator tier.
	OperatorRole = "PMCPOperator"
	// InitialKeyName names the first root key.
	InitialKeyName = "initial-root"
	// InitialKeyFile holds the first root key, for root alone.
	InitialKeyFile = "/root/proxmox-mcp-initial-key.json"
	// ConfigFile is the configuration the units name.
	ConfigFile = config.DefaultFile
	// ConfigDir holds it, the token secrets and the copies install makes.
	ConfigDir = config.DefaultDir
	// TokensDir holds one secret file per PVE token.
	TokensDir = ConfigDir + "/tokens"
	// PVECAFile is the copy of PVE's cluster CA the daemon verifies
	// pveproxy with (it cannot read /etc/pve).
	PVECAFile = ConfigDir + "/pve-root-ca.pem"
	// AuthKeyFile is the copy of the Tailscale auth key.
	AuthKeyFile = ConfigDir + "/tailscale-authkey"
	// PackagedBinary is where the Debian package puts proxmox-mcp;
	// LocalBinary is where install copies any other binary.
	PackagedBinary = systemd.DefaultBinary
	LocalBinary    = "/usr/local/bin/proxmox-mcp"
	// DefaultLANPort is the LAN listener's port when only an IP is given.
	DefaultLANPort = 8443
	// APIDoc is PVE's API schema.
	APIDoc = "/usr/share/pve-docs/api-viewer/apidoc.js"
)

// The host's PVE files install reads (as root).
const (
	pveRootCA     = "/etc/pve/pve-root-ca.pem"
	pveProxyCert  = "/etc/pve/local/pveproxy-ssl.pem"
	pveTokenStore = "/etc/pve/priv/token.cfg"
)

// Options are what the operator chose. Empty fields keep what an existing
// installation has.
type Options struct {
	// Mode is the exposure; empty keeps the installed mode.
	Mode Mode
	// LANAddress is a private IP, or IP:port (port 8443 when absent).
	LANAddress string
	// LANNames are DNS names clients use for the LAN address.
	LANNames []string
	// TailscaleHostname is the node's name on the tailnet.
	TailscaleHostname string
	// TailscaleAuthKeyFile is a file holding a Tailscale auth key (a path
	// on the host); without it the node prints a login URL.
	TailscaleAuthKeyFile string
	// Executable is the running proxmox-mcp, a path on the real file
	// system (os.Executable).
	Executable string
	// Version is the running proxmox-mcp's version.
	Version string
	// Out receives what install tells the operator.
	Out io.Writer
}

// plan is an install resolved against the host: paths, mode, listeners.
type plan struct {
	mode       Mode
	stateDir   string
	pkiDir     string
	configFile string
	// existing is the configuration file as it was, or nil.
	existing    *config.Config
	existingRaw []byte
	state       *State // install.json as it was, or nil
	// legacy is set when state was read from the state directory, where
	// an older install kept it: it moves to InstallStateFile at the first
	// write.
	legacy bool
	// ignored lists what the install state named that install could not
	// have made, and so was dropped (see State.sanitize).
	ignored []string
	// upgrade is true when an earlier install completed.
	upgrade bool

	lanAddress  string
	lanNames    []string
	lanExplicit bool // the operator gave the address or names now
	tsHostname  string
	tsExplicit  bool
	authKey     []byte // the auth key to copy, when given now
	hostname    string
	loopback    string
}

// readInstalled reads what is installed: the configuration (when it is
// valid; an invalid one is an error only when strict) and install.json.
func readInstalled(s *System, strict bool) (*plan, error) {
	p := &plan{configFile: ConfigFile, stateDir: config.DefaultStateDir, pkiDir: config.DefaultPKIDir, loopback: "127.0.0.1:8765"}
	raw, err := s.readFile(p.configFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("read %s: %w: run it as root", p.configFile, err)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", p.configFile, err)
	default:
		// config.Parse standardizes its input in place: raw keeps the comments.
		c, err := config.Parse(p.configFile, bytes.Clone(raw))
		if err != nil {
			if strict {
				return nil, fmt.Errorf("the existing configuration is not valid, so install leaves everything alone: %w "+
					"(fix it, checking with `proxmox-mcp config validate %s`, or move it away)", err, p.configFile)
			}
			break
		}
		p.existing, p.existingRaw = c, raw
		p.stateDir, p.pkiDir, p.loopback = c.StateDir, c.PKIDir(), c.LoopbackAddress()
		if len(c.Listen.LAN) > 0 {
			p.lanAddress, p.lanNames = c.Listen.LAN[0].Address, slices.Clone(c.Listen.LAN[0].Names)
		}
		if t := c.Listen.Tailnet; t != nil {
			p.tsHostname = t.Hostname
			if p.tsHostname == "" {
				p.tsHostname = config.DefaultTailnetHostname
			}
		}
	}
	if p.state, p.legacy, err = s.loadState(p.stateDir); err != nil {
		return nil, err
	}
	if p.state != nil {
		p.ignored = p.state.sanitize(p)
	}
	p.upgrade = p.state != nil && !p.state.FirstCompleted.IsZero()
	switch {
	case p.state != nil && p.state.Mode != "":
		p.mode = p.state.Mode
	case p.existing != nil:
		p.mode = modeOf(p.existing)
	}
	host, err := s.Hostname()
	if err != nil {
		return nil, fmt.Errorf("the host name is unknown: %w", err)
	}
	p.hostname = host
	return p, nil
}

// newPlan reads what is installed and resolves the options against it.
// Nothing is changed; every error names the option and the rule.
func newPlan(s *System, o Options) (*plan, error) {
	p, err := readInstalled(s, true)
	if err != nil {
		return nil, err
	}
	if o.Mode != "" {
		if _, err := ParseMode(string(o.Mode)); err != nil {
			return nil, fmt.Errorf("--mode: %w", err)
		}
		p.mode = o.Mode
	}
	if p.mode == "" {
		return nil, errors.New("no exposure mode: give --mode (or PMCP_SETUP_MODE) local, lan, tailscale or both")
	}
	if err := p.resolveLAN(o); err != nil {
		return nil, err
	}
	if err := p.resolveTailnet(s, o); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *plan) resolveLAN(o Options) error {
	var have *config.LAN
	if p.existing != nil && len(p.existing.Listen.LAN) > 0 {
		have = &p.existing.Listen.LAN[0]
	}
	if !p.mode.LAN() {
		if o.LANAddress != "" || len(o.LANNames) > 0 {
			return fmt.Errorf("--lan-address and --lan-name need mode lan or both, not %s", p.mode)
		}
		return nil
	}
	switch {
	case o.LANAddress != "":
		addr, err := NormalizeLANAddress(o.LANAddress)
		if err != nil {
			return fmt.Errorf("--lan-address (PMCP_LAN_HOST): %w", err)
		}
		p.lanAddress, p.lanExplicit = addr, true
	case have != nil:
		p.lanAddress = have.Address
	default:
		return fmt.Errorf("mode %s needs the LAN address to listen on: give --lan-address IP[:PORT] (or PMCP_LAN_HOST), a private address of this host", p.mode)
	}
	switch {
	case len(o.LANNames) > 0:
		for _, n := range o.LANNames {
			if err := checkDNSName(n); err != nil {
				return fmt.Errorf("--lan-name: %w", err)
			}
		}
		p.lanNames, p.lanExplicit = slices.Clone(o.LANNames), true
	case have != nil:
		p.lanNames = slices.Clone(have.Names)
	}
	return nil
}

func (p *plan) resolveTailnet(s *System, o Options) error {
	var have *config.Tailnet
	if p.existing != nil {
		have = p.existing.Listen.Tailnet
	}
	if !p.mode.Tailnet() {
		if o.TailscaleHostname != "" || o.TailscaleAuthKeyFile != "" {
			return fmt.Errorf("--tailscale-hostname and --tailscale-authkey-file need mode tailscale or both, not %s", p.mode)
		}
		return nil
	}
	switch {
	case o.TailscaleHostname != "":
		if err := checkDNSName(o.TailscaleHostname); err != nil || strings.Contains(o.TailscaleHostname, ".") {
			return fmt.Errorf("--tailscale-hostname (PMCP_TAILSCALE_HOSTNAME): %q must be one DNS label (letters, digits, '-')", o.TailscaleHostname)
		}
		p.tsHostname, p.tsExplicit = o.TailscaleHostname, true
	case have != nil && have.Hostname != "":
		p.tsHostname = have.Hostname
	default:
		p.tsHostname = config.DefaultTailnetHostname
	}
	if f := o.TailscaleAuthKeyFile; f != "" {
		if !filepath.IsAbs(f) || filepath.Clean(f) != f {
			return fmt.Errorf("--tailscale-authkey-file (PMCP_TAILSCALE_AUTHKEY_FILE): %q must be an absolute, clean path", f)
		}
		data, err := s.readFile(f)
		if err != nil {
			return fmt.Errorf("--tailscale-authkey-file (PMCP_TAILSCALE_AUTHKEY_FILE): %w", err)
		}
		key := strings.TrimSpace(string(data))
		if key == "" || strings.ContainsAny(key, " \t\r\n") {
			return fmt.Errorf("--tailscale-authkey-file (PMCP_TAILSCALE_AUTHKEY_FILE): %s must hold one auth key (tskey-auth-...) on one line", f)
		}
		if !strings.HasPrefix(key, "tskey-") {
			return fmt.Errorf("--tailscale-authkey-file (PMCP_TAILSCALE_AUTHKEY_FILE): %s does not hold a Tailscale auth key (they start with tskey-; make one at https://login.tailscale.com/admin/settings/keys)", f)
		}
		p.authKey = []byte(key + "\n")
	}
	return nil
}

// NormalizeLANAddress accepts a private IP or IP:port and returns IP:port
// (port 8443 when absent), refusing public, loopback and unspecified
// addresses as the configuration does.
func NormalizeLANAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	if ip, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		s = net.JoinHostPort(ip.String(), strconv.Itoa(DefaultLANPort))
	}
	if err := config.CheckLANAddress(s); err != nil {
		return "", err
	}
	return s, nil
}

// checkDNSName accepts names such as pve1 or pve1.home.arpa.
func checkDNSName(n string) error {
	bad := n == "" || len(n) > 253
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			bad = true
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				bad = true
			}
		}
	}
	if bad {
		return fmt.Errorf("%q is not a DNS name (letters, digits, '-' and dots)", n)
	}
	return nil
}

// tokenFile is the secret file of a tier's token.
func tokenFile(tier string) string { return filepath.Join(TokensDir, tier) }

// tokenID is a tier's full token id.
func tokenID(tier string) string { return PVEUser + "!" + tier }

// Installed is the exposure mode of the installation on the host, or ""
// when there is none (no install state and no configuration).
func Installed(s *System) (Mode, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	p, err := readInstalled(s, false)
	if err != nil {
		return "", err
	}
	return p.mode, nil
}
