package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// lanRig is a daemon with a LAN TLS listener configured on a private
// address (10.77.0.1:8443) and a CA made by pki, as `pki init` makes it.
// This machine may have no private address, so the listener is bound on
// 127.0.0.1 through openLAN's bind seam; clients connect there while
// naming the configured host, as a client on the LAN would.
type lanRig struct {
	*rig
	pki  *pki.PKI
	ca   *x509.Certificate
	pool *x509.CertPool
	lan  config.LAN
	// caKey is ca-key.pem, kept out of the directory while the daemon runs.
	caKey []byte
	// addr is where the listener is bound; base is the URL clients use
	// (https://mcp.pve-test.lan:port).
	addr, base string
}

const lanName = "mcp.pve-test.lan"

func newLANRig(tb testing.TB, edit func(cfg map[string]any)) *lanRig {
	tb.Helper()
	pkiDir := filepath.Join(tb.TempDir(), "pki")
	r := newRig(tb, func(cfg map[string]any) {
		cfg["pki"] = map[string]any{"dir": pkiDir}
		if edit != nil {
			edit(cfg)
		}
	})
	lr := &lanRig{rig: r, lan: config.LAN{Address: "10.77.0.1:8443", Names: []string{lanName}}}
	lr.issue(pkiDir)
	// The daemon never reads the CA key: it is taken away while the daemon
	// runs (TestLANRenewWithoutRestart puts it back for `pki renew`).
	var err error
	if lr.caKey, err = os.ReadFile(lr.pki.Path(pki.CAKeyFile)); err != nil {
		tb.Fatal(err)
	}
	if err := os.Remove(lr.pki.Path(pki.CAKeyFile)); err != nil {
		tb.Fatal(err)
	}
	if err := r.d.openLAN([]config.LAN{lr.lan}, bindLoopback); err != nil {
		tb.Fatal(err)
	}
	r.start()
	lr.addr = r.d.Addresses()["lan"]
	_, port, _ := net.SplitHostPort(lr.addr)
	lr.base = "https://" + lanName + ":" + port
	return lr
}

// bindLoopback binds 127.0.0.1 whatever the configured address.
func bindLoopback(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }

// issue makes the CA and the server certificate as `pki init` does.
func (lr *lanRig) issue(dir string) {
	lr.t.Helper()
	hostname, _ := os.Hostname()
	names, err := pki.NamesFor([]config.LAN{lr.lan}, hostname)
	if err != nil {
		lr.t.Fatal(err)
	}
	if lr.pki, err = pki.New(pki.Options{Dir: dir, Hostname: hostname, KeyGroup: pki.OwnerOnly}); err != nil {
		lr.t.Fatal(err)
	}
	res, err := lr.pki.Init(context.Background(), names, false)
	if err != nil {
		lr.t.Fatal(err)
	}
	lr.ca = res.CA
	lr.pool = x509.NewCertPool()
	lr.pool.AddCert(res.CA)
}

// httpClient reaches the listener whatever the URL's host, trusting roots
// (the system's when nil).
func (lr *lanRig) httpClient(roots *x509.CertPool) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: roots},
		MaxIdleConnsPerHost: 4,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, lr.addr)
		},
	}}
}

// mcpClient is mcp-go's Streamable HTTP client over LAN TLS with a key.
func (lr *lanRig) mcpClient(key string) (*client.Client, context.Context) {
	lr.t.Helper()
	return connectMCP(lr.t, lr.base+"/mcp", key, lr.httpClient(lr.pool), "LAN TLS")
}

// An MCP client that trusts the CA starts a VM over LAN TLS with a key; the
// journal names the LAN transport and the client's address.
func TestLANEndToEnd(t *testing.T) {
	t.Parallel()
	lr := newLANRig(t, nil)
	c, ctx := lr.mcpClient(lr.key("operator"))
	res, content := callTool(t, c, ctx, tools.ToolCall, map[string]any{"method": "POST", "path": "/nodes/pve1/qemu/101/status/start", "wait": 30})
	if res.IsError {
		t.Fatalf("start: %s", resultText(res))
	}
	if task, _ := content["task"].(map[string]any); task["exitstatus"] != "OK" {
		t.Fatalf("task: %v", content)
	}
	events, err := lr.d.jrnl.Tail(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(events, func(ev journal.Event) bool {
		return ev.Kind == journal.KindIntent && ev.PathTemplate == "/nodes/{node}/qemu/{vmid}/status/start"
	})
	if i < 0 {
		t.Fatalf("no intent for the start in %+v", events)
	}
	if p := events[i].Principal; p.Transport != "lan" || p.Source != "127.0.0.1" || p.KeyName != "test-operator" {
		t.Errorf("principal %+v", p)
	}

	// The connection is TLS 1.3 with the CA's certificate for the name.
	resp, err := lr.httpClient(lr.pool).Get(lr.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 || !slices.Contains(resp.TLS.PeerCertificates[0].DNSNames, lanName) {
		t.Errorf("TLS state %+v", resp.TLS)
	}
	// Clients that negotiate HTTP/2 (ALPN h2) are served over it.
	h2 := lr.httpClient(lr.pool)
	h2.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	s := dialLAN(t, h2, lr.base+"/mcp", lr.key("read-only"))
	if err := s.call(tools.ToolCall, map[string]any{"method": "GET", "path": "/version"}); err != nil {
		t.Fatalf("a call over HTTP/2: %v", err)
	}
	resp, err = h2.Get(lr.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Errorf("an h2 client got %s %d", resp.Proto, resp.StatusCode)
	}
	// Plain HTTP on the TLS port gets nothing useful.
	plain, err := http.Get("http://" + lr.addr + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		if plain.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP answered %d %s", plain.StatusCode, body)
		}
	}
}

// The listener accepts only its own Host values: the configured address
// and names (and the host's name) with or without the port; anything else
// is 403 before the key is looked at.
func TestLANHostAllowList(t *testing.T) {
	t.Parallel()
	lr := newLANRig(t, nil)
	_, port, _ := net.SplitHostPort(lr.addr)
	hostname, _ := os.Hostname()
	hc := lr.httpClient(lr.pool)
	for _, tc := range []struct {
		host string
		want int
	}{
		{lanName + ":" + port, http.StatusUnauthorized},
		{lanName, http.StatusUnauthorized},
		{strings.ToUpper(lanName), http.StatusUnauthorized},
		{"10.77.0.1:" + port, http.StatusUnauthorized},
		{hostname + ":" + port, http.StatusUnauthorized},
		{"evil.example", http.StatusForbidden},
		{"evil.example:" + port, http.StatusForbidden},
		{"mcp.pve-test.lan.evil.example", http.StatusForbidden},
		{"127.0.0.1:" + port, http.StatusForbidden}, // bound here, but not the configured address
		{"localhost:" + port, http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", lr.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("Host %s: %v", tc.host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s: %d %s, want %d", tc.host, resp.StatusCode, body, tc.want)
		}
	}
}

// A client that does not trust the CA, or that asks for a name the
// certificate does not carry, fails the handshake.
func TestLANUntrustedClientFailsTheHandshake(t *testing.T) {
	t.Parallel()
	lr := newLANRig(t, nil)
	_, err := lr.httpClient(nil).Get(lr.base + "/healthz")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("a client trusting only the system roots: %v, want an unknown authority", err)
	}
	other, err := pki.New(pki.Options{Dir: filepath.Join(t.TempDir(), "other"), KeyGroup: pki.OwnerOnly})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := pki.NamesFor([]config.LAN{lr.lan}, "")
	res, err := other.Init(context.Background(), names, false)
	if err != nil {
		t.Fatal(err)
	}
	otherPool := x509.NewCertPool()
	otherPool.AddCert(res.CA)
	if _, err := lr.httpClient(otherPool).Get(lr.base + "/healthz"); !errors.As(err, &unknown) {
		t.Errorf("a client trusting another proxmox-mcp CA: %v, want an unknown authority", err)
	}
	_, port, _ := net.SplitHostPort(lr.addr)
	_, err = lr.httpClient(lr.pool).Get("https://other.pve-test.lan:" + port + "/healthz")
	var host x509.HostnameError
	if !errors.As(err, &host) {
		t.Errorf("a name the certificate lacks: %v, want a host name error", err)
	}
}

// `pki renew` takes effect without a restart: after a name is added and
// the certificate re-issued, new connections get the new certificate.
func TestLANRenewWithoutRestart(t *testing.T) {
	t.Parallel()
	lr := newLANRig(t, nil)
	old := lr.d.Addresses()["lan"]
	serial := func() string {
		resp, err := lr.httpClient(lr.pool).Get(lr.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	first := serial()
	// The operator adds a name and runs `pki renew` as root, with the CA
	// key.
	if err := os.WriteFile(lr.pki.Path(pki.CAKeyFile), lr.caKey, 0o600); err != nil {
		t.Fatal(err)
	}
	hostname, _ := os.Hostname()
	names, err := pki.NamesFor([]config.LAN{{Address: lr.lan.Address, Names: []string{lanName, "api." + lanName}}}, hostname)
	if err != nil {
		t.Fatal(err)
	}
	res, err := lr.pki.Renew(context.Background(), names)
	if err != nil || !res.Renewed {
		t.Fatalf("renew: %+v %v", res, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for serial() == first {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate was not served within 15 s")
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got := serial(); got != res.Server.SerialNumber.String() {
		t.Errorf("serving %s, want the renewed %s", got, res.Server.SerialNumber)
	}
	if lr.d.Addresses()["lan"] != old {
		t.Error("the listener changed")
	}
}

// Without a certificate the daemon does not start, and says to run
// `pki init`; it refuses a public address even from a configuration built
// in code, before binding anything.
func TestLANStartErrors(t *testing.T) {
	t.Parallel()
	pkiDir := filepath.Join(t.TempDir(), "pki")
	r := newRig(t, func(cfg map[string]any) {
		cfg["pki"] = map[string]any{"dir": pkiDir}
		cfg["listen"].(map[string]any)["lan"] = []any{map[string]any{"address": "10.77.0.1:8443", "names": []string{lanName}}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := r.d.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "there is no server certificate in "+pkiDir+" (pki.dir): run `proxmox-mcp pki init`") {
		t.Fatalf("Run without a certificate: %v", err)
	}

	r2 := newRig(t, func(cfg map[string]any) { cfg["pki"] = map[string]any{"dir": pkiDir} })
	var binds atomic.Int32
	bind := func(network, addr string) (net.Listener, error) { binds.Add(1); return bindLoopback(network, addr) }
	for _, tc := range []struct {
		addr, err string
	}{
		{"8.8.8.8:443", `field "listen.lan[0].address": "8.8.8.8:443" is not a private-LAN address`},
		{"0.0.0.0:443", "binds every address"},
		{"[::]:443", "binds every address"},
		{"127.0.0.1:443", "is a loopback address"},
	} {
		err := r2.d.openLAN([]config.LAN{{Address: tc.addr}}, bind)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("openLAN(%s) = %v, want %q", tc.addr, err, tc.err)
		}
	}
	// A certificate that does not load is an error naming pki renew.
	if err := os.MkdirAll(pkiDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pki.ServerFile, pki.ServerKeyFile} {
		if err := os.WriteFile(filepath.Join(pkiDir, f), []byte("not PEM"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err = r2.d.openLAN([]config.LAN{{Address: "10.77.0.1:8443"}}, bind)
	if err == nil || !strings.Contains(err.Error(), "`proxmox-mcp pki renew` (as root) issues a new certificate") {
		t.Errorf("openLAN with a broken certificate: %v", err)
	}
	if n := binds.Load(); n != 0 {
		t.Errorf("%d binds happened; a refused listener binds nothing", n)
	}
}

func TestLANHosts(t *testing.T) {
	for _, tc := range []struct {
		lan      config.LAN
		bound    string
		hostname string
		want     string
	}{
		{config.LAN{Address: "192.168.1.10:8443", Names: []string{"pve1.lan", "MCP.lan."}}, "192.168.1.10:8443", "pve1",
			"192.168.1.10 192.168.1.10:8443 mcp.lan mcp.lan:8443 pve1 pve1.lan pve1.lan:8443 pve1:8443"},
		{config.LAN{Address: "[fd00::10]:443"}, "[fd00::10]:443", "",
			"[fd00::10] [fd00::10]:443 fd00::10"},
		{config.LAN{Address: "10.0.0.1:0"}, "127.0.0.1:41234", "",
			"10.0.0.1 10.0.0.1:41234"},
	} {
		addr, _ := net.ResolveTCPAddr("tcp", tc.bound)
		got, err := lanHosts(tc.lan, addr, tc.hostname)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("lanHosts(%s) = %s\nwant %s", tc.lan.Address, strings.Join(got, " "), tc.want)
		}
	}
}

// privateAddress is an address of this machine a LAN listener may bind,
// if it has one.
func privateAddress() (netip.Addr, bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if ok && config.CheckLANAddress(netip.AddrPortFrom(ip.Unmap(), 1).String()) == nil {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// Where the machine has a private address, the whole path runs as `serve`
// runs it: the configuration names the address, Run binds it.
func TestLANOnARealPrivateAddress(t *testing.T) {
	t.Parallel()
	ip, ok := privateAddress()
	if !ok {
		t.Skip("this machine has no RFC 1918 or ULA address to bind")
	}
	pkiDir := filepath.Join(t.TempDir(), "pki")
	addr := netip.AddrPortFrom(ip, 0).String()
	r := newRig(t, func(cfg map[string]any) {
		cfg["pki"] = map[string]any{"dir": pkiDir}
		cfg["listen"].(map[string]any)["lan"] = []any{map[string]any{"address": addr}}
	})
	lr := &lanRig{rig: r, lan: config.LAN{Address: addr}}
	lr.issue(pkiDir)
	r.start()
	lr.addr = r.d.Addresses()["lan"]
	bound, err := netip.ParseAddrPort(lr.addr)
	if err != nil || bound.Addr() != ip {
		t.Fatalf("bound %s, want %s: %v", lr.addr, ip, err)
	}
	lr.base = "https://" + lr.addr
	c, ctx := lr.mcpClient(lr.key("read-only"))
	res, _ := callTool(t, c, ctx, tools.ToolSchemaStatus, nil)
	if res.IsError {
		t.Fatalf("schema status: %s", resultText(res))
	}
}

// lanSession is a bare MCP session over any http.Client: one JSON-RPC
// request per POST, as transport/mcptest does, so that the loopback and
// LAN figures differ by the transport alone.
type lanSession struct {
	hc       *http.Client
	url, key string
	session  string
	id       int
}

func dialLAN(tb testing.TB, hc *http.Client, url, key string) *lanSession {
	tb.Helper()
	s := &lanSession{hc: hc, url: url, key: key}
	resp, err := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil {
		tb.Fatal(err)
	}
	s.session = resp.Header.Get("Mcp-Session-Id")
	if _, err := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(hc.CloseIdleConnections)
	return s
}

func (s *lanSession) post(body string) (*http.Response, error) {
	req, err := http.NewRequest("POST", s.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if bytes.Contains(b, []byte(`"isError":true`)) || bytes.Contains(b, []byte(`"error":{`)) {
		return nil, fmt.Errorf("the call failed: %.300s", b)
	}
	return resp, nil
}

func (s *lanSession) call(tool string, args map[string]any) error {
	s.id++
	a, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	_, err := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, s.id, a))
	return err
}

// BenchmarkLANCall: the same read of a VM's status through the same daemon
// over loopback HTTP, over LAN TLS on a kept-alive connection, and over
// LAN TLS with a new connection (a full TLS 1.3 handshake) per call. The
// LAN listener is bound on 127.0.0.1 (see lanRig), so the figures are the
// cost of TLS, not of a network.
func BenchmarkLANCall(b *testing.B) {
	lr := newLANRig(b, func(cfg map[string]any) {
		// The guards' rates would refuse a benchmark's pace.
		cfg["http"] = map[string]any{"rate_per_key": 1e9, "burst_per_key": 1 << 30, "rate_per_source": 1e9, "burst_per_source": 1 << 30}
	})
	key := lr.key("operator")
	args := map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}
	for _, bc := range []struct {
		name string
		hc   func() *http.Client
		url  string
	}{
		{"loopback", func() *http.Client { return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}} }, lr.url + "/mcp"},
		{"lan-tls", func() *http.Client { return lr.httpClient(lr.pool) }, lr.base + "/mcp"},
		{"lan-tls-new-conn", func() *http.Client {
			hc := lr.httpClient(lr.pool)
			hc.Transport.(*http.Transport).DisableKeepAlives = true
			return hc
		}, lr.base + "/mcp"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := dialLAN(b, bc.hc(), bc.url, key)
			if err := s.call(tools.ToolCall, args); err != nil { // warm the key cache
				b.Fatal(err)
			}
			var d []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := s.call(tools.ToolCall, args); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
			}
			reportPercentiles(b, d, "")
		})
	}
}
