package host

import (
	"strings"
	"testing"
)

func TestCleanUnitName(t *testing.T) {
	for _, tc := range []struct{ in, want, rule string }{
		{"pveproxy", "pveproxy.service", ""},
		{"pveproxy.service", "pveproxy.service", ""},
		{"getty@tty1.service", "getty@tty1.service", ""},
		{"zfs-import.target", "zfs-import.target", ""},
		{"", "", "must not be empty"},
		{"foo bar", "", "holds ' '"},
		{"foo;rm", "", "holds ';'"},
		{"../x", "", "holds '/'"},
		{"a@b@c", "", "more than one @"},
		{"-x", "", "start with a letter or digit"},
		{strings.Repeat("a", 260), "", "longer than 255"},
	} {
		got, err := CleanUnitName("unit", tc.in)
		if tc.rule == "" {
			if err != nil || got != tc.want {
				t.Errorf("CleanUnitName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.rule) || !strings.HasPrefix(err.Error(), "unit") {
			t.Errorf("CleanUnitName(%q) = %q, %v; want an error of field unit saying %q", tc.in, got, err, tc.rule)
		}
	}
}

// This install's own units are recognized in every spelling the name
// can take before systemd is asked (aliases are caught by asking it).
func TestOwnUnit(t *testing.T) {
	for _, n := range []string{"proxmox-mcp.service", "proxmox-mcp-helper.socket", "proxmox-mcp-helper.service", "proxmox-mcp@x.service", "proxmox-mcp-pki-renew.timer", "proxmox-mcp-cluster.service"} {
		if !ownUnit(n) {
			t.Errorf("%s is not recognized as ours", n)
		}
	}
	for _, n := range []string{"pveproxy.service", "proxmox-mcpx.service", "my-proxmox-mcp.service", "cron.service"} {
		if ownUnit(n) {
			t.Errorf("%s is taken for ours", n)
		}
	}
}
