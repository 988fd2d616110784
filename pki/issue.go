package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// Lifetimes of the certificates.
const (
	// CALifetimeYears is how long the CA is valid.
	CALifetimeYears = 10
	// ServerLifetime is how long a server certificate is valid; it is
	// re-issued when less than a third of it is left.
	ServerLifetime = 90 * 24 * time.Hour
	// backdate absorbs clocks a little behind the host's.
	backdate = time.Hour
)

// Organization names the issuer and subject of every certificate.
const Organization = "proxmox-mcp"

// keyPair is a certificate with its key, parsed and encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// newCA makes a self-signed CA whose certificate permits names (and
// subdomains of them) and the private address ranges only.
func newCA(names Names, hostname string, now time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now = now.UTC().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{Organization}, CommonName: caCommonName(names, hostname, now)},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.AddDate(CALifetimeYears, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		// Critical: a verifier that does not understand the constraints
		// must refuse the chain rather than ignore them.
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         names.DNS,
		PermittedIPRanges:           ipNets(PermittedIPRanges()),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	return encodePair(der, key)
}

// caCommonName tells CAs apart in a client's trust store: the host and the
// day the CA was made, so that a replaced CA is easy to find and remove.
func caCommonName(names Names, hostname string, now time.Time) string {
	host := normalizeDNS(hostname)
	if host == "" && len(names.DNS) > 0 {
		host = names.DNS[0]
	}
	return fmt.Sprintf("proxmox-mcp local CA for %s (%s)", host, now.UTC().Format("2006-01-02"))
}

// newServer issues a server certificate for names, signed by ca. It is
// valid for ServerLifetime, never past the CA's own expiry.
func newServer(ca *keyPair, names Names, now time.Time) (*keyPair, error) {
	if err := permits(ca.cert, names); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: server key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now = now.UTC().Truncate(time.Second)
	notAfter := now.Add(ServerLifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	if !notAfter.After(now) {
		return nil, fmt.Errorf("pki: the CA expired on %s: replace it with `proxmox-mcp pki init --force` and trust the new one on each client", ca.cert.NotAfter.Format(time.RFC3339))
	}
	subject := pkix.Name{Organization: []string{Organization}}
	if len(names.DNS) > 0 {
		subject.CommonName = names.DNS[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names.DNS,
		IPAddresses:           names.netIPs(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("pki: server certificate: %w", err)
	}
	kp, err := encodePair(der, key)
	if err != nil {
		return nil, err
	}
	// Never write a certificate that Go's own verifier would refuse.
	if err := verifyServer(kp.cert, ca.cert, names, now); err != nil {
		return nil, fmt.Errorf("pki: the new server certificate does not verify against the CA: %w", err)
	}
	return kp, nil
}

// verifyServer checks the chain and every name of the certificate with
// Go's verifier.
func verifyServer(leaf, ca *x509.Certificate, names Names, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range names.Strings() {
		if _, err := leaf.Verify(x509.VerifyOptions{
			DNSName: name, Roots: roots, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return err
		}
	}
	return nil
}

// permits checks that the CA's name constraints allow every name.
func permits(ca *x509.Certificate, names Names) error {
	var refused []string
	for _, d := range names.DNS {
		if len(ca.PermittedDNSDomains) > 0 && !dnsPermitted(d, ca.PermittedDNSDomains) {
			refused = append(refused, d)
		}
	}
	for _, ip := range names.IPs {
		ok := len(ca.PermittedIPRanges) == 0
		for _, r := range ca.PermittedIPRanges {
			if p, valid := prefixOf(r); valid && p.Contains(ip) {
				ok = true
			}
		}
		if !ok {
			refused = append(refused, ip.String())
		}
	}
	if len(refused) > 0 {
		return &ConstraintError{Refused: refused, PermittedDNS: slices.Clone(ca.PermittedDNSDomains), PermittedIP: ipRangeStrings(ca)}
	}
	return nil
}

// ConstraintError says that the CA may not certify some of the configured
// names: the CA was made for other names, and a new CA is needed.
type ConstraintError struct {
	Refused, PermittedDNS, PermittedIP []string
}

func (e *ConstraintError) Error() string {
	return fmt.Sprintf("the CA's name constraints do not permit %s (it permits the names %s and their subdomains, and the addresses in %s): "+
		"replace the CA with `proxmox-mcp pki init --force`, then trust the new ca.pem on each client",
		strings.Join(e.Refused, ", "), strings.Join(e.PermittedDNS, ", "), strings.Join(e.PermittedIP, ", "))
}

func ipRangeStrings(c *x509.Certificate) []string {
	var out []string
	for _, r := range c.PermittedIPRanges {
		if p, ok := prefixOf(r); ok {
			out = append(out, p.String())
		}
	}
	return out
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse the new certificate: %w", err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encode the key: %w", err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
	}, nil
}

// parseCert reads one PEM certificate.
func parseCert(name string, data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s is not a PEM certificate", name)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// parseKey reads one PEM ECDSA private key (PKCS #8 or SEC 1).
func parseKey(name string, data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s is not a PEM private key", name)
	}
	var (
		k   any
		err error
	)
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%s holds a %q block, not a private key", name, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an ECDSA key", name)
	}
	return ek, nil
}

// matches reports whether key is the private half of cert's public key.
func matches(cert *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return ok && pub.Equal(&key.PublicKey)
}

// Fingerprint is the SHA-256 of a certificate's DER, as colon-separated
// upper-case hex (the form openssl and browsers print).
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// RenewAfter is when a certificate is due for renewal: when less than a
// third of its life is left.
func RenewAfter(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Add(-life / 3)
}

// DueReason says why the server certificate must be re-issued for names at
// now, or "" when it need not be. A nil server certificate is due.
func DueReason(ca, server *x509.Certificate, names Names, now time.Time) string {
	switch {
	case server == nil:
		return "there is no server certificate"
	case server.CheckSignatureFrom(ca) != nil:
		return "the server certificate was not issued by the current CA"
	case !now.Before(server.NotAfter):
		return fmt.Sprintf("the server certificate expired on %s", server.NotAfter.Format(time.RFC3339))
	}
	if have := NamesOf(server); !have.Equal(names) {
		added, dropped := have.diff(names.sorted())
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "adds "+strings.Join(added, ", "))
		}
		if len(dropped) > 0 {
			parts = append(parts, "drops "+strings.Join(dropped, ", "))
		}
		return "the configured names changed (" + strings.Join(parts, "; ") + ")"
	}
	if !now.Before(RenewAfter(server)) {
		return fmt.Sprintf("less than a third of its life is left (it expires on %s)", server.NotAfter.Format(time.RFC3339))
	}
	return ""
}
