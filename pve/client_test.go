package pve_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

var ctx = context.Background()

const samples = "../../shared/fixtures/pve-responses"

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samples, name))
	if os.IsNotExist(err) {
		t.Skipf("real PVE response %s is not here: ../shared/fixtures must sit beside the repository", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawReply writes a response with PVE's custom reason phrase, which
// net/http cannot do, by taking over the connection.
func rawReply(w http.ResponseWriter, status int, reason, contentType string, body []byte) {
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", status, reason, contentType, len(body))
	rw.Write(body)
	rw.Flush()
}

// server starts a TLS test server and a client that trusts it.
func server(t testing.TB, h http.HandlerFunc, mod ...func(*pve.Config)) (*pve.Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = false
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cfg := pve.Config{
		BaseURL: srv.URL + "/api2/json",
		Token:   pve.Token{ID: "mcp@pve!operator", Secret: "4f0d6c8e-1c4b-4d3a-9a5e-0123456789ab"},
		TLS:     pve.TLSTrust{Fingerprints: []string{pve.Fingerprint(srv.Certificate().Raw)}},
		Retry:   pve.RetryPolicy{Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond},
	}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := pve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, srv
}

// Real answers decode: the envelope, "total", lists with string VM IDs.
func TestReplayRealSamples(t *testing.T) {
	bodies := map[string][]byte{
		"/api2/json/version":                   sample(t, "version__pve7.2-3__proxmoxer.json"),
		"/api2/json/nodes/pve/lxc":             sample(t, "nodes_node_lxc__community-proxmox.json"),
		"/api2/json/nodes/node1/tasks":         sample(t, "nodes_node_tasks__pve6.4-8__community-proxmox.json"),
		"/api2/json/nodes/pve/qemu/100/config": sample(t, "qemu_config_100_with_digest__packer-plugin-proxmox.json"),
	}
	var gotAuth string
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		body, ok := bodies[r.URL.Path]
		if !ok {
			rawReply(w, 501, "Method 'GET "+r.URL.Path+"' not implemented", "application/json;charset=UTF-8", []byte(`{"data":null}`))
			return
		}
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		if r.URL.Path == "/api2/json/nodes/node1/tasks" {
			var env map[string]any
			json.Unmarshal(body, &env) //nolint:errcheck // a fixture
			env["total"] = 3
			body, _ = json.Marshal(env)
		}
		w.Write(body)
	})
	var v struct{ Version, Release, Repoid string }
	if err := c.Get(ctx, "/version", nil, &v); err != nil || v.Version != "7.2-3" || v.Repoid != "c743d6c1" {
		t.Fatalf("version %+v, %v", v, err)
	}
	if gotAuth != "PVEAPIToken=mcp@pve!operator=4f0d6c8e-1c4b-4d3a-9a5e-0123456789ab" {
		t.Errorf("Authorization %q", gotAuth)
	}
	var cts []struct {
		VMID json.Number `json:"vmid"`
		Name string      `json:"name"`
	}
	if err := c.Get(ctx, "/nodes/pve/lxc", nil, &cts); err != nil || len(cts) != 4 || cts[0].VMID != "103" {
		t.Fatalf("lxc list %+v, %v", cts, err)
	}
	resp, err := c.Do(ctx, "GET", "/nodes/node1/tasks", nil)
	if err != nil || resp.Total == nil || *resp.Total != 3 {
		t.Fatalf("tasks total %v, %v", resp, err)
	}
	var conf map[string]any
	if err := c.Get(ctx, "/nodes/pve/qemu/100/config", nil, &conf); err != nil || conf["digest"] != "1ac0a42d3ead982a5631ee77a9444b44e5ff5456" || conf["memory"] != "2048" {
		t.Fatalf("config %v, %v", conf, err)
	}
}

// Every error shape PVE produces becomes a typed error with PVE's message.
func TestErrorDecoding(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		reason      string
		contentType string
		body        []byte
		is          error
		message     string
		errs        map[string]string
	}{
		{"400 before libpve-http-server 5.2 (message only in the status line)", 400, "Parameter verification failed.", "application/json;charset=UTF-8",
			sample(t, "error_400_parameter_verification__body__whmcs-issue92.json"), pve.ErrParameter, "Parameter verification failed.",
			map[string]string{"vmid": "invalid format - value does not look like a valid VM ID", "ipconfig0": "invalid format - format error\nipconfig0.gw: invalid format - value does not look like a valid IPv4 address"}},
		{"403 from a real report", 403, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)", "application/json;charset=UTF-8",
			sample(t, "error_403_permission_check_failed__body__packer-issue213.json"), pve.ErrPermission, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)", nil},
		{"401 without a body", 401, "No ticket", "", nil, pve.ErrAuthentication, "No ticket", nil},
		{"500 stale digest with a message (5.2 and later)", 500, "detected modified configuration - file changed by other user? Try again.", "application/json;charset=UTF-8",
			[]byte(`{"data":null,"message":"detected modified configuration - file changed by other user? Try again.\n"}`), pve.ErrDigestMismatch,
			"detected modified configuration - file changed by other user? Try again.", nil},
		{"500 other", 500, "VM 100 not running", "application/json;charset=UTF-8", []byte(`{"data":null}`), pve.ErrServer, "VM 100 not running", nil},
		{"501", 501, "Method 'GET /nodes/x/y' not implemented", "application/json;charset=UTF-8", []byte(`{"data":null}`), pve.ErrNotImplemented, "Method 'GET /nodes/x/y' not implemented", nil},
		{"595 unreachable node", 595, "Errors during connection establishment, proxy handler: No route to host", "", nil, pve.ErrProxy, "Errors during connection establishment, proxy handler: No route to host", nil},
		{"596 broken proxy", 596, "Broken pipe", "", nil, pve.ErrProxy, "Broken pipe", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				rawReply(w, tc.status, tc.reason, tc.contentType, tc.body)
			})
			_, err := c.Do(ctx, "PUT", "/nodes/pve/qemu/100/config", url.Values{"cores": {"2"}})
			var apiErr *pve.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v is not an APIError", err)
			}
			if apiErr.Status != tc.status || apiErr.Message != tc.message || !errors.Is(err, tc.is) {
				t.Errorf("got %d %q (is %v: %v)", apiErr.Status, apiErr.Message, tc.is, errors.Is(err, tc.is))
			}
			for k, v := range tc.errs {
				if apiErr.Errors[k] != v {
					t.Errorf("errors[%s] = %q, want %q", k, apiErr.Errors[k], v)
				}
			}
			if errors.Is(err, pve.ErrOutcomeUnknown) {
				t.Error("a PVE answer is not an unknown outcome")
			}
		})
	}
}

// GETs are retried on 429, 502 and 503 within the attempt limit and the
// budget; writes are never retried.
func TestRetries(t *testing.T) {
	var calls atomic.Int32
	fails := int32(2)
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n <= fails {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":{"ok":1}}`))
	})
	if err := c.Get(ctx, "/version", nil, nil); err != nil || calls.Load() != 3 {
		t.Fatalf("GET after two 429s: %v in %d calls", err, calls.Load())
	}
	calls.Store(0)
	fails = 10
	if _, err := c.Do(ctx, "GET", "/version", nil); err == nil || calls.Load() != 3 {
		t.Fatalf("GET that keeps failing: %v in %d calls, want 3", err, calls.Load())
	}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		calls.Store(0)
		if _, err := c.Do(ctx, method, "/nodes/pve/qemu/100/status/start", nil); err == nil || calls.Load() != 1 {
			t.Errorf("%s: %v in %d calls, want exactly one", method, err, calls.Load())
		}
	}

	// The budget stops retry storms: with a budget of 1, only one retry.
	var n atomic.Int32
	c2, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}, func(cfg *pve.Config) { cfg.Retry.Budget = 1 })
	c2.Do(ctx, "GET", "/a", nil) //nolint:errcheck // counting calls
	c2.Do(ctx, "GET", "/b", nil) //nolint:errcheck // counting calls
	if n.Load() != 3 {
		t.Errorf("%d calls with a budget of one retry, want 3 (2 + 1)", n.Load())
	}
}

// A write whose connection dies after it was sent is "outcome unknown";
// one refused before sending is an ordinary error.
func TestOutcomeUnknown(t *testing.T) {
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) //nolint:errcheck // consume the write
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	_, err := c.Do(ctx, "POST", "/nodes/pve/qemu/100/status/start", url.Values{"timeout": {"30"}})
	var unknown *pve.OutcomeUnknownError
	if !errors.As(err, &unknown) || unknown.Method != "POST" || !strings.Contains(err.Error(), "check the state before retrying") {
		t.Fatalf("dropped write: %v", err)
	}

	// Nothing listens: the write never left.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	dead, err := pve.New(pve.Config{BaseURL: "https://" + addr + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"},
		TLS: pve.TLSTrust{Fingerprints: []string{strings.Repeat("AB:", 31) + "AB"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dead.Do(ctx, "POST", "/x", nil)
	if err == nil || errors.Is(err, pve.ErrOutcomeUnknown) {
		t.Fatalf("refused connection: %v, want a plain error", err)
	}
}

func TestMalformedSuccessBody(t *testing.T) {
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`<html>maintenance</html>`))
	})
	if _, err := c.Do(ctx, "GET", "/version", nil); !errors.Is(err, pve.ErrBadResponse) {
		t.Errorf("GET: %v", err)
	}
	if _, err := c.Do(ctx, "POST", "/x", nil); !errors.Is(err, pve.ErrOutcomeUnknown) || !errors.Is(err, pve.ErrBadResponse) {
		t.Errorf("POST: %v", err)
	}
}

func TestCompressedAndEncoded(t *testing.T) {
	var path, query, body string
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		path, query = r.URL.EscapedPath(), r.URL.RawQuery
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			t.Error("the client does not accept gzip")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":null}`))
	})
	vol := pve.Path("nodes", "pve1", "storage", "local", "content", "local:iso/debian 12.iso")
	if vol != "/nodes/pve1/storage/local/content/local:iso%2Fdebian%2012.iso" {
		t.Fatalf("Path = %q", vol)
	}
	if _, err := c.Do(ctx, "DELETE", vol, url.Values{"delay": {"5"}}); err != nil {
		t.Fatal(err)
	}
	if path != "/api2/json"+vol || query != "delay=5" {
		t.Errorf("sent %s?%s", path, query)
	}
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "name": {"a b"}}); err != nil {
		t.Fatal(err)
	}
	if body != "name=a+b&vmid=100" {
		t.Errorf("form body %q", body)
	}
}

func TestConfigRefused(t *testing.T) {
	tok := pve.Token{ID: "mcp@pve!op", Secret: "x"}
	fp := []string{strings.Repeat("00:", 31) + "00"}
	for name, cfg := range map[string]pve.Config{
		"plain http":        {BaseURL: "http://127.0.0.1:8006/api2/json", Token: tok, TLS: pve.TLSTrust{Fingerprints: fp}},
		"no trust":          {Token: tok},
		"bad fingerprint":   {Token: tok, TLS: pve.TLSTrust{Fingerprints: []string{"AB:CD"}}},
		"token without !":   {Token: pve.Token{ID: "root@pam", Secret: "x"}, TLS: pve.TLSTrust{Fingerprints: fp}},
		"empty secret":      {Token: pve.Token{ID: "a@pve!b"}, TLS: pve.TLSTrust{Fingerprints: fp}},
		"missing CA file":   {Token: tok, TLS: pve.TLSTrust{CAFile: "/nonexistent/ca.pem"}},
		"missing cert file": {Token: tok, TLS: pve.TLSTrust{CertFile: "/nonexistent/cert.pem"}},
	} {
		if _, err := pve.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := pve.ParseToken("mcp@pve!operator=4f0d6c8e"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "mcp@pve!operator", "mcp@pve=x", "=x"} {
		if _, err := pve.ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q) accepted", bad)
		}
	}
}

func TestSecretsRedact(t *testing.T) {
	tok := pve.Token{ID: "mcp@pve!operator", Secret: "very-secret-uuid"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "token", tok, "secret", tok.Secret)
	js, _ := json.Marshal(tok)
	for _, out := range []string{fmt.Sprint(tok), fmt.Sprintf("%+v", tok), fmt.Sprintf("%#v", tok), buf.String(), string(js)} {
		if strings.Contains(out, "very-secret-uuid") {
			t.Errorf("secret leaked: %s", out)
		}
	}
}

// TLS trust: a pinned fingerprint, the host's certificate file (re-read
// when it is replaced), or a CA; anything else is refused.
func TestTLSTrust(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":"ok"}`))
	}
	// Wrong pin.
	_, srv := server(t, ok)
	bad, _ := pve.New(pve.Config{BaseURL: srv.URL + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"},
		TLS: pve.TLSTrust{Fingerprints: []string{strings.Repeat("AB:", 31) + "AB"}}})
	if _, err := bad.Do(ctx, "GET", "/version", nil); err == nil || !strings.Contains(err.Error(), pve.Fingerprint(srv.Certificate().Raw)) {
		t.Errorf("wrong pin: %v", err)
	}

	// The host's certificate file, renewed under a running client.
	dir := t.TempDir()
	ca, caKey := newCA(t)
	leaf1 := newLeaf(t, ca, caKey)
	leaf2 := newLeaf(t, ca, caKey)
	certFile := filepath.Join(dir, "pveproxy-ssl.pem")
	os.WriteFile(certFile, pemCert(leaf1.Certificate[0]), 0o644)
	srv1 := tlsServer(t, ok, leaf1)
	c, err := pve.New(pve.Config{BaseURL: srv1.URL + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"}, TLS: pve.TLSTrust{CertFile: certFile}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "GET", "/version", nil); err != nil {
		t.Fatalf("cert file: %v", err)
	}
	srv1.Close()
	c.Close()
	srv2 := tlsServer(t, ok, leaf2) // the certificate was renewed...
	c2, _ := pve.New(pve.Config{BaseURL: srv2.URL + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"}, TLS: pve.TLSTrust{CertFile: certFile}})
	if _, err := c2.Do(ctx, "GET", "/version", nil); err == nil {
		t.Fatal("a certificate not in the file was trusted")
	}
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(certFile, pemCert(leaf2.Certificate[0]), 0o644) // ...and the file with it
	if _, err := c2.Do(ctx, "GET", "/version", nil); err != nil {
		t.Fatalf("after the file was renewed: %v", err)
	}

	// A CA that signs pveproxy's certificate.
	caFile := filepath.Join(dir, "pve-root-ca.pem")
	os.WriteFile(caFile, pemCert(ca.Raw), 0o644)
	c3, _ := pve.New(pve.Config{BaseURL: srv2.URL + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"}, TLS: pve.TLSTrust{CAFile: caFile}})
	if _, err := c3.Do(ctx, "GET", "/version", nil); err != nil {
		t.Fatalf("CA: %v", err)
	}
	other, _ := newCA(t)
	os.WriteFile(caFile, pemCert(other.Raw), 0o644)
	c4, _ := pve.New(pve.Config{BaseURL: srv2.URL + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"}, TLS: pve.TLSTrust{CAFile: caFile}})
	if _, err := c4.Do(ctx, "GET", "/version", nil); err == nil {
		t.Fatal("a certificate of another CA was trusted")
	}
}

func TestExitOutcome(t *testing.T) {
	for exit, want := range map[string][2]int{
		"OK":                    {1, 0},
		"WARNINGS: 3":           {1, 3},
		"WARNINGS: x":           {0, 0},
		"interrupted by signal": {0, 0},
		"":                      {0, 0},
		"command 'ifreload -a' failed: exit code 1": {0, 0},
	} {
		ok, n := pve.ExitOutcome(exit)
		if (ok != (want[0] == 1)) || n != want[1] {
			t.Errorf("ExitOutcome(%q) = %v, %d", exit, ok, n)
		}
	}
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "Proxmox Virtual Environment"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "pve1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames: []string{"localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func tlsServer(t *testing.T, h http.HandlerFunc, cert tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// A pinned certificate renewed behind the client (a custom or ACME
// pveproxy certificate, pinned with the cluster CA beside it): the refusal
// names the pin it no longer matches, before the CA's own refusal, so that
// the daemon's error says what changed.
func TestTLSPinRenewed(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":"ok"}`))
	}
	dir := t.TempDir()
	ca, _ := newCA(t)
	caFile := filepath.Join(dir, "pve-root-ca.pem")
	if err := os.WriteFile(caFile, pemCert(ca.Raw), 0o644); err != nil {
		t.Fatal(err)
	}
	otherCA, otherKey := newCA(t)
	renewed := tlsServer(t, ok, newLeaf(t, otherCA, otherKey))
	pin := strings.Repeat("AB:", 31) + "AB"
	for name, trust := range map[string]pve.TLSTrust{
		"pin":        {Fingerprints: []string{pin}},
		"pin and CA": {Fingerprints: []string{pin}, CAFile: caFile},
	} {
		c, err := pve.New(pve.Config{BaseURL: renewed.URL + "/api2/json", Token: pve.Token{ID: "a@pve!b", Secret: "s"}, TLS: trust})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Do(ctx, "GET", "/version", nil)
		served := pve.Fingerprint(renewed.Certificate().Raw)
		if err == nil || !strings.Contains(err.Error(), "pveproxy certificate "+served+" is not trusted: it is not the pinned "+pin+" (renewed?)") {
			t.Errorf("%s: %v; want the served certificate and the pin it does not match", name, err)
		}
		if name == "pin and CA" && !strings.Contains(fmt.Sprint(err), "x509: certificate signed by unknown authority") {
			t.Errorf("%s: %v; want the CA's refusal too", name, err)
		}
		c.Close()
	}
}
