// Package config reads the daemon's configuration file: HuJSON (JSON with
// comments and trailing commas), versioned, and strict. Unknown fields, a
// missing or unsupported version, duplicate fields and anything after the
// top-level object are errors that name the field and the rule; a file that
// fails any check is never partly applied.
//
// The package imports no network code.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/tailscale/hujson"
)

// Defaults follow the FHS.
const (
	// DefaultDir holds the configuration.
	DefaultDir = "/etc/proxmox-mcp"
	// DefaultFile is the configuration file read when no --config is given.
	DefaultFile = DefaultDir + "/config.hujson"
	// DefaultStateDir holds keys, policies and caches.
	DefaultStateDir = "/var/lib/proxmox-mcp"
	// Version is the configuration format this build reads.
	Version = 1
	// maxSize bounds the file read.
	maxSize = 1 << 20
)

// Config is the configuration file; every field is optional except
// version. docs/configuration.md documents each field and its default.
type Config struct {
	// Version must be 1.
	Version int `json:"version"`
	// StateDir holds keys.json, the policy store, the journal and caches; an
	// absolute path.
	StateDir string `json:"state_dir,omitempty"`
	// Schema says where PVE's API schema is.
	Schema Schema `json:"schema,omitzero"`
	// Tools chooses the tool set and how answers are shaped.
	Tools Tools `json:"tools,omitzero"`
	// ReadOnly refuses every call that changes anything, for every key.
	ReadOnly bool `json:"read_only"`
	// AllowMutations must be true for any change to be made; false by
	// default, so a fresh install reads until an operator decides.
	AllowMutations bool `json:"allow_mutations"`
	// PVE is how the daemon reaches the PVE API.
	PVE PVE `json:"pve,omitzero"`
	// Listen lists the listeners.
	Listen Listen `json:"listen,omitzero"`
	// HTTP limits apply to every HTTP listener.
	HTTP HTTP `json:"http,omitzero"`
	// Protected is the protected model repository that ordinary calls may
	// not touch.
	Protected Protected `json:"protected,omitzero"`
	// Changes configures the change contract: previews, protected
	// guests, plans (docs/changes.md).
	Changes Changes `json:"changes,omitzero"`
	// Log sets the log level.
	Log Log `json:"log,omitzero"`
	// PKI locates the local CA and the LAN listeners' certificate.
	PKI PKI `json:"pki,omitzero"`
	// Cluster is cluster mode: keys and policies shared by every node
	// through pmxcfs (docs/cluster.md).
	Cluster Cluster `json:"cluster,omitzero"`
	// Metrics is the Prometheus listener (docs/metrics.md).
	Metrics Metrics `json:"metrics,omitzero"`
	// Host configures the root helper's host operations (docs/host.md).
	Host Host `json:"host,omitzero"`
}

// Schema locates apidoc.js.
type Schema struct {
	// Path is apidoc.js; /usr/share/pve-docs/api-viewer/apidoc.js when empty.
	Path string `json:"path,omitempty"`
}

// Tools configures the MCP tools.
type Tools struct {
	// Mode is compact (default), expanded or search.
	Mode string `json:"mode,omitempty"`
	// MaxResultBytes caps one answer's JSON; 65536 when zero.
	MaxResultBytes int `json:"max_result_bytes,omitzero"`
	// AnswerText is what an answer's text holds beside its structured
	// content: "json" (default), the summary and the JSON again, or
	// "summary", the summary alone for tools that declare an outputSchema.
	AnswerText string `json:"answer_text,omitempty"`
}

// PVE is the API endpoint and the daemon's tokens.
type PVE struct {
	// URL is the API root; https://127.0.0.1:8006/api2/json when empty.
	URL string `json:"url,omitempty"`
	// Fingerprint pins pveproxy's certificate (SHA-256, AA:BB:...).
	Fingerprint string `json:"fingerprint,omitempty"`
	// CertFile is pveproxy's certificate as the host has it; read again when
	// it changes.
	CertFile string `json:"cert_file,omitempty"`
	// CAFile is a CA that signs pveproxy's certificate.
	CAFile string `json:"ca_file,omitempty"`
	// Tokens maps each tier (read-only, operator, admin, root) to its
	// privilege-separated API token.
	Tokens map[string]Token `json:"tokens,omitempty"`
}

// Token is one tier's PVE API token.
type Token struct {
	// ID is user@realm!tokenid.
	ID string `json:"id"`
	// SecretFile holds the token's secret (mode 0600); an absolute path.
	SecretFile string `json:"secret_file"`
}

// Listen lists the listeners. Loopback always runs (127.0.0.1:8765 unless
// configured); any number of LAN TLS listeners and one Tailnet node run
// beside it.
type Listen struct {
	Loopback *Loopback `json:"loopback,omitempty"`
	// LAN are TLS listeners on private-LAN addresses (docs/exposure.md).
	LAN []LAN `json:"lan,omitempty"`
	// Tailnet is the embedded Tailscale node.
	Tailnet *Tailnet `json:"tailnet,omitempty"`
}

// Loopback is the plain-HTTP listener on 127.0.0.1 or ::1.
type Loopback struct {
	// Address is host:port; 127.0.0.1:8765 when empty.
	Address string `json:"address,omitempty"`
	// AllowedOrigins are browser origins allowed to call (none by default).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
}

// HTTP limits, applied by every HTTP listener.
type HTTP struct {
	// MaxBodyBytes caps a request body; 1 MiB when zero.
	MaxBodyBytes int64 `json:"max_body_bytes,omitzero"`
	// RatePerKey and BurstPerKey bound the requests one key makes, over
	// every listener together: a token bucket refilled at RatePerKey per
	// second holding BurstPerKey (100 and 200 when zero).
	RatePerKey  float64 `json:"rate_per_key,omitzero"`
	BurstPerKey int     `json:"burst_per_key,omitzero"`
	// RatePerSource and BurstPerSource bound the requests of one client
	// address on the LAN and Tailnet listeners, keys or not (50 and 100
	// when zero). Loopback has one source for everything and is exempt.
	RatePerSource  float64 `json:"rate_per_source,omitzero"`
	BurstPerSource int     `json:"burst_per_source,omitzero"`
	// MaxSessions caps the MCP sessions open at once, over every listener
	// (256 when zero).
	MaxSessions int `json:"max_sessions,omitzero"`
	// MaxSessionsPerKey caps the sessions one key holds open at once, over
	// every listener (16 when zero; at most MaxSessions), so that one key
	// cannot take every session. A key at its quota that opens another
	// ends its session unused the longest, if that one has been idle for
	// a minute with no request or stream open; otherwise the initialize is
	// refused (429).
	MaxSessionsPerKey int `json:"max_sessions_per_key,omitzero"`
	// SessionIdleTimeout ends a session unused this long ("30m" when empty).
	SessionIdleTimeout Duration `json:"session_idle_timeout,omitzero"`
	// ReadHeaderTimeout bounds reading a request's headers ("10s"), and
	// ReadTimeout the whole request ("60s"), against slow clients.
	ReadHeaderTimeout Duration `json:"read_header_timeout,omitzero"`
	ReadTimeout       Duration `json:"read_timeout,omitzero"`
	// IdleTimeout closes a kept-alive connection idle this long ("2m").
	IdleTimeout Duration `json:"idle_timeout,omitzero"`
}

// Protected names what the protected-repository guard protects.
type Protected struct {
	// Paths are absolute paths (and everything below them).
	Paths []string `json:"paths,omitempty"`
	// Volumes are storage volume IDs or LV names (vg/lv).
	Volumes []string `json:"volumes,omitempty"`
	// Devices are block devices (/dev/...).
	Devices []string `json:"devices,omitempty"`
	// Approval says who gives a break-glass request its second
	// confirmation (docs/breakglass.md): "keys" (the default: another key
	// whose policy allows it, or root at the host) or "host" (root at the
	// host's command line only, which no key, and so no compromised
	// daemon, reaches).
	Approval string `json:"approval,omitempty"`
}

// The values of protected.approval.
const (
	ApprovalKeys = "keys"
	ApprovalHost = "host"
)

// HostApprovalOnly says that only root at the host approves break-glass
// requests.
func (p Protected) HostApprovalOnly() bool { return p.Approval == ApprovalHost }

// IsZero says nothing is protected (empty lists included), which
// omitzero consults: an empty section is written as no section, so that
// a configuration read back is the one written.
func (p Protected) IsZero() bool {
	return len(p.Paths) == 0 && len(p.Volumes) == 0 && len(p.Devices) == 0 && p.Approval == ""
}

// Changes configures the change contract (docs/changes.md).
type Changes struct {
	// PreviewWrites turns every write into a preview (a dry run): nothing
	// is sent, whatever the key. A reload applies it.
	PreviewWrites bool `json:"preview_writes,omitempty"`
	// ProtectedGuests are guests every write to which needs a second
	// principal's approval, whatever the key's profile. A reload applies
	// it.
	ProtectedGuests ProtectedGuests `json:"protected_guests,omitzero"`
	// PlanTTL is how long a kept plan stays applicable: "15m" when empty,
	// from "1m" to "1h".
	PlanTTL Duration `json:"plan_ttl,omitzero"`
	// SettleAfter is how long after its intent a write may still be in
	// flight at PVE: reconciliation takes the absence of its effect as
	// evidence only after it. "60s" when empty, from "1s" to "1h".
	SettleAfter Duration `json:"settle_after,omitzero"`
}

// ProtectedGuests names guests by VMID or by PVE tag.
type ProtectedGuests struct {
	VMIDs []int    `json:"vmids,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// IsZero says no guest is protected (empty lists included): see
// Protected.IsZero.
func (g ProtectedGuests) IsZero() bool { return len(g.VMIDs) == 0 && len(g.Tags) == 0 }

// DefaultPlanTTL is how long a kept plan stays applicable.
const DefaultPlanTTL = 15 * time.Minute

// PlanLifetime is changes.plan_ttl, or its default.
func (c *Config) PlanLifetime() time.Duration {
	if c.Changes.PlanTTL.Std() > 0 {
		return c.Changes.PlanTTL.Std()
	}
	return DefaultPlanTTL
}

// DefaultSettleAfter is how long a write may be in flight at PVE: twice
// the PVE client's timeout.
const DefaultSettleAfter = 60 * time.Second

// SettleTime is changes.settle_after, or its default.
func (c *Config) SettleTime() time.Duration {
	if d := c.Changes.SettleAfter.Std(); d > 0 {
		return d
	}
	return DefaultSettleAfter
}

// Log configures logging.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `json:"level,omitempty"`
}

// Default returns the configuration used when no file exists.
func Default() *Config {
	return &Config{Version: Version, StateDir: DefaultStateDir}
}

// Parse reads a configuration from HuJSON text. name is used in errors.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > maxSize {
		return nil, fmt.Errorf("config %s: file is larger than %d bytes", name, maxSize)
	}
	// Standardize rewrites its argument in place; the caller's bytes stay
	// as they were.
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return nil, fmt.Errorf("config %s: not valid HuJSON: %w", name, err)
	}
	trimmed := bytes.TrimSpace(std)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("config %s: the top level must be an object", name)
	}
	// Presence of version is checked on a raw view: an absent version and
	// version 0 must both be refused, with different messages.
	var probe map[string]jsontext.Value
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, describe(err))
	}
	if _, ok := probe["version"]; !ok {
		return nil, fmt.Errorf("config %s: field \"version\" is required (this build reads version %d)", name, Version)
	}
	var c Config
	if err := json.Unmarshal(trimmed, &c, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, describe(err))
	}
	if c.Version != Version {
		return nil, fmt.Errorf("config %s: field \"version\": %d is not supported (this build reads version %d)", name, c.Version, Version)
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	} else if err := checkDir(c.StateDir); err != nil {
		return nil, fmt.Errorf("config %s: field \"state_dir\": %w", name, err)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return &c, nil
}

// describe turns a JSON decoding error into one that names the field.
func describe(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		if se.JSONPointer != "" {
			// Named as the rule errors name fields: pve.tokens.root.id.
			field := strings.ReplaceAll(strings.TrimPrefix(string(se.JSONPointer), "/"), "/", ".")
			if errors.Is(se.Err, json.ErrUnknownName) {
				return fmt.Errorf("field %q is not known (the config format is strict)", field)
			}
			if se.Err != nil {
				// The field's own rule, such as a duration's format.
				return fmt.Errorf("field %q: %v", field, se.Err)
			}
			if se.JSONKind != 0 && se.GoType != nil {
				return fmt.Errorf("field %q: JSON %s cannot be a %s", field, se.JSONKind, se.GoType)
			}
			return fmt.Errorf("field %q: %w", field, err)
		}
	}
	return err
}

// checkDir requires an absolute, clean path.
func checkDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q must be an absolute path", dir)
	}
	if filepath.Clean(dir) != dir {
		return fmt.Errorf("%q must be a clean path (%q)", dir, filepath.Clean(dir))
	}
	return nil
}

// Load reads the configuration file at path. When path is empty the default
// file is read if it exists; otherwise Default is returned. A file named
// explicitly must exist.
func Load(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Resolve loads the configuration and applies a --state-dir override.
func Resolve(configPath, stateDir string) (*Config, error) {
	c, err := Load(configPath)
	if err != nil {
		return nil, err
	}
	if stateDir != "" {
		abs, err := filepath.Abs(stateDir)
		if err != nil {
			return nil, fmt.Errorf("--state-dir %q: %w", stateDir, err)
		}
		c.StateDir = abs
	}
	return c, nil
}
