package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// LANTLSConfig is the TLS configuration of the LAN listeners: TLS 1.3, or
// TLS 1.2 with ECDHE key exchange and AEAD ciphers only (AES-GCM,
// ChaCha20-Poly1305); X25519 and P-256 key exchange, with their hybrid
// post-quantum forms. The certificate comes from get at each handshake
// (CertFiles.GetCertificate re-reads renewed files).
func LANTLSConfig(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// TLS 1.3 suites are not configurable and all AEAD; these are the
		// TLS 1.2 ones.
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		CurvePreferences: []tls.CurveID{tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.X25519, tls.CurveP256},
		NextProtos:       []string{"h2", "http/1.1"},
		GetCertificate:   get,
	}
}

// DefaultCertCheckInterval is how often CertFiles looks at its files.
const DefaultCertCheckInterval = 5 * time.Second

// CertFilesOptions configure CertFiles.
type CertFilesOptions struct {
	// CertFile and KeyFile are the PEM certificate (chain) and its key.
	CertFile, KeyFile string
	// CheckEvery bounds how often the files are looked at (a stat of
	// each); DefaultCertCheckInterval when zero.
	CheckEvery time.Duration
	// Now is the clock; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// CertFiles serves a certificate from files and re-reads them when they
// change (modification time, size or inode), looking at most once per
// CheckEvery during handshakes, so a renewed certificate is served without
// a restart. A new pair that does not load (unreadable, malformed, a key
// that is not the certificate's, expired) is not served: the last good
// certificate stays, and why is logged once per change of the files.
type CertFiles struct {
	o   CertFilesOptions
	cur atomic.Pointer[loaded]
	// nextCheck is the earliest time (Unix ns) the files are looked at.
	nextCheck atomic.Int64
	mu        sync.Mutex // one check at a time
	// failed is the last failure logged: the files' versions and why.
	failed string
}

type loaded struct {
	cert  *tls.Certificate
	stamp stamp
}

// stamp identifies one version of the pair of files.
type stamp struct{ cert, key os.FileInfo }

// String describes the versions, for telling failures apart.
func (s stamp) String() string {
	d := func(fi os.FileInfo) string {
		if fi == nil {
			return "absent"
		}
		return fmt.Sprintf("%d bytes at %s", fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano))
	}
	return d(s.cert) + "; " + d(s.key)
}

func (s stamp) same(o stamp) bool {
	eq := func(a, b os.FileInfo) bool {
		return a != nil && b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
	}
	return eq(s.cert, o.cert) && eq(s.key, o.key)
}

// LoadCertFiles loads the pair; unlike a later change, a pair that does not
// load now is an error.
func LoadCertFiles(o CertFilesOptions) (*CertFiles, error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, errors.New("transport: a certificate file and a key file are required")
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = DefaultCertCheckInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &CertFiles{o: o}
	st, err := c.stat()
	if err != nil {
		return nil, err
	}
	l, err := c.load(st)
	if err != nil {
		return nil, err
	}
	c.cur.Store(l)
	c.nextCheck.Store(o.Now().Add(o.CheckEvery).UnixNano())
	return c, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.maybeReload()
	return c.cur.Load().cert, nil
}

// Leaf is the certificate served now.
func (c *CertFiles) Leaf() *x509.Certificate { return c.cur.Load().cert.Leaf }

// maybeReload looks at the files when CheckEvery has passed; a handshake
// that comes while another looks serves the current certificate.
func (c *CertFiles) maybeReload() {
	now := c.o.Now()
	if now.UnixNano() < c.nextCheck.Load() || !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	c.nextCheck.Store(now.Add(c.o.CheckEvery).UnixNano())
	cur := c.cur.Load()
	st, err := c.stat()
	if err == nil && st.same(cur.stamp) {
		return
	}
	if err == nil {
		var l *loaded
		if l, err = c.load(st); err == nil {
			c.cur.Store(l)
			c.failed = ""
			c.o.Logger.Info("transport: TLS certificate reloaded", "file", c.o.CertFile,
				"names", l.cert.Leaf.DNSNames, "not_after", l.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
			return
		}
	}
	// Log once per version of the files and reason, not at every check.
	if why := st.String() + ": " + err.Error(); why != c.failed {
		c.failed = why
		c.o.Logger.Warn("transport: the TLS certificate files changed but do not load; serving the last good certificate",
			"file", c.o.CertFile, "key_file", c.o.KeyFile, "error", err,
			"serving_not_after", cur.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

func (c *CertFiles) stat() (stamp, error) {
	cf, err := os.Stat(c.o.CertFile)
	if err != nil {
		return stamp{}, fmt.Errorf("TLS certificate: %w", err)
	}
	kf, err := os.Stat(c.o.KeyFile)
	if err != nil {
		return stamp{cert: cf}, fmt.Errorf("TLS key: %w", err)
	}
	return stamp{cert: cf, key: kf}, nil
}

// load reads and checks the pair.
func (c *CertFiles) load(st stamp) (*loaded, error) {
	certPEM, err := os.ReadFile(c.o.CertFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s with key %s: %w", c.o.CertFile, c.o.KeyFile, err)
	}
	now := c.o.Now()
	switch leaf := cert.Leaf; {
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("TLS certificate %s is not valid before %s", c.o.CertFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	case !now.Before(leaf.NotAfter):
		return nil, fmt.Errorf("TLS certificate %s expired on %s", c.o.CertFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return &loaded{cert: &cert, stamp: st}, nil
}
