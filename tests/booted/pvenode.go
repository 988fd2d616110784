package booted

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// Where a PVE node keeps what proxmox-mcp install reads, and where the
// test bed puts its stand-ins.
const (
	APIDocPath   = "/usr/share/pve-docs/api-viewer/apidoc.js"
	EtcPVE       = "/etc/pve"
	fakeDir      = "/usr/lib/pmcp-fakepve"
	simInside    = fakeDir + "/proxmox-mcp"
	fakeInside   = fakeDir + "/fakepve"
	PVEProxyUnit = "pveproxy.service"
	// PVEAddr is where the simulated API listens, as pveproxy does.
	PVEAddr = "127.0.0.1:8006"
)

// PVENode is a Proxmox VE 9.1 node as far as proxmox-mcp can tell from
// inside the container: the cluster CA and a node certificate it signed
// (for 127.0.0.1, localhost and the host name) in /etc/pve, a fresh
// user.cfg and an empty priv/token.cfg, PVE's apidoc.js, pveum and
// pveversion (the fakepve program), and pveproxy.service, enabled, serving
// `proxmox-mcp sim --node-dir /etc/pve` on 127.0.0.1:8006 with that
// certificate and the tokens pveum writes. What is not there: pmxcfs (/etc/pve is a plain
// directory), pvedaemon, pvestatd, the cluster.
type PVENode struct {
	// SimBinary is a proxmox-mcp on the host whose sim serves the API.
	SimBinary string
	// FakePVE is the fakepve program on the host (tests/booted/fakepve).
	FakePVE string
	// APIDoc is the apidoc.js the node has and the simulator serves.
	APIDoc []byte
	// Hostname is the node's name; pve1 when empty.
	Hostname string

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	// CAPEM is the cluster CA, /etc/pve/pve-root-ca.pem.
	CAPEM []byte
}

// pveproxyUnit runs the simulator as the node's pveproxy.
const pveproxyUnit = `[Unit]
Description=PVE API Proxy Server (the test bed's: proxmox-mcp sim --node-dir /etc/pve)
After=network.target

[Service]
ExecStart=` + simInside + ` sim --listen ` + PVEAddr + ` --node-dir ` + EtcPVE + ` --apidoc ` + APIDocPath + ` --task-duration 0.2
Restart=on-failure

[Install]
WantedBy=multi-user.target
`

// newKey makes a P-256 key.
func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// initCA makes the cluster CA, as pvecm updatecerts does on a new node.
func (n *PVENode) initCA() error {
	if n.ca != nil {
		return nil
	}
	key, _, err := newKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "Proxmox Virtual Environment", OrganizationalUnit: []string{"pmcp-booted"}, Organization: []string{"PVE Cluster Manager CA"}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if n.ca, err = x509.ParseCertificate(der); err != nil {
		return err
	}
	n.caKey = key
	n.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return nil
}

// Certificate is a server certificate for 127.0.0.1, ::1, localhost and
// the node's name, signed by the cluster CA or, with selfSigned, by
// itself (as a custom certificate would be signed by some other CA): its
// PEM and its key's.
func (n *PVENode) Certificate(selfSigned bool) (certPEM, keyPEM []byte, err error) {
	if err := n.initCA(); err != nil {
		return nil, nil, err
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	host := n.hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host + ".local", OrganizationalUnit: []string{"PVE Cluster Node"}, Organization: []string{"Proxmox Virtual Environment"}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(2, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		DNSNames:    []string{"localhost", host, host + ".local"},
	}
	parent, parentKey := n.ca, n.caKey
	if selfSigned {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func (n *PVENode) hostname() string {
	if n.Hostname == "" {
		return "pve1"
	}
	return n.Hostname
}

// Prepare lays the node into a container's root before it boots (it is an
// Options.Prepare).
func (n *PVENode) Prepare(r *Root) error {
	if len(n.APIDoc) == 0 || n.SimBinary == "" || n.FakePVE == "" {
		return fmt.Errorf("booted: a PVE node needs APIDoc, SimBinary and FakePVE")
	}
	if err := n.initCA(); err != nil {
		return err
	}
	caKey, err := x509.MarshalECPrivateKey(n.caKey)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := n.Certificate(false)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{EtcPVE, 0o755}, {EtcPVE + "/priv", 0o700}, {EtcPVE + "/local", 0o755}} {
		if err := r.MkdirAll(d.path, d.mode); err != nil {
			return err
		}
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{EtcPVE + "/pve-root-ca.pem", n.CAPEM, 0o640},
		{EtcPVE + "/priv/pve-root-ca.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKey}), 0o600},
		{EtcPVE + "/local/pve-ssl.pem", certPEM, 0o640},
		{EtcPVE + "/local/pve-ssl.key", keyPEM, 0o600},
		{EtcPVE + "/" + sim.UserCfg, sim.NewUserConfig().Marshal(), 0o640},
		{EtcPVE + "/" + sim.TokenCfg, nil, 0o600},
		{APIDocPath, n.APIDoc, 0o644},
		{"/etc/systemd/system/" + PVEProxyUnit, []byte(pveproxyUnit), 0o644},
	}
	for _, f := range files {
		if err := r.WriteFile(f.path, f.data, f.mode); err != nil {
			return err
		}
	}
	for host, inside := range map[string]string{n.SimBinary: simInside, n.FakePVE: fakeInside} {
		data, err := os.ReadFile(host)
		if err != nil {
			return fmt.Errorf("booted: %w", err)
		}
		if err := r.WriteFile(inside, data, 0o755); err != nil {
			return err
		}
	}
	links := map[string]string{
		"/usr/bin/pveum":      fakeInside,
		"/usr/bin/pveversion": fakeInside,
		"/usr/sbin/pct":       fakeInside,
		"/etc/systemd/system/multi-user.target.wants/" + PVEProxyUnit: "/etc/systemd/system/" + PVEProxyUnit,
	}
	for link, target := range links {
		if err := r.Symlink(target, link); err != nil {
			return err
		}
	}
	return nil
}

// WaitPVE waits until the node's API accepts connections.
func (c *Container) WaitPVE(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	host, port, _ := net.SplitHostPort(PVEAddr)
	var last Result
	for ctx.Err() == nil {
		last = c.Run(ctx, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port))
		if last.OK() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	status := c.Run(context.Background(), "systemctl", "status", "--no-pager", "-n", "20", PVEProxyUnit)
	return fmt.Errorf("booted: the PVE API (%s) does not answer: %s\n%s", PVEAddr, strings.TrimSpace(last.Stderr), status.Stdout)
}
