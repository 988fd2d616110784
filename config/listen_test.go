package config

import (
	"strings"
	"testing"
	"time"
)

// LAN listeners bind only private addresses; every listener and guard field
// is checked with the field named.
func TestListenerChecks(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"rfc1918", `"listen": {"lan": [{"address": "192.168.1.10:8766", "names": ["pve1.lan"]}]}`, ""},
		{"172.16/12", `"listen": {"lan": [{"address": "172.31.0.5:8766"}]}`, ""},
		{"ula", `"listen": {"lan": [{"address": "[fd12:3456::1]:8766"}]}`, ""},
		{"public", `"listen": {"lan": [{"address": "8.8.8.8:8766"}]}`, `field "listen.lan[0].address": "8.8.8.8:8766" is not a private-LAN address`},
		{"172.32 is public", `"listen": {"lan": [{"address": "172.32.0.1:8766"}]}`, `is not a private-LAN address`},
		{"unspecified v4", `"listen": {"lan": [{"address": "0.0.0.0:8766"}]}`, `binds every address, public ones included`},
		{"unspecified v6", `"listen": {"lan": [{"address": "[::]:8766"}]}`, `binds every address, public ones included`},
		{"global v6", `"listen": {"lan": [{"address": "[2001:db8::1]:8766"}]}`, `is not a private-LAN address`},
		{"loopback on lan", `"listen": {"lan": [{"address": "127.0.0.1:8766"}]}`, `use listen.loopback`},
		{"mapped public", `"listen": {"lan": [{"address": "[::ffff:8.8.8.8]:8766"}]}`, `is not a private-LAN address`},
		{"no port", `"listen": {"lan": [{"address": "192.168.1.10"}]}`, `is not IP:port`},
		{"twice", `"listen": {"lan": [{"address": "10.0.0.2:1"}, {"address": "10.0.0.2:1"}]}`, `field "listen.lan[1].address": "10.0.0.2:1" is listed twice`},
		{"bad name", `"listen": {"lan": [{"address": "10.0.0.2:1", "names": ["pve_1"]}]}`, `field "listen.lan[0].names[0]": "pve_1" is not a DNS name`},
		{"bad origin", `"listen": {"lan": [{"address": "10.0.0.2:1", "allowed_origins": ["pve1"]}]}`, `field "listen.lan[0].allowed_origins[0]"`},
		{"tailnet", `"listen": {"tailnet": {"hostname": "pve-mcp", "auth_key_file": "/etc/proxmox-mcp/ts.key", "port": 443}}`, ""},
		{"tailnet hostname", `"listen": {"tailnet": {"hostname": "pve.mcp"}}`, `field "listen.tailnet.hostname": "pve.mcp" must be one DNS label`},
		{"tailnet key path", `"listen": {"tailnet": {"auth_key_file": "ts.key"}}`, `field "listen.tailnet.auth_key_file": "ts.key" must be an absolute path`},
		{"tailnet control", `"listen": {"tailnet": {"control_url": "ftp://x"}}`, `field "listen.tailnet.control_url"`},
		{"tailnet port", `"listen": {"tailnet": {"port": 70000}}`, `field "listen.tailnet.port": 70000 is not a port`},
		{"rates", `"http": {"rate_per_key": 5, "burst_per_key": 10, "session_idle_timeout": "10m", "read_timeout": "30s"}`, ""},
		{"negative rate", `"http": {"rate_per_source": -1}`, `field "http.rate_per_source": -1 must not be negative`},
		{"bad duration", `"http": {"idle_timeout": "soon"}`, `"soon" is not a duration`},
		{"short timeout", `"http": {"read_header_timeout": "10ms"}`, `field "http.read_header_timeout": 10ms is below 1s`},
		{"session quota", `"http": {"max_sessions": 64, "max_sessions_per_key": 8}`, ""},
		{"negative session quota", `"http": {"max_sessions_per_key": -1}`, `field "http.max_sessions_per_key": -1 must not be negative`},
		{"session quota over the cap", `"http": {"max_sessions": 10, "max_sessions_per_key": 11}`, `field "http.max_sessions_per_key": 11 is over http.max_sessions (10)`},
		{"session quota over the default cap", `"http": {"max_sessions_per_key": 300}`, `field "http.max_sessions_per_key": 300 is over http.max_sessions (256)`},
		{"pki dir", `"pki": {"dir": "pki"}`, `field "pki.dir": "pki" must be an absolute path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t", []byte(`{"version": 1, `+tc.body+`}`))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// The guards' defaults, and durations written back as Go writes them.
func TestGuardDefaults(t *testing.T) {
	c, err := Parse("t", []byte(`{"version": 1, "http": {"rate_per_key": 7, "idle_timeout": "90s"}, "listen": {"tailnet": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := c.HTTP.Guards()
	if g.RatePerKey != 7 || g.BurstPerKey != DefaultBurstPerKey || g.RatePerSource != DefaultRatePerSource ||
		g.MaxSessions != DefaultMaxSessions || g.MaxSessionsPerKey != DefaultMaxSessionsPerKey || g.MaxSessionsPerKey*8 > g.MaxSessions ||
		g.IdleTimeout.Std() != 90*time.Second || g.ReadHeaderTimeout.Std() != DefaultReadHeaderTimeout {
		t.Errorf("guards %+v", g)
	}
	// A cap set below the default quota bounds the quota too.
	if g := (HTTP{MaxSessions: 4}).Guards(); g.MaxSessionsPerKey != 4 {
		t.Errorf("quota under a cap of 4: %d", g.MaxSessionsPerKey)
	}
	e := c.Effective()
	if e.Listen.Tailnet.Hostname != DefaultTailnetHostname || e.Listen.Tailnet.StateDir != "/var/lib/proxmox-mcp/tailnet" || e.PKI.Dir != DefaultPKIDir {
		t.Errorf("effective tailnet %+v, pki %q", e.Listen.Tailnet, e.PKI.Dir)
	}
	b, err := Duration(90 * time.Second).MarshalText()
	if err != nil || string(b) != "1m30s" {
		t.Errorf("marshal %s %v", b, err)
	}
}

// Port 0 means 443 with the tailnet's HTTPS certificates and 80 without; a
// configured port is used either way.
func TestTailnetServePort(t *testing.T) {
	for _, tc := range []struct {
		port        int
		https, want int
	}{{0, 1, 443}, {0, 0, 80}, {8443, 1, 8443}, {8080, 0, 8080}} {
		tn := Tailnet{Port: tc.port}
		if got := tn.ServePort(tc.https == 1); got != tc.want {
			t.Errorf("port %d, https %v: %d, want %d", tc.port, tc.https == 1, got, tc.want)
		}
	}
}
