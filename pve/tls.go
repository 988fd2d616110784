package pve

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// TLSTrust says which certificates pveproxy may present. A connection is
// accepted when the leaf certificate's SHA-256 fingerprint is pinned, or is
// one of the certificates in CertFile, or chains to a CA in CAFile (with
// the host name checked). With none of them set, New fails: verification
// cannot be switched off.
type TLSTrust struct {
	// Fingerprints are pinned SHA-256 fingerprints of the leaf, as
	// `pvenode cert info` prints them (AA:BB:...) or as plain hex.
	Fingerprints []string
	// CertFile is pveproxy's certificate as the host has it (usually
	// /etc/pve/local/pveproxy-ssl.pem when a custom or ACME certificate is
	// installed, else /etc/pve/local/pve-ssl.pem). It is re-read when it
	// changes, so a renewed certificate is trusted without a restart.
	CertFile string
	// CertPEM is a certificate given directly (tests, the simulator).
	CertPEM []byte
	// CAFile is a CA bundle that signs pveproxy's certificate, e.g.
	// /etc/pve/pve-root-ca.pem.
	CAFile string
}

// Fingerprint formats a certificate's SHA-256 fingerprint as PVE does.
func Fingerprint(der []byte) string { return formatSum(sha256.Sum256(der)) }

// formatSum writes a SHA-256 sum as Fingerprint does.
func formatSum(sum [32]byte) string {
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

func parseFingerprint(s string) ([32]byte, error) {
	var fp [32]byte
	clean := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	raw, err := hex.DecodeString(clean)
	if err != nil || len(raw) != len(fp) {
		return fp, fmt.Errorf("fingerprint %q is not a SHA-256 fingerprint (64 hex digits, colons allowed)", s)
	}
	copy(fp[:], raw)
	return fp, nil
}

// trust verifies peer certificates against the configured sources.
type trust struct {
	pins     map[[32]byte]bool
	roots    *x509.CertPool
	certFile string

	mu        sync.Mutex
	fileStamp time.Time
	fileSize  int64
	filePins  map[[32]byte]bool
}

func (t TLSTrust) config(serverName string) (*tls.Config, error) {
	tr := &trust{pins: map[[32]byte]bool{}, certFile: t.CertFile}
	for _, f := range t.Fingerprints {
		fp, err := parseFingerprint(f)
		if err != nil {
			return nil, err
		}
		tr.pins[fp] = true
	}
	if len(t.CertPEM) > 0 {
		fps, err := pemFingerprints(t.CertPEM)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		for fp := range fps {
			tr.pins[fp] = true
		}
	}
	if t.CertFile != "" {
		if err := tr.reloadCertFile(); err != nil {
			return nil, err
		}
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		tr.roots = x509.NewCertPool()
		if !tr.roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s holds no PEM certificate", t.CAFile)
		}
	}
	if len(tr.pins) == 0 && tr.certFile == "" && tr.roots == nil {
		return nil, errors.New("no way to verify pveproxy's certificate: set a fingerprint, the certificate file or a CA file")
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		// The standard verifier is replaced, not skipped: VerifyConnection
		// accepts only a pinned, file-listed or CA-signed certificate.
		InsecureSkipVerify: true,
		VerifyConnection:   tr.verify,
	}, nil
}

func pemFingerprints(data []byte) (map[[32]byte]bool, error) {
	out := map[[32]byte]bool{}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			out[sha256.Sum256(block.Bytes)] = true
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// reloadCertFile re-reads CertFile when its size or modification time
// changed since the last read.
func (t *trust) reloadCertFile() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := os.Stat(t.certFile)
	if err != nil {
		return fmt.Errorf("TLS certificate file: %w", err)
	}
	if st.ModTime().Equal(t.fileStamp) && st.Size() == t.fileSize && t.filePins != nil {
		return nil
	}
	data, err := os.ReadFile(t.certFile)
	if err != nil {
		return fmt.Errorf("TLS certificate file: %w", err)
	}
	fps, err := pemFingerprints(data)
	if err != nil {
		return fmt.Errorf("TLS certificate file %s: %w", t.certFile, err)
	}
	t.fileStamp, t.fileSize, t.filePins = st.ModTime(), st.Size(), fps
	return nil
}

func (t *trust) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("pveproxy presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	fp := sha256.Sum256(leaf.Raw)
	if t.pins[fp] {
		return nil
	}
	if t.certFile != "" {
		if err := t.reloadCertFile(); err == nil {
			t.mu.Lock()
			ok := t.filePins[fp]
			t.mu.Unlock()
			if ok {
				return nil
			}
		}
	}
	// A pin that no longer matches is said first: it is what changed
	// when a pinned (custom, ACME) certificate was renewed.
	why := ""
	if len(t.pins) > 0 {
		why = "it is not the pinned " + t.pinned() + " (renewed?); "
	}
	if t.roots != nil {
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: t.roots, Intermediates: inter, DNSName: cs.ServerName})
		if err == nil {
			return nil
		}
		return fmt.Errorf("pveproxy certificate %s is not trusted: %s%w", Fingerprint(leaf.Raw), why, err)
	}
	if why != "" {
		return fmt.Errorf("pveproxy certificate %s is not trusted: %s", Fingerprint(leaf.Raw), strings.TrimSuffix(why, "; "))
	}
	return fmt.Errorf("pveproxy certificate %s is not trusted: it is neither pinned nor the host's certificate file", Fingerprint(leaf.Raw))
}

// pinned lists the pinned fingerprints, sorted.
func (t *trust) pinned() string {
	var fps []string
	for fp := range t.pins {
		fps = append(fps, formatSum(fp))
	}
	slices.Sort(fps)
	return strings.Join(fps, " or ")
}
