package systemd

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

//go:embed units/*.tmpl
var unitFS embed.FS

// The unit files, by the name they are installed under.
const (
	ServiceUnit   = "proxmox-mcp.service"
	RenewService  = "proxmox-mcp-pki-renew.service"
	RenewTimer    = "proxmox-mcp-pki-renew.timer"
	ClusterUnit   = "proxmox-mcp-cluster.service"
	SysusersFile  = "proxmox-mcp.conf"
	sysusersTmpl  = "proxmox-mcp.sysusers.tmpl"
	DefaultUser   = "proxmox-mcp"
	DefaultBinary = "/usr/bin/proxmox-mcp"
)

// Modes are the installer's exposure modes.
var Modes = []string{"local", "lan", "tailscale", "both"}

// UnitOptions say how to render the units.
type UnitOptions struct {
	// Mode is the exposure: local (loopback only), lan, tailscale or both.
	Mode string
	// Binary is the absolute path of proxmox-mcp (DefaultBinary).
	Binary string
	// ConfigFile is the configuration the daemon reads.
	ConfigFile string
	// StateDir is the daemon's state directory; under /var/lib it becomes
	// the unit's StateDirectory=.
	StateDir string
	// PKIDir is the LAN CA's directory, written by `pki renew`.
	PKIDir string
	// User and Group run the daemon (DefaultUser).
	User, Group string
	// Cluster adds the cluster sync (cluster.enabled; docs/cluster.md).
	Cluster bool
	// HelperSocket is the root helper's socket
	// (config.DefaultHelperSocket).
	HelperSocket string
	// HostWriteRoots are the helper's write roots (host.roots with
	// write), its ReadWritePaths.
	HostWriteRoots []string
	// ProtectedPaths are the protected repository's paths
	// (protected.paths), the only paths the break-glass runner writes.
	ProtectedPaths []string
	// ProtectedVolumes are the protected LVs, vg/lv (the entries of
	// protected.volumes without ':'): the runner then runs lvs and
	// lvremove, which need device-mapper.
	ProtectedVolumes []string
}

// HelperStateDirectory is the helper's StateDirectory=: the state
// directory's name with "-helper" (host.HelperDir), or
// proxmox-mcp-helper when the state directory is outside /var/lib.
func (o UnitOptions) HelperStateDirectory() string {
	if rel := o.StateDirectory(); rel != "" && !strings.Contains(rel, "/") {
		return rel + "-helper"
	}
	return DefaultUser + "-helper"
}

// BreakglassQueue is the break-glass queue the runner's path unit watches:
// host.BreakglassDir's queue, under the helper's StateDirectory=.
func (o UnitOptions) BreakglassQueue() string {
	return "/var/lib/" + o.HelperStateDirectory() + "/breakglass/queue"
}

// LAN reports whether the mode serves a LAN listener.
func (o UnitOptions) LAN() bool { return o.Mode == "lan" || o.Mode == "both" }

// Tailnet reports whether the mode runs the embedded Tailnet node.
func (o UnitOptions) Tailnet() bool { return o.Mode == "tailscale" || o.Mode == "both" }

// StateDirectory is StateDir relative to /var/lib, or "" when it is
// elsewhere.
func (o UnitOptions) StateDirectory() string {
	rel, ok := strings.CutPrefix(o.StateDir, "/var/lib/")
	if !ok || rel == "" {
		return ""
	}
	return rel
}

var unitName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// lvName is a protected LV, vg/lv, as LVM names them (breakglass's rule);
// a leading '-' is refused, which LVM refuses too.
var lvName = regexp.MustCompile(`^[a-zA-Z0-9+_.][a-zA-Z0-9+_.-]*/[a-zA-Z0-9+_.][a-zA-Z0-9+_.-]*$`)

// check refuses options that would render a unit that does not mean what
// it says: relative or odd paths, unknown modes, bad user names.
func (o UnitOptions) check() error {
	if !slices.Contains(Modes, o.Mode) {
		return fmt.Errorf("units: mode %q: want one of %s", o.Mode, strings.Join(Modes, ", "))
	}
	for _, p := range []struct{ field, path string }{
		{"binary", o.Binary}, {"config file", o.ConfigFile}, {"state directory", o.StateDir}, {"PKI directory", o.PKIDir},
	} {
		if !filepath.IsAbs(p.path) || path.Clean(p.path) != p.path || strings.ContainsAny(p.path, " \t\n\"'\\$%;") {
			return fmt.Errorf("units: %s %q: want an absolute, clean path without spaces, quotes or specifiers", p.field, p.path)
		}
	}
	paths := []struct{ field, path string }{{"helper socket", o.HelperSocket}}
	for _, p := range o.HostWriteRoots {
		paths = append(paths, struct{ field, path string }{"host write root", p})
	}
	for _, p := range o.ProtectedPaths {
		paths = append(paths, struct{ field, path string }{"protected path", p})
	}
	for _, p := range paths {
		if !filepath.IsAbs(p.path) || path.Clean(p.path) != p.path || strings.ContainsAny(p.path, " \t\n\"'\\$%;") || p.path == "/" {
			return fmt.Errorf("units: %s %q: want an absolute, clean path without spaces, quotes or specifiers, not /", p.field, p.path)
		}
	}
	for _, v := range o.ProtectedVolumes {
		if !lvName.MatchString(v) {
			return fmt.Errorf("units: protected volume %q: want an LV as vg/lv (a PVE volume id storage:name is not one)", v)
		}
	}
	for _, n := range []struct{ field, name string }{{"user", o.User}, {"group", o.Group}} {
		if !unitName.MatchString(n.name) {
			return fmt.Errorf("units: %s %q: want a system user name ([a-z_][a-z0-9_-]*, at most 32)", n.field, n.name)
		}
	}
	return nil
}

// withDefaults fills the empty fields.
func (o UnitOptions) withDefaults() UnitOptions {
	if o.Binary == "" {
		o.Binary = DefaultBinary
	}
	if o.ConfigFile == "" {
		o.ConfigFile = "/etc/proxmox-mcp/config.hujson"
	}
	if o.StateDir == "" {
		o.StateDir = "/var/lib/proxmox-mcp"
	}
	if o.PKIDir == "" {
		o.PKIDir = "/etc/proxmox-mcp/pki"
	}
	if o.User == "" {
		o.User = DefaultUser
	}
	if o.Group == "" {
		o.Group = o.User
	}
	if o.HelperSocket == "" {
		o.HelperSocket = config.DefaultHelperSocket
	}
	return o
}

// Unit is one rendered file and where it is installed.
type Unit struct {
	// Name is the file name (proxmox-mcp.service).
	Name string
	// Dir is where it goes: /etc/systemd/system for units,
	// /usr/lib/sysusers.d for the sysusers file.
	Dir  string
	Data []byte
}

// Render renders the units of a mode: the service and the sysusers entry
// always; the certificate renewal service and timer with a LAN listener;
// the cluster sync in cluster mode; the root helper's socket and service,
// and the break-glass runner's path unit and service, always.
func Render(o UnitOptions) ([]Unit, error) {
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	files := []struct{ name, tmpl, dir string }{
		{ServiceUnit, "proxmox-mcp.service.tmpl", UnitDir},
		{SysusersFile, sysusersTmpl, SysusersDir},
	}
	if o.LAN() {
		files = append(files,
			struct{ name, tmpl, dir string }{RenewService, "proxmox-mcp-pki-renew.service.tmpl", UnitDir},
			struct{ name, tmpl, dir string }{RenewTimer, "proxmox-mcp-pki-renew.timer.tmpl", UnitDir})
	}
	if o.Cluster {
		files = append(files, struct{ name, tmpl, dir string }{ClusterUnit, "proxmox-mcp-cluster.service.tmpl", UnitDir})
	}
	files = append(files,
		struct{ name, tmpl, dir string }{HelperSocket, "proxmox-mcp-helper.socket.tmpl", UnitDir},
		struct{ name, tmpl, dir string }{HelperService, "proxmox-mcp-helper.service.tmpl", UnitDir},
		struct{ name, tmpl, dir string }{BreakglassPath, "proxmox-mcp-breakglass.path.tmpl", UnitDir},
		struct{ name, tmpl, dir string }{BreakglassService, "proxmox-mcp-breakglass.service.tmpl", UnitDir})
	var out []Unit
	for _, f := range files {
		t, err := template.New(f.tmpl).Option("missingkey=error").ParseFS(unitFS, "units/"+f.tmpl)
		if err != nil {
			return nil, fmt.Errorf("units: %s: %w", f.name, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, o); err != nil {
			return nil, fmt.Errorf("units: %s: %w", f.name, err)
		}
		out = append(out, Unit{Name: f.name, Dir: f.dir, Data: b.Bytes()})
	}
	return out, nil
}

// The root helper's units (docs/host.md), and the break-glass runner's
// (docs/breakglass.md): its path unit starts the service whenever the
// queue holds a request.
const (
	HelperSocket      = "proxmox-mcp-helper.socket"
	HelperService     = "proxmox-mcp-helper.service"
	BreakglassPath    = "proxmox-mcp-breakglass.path"
	BreakglassService = "proxmox-mcp-breakglass.service"
)

// Where units are installed.
const (
	UnitDir     = "/etc/systemd/system"
	SysusersDir = "/usr/lib/sysusers.d"
)
