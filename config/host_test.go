package config

import (
	"strings"
	"testing"
)

func TestHostCheck(t *testing.T) {
	if got := (Host{}).HostRoots(); len(got) != 1 || got[0].Path != "/var/log" || got[0].Write {
		t.Errorf("default roots %+v; want /var/log, read only", got)
	}
	if (Host{}).HelperSocket() != DefaultHelperSocket {
		t.Error("no default socket")
	}
	for _, tc := range []struct {
		h    Host
		says string
	}{
		{Host{Roots: []HostRoot{{Path: "var/log"}}}, `"host.roots[0].path": "var/log" must be an absolute, clean path`},
		{Host{Roots: []HostRoot{{Path: "/etc/"}}}, "absolute, clean"},
		{Host{Roots: []HostRoot{{Path: "/srv/my app"}}}, "no spaces"},
		{Host{Roots: []HostRoot{{Path: "/etc"}, {Path: "/etc", Write: true}}}, `"host.roots[1].path": "/etc" is listed twice`},
		{Host{Roots: []HostRoot{{Path: "/", Write: true}}}, "not for writing"},
		{Host{Socket: "/run/helper"}, `"host.socket"`},
	} {
		err := tc.h.check()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v; want an error saying %q", tc.h, err, tc.says)
		}
	}
	if err := (Host{Roots: []HostRoot{{Path: "/", CrossMounts: true}, {Path: "/etc/pve", Write: true}}}).check(); err != nil {
		t.Errorf("a good host section: %v", err)
	}
}
