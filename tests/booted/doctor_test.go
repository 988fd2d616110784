package booted

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// doctorReport is `proxmox-mcp doctor --json`.
type doctorReport struct {
	OK     bool   `json:"ok"`
	Mode   string `json:"mode"`
	Checks []struct {
		Step     string `json:"step"`
		About    string `json:"about"`
		Problems []struct {
			What string `json:"what"`
			Fix  string `json:"fix"`
		} `json:"problems"`
	} `json:"checks"`
}

// failing are the steps with problems.
func (r doctorReport) failing() []string {
	var out []string
	for _, c := range r.Checks {
		if len(c.Problems) > 0 {
			out = append(out, c.Step)
		}
	}
	return out
}

// doctor runs `proxmox-mcp doctor` as an operator reads it, and with
// --json.
func doctor(t *testing.T, c *Container) (Result, doctorReport) {
	t.Helper()
	text := c.Run(context.Background(), "proxmox-mcp", "doctor")
	if text.Code < 0 {
		t.Fatalf("proxmox-mcp doctor did not run: %s", text)
	}
	js := c.Run(context.Background(), "proxmox-mcp", "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(js.Stdout), &rep); err != nil {
		t.Fatalf("proxmox-mcp doctor --json: %v: %s", err, js)
	}
	if (text.Code == 0) != rep.OK || (js.Code == 0) != rep.OK {
		t.Errorf("doctor exits %d (text) and %d (--json) with ok=%v", text.Code, js.Code, rep.OK)
	}
	return text, rep
}

// green asserts that doctor finds nothing wrong: exit 0, every check ok.
func green(t *testing.T, c *Container, when string) Result {
	t.Helper()
	text, rep := doctor(t, c)
	if !text.OK() || !rep.OK || len(rep.failing()) > 0 || !strings.Contains(text.Stdout, "no problems found") || strings.Contains(text.Stdout, "PROBLEM") {
		t.Fatalf("doctor %s is not green: %s", when, text)
	}
	return text
}

// pveCall is GET /version through the daemon with key, over loopback.
func pveCall(t *testing.T, c *Container, url, key string) (bool, string) {
	t.Helper()
	mc, ctx := mcpClient(t, c, url, key)
	return callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"})
}

// readyz is the daemon's /readyz on its loopback listener: the status and
// the body.
func readyz(t *testing.T, c *Container) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: c.Net.DialContext}, Timeout: 30 * time.Second}
	resp, err := hc.Get("http://127.0.0.1:8765/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitReadyz polls /readyz (whose checks run at most once a second)
// until ok holds for its status and body.
func waitReadyz(t *testing.T, c *Container, what string, ok func(code int, body string) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := readyz(t, c)
		if ok(code, body) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("/readyz is not %s: %d %s", what, code, body)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// notReady waits for /readyz to say PVE's certificate is not trusted.
func notReady(t *testing.T, c *Container) {
	t.Helper()
	waitReadyz(t, c, "503 with PVE's certificate not trusted", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, `"pve":`) && strings.Contains(body, "not trusted")
	})
}

// setPVECert installs a certificate for pveproxy as `pvenode cert set`
// (custom) or `pvecm updatecerts` (the node's own) does, and restarts it
// so that it serves it.
func setPVECert(t *testing.T, c *Container, custom bool, certPEM, keyPEM []byte) {
	t.Helper()
	name := "pve-ssl"
	if custom {
		name = "pveproxy-ssl"
	}
	c.WriteFile(EtcPVE+"/local/"+name+".key", keyPEM, 0o600)
	c.WriteFile(EtcPVE+"/local/"+name+".pem", certPEM, 0o640)
	restartPVE(t, c)
}

func restartPVE(t *testing.T, c *Container) {
	t.Helper()
	c.MustIn(t, "systemctl", "restart", PVEProxyUnit)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPVE(ctx); err != nil {
		t.Fatal(err)
	}
}

// servedByPVE is the fingerprint of the certificate pveproxy serves (a
// handshake from inside the container's network, which only reads it).
func servedByPVE(t *testing.T, c *Container) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.Net.DialContext(ctx, "tcp", PVEAddr)
	if err != nil {
		t.Fatal(err)
	}
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // it only reads what is served
	defer conn.Close()
	if err := conn.HandshakeContext(ctx); err != nil {
		t.Fatalf("a handshake with pveproxy: %v", err)
	}
	return fingerprintOf(conn.ConnectionState().PeerCertificates[0].Raw)
}

func certFingerprint(t *testing.T, certPEM []byte) string {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("not a PEM certificate")
	}
	if _, err := x509.ParseCertificate(b.Bytes); err != nil {
		t.Fatal(err)
	}
	return fingerprintOf(b.Bytes)
}

// TestBootedDoctor: `proxmox-mcp doctor` on a booted Debian 13 with
// systemd 257 after `install --mode lan`: every check green, then for each
// fault an operator meets (the unit stopped, a token file's mode, the
// schema file gone, pveproxy's certificate changed in each way PVE changes
// it) doctor exits 1 naming the problem and its fix, and is green again
// once the fault is undone (by the fix it names, where that is install).
func TestBootedDoctor(t *testing.T) {
	t.Parallel()
	c, n, b := pveNode(t)
	aptInstall(t, c, b)
	_, key := installLAN(t, c)

	t.Run("good install", func(t *testing.T) {
		res := green(t, c, "after install --mode lan")
		t.Logf("proxmox-mcp doctor on a good install took %s:\n%s", res.Took.Round(time.Millisecond), res.Stdout)
		_, rep := doctor(t, c)
		if rep.Mode != "lan" {
			t.Errorf("doctor --json: mode %q, want lan", rep.Mode)
		}
		var steps []string
		for _, ch := range rep.Checks {
			steps = append(steps, ch.Step)
		}
		for _, s := range []string{"preflight", "user", "directories", "binary", "pve-trust", "pve-identity", "config", "exposure", "validate", "units", "service", "initial-key"} {
			if !slices.Contains(steps, s) {
				t.Errorf("doctor --json has no check of step %s: %v", s, steps)
			}
		}
	})
	if t.Failed() {
		return
	}

	// Each fault: what doctor must say (in the steps named), then the undo.
	type fault struct {
		name   string
		inject func(t *testing.T)
		steps  []string
		words  []string
		undo   func(t *testing.T)
	}
	const tokenFile = "/etc/proxmox-mcp/tokens/operator"
	faults := []fault{
		{
			name:   "unit stopped",
			inject: func(t *testing.T) { c.MustIn(t, "systemctl", "stop", unit) },
			steps:  []string{"service"},
			words:  []string{"proxmox-mcp.service is inactive", "fix: journalctl -u proxmox-mcp.service", "systemctl restart proxmox-mcp.service"},
			undo:   func(t *testing.T) { c.MustIn(t, "systemctl", "start", unit) },
		},
		{
			name:   "token file mode",
			inject: func(t *testing.T) { c.MustIn(t, "chmod", "0644", tokenFile) },
			steps:  []string{"pve-identity"},
			words:  []string{tokenFile + " is proxmox-mcp:proxmox-mcp 0644, want proxmox-mcp:proxmox-mcp 0600", "chmod 0600 " + tokenFile},
			undo:   func(t *testing.T) { c.MustIn(t, "chmod", "0600", tokenFile) },
		},
		{
			name: "schema file missing",
			inject: func(t *testing.T) {
				c.MustIn(t, "mv", APIDocPath, "/root/apidoc.js.away")
				// The daemon keeps the last good registry and serves on.
				if isErr, text := pveCall(t, c, key.Endpoints.Loopback, key.Key); isErr {
					t.Errorf("without apidoc.js the running daemon stopped serving: %s", text)
				}
				code, body := readyz(t, c)
				t.Logf("/readyz without apidoc.js: %d %s", code, body)
			},
			// The preflight and the configuration's check (schema.path)
			// both name it, each with the package that ships it.
			steps: []string{"preflight", "validate"},
			words: []string{APIDocPath + " (PVE's API schema) is missing or empty", "fix: apt install --reinstall pve-docs",
				`field "schema.path": open ` + APIDocPath + `: file does not exist`, "fix: apt install --reinstall pve-docs (it ships " + APIDocPath},
			undo: func(t *testing.T) {
				c.MustIn(t, "mv", "/root/apidoc.js.away", APIDocPath)
			},
		},
		{
			// pvecm updatecerts: a new node certificate from the same
			// cluster CA. Not a fault: the daemon trusts the CA.
			name: "node certificate re-issued by the cluster CA",
			inject: func(t *testing.T) {
				before := servedByPVE(t, c)
				certPEM, keyPEM, err := n.Certificate(false)
				if err != nil {
					t.Fatal(err)
				}
				setPVECert(t, c, false, certPEM, keyPEM)
				if now := servedByPVE(t, c); now == before || now != certFingerprint(t, certPEM) {
					t.Fatalf("pveproxy serves %s, want the re-issued %s (before: %s)", now, certFingerprint(t, certPEM), before)
				}
				if isErr, text := pveCall(t, c, key.Endpoints.Loopback, key.Key); isErr {
					t.Errorf("after pveproxy's certificate was re-issued by the same cluster CA, the daemon cannot reach PVE: %s", text)
				}
			},
		},
		{
			// The node joined a cluster, or its CA was made again: a new
			// cluster CA and a node certificate it signed.
			name: "cluster CA changed",
			inject: func(t *testing.T) {
				other := &PVENode{}
				certPEM, keyPEM, err := other.Certificate(false)
				if err != nil {
					t.Fatal(err)
				}
				c.WriteFile(EtcPVE+"/pve-root-ca.pem", other.CAPEM, 0o640)
				setPVECert(t, c, false, certPEM, keyPEM)
				isErr, text := pveCall(t, c, key.Endpoints.Loopback, key.Key)
				if !isErr || !strings.Contains(text, "pveproxy certificate "+certFingerprint(t, certPEM)+" is not trusted") {
					t.Errorf("pveproxy's certificate is signed by another CA: the daemon's call says %q, want it not trusted", text)
				}
				t.Logf("the daemon's call with pveproxy under a new cluster CA: %s", text)
				notReady(t, c)
			},
			steps: []string{"pve-trust"},
			words: []string{"/etc/proxmox-mcp/pve-root-ca.pem differs from /etc/pve/pve-root-ca.pem (the cluster CA changed)", "fix: proxmox-mcp install"},
			undo:  reinstall(c),
		},
		{
			// pvenode cert set, or ACME: pveproxy serves a custom
			// certificate the cluster CA did not sign.
			name: "custom pveproxy certificate installed",
			inject: func(t *testing.T) {
				certPEM, keyPEM, err := n.Certificate(true)
				if err != nil {
					t.Fatal(err)
				}
				setPVECert(t, c, true, certPEM, keyPEM)
				isErr, text := pveCall(t, c, key.Endpoints.Loopback, key.Key)
				if !isErr || !strings.Contains(text, "pveproxy certificate "+certFingerprint(t, certPEM)+" is not trusted") {
					t.Errorf("pveproxy serves a certificate nothing trusts: the daemon's call says %q, want it not trusted", text)
				}
				t.Logf("the daemon's call with pveproxy serving a custom certificate: %s", text)
				notReady(t, c)
			},
			steps: []string{"pve-trust"},
			words: []string{"pveproxy serves a custom certificate (SHA-256 ", "that pve.fingerprint does not pin", "fix: proxmox-mcp install (pins the current certificate and restarts the daemon)"},
			undo:  reinstall(c),
		},
		{
			// The ACME certificate renewed: the pin no longer matches.
			name: "custom pveproxy certificate renewed",
			inject: func(t *testing.T) {
				pinned := servedByPVE(t, c)
				certPEM, keyPEM, err := n.Certificate(true)
				if err != nil {
					t.Fatal(err)
				}
				setPVECert(t, c, true, certPEM, keyPEM)
				isErr, text := pveCall(t, c, key.Endpoints.Loopback, key.Key)
				if want := "pveproxy certificate " + certFingerprint(t, certPEM) + " is not trusted: it is not the pinned " + pinned + " (renewed?)"; !isErr || !strings.Contains(text, want) {
					t.Errorf("pveproxy's certificate no longer matches the pin: the daemon's call says %q, want %q", text, want)
				}
				t.Logf("the daemon's call with pveproxy's pinned certificate renewed: %s", text)
				notReady(t, c)
			},
			steps: []string{"pve-trust"},
			words: []string{"pveproxy's certificate changed (renewed?)", "pve.fingerprint pins", "the daemon cannot reach PVE", "fix: proxmox-mcp install (pins the current certificate and restarts the daemon)"},
			undo:  reinstall(c),
		},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			f.inject(t)
			if t.Failed() {
				return
			}
			if len(f.steps) == 0 {
				green(t, c, "after "+f.name)
				return
			}
			text, rep := doctor(t, c)
			t.Logf("doctor after %s: exit %d in %s:\n%s", f.name, text.Code, text.Took.Round(time.Millisecond), text.Stdout)
			if text.Code == 0 || rep.OK {
				t.Errorf("doctor exits %d (ok=%v) after %s", text.Code, rep.OK, f.name)
			}
			if got := rep.failing(); !slices.Equal(got, f.steps) {
				t.Errorf("doctor finds problems in %v, want %v", got, f.steps)
			}
			for _, w := range f.words {
				if !strings.Contains(text.Stdout, w) {
					t.Errorf("doctor does not say %q", w)
				}
			}
			if !strings.Contains(text.Stdout, "PROBLEM  "+f.steps[0]) {
				t.Errorf("doctor does not mark the step %s as a PROBLEM", f.steps[0])
			}
			f.undo(t)
			green(t, c, "after undoing "+f.name)
			waitReadyz(t, c, "ready after undoing "+f.name, func(code int, _ string) bool { return code == http.StatusOK })
			if isErr, text := pveCall(t, c, key.Endpoints.Loopback, key.Key); isErr {
				t.Errorf("after undoing %s, a call fails: %s", f.name, text)
			}
		})
	}
}

// reinstall is the fix doctor names for pveproxy's trust: proxmox-mcp
// install again (it keeps the mode and listeners, and restarts the
// daemon).
func reinstall(c *Container) func(t *testing.T) {
	return func(t *testing.T) {
		res := c.Run(context.Background(), "proxmox-mcp", "install", "--yes")
		if !res.OK() {
			t.Fatalf("proxmox-mcp install --yes (the fix doctor names): %s", res)
		}
		t.Logf("proxmox-mcp install --yes (the fix) took %s", res.Took.Round(time.Millisecond))
	}
}
