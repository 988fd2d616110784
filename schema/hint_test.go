package schema

import "testing"

// Hint gives PVE's syntax, the unit the description names and the default,
// on the real 9.1 schema.
func TestParamHint(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	for _, tc := range []struct {
		method, path, param, want string
	}{
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "memory", "syntax [current=]<integer>, in MiB, default 512"},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "cores", "syntax <integer> (1 - N), default 1"},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "ostype", "syntax <other | wxp | w2k | w2k3 | w2k8 | wvista | win7 | win8 | win10 | win11 | l24 | l26 | solaris>, default other"},
		{"PUT", "/nodes/{node}/lxc/{vmid}/config", "swap", "syntax <integer> (0 - N), in MB, default 512"}, // PVE's own word
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", "timeout", "syntax <integer> (0 - N), default max(30, vm memory in GiB)"},
		{"POST", "/nodes/{node}/qemu/{vmid}/clone", "bwlimit", "syntax <integer> (0 - N), in KiB/s, default clone limit from datacenter or storage config"}, // a rate
	} {
		ep := r.Lookup(tc.method, tc.path)
		if ep == nil {
			t.Fatalf("no %s %s", tc.method, tc.path)
		}
		p := ep.ParamFor(tc.param)
		if p == nil {
			t.Fatalf("%s %s has no %s", tc.method, tc.path, tc.param)
		}
		if got := p.Hint(); got != tc.want {
			t.Errorf("%s of %s %s: %q, want %q", tc.param, tc.method, tc.path, got, tc.want)
		}
	}
}
