package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// SelfSignedCert makes a certificate for the given host names and IPs, as
// a fresh PVE node has before anyone installs a real one.
func SelfSignedCert(hosts ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "pmcp-sim", Organization: []string{"proxmox-mcp simulator"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(2 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Server is the simulator behind HTTPS/1.1, as pveproxy serves the API.
type Server struct {
	Sim  *Sim
	URL  string // https://host:port/api2/json
	Cert tls.Certificate
	// Fingerprint is the SHA-256 fingerprint of Cert, as PVE prints it.
	Fingerprint string

	ln   net.Listener
	http *http.Server
}

// Listen binds addr and prepares a server with a fresh self-signed
// certificate; Serve runs it.
func Listen(s *Sim, addr string) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listen address %q: %w", addr, err)
	}
	cert, err := SelfSignedCert(host, "127.0.0.1", "::1", "localhost")
	if err != nil {
		return nil, fmt.Errorf("sim: certificate: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	srv := &Server{
		Sim:         s,
		URL:         "https://" + ln.Addr().String() + APIPrefix,
		Cert:        cert,
		Fingerprint: pve.Fingerprint(cert.Certificate[0]),
		ln:          ln,
		http: &http.Server{
			Handler:           s,
			ReadHeaderTimeout: 10 * time.Second,
			// pveproxy speaks HTTP/1.1 only; an empty map turns off h2.
			TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
			TLSConfig:    &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		},
	}
	return srv, nil
}

// Serve answers until ctx ends, then shuts down gracefully.
func (srv *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.http.ServeTLS(srv.ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.http.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
