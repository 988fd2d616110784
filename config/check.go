package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Tiers are the PVE token tiers, in order of privilege.
var tierNames = []string{"read-only", "operator", "admin", "root"}

// Tiers returns the PVE token tiers, in order of privilege.
func Tiers() []string { return slices.Clone(tierNames) }

// check validates every field after decoding; each error names the field
// and the rule.
func (c *Config) check() error {
	if c.Schema.Path != "" {
		if err := checkFile(c.Schema.Path); err != nil {
			return fmt.Errorf("field \"schema.path\": %w", err)
		}
	}
	switch c.Tools.Mode {
	case "", "compact", "expanded", "search":
	default:
		return fmt.Errorf("field \"tools.mode\": %q is not compact, expanded or search", c.Tools.Mode)
	}
	if c.Tools.MaxResultBytes != 0 && (c.Tools.MaxResultBytes < 4096 || c.Tools.MaxResultBytes > 16<<20) {
		return fmt.Errorf("field \"tools.max_result_bytes\": %d is outside 4096 to %d", c.Tools.MaxResultBytes, 16<<20)
	}
	switch c.Tools.AnswerText {
	case "", "json", "summary":
	default:
		return fmt.Errorf("field \"tools.answer_text\": %q is not json or summary", c.Tools.AnswerText)
	}
	if c.ReadOnly && c.AllowMutations {
		return fmt.Errorf("fields \"read_only\" and \"allow_mutations\" are both true: read_only would win; set only one")
	}
	if err := c.PVE.check(); err != nil {
		return err
	}
	if lb := c.Listen.Loopback; lb != nil && lb.Address != "" {
		if err := checkLoopback(lb.Address); err != nil {
			return fmt.Errorf("field \"listen.loopback.address\": %w", err)
		}
	}
	if lb := c.Listen.Loopback; lb != nil {
		if err := checkOrigins("listen.loopback.allowed_origins", lb.AllowedOrigins); err != nil {
			return err
		}
	}
	if err := c.checkListeners(); err != nil {
		return err
	}
	for i, p := range c.Protected.Paths {
		if err := checkFile(p); err != nil {
			return fmt.Errorf("field \"protected.paths[%d]\": %w", i, err)
		}
	}
	for i, d := range c.Protected.Devices {
		if !strings.HasPrefix(d, "/dev/") || filepath.Clean(d) != d {
			return fmt.Errorf("field \"protected.devices[%d]\": %q must be a clean path under /dev/", i, d)
		}
	}
	if a := c.Protected.Approval; a != "" && a != ApprovalKeys && a != ApprovalHost {
		return fmt.Errorf("field \"protected.approval\": %q must be %q (another key or root at the host approves a break-glass request) or %q (only root at the host's command line)", a, ApprovalKeys, ApprovalHost)
	}
	for i, v := range c.Protected.Volumes {
		if v == "" || strings.ContainsAny(v, " \t\n,") {
			return fmt.Errorf("field \"protected.volumes[%d]\": %q must be a volume ID (storage:name) or an LV (vg/lv)", i, v)
		}
	}
	if err := c.Changes.check(); err != nil {
		return err
	}
	if err := c.Cluster.check(); err != nil {
		return err
	}
	if err := c.Metrics.check(); err != nil {
		return err
	}
	if err := c.Host.check(); err != nil {
		return err
	}
	switch c.Log.Level {
	case "", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("field \"log.level\": %q is not debug, info, warn or error", c.Log.Level)
	}
	return nil
}

// pveTag is PVE's tag format (pve-tag).
var pveTag = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]*$`)

func (ch Changes) check() error {
	for i, id := range ch.ProtectedGuests.VMIDs {
		if id < 100 || id > 999999999 {
			return fmt.Errorf("field \"changes.protected_guests.vmids[%d]\": %d is not a VM ID (100 to 999999999)", i, id)
		}
	}
	for i, tag := range ch.ProtectedGuests.Tags {
		if !pveTag.MatchString(tag) {
			return fmt.Errorf("field \"changes.protected_guests.tags[%d]\": %q is not a PVE tag (lower-case letters, digits, _ - + .)", i, tag)
		}
	}
	if d := ch.PlanTTL.Std(); d != 0 && (d < time.Minute || d > time.Hour) {
		return fmt.Errorf("field \"changes.plan_ttl\": %s is outside 1m to 1h", d)
	}
	if d := ch.SettleAfter.Std(); d != 0 && (d < time.Second || d > time.Hour) {
		return fmt.Errorf("field \"changes.settle_after\": %s is outside 1s to 1h", d)
	}
	return nil
}

func (p PVE) check() error {
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("field \"pve.url\": %q must be https://HOST:PORT/api2/json (PVE serves only HTTPS)", p.URL)
		}
	}
	if p.Fingerprint != "" {
		clean := strings.ReplaceAll(p.Fingerprint, ":", "")
		if len(clean) != 64 || strings.Trim(strings.ToLower(clean), "0123456789abcdef") != "" {
			return fmt.Errorf("field \"pve.fingerprint\": %q is not a SHA-256 fingerprint (64 hex digits, colons allowed)", p.Fingerprint)
		}
	}
	for _, f := range []struct{ name, v string }{{"pve.cert_file", p.CertFile}, {"pve.ca_file", p.CAFile}} {
		if f.v != "" {
			if err := checkFile(f.v); err != nil {
				return fmt.Errorf("field %q: %w", f.name, err)
			}
		}
	}
	for tier, t := range p.Tokens {
		field := "pve.tokens." + tier
		if !slices.Contains(tierNames, tier) {
			return fmt.Errorf("field %q: %q is not a tier (read-only, operator, admin, root)", field, tier)
		}
		user, name, ok := strings.Cut(t.ID, "!")
		if !ok || name == "" || !strings.Contains(user, "@") || strings.ContainsAny(t.ID, " =;") {
			return fmt.Errorf("field %q: id %q must be user@realm!tokenid", field+".id", t.ID)
		}
		if err := checkFile(t.SecretFile); err != nil {
			return fmt.Errorf("field %q: %w", field+".secret_file", err)
		}
	}
	return nil
}

// checkFile requires an absolute, clean file path.
func checkFile(p string) error {
	if p == "" {
		return fmt.Errorf("a path is required")
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q must be an absolute path", p)
	}
	if filepath.Clean(p) != p {
		return fmt.Errorf("%q must be a clean path (%q)", p, filepath.Clean(p))
	}
	return nil
}

// checkLoopback requires IP:port with a loopback IP.
func checkLoopback(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not IP:port (for IPv6, [::1]:port): %v", addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return fmt.Errorf("%q: the loopback listener binds only 127.0.0.0/8 or ::1 (LAN and Tailnet listeners are configured apart)", addr)
	}
	return nil
}

// Defaults resolved by accessors, so a parsed file keeps what it said.

// SchemaPath is apidoc.js.
func (c *Config) SchemaPath() string {
	if c.Schema.Path != "" {
		return c.Schema.Path
	}
	return "/usr/share/pve-docs/api-viewer/apidoc.js"
}

// LoopbackAddress is the loopback listener's address: the configured one,
// else 127.0.0.1:8765.
func (c *Config) LoopbackAddress() string {
	if c.Listen.Loopback == nil {
		return "127.0.0.1:8765"
	}
	if c.Listen.Loopback.Address == "" {
		return "127.0.0.1:8765"
	}
	return c.Listen.Loopback.Address
}

// PVEURL is the API root.
func (c *Config) PVEURL() string {
	if c.PVE.URL != "" {
		return c.PVE.URL
	}
	return "https://127.0.0.1:8006/api2/json"
}

// JournalPath is the journal's file.
func (c *Config) JournalPath() string { return filepath.Join(c.StateDir, "journal.db") }

// SchemaCacheDir holds the schema's last-known-good copy.
func (c *Config) SchemaCacheDir() string { return filepath.Join(c.StateDir, "schema") }

// Default values of the fields that have one.
const (
	DefaultToolsMode      = "compact"
	DefaultMaxResultBytes = 64 << 10
	DefaultMaxBodyBytes   = 1 << 20
	DefaultLogLevel       = "info"
)

// Effective returns a copy with every default filled in: what the daemon
// will run with (`config validate --json`).
func (c *Config) Effective() *Config {
	e := *c
	e.Schema.Path = c.SchemaPath()
	e.PVE.URL = c.PVEURL()
	lb := Loopback{}
	if c.Listen.Loopback != nil {
		lb = *c.Listen.Loopback
	}
	lb.Address = c.LoopbackAddress()
	e.Listen.Loopback = &lb
	if e.Tools.Mode == "" {
		e.Tools.Mode = DefaultToolsMode
	}
	if e.Tools.MaxResultBytes == 0 {
		e.Tools.MaxResultBytes = DefaultMaxResultBytes
	}
	if e.Tools.AnswerText == "" {
		e.Tools.AnswerText = "json"
	}
	e.HTTP = c.HTTP.Guards()
	e.PKI.Dir = c.PKIDir()
	if c.Listen.Tailnet != nil {
		t := *c.Listen.Tailnet
		if t.Hostname == "" {
			t.Hostname = DefaultTailnetHostname
		}
		t.StateDir = c.TailnetStateDir()
		e.Listen.Tailnet = &t
	}
	if e.Log.Level == "" {
		e.Log.Level = DefaultLogLevel
	}
	if e.Changes.PlanTTL == 0 {
		e.Changes.PlanTTL = Duration(DefaultPlanTTL)
	}
	if e.Changes.SettleAfter == 0 {
		e.Changes.SettleAfter = Duration(DefaultSettleAfter)
	}
	e.Cluster = c.Cluster.effective()
	e.Metrics = c.Metrics.effective()
	return &e
}

// pveproxy's certificates on a PVE host: a custom one when installed, else
// the one the cluster CA signed.
var hostCertFiles = []string{"/etc/pve/local/pveproxy-ssl.pem", "/etc/pve/local/pve-ssl.pem"}

// PVETrust says how pveproxy's certificate is verified: the configured
// fingerprint, cert_file or ca_file; with none, the certificate pveproxy
// serves on this host (a custom pveproxy-ssl.pem, else pve-ssl.pem), read
// again when it changes. exists reports whether a file exists (os.Stat in
// the daemon). It fails when there is no way to verify.
func (c *Config) PVETrust(exists func(string) bool) (fingerprint, certFile, caFile string, err error) {
	p := c.PVE
	if p.Fingerprint != "" || p.CertFile != "" || p.CAFile != "" {
		return p.Fingerprint, p.CertFile, p.CAFile, nil
	}
	for _, f := range hostCertFiles {
		if exists(f) {
			return "", f, "", nil
		}
	}
	return "", "", "", fmt.Errorf("field \"pve\": no way to verify pveproxy's certificate: set pve.fingerprint, pve.cert_file or pve.ca_file (this is not a PVE host: %s do not exist)",
		strings.Join(hostCertFiles, " and "))
}

// CheckFiles checks what the daemon will read at start: each token's
// secret file, the certificate and CA it verifies PVE with, apidoc.js, the
// LAN server certificate and key, and the Tailnet auth key file.
// exists and readable are os.Stat and os.Open in the CLI; the host
// certificate is chosen by exists, as the daemon chooses it. It returns one
// error per problem, each naming the field.
func (c *Config) CheckFiles(exists func(string) bool, readable func(string) error) []error {
	var errs []error
	check := func(field, path string) {
		if err := readable(path); err != nil {
			errs = append(errs, &FileError{Field: field, Err: err})
		}
	}
	check("schema.path", c.SchemaPath())
	if len(c.Listen.LAN) > 0 {
		// The daemon reads the server certificate and key, never the CA key.
		for _, name := range []string{"server.pem", "server-key.pem"} {
			if err := readable(filepath.Join(c.PKIDir(), name)); err != nil {
				errs = append(errs, &FileError{Field: "pki.dir", Err: fmt.Errorf("%w: the LAN listeners need %s; run `proxmox-mcp pki init` as root", err, name)})
			}
		}
	}
	if t := c.Listen.Tailnet; t != nil && t.AuthKeyFile != "" {
		check("listen.tailnet.auth_key_file", t.AuthKeyFile)
	}
	for _, tier := range tierNames {
		if t, ok := c.PVE.Tokens[tier]; ok {
			check("pve.tokens."+tier+".secret_file", t.SecretFile)
		}
	}
	if len(c.PVE.Tokens) == 0 {
		return errs
	}
	_, certFile, caFile, err := c.PVETrust(exists)
	if err != nil {
		return append(errs, err)
	}
	if certFile != "" {
		field := "pve.cert_file"
		if c.PVE.CertFile == "" {
			field = "pve (the host's pveproxy certificate)"
		}
		check(field, certFile)
	}
	if caFile != "" {
		check("pve.ca_file", caFile)
	}
	return errs
}

// FileError is a file the configuration names that cannot be used.
type FileError struct {
	Field string
	Err   error
}

func (e *FileError) Error() string { return fmt.Sprintf("field %q: %v", e.Field, e.Err) }

func (e *FileError) Unwrap() error { return e.Err }
