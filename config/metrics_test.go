package config

import (
	"strings"
	"testing"
)

// The metrics listener binds loopback by default, a private-LAN address
// when told, never a public or wildcard one; disabled, it binds nothing.
func TestMetricsAddress(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: ``, want: DefaultMetricsAddress},
		{in: `"metrics": {"address": "127.0.0.1:0"}`, want: "127.0.0.1:0"},
		{in: `"metrics": {"address": "[::1]:9100"}`, want: "[::1]:9100"},
		{in: `"metrics": {"address": "192.168.1.5:9765"}`, want: "192.168.1.5:9765"},
		{in: `"metrics": {"disabled": true}`, want: ""},
		{in: `"metrics": {"address": "0.0.0.0:9765"}`, err: `field "metrics.address": "0.0.0.0:9765" binds every address`},
		{in: `"metrics": {"address": "8.8.8.8:9765"}`, err: `field "metrics.address": "8.8.8.8:9765" is not a private-LAN address`},
		{in: `"metrics": {"address": "localhost:9765"}`, err: `field "metrics.address": "localhost:9765" is not IP:port`},
		{in: `"metrics": {"port": 9765}`, err: `field "metrics.port" is not known`},
	} {
		body := `{"version": 1}`
		if tc.in != "" {
			body = `{"version": 1, ` + tc.in + `}`
		}
		c, err := Parse("t", []byte(body))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := c.MetricsAddress(); got != tc.want {
			t.Errorf("%s: address %q, want %q", tc.in, got, tc.want)
		}
		if e := c.Effective().Metrics; e.Address != tc.want && !(tc.want == "" && e.Disabled) {
			t.Errorf("%s: effective %+v", tc.in, e)
		}
	}
}
