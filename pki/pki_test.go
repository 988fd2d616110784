package pki

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// t0 is the clock of the tests.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

var testLANs = []config.LAN{
	{Address: "192.168.1.10:8443", Names: []string{"pve1.lan", "MCP.Home.Arpa."}},
	{Address: "[fd00::10]:8443", Names: []string{"pve1.lan"}},
}

func testNames(t *testing.T) Names {
	t.Helper()
	n, err := NamesFor(testLANs, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// newPKI makes a PKI in a fresh directory with a settable clock.
func newPKI(t *testing.T, group int) (*PKI, *clock) {
	t.Helper()
	c := &clock{now: t0}
	p, err := New(Options{Dir: filepath.Join(t.TempDir(), "pki"), Hostname: "pve1", KeyGroup: group, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestNamesFor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lans     []config.LAN
		hostname string
		want     string
		err      string
	}{
		{name: "addresses, names and the hostname, sorted and unique", lans: testLANs, hostname: "PVE1",
			want: "mcp.home.arpa, pve1, pve1.lan, 192.168.1.10, fd00::10"},
		{name: "no names but the hostname", lans: []config.LAN{{Address: "10.0.0.5:443"}}, hostname: "pve1.example.internal",
			want: "pve1.example.internal, 10.0.0.5"},
		{name: "no LAN listener", hostname: "pve1", err: "no LAN listener is configured (listen.lan is empty)"},
		{name: "no DNS name at all", lans: []config.LAN{{Address: "10.0.0.5:443"}},
			err: "the certificate needs at least one DNS name"},
		{name: "a hostname that is no DNS name", lans: []config.LAN{{Address: "10.0.0.5:443"}}, hostname: "my_host",
			err: `the host name "my_host" is not a DNS name`},
		{name: "a bad name", lans: []config.LAN{{Address: "10.0.0.5:443", Names: []string{"ok.lan", "bad name"}}}, hostname: "pve1",
			err: `field "listen.lan[0].names[1]": "bad name" is not a DNS name`},
		{name: "a bad address", lans: []config.LAN{{Address: "10.0.0.5"}}, hostname: "pve1",
			err: `field "listen.lan[0].address": "10.0.0.5" is not IP:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := NamesFor(tc.lans, tc.hostname)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.String() != tc.want {
				t.Errorf("names = %q, want %q", n, tc.want)
			}
		})
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o   Options
		err string
	}{
		{Options{Dir: "relative/pki"}, `field "pki.dir": "relative/pki" must be an absolute, clean path`},
		{Options{Dir: "/etc/../etc/pki"}, "must be an absolute, clean path"},
		{Options{Dir: "/etc/pki", KeyGroup: -2}, "key group -2 is not a group id"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("New(%+v) = %v, want %q", tc.o, err, tc.err)
		}
	}
}

// Init writes the four files with their modes; the CA is a name-constrained
// P-256 CA valid ten years, the server certificate a P-256 serverAuth
// certificate for the names, valid 90 days.
func TestInitWritesTheCAAndTheServerCertificate(t *testing.T) {
	gid := os.Getgid()
	p, _ := newPKI(t, gid)
	names := testNames(t)
	res, err := p.Init(context.Background(), names, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{CAFile, 0o644}, {CAKeyFile, 0o600}, {ServerFile, 0o644}, {ServerKeyFile, 0o640}} {
		fi, err := os.Stat(p.Path(f.name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.mode {
			t.Errorf("%s mode %04o, want %04o", f.name, fi.Mode().Perm(), f.mode)
		}
		if f.name == ServerKeyFile {
			if st := fi.Sys().(*syscall.Stat_t); int(st.Gid) != gid {
				t.Errorf("server-key.pem group %d, want %d", st.Gid, gid)
			}
		}
	}
	entries, _ := os.ReadDir(p.Dir())
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("a temporary file was left behind: %s", e.Name())
		}
	}

	ca := res.CA
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.MaxPathLen != 0 || !ca.MaxPathLenZero {
		t.Errorf("CA basic constraints: IsCA %v, MaxPathLen %d (zero %v)", ca.IsCA, ca.MaxPathLen, ca.MaxPathLenZero)
	}
	if ca.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("CA key usage %v", ca.KeyUsage)
	}
	if pub, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key %T, want ECDSA P-256", ca.PublicKey)
	}
	if !ca.PermittedDNSDomainsCritical {
		t.Error("the name constraints are not critical")
	}
	if !slices.Equal(ca.PermittedDNSDomains, []string{"mcp.home.arpa", "pve1", "pve1.lan"}) {
		t.Errorf("permitted DNS domains %v", ca.PermittedDNSDomains)
	}
	if got := strings.Join(ipRangeStrings(ca), " "); got != "10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 127.0.0.0/8 fc00::/7 ::1/128" {
		t.Errorf("permitted IP ranges %s", got)
	}
	if got := ca.NotAfter.Sub(t0); got < 3650*24*time.Hour || got > 3653*24*time.Hour {
		t.Errorf("CA lifetime from now %s, want ten years", got)
	}
	if !strings.Contains(ca.Subject.CommonName, "pve1 (2026-05-01)") {
		t.Errorf("CA subject %q", ca.Subject)
	}

	s := res.Server
	if s.IsCA {
		t.Error("the server certificate is a CA")
	}
	if !slices.Equal(s.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || s.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("server key usage %v %v", s.KeyUsage, s.ExtKeyUsage)
	}
	if pub, ok := s.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("server key %T, want ECDSA P-256", s.PublicKey)
	}
	if got := NamesOf(s); !got.Equal(names) {
		t.Errorf("server SANs %s, want %s", got, names)
	}
	if got := s.NotAfter.Sub(t0); got != ServerLifetime {
		t.Errorf("server lifetime from now %s, want %s", got, ServerLifetime)
	}
	if err := s.CheckSignatureFrom(ca); err != nil {
		t.Errorf("the server certificate is not signed by the CA: %v", err)
	}
	// The files hold what Init returned, and the key matches.
	caPair, err := p.readCAPair()
	if err != nil {
		t.Fatal(err)
	}
	if !caPair.cert.Equal(ca) {
		t.Error("ca.pem differs from the CA returned")
	}
	server, reason, err := p.currentServer(ca, names, t0)
	if err != nil || reason != "" || !server.Equal(s) {
		t.Errorf("server.pem: %v, due %q", err, reason)
	}
}

// Without root (or for a group-less run) the server key is 0600.
func TestServerKeyOwnerOnly(t *testing.T) {
	p, _ := newPKI(t, OwnerOnly)
	if _, err := p.Init(context.Background(), testNames(t), false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p.Path(ServerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("server-key.pem mode %04o, want 0600", fi.Mode().Perm())
	}
}

// mint signs a certificate for arbitrary names with the CA key, as someone
// holding a leaked key would.
func mint(t *testing.T, ca *keyPair, dns []string, ips []net.IP) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: "minted"},
		NotBefore:    t0.Add(-time.Hour),
		NotAfter:     t0.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Go's verifier accepts the server certificate for each of its names and
// refuses it for others; a certificate minted with the CA key for a public
// name or address fails because of the CA's name constraints.
func TestNameConstraintsWithGosVerifier(t *testing.T) {
	p, _ := newPKI(t, OwnerOnly)
	res, err := p.Init(context.Background(), testNames(t), false)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := p.readCAPair()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(res.CA)
	verify := func(leaf *x509.Certificate, name string) error {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: t0})
		return err
	}
	t.Run("the server certificate", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			ok   bool
		}{
			{"pve1", true}, {"pve1.lan", true}, {"mcp.home.arpa", true}, {"192.168.1.10", true}, {"fd00::10", true},
			{"other.lan", false}, {"192.168.1.11", false}, {"example.com", false},
		} {
			err := verify(res.Server, tc.name)
			if (err == nil) != tc.ok {
				t.Errorf("verify for %s: %v, want ok=%v", tc.name, err, tc.ok)
			}
		}
	})
	t.Run("certificates minted with the CA key", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			dns  []string
			ips  []net.IP
			// verify for this name; ok says whether it must succeed.
			for_ string
			ok   bool
		}{
			{name: "a public name", dns: []string{"example.com"}, for_: "example.com"},
			{name: "a public address", ips: []net.IP{net.ParseIP("8.8.8.8")}, for_: "8.8.8.8"},
			{name: "a public IPv6 address", ips: []net.IP{net.ParseIP("2001:4860:4860::8888")}, for_: "2001:4860:4860::8888"},
			{name: "carrier-grade NAT is not private", ips: []net.IP{net.ParseIP("100.64.0.1")}, for_: "100.64.0.1"},
			{name: "a permitted name as a prefix of a public one", dns: []string{"pve1.lan.example.com"}, for_: "pve1.lan.example.com"},
			{name: "a public name beside a permitted one", dns: []string{"pve1.lan", "example.com"}, for_: "pve1.lan"},
			{name: "a public address beside a private one", ips: []net.IP{net.ParseIP("10.1.2.3"), net.ParseIP("8.8.8.8")}, for_: "10.1.2.3"},
			// What the constraints allow: the host's names, their
			// subdomains, and private addresses.
			{name: "a subdomain of a permitted name", dns: []string{"api.pve1.lan"}, for_: "api.pve1.lan", ok: true},
			{name: "another private address", ips: []net.IP{net.ParseIP("172.20.0.1")}, for_: "172.20.0.1", ok: true},
			{name: "loopback", ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, for_: "::1", ok: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := verify(mint(t, ca, tc.dns, tc.ips), tc.for_)
				if tc.ok {
					if err != nil {
						t.Fatalf("verify: %v", err)
					}
					return
				}
				var inv x509.CertificateInvalidError
				if !errors.As(err, &inv) || inv.Reason != x509.CANotAuthorizedForThisName {
					t.Fatalf("verify = %v, want the CA's name constraints to refuse it", err)
				}
			})
		}
	})
}

func TestInitRefusesAnExistingCA(t *testing.T) {
	ctx := context.Background()
	p, _ := newPKI(t, OwnerOnly)
	first, err := p.Init(ctx, testNames(t), false)
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, p)
	_, err = p.Init(ctx, testNames(t), false)
	if !errors.Is(err, ErrCAExists) {
		t.Fatalf("second Init = %v, want ErrCAExists", err)
	}
	for _, want := range []string{Fingerprint(first.CA), "pki init --force", "pki renew"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after := readAll(t, p); !maps.Equal(before, after) {
		t.Error("a refused Init changed the files")
	}

	// Part of a CA is still a CA that --force must be asked for.
	if err := os.Remove(p.Path(CAFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Init(ctx, testNames(t), false); !errors.Is(err, ErrCAExists) || !strings.Contains(err.Error(), "ca-key.pem") {
		t.Fatalf("Init beside a lone ca-key.pem = %v", err)
	}

	second, err := p.Init(ctx, testNames(t), true)
	if err != nil {
		t.Fatal(err)
	}
	if second.ReplacedCA == "" || Fingerprint(second.CA) == Fingerprint(first.CA) {
		t.Errorf("--force: replaced %q, new %s, old %s", second.ReplacedCA, Fingerprint(second.CA), Fingerprint(first.CA))
	}
	if err := second.Server.CheckSignatureFrom(second.CA); err != nil {
		t.Errorf("the new server certificate is not the new CA's: %v", err)
	}
}

// Two Inits at once make one CA: the other is refused, and the files on
// disk belong together.
func TestConcurrentInitMakesOneCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := New(Options{Dir: dir, Hostname: "pve1", KeyGroup: OwnerOnly})
			if err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = p.Init(context.Background(), testNames(t), false)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrCAExists):
			t.Errorf("Init: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d Inits succeeded, want 1", ok)
	}
	p, _ := New(Options{Dir: dir, KeyGroup: OwnerOnly})
	ca, err := p.readCAPair()
	if err != nil {
		t.Fatal(err)
	}
	if _, reason, err := p.currentServer(ca.cert, testNames(t), time.Now()); err != nil || reason != "" {
		t.Errorf("after concurrent Inits: %v %q", err, reason)
	}
}

func TestRenew(t *testing.T) {
	ctx := context.Background()
	renewedFor := func(res RenewResult, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		if !res.Renewed {
			return "not renewed"
		}
		return "renewed: " + res.Reason
	}
	for _, tc := range []struct {
		name string
		// setup changes things after Init; it returns the names to renew
		// for and the time.
		setup func(t *testing.T, p *PKI) (Names, time.Time)
		want  string
	}{
		{name: "fresh: nothing to do", want: "not renewed",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) { return testNames(t), t0.Add(time.Hour) }},
		{name: "59 of 90 days gone: not due yet", want: "not renewed",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) { return testNames(t), t0.Add(59 * 24 * time.Hour) }},
		{name: "less than a third left", want: "renewed: less than a third of its life is left (it expires on 2026-07-30T12:00:00Z)",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) { return testNames(t), t0.Add(61 * 24 * time.Hour) }},
		{name: "expired", want: "renewed: the server certificate expired on 2026-07-30T12:00:00Z",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) { return testNames(t), t0.Add(100 * 24 * time.Hour) }},
		{name: "a name added and an address dropped", want: "renewed: the configured names changed (adds api.pve1.lan; drops fd00::10)",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				n, err := NamesFor([]config.LAN{{Address: "192.168.1.10:8443", Names: []string{"pve1.lan", "mcp.home.arpa", "api.pve1.lan"}}}, "pve1")
				if err != nil {
					t.Fatal(err)
				}
				return n, t0.Add(time.Hour)
			}},
		{name: "a name the CA may not certify", want: "error: the CA's name constraints do not permit other.example (it permits the names mcp.home.arpa, pve1, pve1.lan and their subdomains, and the addresses in 10.0.0.0/8, 172.16.0.0/12",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				n, err := NamesFor([]config.LAN{{Address: "192.168.1.10:8443", Names: []string{"other.example"}}}, "pve1")
				if err != nil {
					t.Fatal(err)
				}
				return n, t0.Add(time.Hour)
			}},
		{name: "server.pem missing", want: "renewed: there is no server certificate",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				rm(t, p.Path(ServerFile))
				return testNames(t), t0.Add(time.Hour)
			}},
		{name: "server-key.pem missing", want: "renewed: there is no server key (server-key.pem)",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				rm(t, p.Path(ServerKeyFile))
				return testNames(t), t0.Add(time.Hour)
			}},
		{name: "server.pem broken", want: "renewed: server.pem is not a PEM certificate",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				writeFile(t, p.Path(ServerFile), "garbage")
				return testNames(t), t0.Add(time.Hour)
			}},
		{name: "a key of another certificate", want: "renewed: server-key.pem is not the key of server.pem",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				other, _ := newPKI(t, OwnerOnly)
				if _, err := other.Init(context.Background(), testNames(t), false); err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(other.Path(ServerKeyFile))
				writeFile(t, p.Path(ServerKeyFile), string(b))
				return testNames(t), t0.Add(time.Hour)
			}},
		{name: "a server certificate of another CA", want: "renewed: the server certificate was not issued by the current CA",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				other, _ := newPKI(t, OwnerOnly)
				if _, err := other.Init(context.Background(), testNames(t), false); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{ServerFile, ServerKeyFile} {
					b, _ := os.ReadFile(other.Path(f))
					writeFile(t, p.Path(f), string(b))
				}
				return testNames(t), t0.Add(time.Hour)
			}},
		{name: "no CA key", want: "error: pki: " + "CADIR/ca.pem has no key beside it (ca-key.pem)",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				rm(t, p.Path(CAKeyFile))
				return testNames(t), t0.Add(61 * 24 * time.Hour)
			}},
		{name: "no CA", want: "error: CADIR: no CA: run `proxmox-mcp pki init` (as root) first",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) {
				rm(t, p.Path(CAFile))
				return testNames(t), t0.Add(time.Hour)
			}},
		{name: "the CA expired", want: "error: pki: the CA expired on 2036-05-01T12:00:00Z",
			setup: func(t *testing.T, p *PKI) (Names, time.Time) { return testNames(t), t0.AddDate(11, 0, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, clk := newPKI(t, OwnerOnly)
			if _, err := p.Init(ctx, testNames(t), false); err != nil {
				t.Fatal(err)
			}
			names, now := tc.setup(t, p)
			clk.Set(now)
			before := readAll(t, p)
			res, err := p.Renew(ctx, names)
			got := strings.ReplaceAll(renewedFor(res, err), p.Dir(), "CADIR")
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("Renew: %s\nwant: %s", got, tc.want)
			}
			after := readAll(t, p)
			if err != nil || !res.Renewed {
				if !maps.Equal(before, after) {
					t.Error("Renew changed files without renewing")
				}
				return
			}
			// The new certificate is the CA's, for the names, with a fresh
			// key, and not due.
			if after[CAFile] != before[CAFile] || after[CAKeyFile] != before[CAKeyFile] {
				t.Error("Renew changed the CA")
			}
			if after[ServerKeyFile] == before[ServerKeyFile] {
				t.Error("Renew kept the old server key")
			}
			ca, err := p.readCAPair()
			if err != nil {
				t.Fatal(err)
			}
			server, reason, err := p.currentServer(ca.cert, names, now)
			if err != nil || reason != "" {
				t.Fatalf("after Renew: %v, still due: %q", err, reason)
			}
			if !server.Equal(res.Server) || server.NotAfter.Sub(now) != ServerLifetime {
				t.Errorf("renewed certificate valid until %s", server.NotAfter)
			}
			again, err := p.Renew(ctx, names)
			if err != nil || again.Renewed {
				t.Errorf("a second Renew: %+v %v", again, err)
			}
		})
	}
}

// A server certificate never outlives the CA that signs it.
func TestServerCertificateEndsWithTheCA(t *testing.T) {
	p, clk := newPKI(t, OwnerOnly)
	res, err := p.Init(context.Background(), testNames(t), false)
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(res.CA.NotAfter.Add(-30 * 24 * time.Hour))
	r, err := p.Renew(context.Background(), testNames(t))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Renewed || !r.Server.NotAfter.Equal(res.CA.NotAfter) {
		t.Errorf("renewed %v until %s; the CA ends %s", r.Renewed, r.Server.NotAfter, res.CA.NotAfter)
	}
	st, err := p.Inspect(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "within one server certificate's life") }) {
		t.Errorf("show does not warn that the CA ends soon: %v", st.Warnings)
	}
}

func TestInspect(t *testing.T) {
	p, clk := newPKI(t, os.Getgid())
	if _, err := p.Inspect(nil); err == nil || !strings.Contains(err.Error(), `field "pki.dir"`) {
		t.Fatalf("Inspect of a missing directory: %v", err)
	}
	if err := os.MkdirAll(p.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Inspect(nil); !errors.Is(err, ErrNoCA) {
		t.Fatalf("Inspect without a CA: %v", err)
	}
	names := testNames(t)
	res, err := p.Init(context.Background(), names, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Inspect(&names)
	if err != nil {
		t.Fatal(err)
	}
	if st.CA.Fingerprint != Fingerprint(res.CA) || len(st.CA.Fingerprint) != 95 {
		t.Errorf("fingerprint %s", st.CA.Fingerprint)
	}
	if nc := st.CA.NameConstraints; nc == nil || !nc.Critical || len(nc.PermittedDNS) != 3 || len(nc.PermittedIP) != 6 {
		t.Errorf("name constraints %+v", st.CA.NameConstraints)
	}
	if st.Server == nil || strings.Join(st.Server.DNSNames, ",") != "mcp.home.arpa,pve1,pve1.lan" ||
		strings.Join(st.Server.IPAddresses, ",") != "192.168.1.10,fd00::10" {
		t.Fatalf("server %+v", st.Server)
	}
	if want := t0.Add(-time.Hour).Add(2 * (ServerLifetime + time.Hour) / 3); !st.Server.RenewAfter.Equal(want) {
		t.Errorf("renew after %s, want %s", st.Server.RenewAfter, want)
	}
	if st.Renewal == nil || st.Renewal.Due {
		t.Errorf("renewal %+v", st.Renewal)
	}
	if len(st.Warnings) != 0 {
		t.Errorf("warnings on a fresh directory: %v", st.Warnings)
	}
	var modes []string
	for _, f := range st.Files {
		modes = append(modes, f.Name+"="+f.Mode)
	}
	if got := strings.Join(modes, " "); got != "ca.pem=0644 ca-key.pem=0600 server.pem=0644 server-key.pem=0640" {
		t.Errorf("modes %s", got)
	}

	// A key others can read, a name change and time passing all show.
	if err := os.Chmod(p.Path(CAKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(80 * 24 * time.Hour))
	st, err = p.Inspect(&names)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Renewal.Due || !strings.Contains(st.Renewal.Reason, "less than a third") {
		t.Errorf("renewal %+v", st.Renewal)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "ca-key.pem is mode 0644 (want 0600): whoever can read it can mint certificates") {
		t.Errorf("warnings %v", st.Warnings)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"sha256_fingerprint"`, `"permitted_dns"`, `"renew_after"`, `"want_mode"`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("JSON lacks %s: %s", field, b)
		}
	}
}

// The trust instructions are golden: a change to them is reviewed.
func TestTrustStepsGolden(t *testing.T) {
	steps := TrustSteps(TrustFor{Host: "pve1", CAPath: "/etc/proxmox-mcp/pki/ca.pem", Fingerprint: "AA:BB", URL: "https://pve1.lan:8443"})
	var b bytes.Buffer
	for _, s := range steps {
		fmt.Fprintf(&b, "%s\n", s.For)
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "  $ %s\n", c)
		}
		if s.Note != "" {
			fmt.Fprintf(&b, "  (%s)\n", s.Note)
		}
	}
	golden(t, "trust.txt", b.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pki -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review and run go test ./pki -update if intended\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

func TestDNSPermitted(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"pve1.lan", true}, {"a.pve1.lan", true}, {"xpve1.lan", false}, {"pve1.lan.com", false}, {"lan", false}, {"b.sub.example", true},
	} {
		if got := dnsPermitted(tc.name, []string{"pve1.lan", ".sub.example"}); got != tc.ok {
			t.Errorf("dnsPermitted(%s) = %v", tc.name, got)
		}
	}
}

func TestPrefixRoundTrip(t *testing.T) {
	for _, p := range PermittedIPRanges() {
		got, ok := prefixOf(ipNets([]netip.Prefix{p})[0])
		if !ok || got != p {
			t.Errorf("%s -> %s %v", p, got, ok)
		}
	}
}

func readAll(t *testing.T, p *PKI) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{CAFile, CAKeyFile, ServerFile, ServerKeyFile} {
		b, err := os.ReadFile(p.Path(f))
		if err == nil {
			out[f] = string(b)
		}
	}
	return out
}

func rm(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
