package booted

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// What install --mode lan makes, as docs/lan.md names it.
const (
	pkiDir       = "/etc/proxmox-mcp/pki"
	renewService = "proxmox-mcp-pki-renew.service"
	renewTimer   = "proxmox-mcp-pki-renew.timer"
	// lanName is the DNS name the operator gives the LAN listener; a
	// client on the LAN resolves it to the container's address.
	lanName = "pve1.home.arpa"
	lanPort = "8443"
)

// pveNode boots a PVE node with the package copied to /root, and returns
// the node's stand-ins too (its cluster CA signs certificates for it).
func pveNode(t *testing.T) (*Container, *PVENode, built) {
	t.Helper()
	dir := rootfs(t)
	b := build(t)
	n := &PVENode{SimBinary: b.Binary, FakePVE: b.FakePVE, APIDoc: apidoc(t)}
	c := Boot(t, dir, Options{Prepare: n.Prepare})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPVE(ctx); err != nil {
		t.Fatal(err)
	}
	c.CopyFile(b.Deb, "/root/"+filepath.Base(b.Deb), 0o644)
	return c, n, b
}

// aptInstall installs the package as an operator does.
func aptInstall(t *testing.T, c *Container, b built) {
	t.Helper()
	deb := "/root/" + filepath.Base(b.Deb)
	if res := c.Run(context.Background(), "apt-get", "install", "-y", "--no-install-recommends", deb); !res.OK() {
		t.Fatalf("apt-get install %s: %s", deb, res)
	}
}

// lanKeyFile is the initial key file of a LAN install.
type lanKeyFile struct {
	Key       string `json:"key"`
	Endpoints struct {
		Loopback string   `json:"loopback"`
		LAN      []string `json:"lan"`
	} `json:"endpoints"`
}

// installLAN runs `proxmox-mcp install --mode lan --yes` with the LAN
// listener on the container's private address, and reads the initial
// key file it wrote.
func installLAN(t *testing.T, c *Container) (Result, lanKeyFile) {
	t.Helper()
	res := c.Run(context.Background(), "proxmox-mcp", "install", "--mode", "lan", "--lan-address", c.IP, "--lan-name", lanName, "--yes")
	if !res.OK() {
		t.Fatalf("proxmox-mcp install --mode lan: %s\nstatus:\n%s", res, c.Run(context.Background(), "systemctl", "status", "--no-pager", unit).Stdout)
	}
	var key lanKeyFile
	data, err := c.ReadFile(InitialKeyFilePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &key); err != nil || key.Key == "" {
		t.Fatalf("the initial key file: %v: %s", err, data)
	}
	return res, key
}

// InitialKeyFilePath is where install puts the first root key.
const InitialKeyFilePath = "/root/proxmox-mcp-initial-key.json"

// fingerprintLine is what install prints of the CA it made.
var fingerprintLine = regexp.MustCompile(`CA SHA-256 fingerprint: ([0-9A-F:]{95})`)

// lanTLS is a client machine on the LAN that trusts the CA: the name
// resolves to the container's address (as /etc/hosts or the LAN's DNS
// would), and the CA is its only root.
type lanTLS struct {
	c     *Container
	roots *x509.CertPool
}

func (l lanTLS) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == lanName {
		addr = net.JoinHostPort(l.c.IP, port)
	}
	return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
}

func (l lanTLS) config(serverName string) *tls.Config {
	return &tls.Config{RootCAs: l.roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
}

// served is the certificate the LAN listener presents to a handshake for
// serverName, verified against the CA.
func (l lanTLS) served(ctx context.Context, serverName string) (*x509.Certificate, tls.ConnectionState, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: l.config(serverName)}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(l.c.IP, lanPort))
	if err != nil {
		return nil, tls.ConnectionState{}, err
	}
	defer conn.Close()
	st := conn.(*tls.Conn).ConnectionState()
	return st.PeerCertificates[0], st, nil
}

// waitServed polls handshakes until the listener serves a certificate for
// which ok holds.
func (l lanTLS) waitServed(t *testing.T, what string, within time.Duration, ok func(*x509.Certificate) bool) (*x509.Certificate, time.Duration) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last *x509.Certificate
	var lastErr error
	for ctx.Err() == nil {
		hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
		cert, _, err := l.served(hctx, lanName)
		hcancel()
		if err == nil && ok(cert) {
			return cert, time.Since(start)
		}
		last, lastErr = cert, err
		time.Sleep(100 * time.Millisecond)
	}
	serial := "none"
	if last != nil {
		serial = fmt.Sprintf("%X", last.SerialNumber)
	}
	t.Fatalf("the LAN listener did not serve %s within %s: last served serial %s, last error %v", what, within, serial, lastErr)
	return nil, 0
}

// session is an MCP session over LAN TLS to url.
func (l lanTLS) session(t *testing.T, url, key string) (*client.Client, context.Context) {
	t.Helper()
	host := strings.TrimPrefix(url, "https://")
	host, _, _ = strings.Cut(host, "/")
	name, _, _ := net.SplitHostPort(host)
	hc := &http.Client{Transport: &http.Transport{DialContext: l.dial, TLSClientConfig: l.config(name), ForceAttemptHTTP2: true}}
	return mcpSession(t, url, key, hc, "booted-lan over LAN TLS")
}

// trustCA takes the CA from the host as docs/lan.md says: copy ca.pem,
// and compare its SHA-256 fingerprint with the one install printed and
// `pki show` prints on the host before trusting it.
func trustCA(t *testing.T, c *Container, installOut string) (lanTLS, []byte) {
	t.Helper()
	caPEM, err := c.ReadFile(pkiDir + "/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil {
		t.Fatalf("ca.pem holds no PEM block:\n%s", caPEM)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	got := fingerprintOf(ca.Raw)
	m := fingerprintLine.FindStringSubmatch(installOut)
	if m == nil {
		t.Fatalf("install printed no CA fingerprint:\n%s", installOut)
	}
	if m[1] != got {
		t.Fatalf("ca.pem has SHA-256 %s, install printed %s: not the CA to trust", got, m[1])
	}
	var show struct {
		CA struct {
			Fingerprint     string `json:"sha256_fingerprint"`
			NameConstraints *struct {
				Critical bool `json:"critical"`
			} `json:"name_constraints"`
		} `json:"ca"`
	}
	out := c.MustIn(t, "proxmox-mcp", "pki", "show", "--json")
	if err := json.Unmarshal([]byte(out), &show); err != nil || show.CA.Fingerprint != got {
		t.Fatalf("pki show --json: %v: fingerprint %q, ca.pem has %s", err, show.CA.Fingerprint, got)
	}
	if !ca.PermittedDNSDomainsCritical || len(ca.PermittedIPRanges) == 0 || show.CA.NameConstraints == nil || !show.CA.NameConstraints.Critical {
		t.Errorf("the CA is not name-constrained (critical): DNS %v, IP ranges %v", ca.PermittedDNSDomains, ca.PermittedIPRanges)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return lanTLS{c: c, roots: roots}, caPEM
}

// fingerprintOf is SHA-256 of DER as colon-separated upper-case hex.
func fingerprintOf(der []byte) string {
	sum := sha256.Sum256(der)
	h := fmt.Sprintf("%X", sum[:])
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// dueCertificate is a server certificate as `pki renew` would find it on
// day 70 of its 90: issued by the CA (its key read from the host), for
// the names of like, with less than a third of its life left.
func dueCertificate(caPEM, caKeyPEM []byte, like *x509.Certificate, now time.Time) (certPEM, keyPEM []byte, cert *x509.Certificate, err error) {
	caBlock, _ := pem.Decode(caPEM)
	keyBlock, _ := pem.Decode(caKeyPEM)
	if caBlock == nil || keyBlock == nil {
		return nil, nil, nil, errors.New("the CA or its key is not PEM")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		return nil, nil, nil, err
	}
	var caKey any
	if caKey, err = x509.ParsePKCS8PrivateKey(keyBlock.Bytes); err != nil {
		if caKey, err = x509.ParseECPrivateKey(keyBlock.Bytes); err != nil {
			return nil, nil, nil, fmt.Errorf("the CA key: %w", err)
		}
	}
	signer, ok := caKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, nil, fmt.Errorf("the CA key is a %T", caKey)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn.Add(sn, big.NewInt(1)),
		Subject:      like.Subject,
		NotBefore:    now.Add(-70 * 24 * time.Hour), NotAfter: now.Add(20 * 24 * time.Hour),
		KeyUsage: like.KeyUsage, ExtKeyUsage: like.ExtKeyUsage, BasicConstraintsValid: true,
		DNSNames: like.DNSNames, IPAddresses: like.IPAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err = x509.ParseCertificate(der)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, cert, err
}

// replaceServerCert puts a server certificate and key into pki.dir as
// `pki renew` does: each file made beside its final name with the
// current file's owner and mode, then renamed over it, the key first.
func replaceServerCert(t *testing.T, c *Container, certPEM, keyPEM []byte) {
	t.Helper()
	c.WriteFile(pkiDir+"/.next-server-key.pem", keyPEM, 0o600)
	c.WriteFile(pkiDir+"/.next-server.pem", certPEM, 0o644)
	c.MustIn(t, "sh", "-ec", `cd `+pkiDir+`
chown --reference=server-key.pem .next-server-key.pem && chmod --reference=server-key.pem .next-server-key.pem
chown --reference=server.pem .next-server.pem && chmod --reference=server.pem .next-server.pem
mv -f .next-server-key.pem server-key.pem
mv -f .next-server.pem server.pem`)
}

// nodeSDK is the official TypeScript SDK's client script of the
// end-to-end tests (tests/e2e/node/run.mjs) and the node that runs it, or
// a skip (a failure under PMCP_REQUIRE_E2E=1) saying what is missing.
func nodeSDK(t *testing.T) (node, dir string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 and %s", RequireEnv, msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	dir = filepath.Join(repoRoot(t), "tests", "e2e", "node")
	for _, p := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/client"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json")); err != nil {
			missing("the npm package %s is not installed in %s/node_modules (make e2e-deps)", p, dir)
		}
	}
	return node, dir
}

// sdkResult is what run.mjs's call scenario prints.
type sdkResult struct {
	Connected       bool   `json:"connected"`
	Era             string `json:"era"`
	ProtocolVersion string `json:"protocolVersion"`
	ConnectError    *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"connectError"`
	Error *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
	Tools []string `json:"tools"`
	Call  *struct {
		IsError       bool           `json:"isError"`
		Structured    map[string]any `json:"structured"`
		Text          string         `json:"text"`
		ProtocolError any            `json:"protocolError"`
	} `json:"call"`
}

// runSDK runs the SDK client from the host with the key in $PMCP_KEY and
// env added (NODE_EXTRA_CA_CERTS, as docs/lan.md tells Node clients).
func runSDK(t *testing.T, node, dir, key string, env []string, args ...string) sdkResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"run.mjs"}, args...)...)
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "NODE_EXTRA_CA_CERTS=") && !strings.HasPrefix(e, "PMCP_KEY=") && !strings.HasPrefix(e, "NODE_TLS_REJECT_UNAUTHORIZED=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(append(cmd.Env, "PMCP_KEY="+key), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res sdkResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("run.mjs %s printed no result: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	if res.Error != nil {
		t.Fatalf("run.mjs %s failed: %s: %s\nstderr:\n%s", strings.Join(args, " "), res.Error.Name, res.Error.Message, stderr.String())
	}
	return res
}

// servingPID is the daemon's MainPID with NRestarts=0, or a failure.
func servingPID(t *testing.T, c *Container) string {
	t.Helper()
	p := c.show(t, unit, "ActiveState", "SubState", "NRestarts", "MainPID")
	if p["ActiveState"] != "active" || p["SubState"] != "running" || p["NRestarts"] != "0" || p["MainPID"] == "0" {
		t.Fatalf("systemctl show %s: %v; want active, running, NRestarts=0", unit, p)
	}
	return p["MainPID"]
}

// TestBootedLAN: `proxmox-mcp install --mode lan` on a booted Debian 13
// with systemd 257, the LAN listener on the container's private address:
// a client machine on the LAN (the test's host, through the veth pair)
// trusts the CA the installer made after comparing its fingerprint, and
// calls a tool over TLS with the initial root key, with mcp-go and with
// the official TypeScript SDK; then the daily renewal timer is listed,
// the certificate is made due, the renewal service re-issues it, and the
// running daemon serves the new one without a restart.
func TestBootedLAN(t *testing.T) {
	t.Parallel()
	c, _, b := pveNode(t)
	aptInstall(t, c, b)

	var installOut string
	var key lanKeyFile
	t.Run("install lan", func(t *testing.T) {
		res, k := installLAN(t, c)
		installOut, key = res.Stdout, k
		t.Logf("proxmox-mcp install --mode lan --lan-address %s --lan-name %s --yes took %s", c.IP, lanName, res.Took.Round(time.Millisecond))
		p := c.show(t, unit, "ActiveState", "SubState", "StatusText", "NRestarts", "UnitFileState", "MainPID")
		if p["ActiveState"] != "active" || p["SubState"] != "running" || p["NRestarts"] != "0" || p["UnitFileState"] != "enabled" {
			t.Errorf("systemctl show %s: %v; want active, running, enabled, NRestarts=0", unit, p)
		}
		if !strings.Contains(p["StatusText"], "lan") {
			t.Errorf("StatusText names no LAN listener: %q", p["StatusText"])
		}
		t.Logf("%s: %v", unit, p)
		want := "https://" + net.JoinHostPort(c.IP, lanPort) + "/mcp"
		if !strings.Contains(strings.Join(key.Endpoints.LAN, " "), want) || !strings.Contains(strings.Join(key.Endpoints.LAN, " "), lanName) {
			t.Errorf("the initial key file's LAN endpoints %v do not name %s and %s", key.Endpoints.LAN, want, lanName)
		}
		if pid, _ := strconv.Atoi(p["MainPID"]); pid > 0 {
			if rss := c.rss(pid); rss > 0 {
				t.Logf("RSS of the running daemon (LAN mode): %.1f MiB", float64(rss)/(1<<20))
			}
		}
	})
	if t.Failed() {
		return
	}
	var lan lanTLS
	var caPEM []byte
	t.Run("tls tool call", func(t *testing.T) {
		lan, caPEM = trustCA(t, c, installOut)
		cert, st, err := lan.served(context.Background(), lanName)
		if err != nil {
			t.Fatalf("a TLS handshake with %s:%s as %s, trusting the CA: %v", c.IP, lanPort, lanName, err)
		}
		t.Logf("LAN TLS: %s, %s, ALPN %q; certificate for %v %v, serial %X", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite),
			st.NegotiatedProtocol, cert.DNSNames, cert.IPAddresses, cert.SerialNumber)
		// Untrusted, the same handshake fails: the CA is what clients trust.
		if _, _, err := (lanTLS{c: c, roots: x509.NewCertPool()}).served(context.Background(), lanName); err == nil {
			t.Errorf("a client that does not trust the CA completed the handshake")
		}
		for _, url := range []string{"https://" + net.JoinHostPort(lanName, lanPort) + "/mcp", "https://" + net.JoinHostPort(c.IP, lanPort) + "/mcp"} {
			mc, ctx := lan.session(t, url, key.Key)
			if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr || !strings.Contains(text, "9.1") {
				t.Fatalf("GET /version over %s with the initial root key: error=%v %s", url, isErr, text)
			}
		}
		jr := c.MustIn(t, "journalctl", "--no-pager", "-u", unit, "PMCP_TRANSPORT=lan", "-o", "json")
		if !strings.Contains(jr, `"PMCP_PATH":"/version"`) || !strings.Contains(jr, c.HostIP) {
			t.Errorf("journalctl -u %s PMCP_TRANSPORT=lan has no row of the LAN call from %s:\n%s", unit, c.HostIP, tail([]byte(jr), 5))
		}
	})
	if t.Failed() {
		return
	}

	t.Run("typescript sdk", func(t *testing.T) {
		node, dir := nodeSDK(t)
		ca := filepath.Join(t.TempDir(), "proxmox-mcp-pve1.pem")
		if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		url := "https://" + net.JoinHostPort(c.IP, lanPort) + "/mcp"
		call := []string{"--transport", "http", "--url", url, "--scenario", "call", "--tool", "proxmox_api_call", "--args", `{"method":"GET","path":"/version"}`}
		for _, sdk := range [][]string{{"--sdk", "v1"}, {"--sdk", "v2", "--negotiation", "auto"}} {
			start := time.Now()
			res := runSDK(t, node, dir, key.Key, []string{"NODE_EXTRA_CA_CERTS=" + ca}, append(sdk, call...)...)
			if !res.Connected || res.Call == nil || res.Call.IsError || res.Call.ProtocolError != nil || !strings.Contains(res.Call.Text, "9.1") {
				t.Errorf("the TypeScript SDK %v over LAN TLS: %+v", sdk, res)
				continue
			}
			t.Logf("TypeScript SDK %s (%s, %s) over LAN TLS trusting the CA (NODE_EXTRA_CA_CERTS): GET /version: %.60s… in %s",
				sdk[1], res.Era, res.ProtocolVersion, res.Call.Text, time.Since(start).Round(time.Millisecond))
		}
		// Without the CA, Node refuses the certificate.
		res := runSDK(t, node, dir, key.Key, nil, append([]string{"--sdk", "v2"}, call...)...)
		if res.Connected {
			t.Errorf("the TypeScript SDK connected without trusting the CA: %+v", res)
		} else if res.ConnectError != nil {
			t.Logf("without NODE_EXTRA_CA_CERTS: %s: %s", res.ConnectError.Name, res.ConnectError.Message)
		}
	})

	t.Run("renewal", func(t *testing.T) {
		// The timer, as an operator lists it.
		timers := c.MustIn(t, "systemctl", "list-timers", "--all", "--no-pager", renewTimer)
		if !strings.Contains(timers, renewTimer) || !strings.Contains(timers, renewService) {
			t.Errorf("systemctl list-timers does not list %s activating %s:\n%s", renewTimer, renewService, timers)
		}
		t.Logf("systemctl list-timers %s:\n%s", renewTimer, timers)
		tp := c.show(t, renewTimer, "ActiveState", "SubState", "UnitFileState", "NextElapseUSecRealtime")
		if tp["ActiveState"] != "active" || tp["SubState"] != "waiting" || tp["UnitFileState"] != "enabled" || tp["NextElapseUSecRealtime"] == "" {
			t.Errorf("systemctl show %s: %v; want active, waiting, enabled, with a next elapse", renewTimer, tp)
		}

		pid := servingPID(t, c)
		current, _, err := lan.served(context.Background(), lanName)
		if err != nil {
			t.Fatal(err)
		}
		// Day 70 of 90: a certificate with less than a third of its life
		// left, issued by the same CA (its key read as root).
		caKey, err := c.ReadFile(pkiDir + "/ca-key.pem")
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, due, err := dueCertificate(caPEM, caKey, current, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		replaceServerCert(t, c, certPEM, keyPEM)
		lan.waitServed(t, "the due certificate", 30*time.Second, func(s *x509.Certificate) bool { return s.SerialNumber.Cmp(due.SerialNumber) == 0 })
		var show struct {
			Renewal *struct {
				Due    bool   `json:"due"`
				Reason string `json:"reason"`
			} `json:"renewal"`
		}
		out := c.MustIn(t, "proxmox-mcp", "pki", "show", "--json")
		if err := json.Unmarshal([]byte(out), &show); err != nil || show.Renewal == nil || !show.Renewal.Due || !strings.Contains(show.Renewal.Reason, "less than a third of its life") {
			t.Fatalf("pki show --json does not say renewal is due (%v): %+v", err, show.Renewal)
		}
		t.Logf("pki show: renewal due: %s", show.Renewal.Reason)
		if res := c.Run(context.Background(), "proxmox-mcp", "doctor"); res.OK() || !strings.Contains(res.Stdout, "due for renewal") || !strings.Contains(res.Stdout, renewTimer) {
			t.Errorf("doctor with a certificate due for renewal: %s", res)
		}

		res := c.Run(context.Background(), "systemctl", "start", renewService)
		if !res.OK() {
			t.Fatalf("systemctl start %s: %s\n%s", renewService, res, c.Journal("-u", renewService, "-o", "cat"))
		}
		rp := c.show(t, renewService, "Result", "ExecMainStatus", "ActiveState")
		if rp["Result"] != "success" || rp["ExecMainStatus"] != "0" {
			t.Errorf("%s: %v; want Result=success, exit 0", renewService, rp)
		}
		if j, ok := c.JournalUntil(saying("renewed the server certificate: less than a third of its life is left"), "-u", renewService, "-o", "cat"); !ok {
			t.Errorf("the journal of %s does not say it renewed the due certificate:\n%s", renewService, j)
		}
		renewed, took := lan.waitServed(t, "the renewed certificate", 30*time.Second, func(s *x509.Certificate) bool { return s.SerialNumber.Cmp(due.SerialNumber) != 0 })
		t.Logf("systemctl start %s took %s; the renewed certificate (serial %X, until %s) was served %s after it returned",
			renewService, res.Took.Round(time.Millisecond), renewed.SerialNumber, renewed.NotAfter.UTC().Format(time.DateOnly), took.Round(time.Millisecond))
		onDisk, err := c.ReadFile(pkiDir + "/server.pem")
		if err != nil {
			t.Fatal(err)
		}
		if block, _ := pem.Decode(onDisk); block == nil || fingerprintOf(block.Bytes) != fingerprintOf(renewed.Raw) {
			t.Errorf("the daemon serves serial %X, which is not server.pem", renewed.SerialNumber)
		}
		if life := time.Until(renewed.NotAfter); life < 89*24*time.Hour {
			t.Errorf("the renewed certificate expires in %s, want about 90 days", life.Round(time.Hour))
		}
		if now := servingPID(t, c); now != pid {
			t.Errorf("the daemon was restarted: MainPID %s, was %s", now, pid)
		}
		if _, ok := c.JournalUntil(saying("TLS certificate reloaded"), "-u", unit, "-o", "cat"); !ok {
			t.Errorf("the daemon's journal does not say it reloaded its certificate")
		}
		mc, ctx := lan.session(t, "https://"+net.JoinHostPort(lanName, lanPort)+"/mcp", key.Key)
		if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr {
			t.Errorf("a call over the renewed certificate: %s", text)
		}
		// The next daily run changes nothing.
		if res := c.Run(context.Background(), "systemctl", "start", renewService); !res.OK() {
			t.Errorf("systemctl start %s again: %s", renewService, res)
		}
		if j, ok := c.JournalUntil(saying("the server certificate is current"), "-u", renewService, "-o", "cat"); !ok {
			t.Errorf("the second run of %s did not find the certificate current:\n%s", renewService, j)
		}
		if res := c.Run(context.Background(), "proxmox-mcp", "doctor"); !res.OK() {
			t.Errorf("doctor after the renewal: %s", res)
		}
	})
}
