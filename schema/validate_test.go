package schema

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	const (
		start   = "POST /nodes/{node}/qemu/{vmid}/status/start"
		config  = "PUT /nodes/{node}/qemu/{vmid}/config"
		vzdump  = "POST /nodes/{node}/vzdump"
		mail    = "POST /cluster/notifications/endpoints/sendmail"
		agent   = "GET /nodes/{node}/qemu/{vmid}/agent"
		fabric  = "POST /cluster/sdn/fabrics/fabric"
		acl     = "PUT /access/acl"
		fwgroup = "DELETE /cluster/firewall/groups/{group}/{pos}"
	)
	for _, tc := range []struct {
		name     string
		endpoint string
		args     string
		want     url.Values        // on success
		errs     map[string]string // on failure: parameter -> message substring
	}{
		{name: "valid start", endpoint: start, args: `{"node":"pve1","vmid":100}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}}},
		{name: "numeric string vmid as PVE accepts it", endpoint: start, args: `{"node":"pve1","vmid":"100"}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}}},
		{name: "booleans go out as 1 and 0", endpoint: start, args: `{"node":"pve1","vmid":100,"skiplock":true,"with-conntrack-state":false}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}, "skiplock": {"1"}, "with-conntrack-state": {"0"}}},
		{name: "null counts as absent", endpoint: start, args: `{"node":"pve1","vmid":100,"timeout":null}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}}},
		{name: "missing required", endpoint: start, args: `{"node":"pve1"}`,
			errs: map[string]string{"vmid": "property is missing and it is not optional"}},
		{name: "unknown parameter", endpoint: start, args: `{"node":"pve1","vmid":100,"force":1}`,
			errs: map[string]string{"force": "property is not defined in schema and the schema does not allow additional properties"}},
		{name: "integer type", endpoint: start, args: `{"node":"pve1","vmid":"abc"}`,
			errs: map[string]string{"vmid": "type check ('integer') failed - got 'abc'"}},
		{name: "fractional integer", endpoint: start, args: `{"node":"pve1","vmid":100.5}`,
			errs: map[string]string{"vmid": "type check ('integer') failed - got '100.5'"}},
		{name: "vm id format", endpoint: start, args: `{"node":"pve1","vmid":99}`,
			errs: map[string]string{"vmid": "invalid format - value does not look like a valid VM ID"}},
		{name: "node format", endpoint: start, args: `{"node":"pve_1!","vmid":100}`,
			errs: map[string]string{"node": "invalid format - value does not look like a valid node name"}},
		{name: "enum", endpoint: start, args: `{"node":"pve1","vmid":100,"migration_type":"fast"}`,
			errs: map[string]string{"migration_type": "value 'fast' does not have a value in the enumeration 'secure, insecure'"}},
		{name: "max length", endpoint: start, args: `{"node":"pve1","vmid":100,"stateuri":"` + strings.Repeat("x", 129) + `"}`,
			errs: map[string]string{"stateuri": "value may only be 128 characters long"}},
		{name: "minimum", endpoint: start, args: `{"node":"pve1","vmid":100,"timeout":-1}`,
			errs: map[string]string{"timeout": "value must have a minimum value of 0"}},
		{name: "boolean spelled as PVE refuses it", endpoint: start, args: `{"node":"pve1","vmid":100,"skiplock":"yes"}`,
			errs: map[string]string{"skiplock": "type check ('boolean') failed - got 'yes'"}},
		{name: "pattern", endpoint: start, args: `{"node":"pve1","vmid":100,"nets-host-mtu":"eth0=1500"}`,
			errs: map[string]string{"nets-host-mtu": "value does not match the regex pattern"}},
		{name: "several errors at once", endpoint: start, args: `{"vmid":5,"bogus":1}`,
			errs: map[string]string{"node": "missing", "vmid": "VM ID", "bogus": "not defined"}},

		{name: "property string", endpoint: config, args: `{"node":"pve1","vmid":100,"net0":"virtio,bridge=vmbr0,firewall=1"}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}, "net0": {"virtio,bridge=vmbr0,firewall=1"}}},
		{name: "property string unknown key", endpoint: config, args: `{"node":"pve1","vmid":100,"net0":"virtio,bridge=vmbr0,colour=red"}`,
			errs: map[string]string{"net0": "invalid key in comma-separated list property: colour"}},
		{name: "property string sub-key type", endpoint: config, args: `{"node":"pve1","vmid":100,"net0":"virtio,firewall=maybe"}`,
			errs: map[string]string{"net0.firewall": "type check ('boolean') failed - got 'maybe'"}},
		{name: "property string sub-key enum", endpoint: config, args: `{"node":"pve1","vmid":100,"net0":"model=rtl9999"}`,
			errs: map[string]string{"net0.model": "does not have a value in the enumeration"}},
		{name: "property string duplicate key", endpoint: config, args: `{"node":"pve1","vmid":100,"net0":"virtio,bridge=a,bridge=b"}`,
			errs: map[string]string{"net0": "duplicate key in comma-separated list property: bridge"}},
		{name: "property string number given as JSON number", endpoint: config, args: `{"node":"pve1","vmid":100,"memory":2048}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}, "memory": {"2048"}}},
		{name: "numbered key in range", endpoint: config, args: `{"node":"pve1","vmid":100,"scsi30":"local-lvm:vm-100-disk-1"}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}, "scsi30": {"local-lvm:vm-100-disk-1"}}},
		{name: "numbered key out of the stated range", endpoint: config, args: `{"node":"pve1","vmid":100,"scsi31":"local-lvm:vm-100-disk-1"}`,
			errs: map[string]string{"scsi31": "scsi[n] accepts scsi0 to scsi30"}},
		{name: "numbered key with a leading zero", endpoint: config, args: `{"node":"pve1","vmid":100,"net01":"virtio"}`,
			errs: map[string]string{"net01": "not defined in schema"}},
		{name: "config id list", endpoint: config, args: `{"node":"pve1","vmid":100,"delete":"net1,9ide"}`,
			errs: map[string]string{"delete": "invalid configuration ID '9ide'"}},
		{name: "digest length", endpoint: config, args: `{"node":"pve1","vmid":100,"digest":"` + strings.Repeat("a", 41) + `"}`,
			errs: map[string]string{"digest": "value may only be 40 characters long"}},

		{name: "requires", endpoint: vzdump, args: `{"node":"pve1","vmid":"100","notes-template":"{{guestname}}"}`,
			errs: map[string]string{"storage": "missing property - 'notes-template' requires this property"}},
		{name: "vm id list", endpoint: vzdump, args: `{"node":"pve1","vmid":"100,101 102"}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100,101 102"}}},
		{name: "vm id list bad item", endpoint: vzdump, args: `{"node":"pve1","vmid":"100,7"}`,
			errs: map[string]string{"vmid": "valid VM ID"}},

		{name: "array items", endpoint: mail, args: `{"name":"ops","mailto":["ops@example.com","root"]}`,
			want: url.Values{"name": {"ops"}, "mailto": {"ops@example.com", "root"}}},
		{name: "array required to be an array", endpoint: mail, args: `{"name":"ops","mailto":"ops@example.com"}`,
			errs: map[string]string{"mailto": "type check ('array') failed"}},
		{name: "array item format", endpoint: mail, args: `{"name":"ops","mailto":["not an address"]}`,
			errs: map[string]string{"mailto[0]": "email address or user name"}},

		{name: "additional properties allowed", endpoint: agent, args: `{"node":"pve1","vmid":100,"command":"ping","extra":"x"}`,
			want: url.Values{"node": {"pve1"}, "vmid": {"100"}, "command": {"ping"}, "extra": {"x"}}},

		{name: "variant by type property", endpoint: fabric, args: `{"id":"f1","protocol":"ospf","area":"0","ip_prefix":"10.0.0.0/24"}`,
			want: url.Values{"id": {"f1"}, "protocol": {"ospf"}, "area": {"0"}, "ip_prefix": {"10.0.0.0/24"}}},
		{name: "variant not allowed for type", endpoint: fabric, args: `{"id":"f1","protocol":"openfabric","area":"0"}`,
			errs: map[string]string{"area": "only allowed when protocol is one of 'ospf'"}},

		{name: "user id and list", endpoint: acl, args: `{"path":"/vms/100","roles":"PVEVMUser","users":"alice@pve,bob@pam"}`,
			want: url.Values{"path": {"/vms/100"}, "roles": {"PVEVMUser"}, "users": {"alice@pve,bob@pam"}}},
		{name: "user id format", endpoint: acl, args: `{"path":"/vms/100","roles":"PVEVMUser","users":"alice"}`,
			errs: map[string]string{"users": "does not look like a valid user name"}},

		{name: "path variable PVE marks optional is still required", endpoint: fwgroup, args: `{"group":"web"}`,
			errs: map[string]string{"pos": "property is missing and it is not optional"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, path, _ := strings.Cut(tc.endpoint, " ")
			ep := r.Lookup(method, path)
			if ep == nil {
				t.Fatalf("%s not in the schema", tc.endpoint)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
				t.Fatal(err)
			}
			got, err := ep.Validate(args)
			if tc.errs == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("wire values = %v, want %v", got, tc.want)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate = %v, %v; want a ValidationError", got, err)
			}
			if got != nil {
				t.Errorf("values returned with an error: %v", got)
			}
			for param, want := range tc.errs {
				if msg, ok := verr.Errors[param]; !ok || !strings.Contains(msg, want) {
					t.Errorf("error for %q = %q, want it to contain %q (all: %v)", param, msg, want, verr.Errors)
				}
			}
			if len(verr.Errors) != len(tc.errs) {
				t.Errorf("errors = %v, want exactly %d", verr.Errors, len(tc.errs))
			}
			if !strings.HasPrefix(err.Error(), "Parameter verification failed.") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"100,101;102 103\t104": {"100", "101", "102", "103", "104"},
		"":                     nil,
		" , ":                  nil,
		"a\x00b c":             {"a", "b c"},
	} {
		if got := SplitList(in); len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNamedFormats(t *testing.T) {
	for _, tc := range []struct {
		format string
		good   []string
		bad    []string
	}{
		{"pve-vmid", []string{"100", "999999999"}, []string{"99", "0100", "1000000000"}},
		{"pve-node", []string{"pve1", "a", "node-2"}, []string{"-pve", "pve_1", "pve.local"}},
		{"pve-configid", []string{"net0", "scsi-hw"}, []string{"0net", "n", "a b"}},
		{"pve-storage-id", []string{"local", "local-lvm", "nfs.backup"}, []string{"1local", "local-", "x"}},
		{"pve-configid-list", []string{"net0,ide2", ""}, []string{"net0,1x"}},
		{"mac-addr", []string{"BC:24:11:00:00:01"}, []string{"01:00:5e:00:00:01", "bc:24:11:00:00"}},
		{"ipv4", []string{"10.0.0.1"}, []string{"::1", "10.0.0.256"}},
		{"ipv6", []string{"fd00::1"}, []string{"10.0.0.1", "fe80::1%eth0"}},
		{"CIDR", []string{"10.0.0.0/8", "fd00::/64"}, []string{"10.0.0.0/7", "10.0.0.0", "10.0.0.0/33"}},
		{"ipv4mask", []string{"255.255.255.0", "0.0.0.0"}, []string{"255.0.255.0"}},
		{"pve-ipv4-config", []string{"dhcp", "manual", "10.0.0.5/24"}, []string{"auto"}},
		{"pve-vlan-id-or-range", []string{"10", "10-20"}, []string{"1", "20-10", "4095"}},
		{"pve-startup-order", []string{"1", "order=2,up=30,down=60"}, []string{"first", "up=x"}},
		{"storage-pair-list", []string{"1", "local", "local:nfs,ceph:zfs"}, []string{"local:nfs:x"}},
		{"pve-userid", []string{"root@pam", "alice@corp.ldap"}, []string{"root", "a b@pam"}},
		{"pve-poolid", []string{"prod", "prod/web"}, []string{"prod web"}},
		{"address", []string{"pve1.example.com", "10.0.0.1"}, []string{"not an address"}},
		{"pve-volume-id-or-qm-path", []string{"local-lvm:vm-100-disk-0", "/dev/sdb", "none", "cdrom"}, []string{"disk.img"}},
		{"some-format-pve-checks-itself", []string{"anything at all"}, nil},
	} {
		for _, v := range tc.good {
			if err := checkFormat(tc.format, v); err != nil {
				t.Errorf("%s rejects %q: %v", tc.format, v, err)
			}
		}
		for _, v := range tc.bad {
			if err := checkFormat(tc.format, v); err == nil {
				t.Errorf("%s accepts %q", tc.format, v)
			}
		}
	}
}

// Every parameter pattern of the real schemas translates to RE2 except the
// ones listed here, which PVE alone then checks.
func TestPatternsTranslate(t *testing.T) {
	for _, file := range []string{pve91, pve845} {
		var untranslated []string
		var walk func(*Param)
		walk = func(p *Param) {
			if p.Pattern != "" && p.re == nil {
				untranslated = append(untranslated, p.Pattern)
			}
			if p.Properties != nil {
				for _, k := range p.Properties.Keys {
					walk(k)
				}
			}
			if p.Items != nil {
				walk(p.Items)
			}
			for _, alt := range p.OneOf {
				walk(alt)
			}
		}
		for _, ep := range fixtureRegistry(t, file).Endpoints() {
			for _, p := range ep.Params {
				walk(p)
			}
		}
		if len(untranslated) > 0 {
			t.Errorf("%s: patterns RE2 cannot express: %q", file, untranslated)
		}
	}
}
