package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
)

// tlsClock is a clock tests move.
type tlsClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *tlsClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *tlsClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tlsLog is a log sink several goroutines write.
type tlsLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *tlsLog) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *tlsLog) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

var tlsTestLAN = []config.LAN{{Address: "192.168.1.10:8443", Names: []string{"pve1.lan"}}}

// testPKI makes a CA and a server certificate for pve1.lan and
// 192.168.1.10 in a temporary directory.
func tlsTestPKI(tb testing.TB) (*pki.PKI, *x509.CertPool) {
	tb.Helper()
	p, err := pki.New(pki.Options{Dir: filepath.Join(tb.TempDir(), "pki"), Hostname: "pve1", KeyGroup: pki.OwnerOnly})
	if err != nil {
		tb.Fatal(err)
	}
	names, err := pki.NamesFor(tlsTestLAN, "pve1")
	if err != nil {
		tb.Fatal(err)
	}
	res, err := p.Init(context.Background(), names, false)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(res.CA)
	return p, pool
}

func tlsLoad(tb testing.TB, p *pki.PKI, now func() time.Time, log *slog.Logger) *CertFiles {
	tb.Helper()
	cf, err := LoadCertFiles(CertFilesOptions{CertFile: p.Path(pki.ServerFile), KeyFile: p.Path(pki.ServerKeyFile), Now: now, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	return cf
}

// tlsServer accepts TLS connections with the LAN configuration and
// completes their handshakes until the test ends.
func tlsTestServer(tb testing.TB, cfg *tls.Config) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tl := tls.NewListener(ln, cfg)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				c.(*tls.Conn).Handshake() //nolint:errcheck // the client's side reports
				c.Close()
			}()
		}
	}()
	tb.Cleanup(func() { tl.Close(); wg.Wait() })
	return ln.Addr().String()
}

func TestLANTLSNegotiation(t *testing.T) {
	p, pool := tlsTestPKI(t)
	addr := tlsTestServer(t, LANTLSConfig(tlsLoad(t, p, nil, nil).GetCertificate))
	for _, tc := range []struct {
		name    string
		client  *tls.Config
		version uint16
		curve   tls.CurveID
		refused string
	}{
		{name: "a default client speaks TLS 1.3 with the hybrid post-quantum exchange", version: tls.VersionTLS13, curve: tls.X25519MLKEM768},
		{name: "TLS 1.3 with X25519", client: &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}}, version: tls.VersionTLS13, curve: tls.X25519},
		{name: "TLS 1.3 with P-256", client: &tls.Config{CurvePreferences: []tls.CurveID{tls.CurveP256}}, version: tls.VersionTLS13, curve: tls.CurveP256},
		{name: "TLS 1.2 with AES-GCM", version: tls.VersionTLS12, curve: tls.X25519,
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}}},
		{name: "TLS 1.2 with ChaCha20-Poly1305 over P-256", version: tls.VersionTLS12, curve: tls.CurveP256,
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
				CurvePreferences: []tls.CurveID{tls.CurveP256}}},
		{name: "TLS 1.1 is refused", refused: "protocol version",
			client: &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}},
		{name: "TLS 1.0 is refused", refused: "protocol version",
			client: &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10}},
		{name: "TLS 1.2 offering only CBC suites is refused", refused: "handshake failure",
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
				tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
				tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA}}},
		{name: "TLS 1.2 with RSA key exchange (no forward secrecy) is refused", refused: "handshake failure",
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384}}},
		{name: "TLS 1.2 offering only P-384 is refused", refused: "handshake failure",
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CurvePreferences: []tls.CurveID{tls.CurveP384}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &tls.Config{}
			if tc.client != nil {
				cfg = tc.client.Clone()
			}
			cfg.RootCAs, cfg.ServerName = pool, "pve1.lan"
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
			if tc.refused != "" {
				if err == nil {
					st := conn.ConnectionState()
					conn.Close()
					t.Fatalf("accepted: %s %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
				}
				if !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("refused with %v, want %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			st := conn.ConnectionState()
			if st.Version != tc.version || st.CurveID != tc.curve {
				t.Errorf("negotiated %s with %s, want %s with %s", tls.VersionName(st.Version), st.CurveID, tls.VersionName(tc.version), tc.curve)
			}
			if !strings.Contains(tls.CipherSuiteName(st.CipherSuite), "GCM") && !strings.Contains(tls.CipherSuiteName(st.CipherSuite), "CHACHA20") {
				t.Errorf("cipher suite %s is not AEAD", tls.CipherSuiteName(st.CipherSuite))
			}
		})
	}
}

// Every TLS 1.2 suite the configuration enables is ECDHE with an AEAD.
func TestLANTLSSuitesAreECDHEAndAEAD(t *testing.T) {
	cfg := LANTLSConfig(nil)
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %s", tls.VersionName(cfg.MinVersion))
	}
	for _, id := range cfg.CipherSuites {
		name := tls.CipherSuiteName(id)
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")) {
			t.Errorf("%s is not ECDHE with an AEAD", name)
		}
		for _, insecure := range tls.InsecureCipherSuites() {
			if insecure.ID == id {
				t.Errorf("%s is insecure", name)
			}
		}
	}
	for _, c := range cfg.CurvePreferences {
		if !slices.Contains([]tls.CurveID{tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.X25519, tls.CurveP256}, c) {
			t.Errorf("key exchange %s is not X25519 or P-256 based", c)
		}
	}
}

// serial returns the serial number of the certificate a handshake shows.
func peerSerial(t *testing.T, addr string, pool *x509.CertPool, now func() time.Time) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "pve1.lan", Time: now})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// After `pki renew` the next handshake past the check interval serves the
// new certificate, without a restart; a broken or mismatched new pair
// keeps the last good one and is logged once.
func TestCertFilesReloadAfterRenew(t *testing.T) {
	p, pool := tlsTestPKI(t)
	clk := &tlsClock{now: time.Now()}
	var logs tlsLog
	cf := tlsLoad(t, p, clk.Now, slog.New(slog.NewTextHandler(&logs, nil)))
	addr := tlsTestServer(t, LANTLSConfig(cf.GetCertificate))
	first := peerSerial(t, addr, pool, clk.Now)

	names, err := pki.NamesFor([]config.LAN{{Address: "192.168.1.10:8443", Names: []string{"pve1.lan", "mcp.pve1.lan"}}}, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Renew(context.Background(), names)
	if err != nil || !res.Renewed {
		t.Fatalf("renew: %+v %v", res, err)
	}
	if got := peerSerial(t, addr, pool, clk.Now); got != first {
		t.Errorf("the files were looked at before the check interval: %s", got)
	}
	clk.Add(DefaultCertCheckInterval)
	if got, want := peerSerial(t, addr, pool, clk.Now), res.Server.SerialNumber.String(); got != want {
		t.Fatalf("after renew and the interval: serial %s, want the renewed %s", got, want)
	}
	if !slices.Contains(cf.Leaf().DNSNames, "mcp.pve1.lan") || !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("leaf names %v; log %s", cf.Leaf().DNSNames, logs.String())
	}
	renewed := res.Server.SerialNumber.String()

	other, _ := tlsTestPKI(t)
	otherKey, err := os.ReadFile(other.Path(pki.ServerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T)
		log   string
	}{
		{"a certificate file that is no PEM", func(t *testing.T) { tlsWriteFile(t, p.Path(pki.ServerFile), "-----BEGIN CERT") }, "failed to find any PEM data"},
		{"a key of another certificate", func(t *testing.T) {
			res, err := p.Renew(context.Background(), tlsNames(t, "pve1.lan"))
			if err != nil || !res.Renewed {
				t.Fatalf("renew: %v", err)
			}
			tlsWriteFile(t, p.Path(pki.ServerKeyFile), string(otherKey))
		}, "private key does not match public key"},
		{"a missing key", func(t *testing.T) { os.Remove(p.Path(pki.ServerKeyFile)) }, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.write(t)
			before := strings.Count(logs.String(), "do not load")
			for range 3 {
				clk.Add(DefaultCertCheckInterval)
				if got := peerSerial(t, addr, pool, clk.Now); got != renewed {
					t.Fatalf("serving %s, want the last good %s", got, renewed)
				}
			}
			out := logs.String()
			if n := strings.Count(out, "do not load") - before; n != 1 || !strings.Contains(out, tc.log) {
				t.Errorf("logged %d warnings, want 1 saying %q:\n%s", n, tc.log, out)
			}
		})
	}

	// A good pair again is served.
	res, err = p.Renew(context.Background(), tlsNames(t, "pve1.lan"))
	if err != nil || !res.Renewed {
		t.Fatalf("renew: %+v %v", res, err)
	}
	clk.Add(DefaultCertCheckInterval)
	if got := peerSerial(t, addr, pool, clk.Now); got != res.Server.SerialNumber.String() {
		t.Errorf("after a good renew: serial %s, want %s", got, res.Server.SerialNumber)
	}
}

// An expired certificate is not loaded at start, nor taken on a change.
func TestCertFilesRefuseExpired(t *testing.T) {
	p, _ := tlsTestPKI(t)
	clk := &tlsClock{now: time.Now()}
	var logs tlsLog
	cf := tlsLoad(t, p, clk.Now, slog.New(slog.NewTextHandler(&logs, nil)))
	good := cf.Leaf().SerialNumber
	clk.Add(100 * 24 * time.Hour)
	if _, err := LoadCertFiles(CertFilesOptions{CertFile: p.Path(pki.ServerFile), KeyFile: p.Path(pki.ServerKeyFile), Now: clk.Now}); err == nil ||
		!strings.Contains(err.Error(), "expired on") {
		t.Fatalf("loading an expired certificate: %v", err)
	}
	// Touch the files so they count as changed.
	b, _ := os.ReadFile(p.Path(pki.ServerFile))
	tlsWriteFile(t, p.Path(pki.ServerFile), string(b)+"\n")
	if _, err := cf.GetCertificate(nil); err != nil {
		t.Fatal(err)
	}
	if cf.Leaf().SerialNumber.Cmp(good) != 0 {
		t.Error("an expired certificate replaced the last good one")
	}
	if !strings.Contains(logs.String(), "expired on") {
		t.Errorf("the refusal was not logged: %s", logs.String())
	}
}

func TestLoadCertFilesErrors(t *testing.T) {
	p, _ := tlsTestPKI(t)
	other, _ := tlsTestPKI(t)
	for _, tc := range []struct {
		name      string
		cert, key string
		is        error
		err       string
	}{
		{"no certificate", filepath.Join(t.TempDir(), "none.pem"), p.Path(pki.ServerKeyFile), fs.ErrNotExist, "TLS certificate:"},
		{"no key", p.Path(pki.ServerFile), filepath.Join(t.TempDir(), "none.pem"), fs.ErrNotExist, "TLS key:"},
		{"a key of another certificate", p.Path(pki.ServerFile), other.Path(pki.ServerKeyFile), nil, "private key does not match public key"},
		{"no file names", "", "", nil, "a certificate file and a key file are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCertFiles(CertFilesOptions{CertFile: tc.cert, KeyFile: tc.key})
			if err == nil || !strings.Contains(err.Error(), tc.err) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

func tlsNames(t *testing.T, names ...string) pki.Names {
	t.Helper()
	n, err := pki.NamesFor([]config.LAN{{Address: "192.168.1.10:8443", Names: names}}, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func tlsWriteFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTLSHandshake: one full handshake (no resumption) with the LAN
// configuration and the CA's P-256 server certificate, TCP connect
// included, client and server in this process, per key exchange.
func BenchmarkTLSHandshake(b *testing.B) {
	p, pool := tlsTestPKI(b)
	addr := tlsTestServer(b, LANTLSConfig(tlsLoad(b, p, nil, nil).GetCertificate))
	for _, bc := range []struct {
		name   string
		client *tls.Config
	}{
		{"tls13-X25519MLKEM768", &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519MLKEM768}}},
		{"tls13-X25519", &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}}},
		{"tls13-P256", &tls.Config{CurvePreferences: []tls.CurveID{tls.CurveP256}}},
		{"tls12-ECDHE-P256-AES128GCM", &tls.Config{MaxVersion: tls.VersionTLS12, CurvePreferences: []tls.CurveID{tls.CurveP256},
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.client.Clone()
			cfg.RootCAs, cfg.ServerName = pool, "pve1.lan"
			var d []time.Duration
			for b.Loop() {
				t0 := time.Now()
				conn, err := tls.Dial("tcp", addr, cfg)
				if err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
				conn.Close()
			}
			tlsPercentiles(b, d)
		})
	}
}

func tlsPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}
