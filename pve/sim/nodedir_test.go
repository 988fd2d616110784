package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// userCfg is a user.cfg as PVE 9 writes it after `proxmox-mcp install`
// (write_user_config's order and joins).
const userCfg = `user:proxmox-mcp@pve:1:0::::proxmox-mcp daemon%3A API tokens only::
token:proxmox-mcp@pve!operator:0:1:proxmox-mcp operator tier:
token:proxmox-mcp@pve!read-only:0:1:proxmox-mcp read-only tier:
user:root@pam:1:0:::root@example.com:::

group:admins:root@pam::

pool:prod:Production:100,200:local:

role:PMCPOperator:Datastore.AllocateSpace,VM.Backup,VM.PowerMgmt,VM.Snapshot,VM.Snapshot.Rollback:

acl:1:/:proxmox-mcp@pve:Administrator:
acl:1:/:proxmox-mcp@pve!read-only:PVEAuditor:
acl:1:/:proxmox-mcp@pve!operator:PMCPOperator,PVEAuditor:
`

func TestUserConfigRoundTrip(t *testing.T) {
	c, err := ParseUserConfig([]byte(userCfg))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Users["proxmox-mcp@pve"]
	if u == nil || !u.Enable || u.Comment != "proxmox-mcp daemon: API tokens only" || len(u.Tokens) != 2 || !u.Tokens["operator"].Privsep {
		t.Fatalf("proxmox-mcp@pve = %+v", u)
	}
	if got := c.Roles["PMCPOperator"]; len(got) != 5 {
		t.Errorf("PMCPOperator = %v", got)
	}
	if len(c.ACL) != 4 {
		t.Errorf("ACL = %+v, want 4 entries (the operator line names two roles)", c.ACL)
	}
	if c.ACL[0].Type() != "user" || c.ACL[1].Type() != "token" {
		t.Errorf("types %s %s", c.ACL[0].Type(), c.ACL[1].Type())
	}
	// Written again, it reads the same; the ACL is grouped by role list as
	// PVE groups it.
	out := string(c.Marshal())
	want := `user:proxmox-mcp@pve:1:0::::proxmox-mcp daemon%3A API tokens only::
token:proxmox-mcp@pve!operator:0:1:proxmox-mcp operator tier:
token:proxmox-mcp@pve!read-only:0:1:proxmox-mcp read-only tier:
user:root@pam:1:0:::root@example.com:::

group:admins:root@pam::

pool:prod:Production:100,200:local:

role:PMCPOperator:Datastore.AllocateSpace,VM.Backup,VM.PowerMgmt,VM.Snapshot,VM.Snapshot.Rollback:

acl:1:/:proxmox-mcp@pve:Administrator:
acl:1:/:proxmox-mcp@pve!operator:PMCPOperator,PVEAuditor:
acl:1:/:proxmox-mcp@pve!read-only:PVEAuditor:
`
	if out != want {
		t.Errorf("Marshal:\n%s\nwant:\n%s", out, want)
	}
}

func TestParseUserConfigRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown kind", "realm:x:\n", `line 1: unknown kind "realm"`},
		{"token before its user", "token:a@pve!t:0:1::\n", "user a@pve is not defined before it"},
		{"bad user", "user:nobody:1:0:::::\n", `user "nobody" is not user@realm`},
		{"bad expire", "user:a@pve:1:soon:::::\n", `expire "soon"`},
		{"bad path", "acl:1:no spaces here:a@pve:PVEAuditor:\n", "is not a valid path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseUserConfig([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ParseTokenConfig([]byte("a@pve!t\n")); err == nil {
		t.Error("a token.cfg line without a secret was accepted")
	}
}

func demoSim(t *testing.T) *Sim {
	t.Helper()
	reg, err := schema.Parse(DemoSchema())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Registry: reg, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A new file each time, renamed into place as pmxcfs and pveum do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, h http.Handler, token, path string) int {
	t.Helper()
	req := httptest.NewRequest("GET", APIPrefix+path, nil)
	req.Header.Set("Authorization", "PVEAPIToken="+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestNodeDirAccess: the tokens a pveum writes into user.cfg and
// token.cfg are the ones the simulator accepts, with the ACL's roles, and
// a change of the files applies on the next request.
func TestNodeDirAccess(t *testing.T) {
	dir := t.TempDir()
	n, err := OpenNodeDir(demoSim(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh node: the simulator's own tokens are gone.
	if code := get(t, n, "mcp@pve!read-only=x", "/version"); code != 401 {
		t.Errorf("a default token on a fresh node: %d, want 401", code)
	}
	writeFile(t, filepath.Join(dir, TokenCfg), "proxmox-mcp@pve!operator 11111111-1111-4111-8111-111111111111\nproxmox-mcp@pve!read-only 22222222-2222-4222-8222-222222222222\n")
	writeFile(t, filepath.Join(dir, UserCfg), userCfg)
	ro := "proxmox-mcp@pve!read-only=22222222-2222-4222-8222-222222222222"
	op := "proxmox-mcp@pve!operator=11111111-1111-4111-8111-111111111111"
	for _, tc := range []struct {
		token, path string
		want        int
	}{
		{ro, "/version", 200},
		{op, "/cluster/resources", 200},
		{"proxmox-mcp@pve!read-only=wrong", "/version", 401},
		{"proxmox-mcp@pve!admin=22222222-2222-4222-8222-222222222222", "/version", 401},
	} {
		if code := get(t, n, tc.token, tc.path); code != tc.want {
			t.Errorf("%s GET %s: %d, want %d", tc.token, tc.path, code, tc.want)
		}
	}
	// The read-only token may not start a guest, the operator's may.
	start := func(token string) int {
		req := httptest.NewRequest("POST", APIPrefix+"/nodes/pve1/qemu/101/status/start", nil)
		req.Header.Set("Authorization", "PVEAPIToken="+token)
		rec := httptest.NewRecorder()
		n.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := start(ro); code != 403 {
		t.Errorf("read-only start: %d, want 403", code)
	}
	if code := start(op); code != 200 {
		t.Errorf("operator start: %d, want 200", code)
	}
	// The token removed (pveum user token remove): refused at once.
	writeFile(t, filepath.Join(dir, UserCfg), strings.Replace(userCfg, "token:proxmox-mcp@pve!read-only:0:1:proxmox-mcp read-only tier:\n", "", 1))
	if code := get(t, n, ro, "/version"); code != 401 {
		t.Errorf("a removed token: %d, want 401", code)
	}
	// A broken file keeps the last good access.
	writeFile(t, filepath.Join(dir, UserCfg), "garbage\n")
	if code := get(t, n, op, "/version"); code != 200 {
		t.Errorf("after a broken user.cfg: %d, want 200 (the last good access)", code)
	}
	if _, err := OpenNodeDir(demoSim(t), dir); err == nil || !strings.Contains(err.Error(), "user.cfg line 1") {
		t.Errorf("OpenNodeDir of a broken user.cfg: %v", err)
	}
}

// TestListenNodeCertificate: pveproxy's certificate is the custom one when
// it exists, else the node's own, each verified by its CA.
func TestListenNodeCertificate(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey := testCA(t)
	nodePEM, nodeKey := testLeaf(t, caCert, caKey)
	writeFile(t, filepath.Join(dir, NodeCert), nodePEM)
	writeFile(t, filepath.Join(dir, NodeKey), nodeKey)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)

	serve := func() (*Server, func()) {
		n, err := OpenNodeDir(demoSim(t), dir)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := ListenNode(n, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		return srv, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	srv, stop := serve()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(srv.URL, APIPrefix), "https://"), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("the node certificate does not verify against its CA: %v", err)
	}
	conn.Close()
	stop()

	customPEM, customKey := testLeaf(t, nil, nil)
	writeFile(t, filepath.Join(dir, CustomCert), customPEM)
	writeFile(t, filepath.Join(dir, CustomKey), customKey)
	srv, stop = serve()
	defer stop()
	block, _ := pem.Decode([]byte(customPEM))
	conn, err = tls.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(srv.URL, APIPrefix), "https://"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the served certificate is compared below
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].Raw; string(got) != string(block.Bytes) {
		t.Error("with local/pveproxy-ssl.pem present, another certificate is served")
	}
}

func testCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Proxmox Virtual Environment"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// testLeaf is a server certificate for 127.0.0.1 signed by ca (self-signed
// without one), as PEM with its key.
func testLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "pve1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost", "pve1"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if ca == nil {
		ca, caKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}
