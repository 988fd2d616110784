package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/transport"
)

// listenLAN opens the LAN TLS listeners of listen.lan.
func (d *Daemon) listenLAN() error {
	bind := d.bindLAN
	if bind == nil {
		bind = net.Listen
	}
	return d.openLAN(d.cfg.Listen.LAN, bind)
}

// bindFunc binds a TCP address: net.Listen, except in tests, which cannot
// bind a private-LAN address on every machine.
type bindFunc func(network, address string) (net.Listener, error)

// openLAN serves MCP over TLS on each LAN listener, with the server
// certificate of pki.dir (never the CA key). A certificate that cannot be
// loaded stops the start and says how to make one; a certificate whose
// names differ from the configuration's is served, with a warning to run
// `pki renew` (picked up without a restart).
func (d *Daemon) openLAN(lans []config.LAN, bind bindFunc) error {
	if len(lans) == 0 {
		return nil
	}
	// Checked again at the point of binding: a configuration built in
	// code has not been through config.Parse.
	for i, l := range lans {
		if err := config.CheckLANAddress(l.Address); err != nil {
			return fmt.Errorf("field \"listen.lan[%d].address\": %w", i, err)
		}
	}
	dir := d.cfg.PKIDir()
	certs, err := transport.LoadCertFiles(transport.CertFilesOptions{
		CertFile: filepath.Join(dir, pki.ServerFile),
		KeyFile:  filepath.Join(dir, pki.ServerKeyFile),
		Logger:   d.log,
	})
	if err != nil {
		return lanCertError(dir, err)
	}
	hostname, err := os.Hostname()
	if err != nil {
		d.log.Warn("daemon: the host name is unknown; LAN clients must use the configured names or addresses", "error", err)
	}
	names, err := pki.NamesFor(lans, hostname)
	if err != nil {
		return fmt.Errorf("LAN listener: %w", err)
	}
	d.checkLANCertificate(certs.Leaf(), names)
	tlsConfig := transport.LANTLSConfig(certs.GetCertificate)
	for i, l := range lans {
		ln, err := bind("tcp", l.Address)
		if err != nil {
			return fmt.Errorf("field \"listen.lan[%d].address\": %w", i, err)
		}
		hosts, err := lanHosts(l, ln.Addr(), hostname)
		if err != nil {
			ln.Close()
			return fmt.Errorf("field \"listen.lan[%d].address\": %w", i, err)
		}
		err = d.addHTTPListener(httpListener{name: "lan", ln: tls.NewListener(ln, tlsConfig), hosts: hosts, origins: l.AllowedOrigins})
		if err != nil {
			return fmt.Errorf("LAN listener %s: %w", l.Address, err)
		}
		d.log.Info("daemon: LAN TLS listener", "address", l.Address, "names", strings.Join(l.Names, ","),
			"certificate_not_after", certs.Leaf().NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// lanCertError says what to do about a server certificate that does not
// load.
func lanCertError(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("LAN listener: there is no server certificate in %s (pki.dir): run `proxmox-mcp pki init` as root "+
			"to create the local CA and the certificate for listen.lan: %w", dir, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("LAN listener: the daemon cannot read its certificate in %s: %s must be readable by the state directory's group "+
			"(mode 0640), as `proxmox-mcp pki init` and `pki renew` make it when run as root: %w", dir, pki.ServerKeyFile, err)
	default:
		return fmt.Errorf("LAN listener: %w; `proxmox-mcp pki renew` (as root) issues a new certificate", err)
	}
}

// checkLANCertificate warns when the certificate does not name what the
// configuration names, or is past its renewal time.
func (d *Daemon) checkLANCertificate(leaf *x509.Certificate, want pki.Names) {
	if have := pki.NamesOf(leaf); !have.Equal(want) {
		d.log.Warn("daemon: the LAN certificate does not name what listen.lan names; clients using a missing name will fail: "+
			"run `proxmox-mcp pki renew` as root (the daemon serves the new certificate without a restart)",
			"certificate_names", have.String(), "configured_names", want.String())
	}
	if renew := pki.RenewAfter(leaf); time.Now().After(renew) {
		d.log.Warn("daemon: the LAN certificate is past its renewal time: is the daily `proxmox-mcp pki renew` running?",
			"renew_after", renew.UTC().Format(time.RFC3339), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

// lanHosts are the Host values a LAN listener accepts: its address (the
// configured IP with the bound port), its names and the host's name, each
// with and without the port.
func lanHosts(l config.LAN, bound net.Addr, hostname string) ([]string, error) {
	ap, err := netip.ParseAddrPort(l.Address)
	if err != nil {
		return nil, fmt.Errorf("%q is not IP:port: %w", l.Address, err)
	}
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return nil, fmt.Errorf("bound address %s: %w", bound, err)
	}
	ip := ap.Addr().Unmap().WithZone("")
	hosts := []string{net.JoinHostPort(ip.String(), port), ip.String()}
	if ip.Is6() {
		hosts = append(hosts, "["+ip.String()+"]")
	}
	names := slices.Clone(l.Names)
	if hostname != "" {
		names = append(names, hostname)
	}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		hosts = append(hosts, n, net.JoinHostPort(n, port))
	}
	slices.Sort(hosts)
	return slices.Compact(hosts), nil
}
