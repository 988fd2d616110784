package config

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// A complete configuration parses, and every rule refuses what it should
// with the field named.
func TestFullConfig(t *testing.T) {
	full := `{
	// proxmox-mcp on pve1
	"version": 1,
	"state_dir": "/var/lib/proxmox-mcp",
	"schema": {"path": "/usr/share/pve-docs/api-viewer/apidoc.js"},
	"tools": {"mode": "expanded", "max_result_bytes": 131072, "answer_text": "summary"},
	"allow_mutations": true,
	"pve": {
		"url": "https://127.0.0.1:8006/api2/json",
		"cert_file": "/etc/pve/local/pveproxy-ssl.pem",
		"tokens": {
			"read-only": {"id": "proxmox-mcp@pve!read-only", "secret_file": "/etc/proxmox-mcp/tokens/read-only"},
			"root": {"id": "proxmox-mcp@pve!root", "secret_file": "/etc/proxmox-mcp/tokens/root"},
		},
	},
	"listen": {"loopback": {"address": "127.0.0.1:9000", "allowed_origins": ["https://app.example.net"]}},
	"http": {"max_body_bytes": 2097152},
	"protected": {"paths": ["/mnt/model-repo"], "volumes": ["local-lvm:vm-900-disk-0", "pve/model"], "devices": ["/dev/sdb"]},
	"log": {"level": "debug"},
}`
	c, err := Parse("full.hujson", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tools.Mode != "expanded" || !c.AllowMutations || c.PVE.Tokens["root"].ID != "proxmox-mcp@pve!root" || c.LoopbackAddress() != "127.0.0.1:9000" {
		t.Errorf("parsed %+v", c)
	}
	def, _ := Parse("min", []byte(`{"version": 1}`))
	if def.LoopbackAddress() != "127.0.0.1:8765" || def.PVEURL() != "https://127.0.0.1:8006/api2/json" || def.AllowMutations ||
		def.SchemaPath() != "/usr/share/pve-docs/api-viewer/apidoc.js" || def.JournalPath() != "/var/lib/proxmox-mcp/journal.db" {
		t.Errorf("defaults %+v", def)
	}
}

func TestConfigRules(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"tools": {"mode": "huge"}`, `field "tools.mode": "huge" is not compact, expanded or search`},
		{`"tools": {"max_result_bytes": 10}`, `field "tools.max_result_bytes": 10 is outside`},
		{`"tools": {"answer_text": "both"}`, `field "tools.answer_text": "both" is not json or summary`},
		{`"read_only": true, "allow_mutations": true`, `"read_only" and "allow_mutations" are both true`},
		{`"pve": {"url": "http://127.0.0.1:8006/api2/json"}`, `field "pve.url"`},
		{`"pve": {"fingerprint": "AB:CD"}`, `field "pve.fingerprint"`},
		{`"pve": {"tokens": {"superuser": {"id": "a@pve!b", "secret_file": "/x"}}}`, `"superuser" is not a tier`},
		{`"pve": {"tokens": {"root": {"id": "root@pam", "secret_file": "/x"}}}`, `field "pve.tokens.root.id"`},
		{`"pve": {"tokens": {"root": {"id": "a@pve!b", "secret_file": "tokens/root"}}}`, `field "pve.tokens.root.secret_file": "tokens/root" must be an absolute path`},
		{`"pve": {"tokens": {"root": {"id": "a@pve!b", "secret": "x"}}}`, `is not known`},
		{`"listen": {"loopback": {"address": "0.0.0.0:8765"}}`, `field "listen.loopback.address": "0.0.0.0:8765": the loopback listener binds only`},
		{`"listen": {"loopback": {"address": "192.168.1.5:8765"}}`, `binds only 127.0.0.0/8 or ::1`},
		{`"listen": {"loopback": {"allowed_origins": ["evil"]}}`, `field "listen.loopback.allowed_origins[0]"`},
		{`"http": {"max_body_bytes": 1}`, `field "http.max_body_bytes"`},
		{`"protected": {"paths": ["mnt/x"]}`, `field "protected.paths[0]"`},
		{`"protected": {"devices": ["/etc/passwd"]}`, `field "protected.devices[0]"`},
		{`"protected": {"paths": ["/mnt/model-repo"], "approval": "anyone"}`, `field "protected.approval"`},
		{`"log": {"level": "loud"}`, `field "log.level"`},
		{`"schema": {"path": "apidoc.js"}`, `field "schema.path"`},
		{`"changes": {"settle_after": "500ms"}`, `field "changes.settle_after": 500ms is outside 1s to 1h`},
		{`"changes": {"settle_after": "2h"}`, `field "changes.settle_after": 2h0m0s is outside 1s to 1h`},
	} {
		_, err := Parse("t", []byte(`{"version": 1, `+tc.in+`}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// Effective fills every default and leaves what the file said.
func TestEffective(t *testing.T) {
	c, err := Parse("t", []byte(`{"version": 1, "tools": {"mode": "search"}, "listen": {"loopback": {"allowed_origins": ["http://localhost:6274"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Effective()
	if e.Schema.Path != "/usr/share/pve-docs/api-viewer/apidoc.js" || e.PVE.URL != "https://127.0.0.1:8006/api2/json" ||
		e.Listen.Loopback.Address != "127.0.0.1:8765" || e.Listen.Loopback.AllowedOrigins[0] != "http://localhost:6274" ||
		e.Tools.Mode != "search" || e.Tools.MaxResultBytes != 65536 || e.HTTP.MaxBodyBytes != 1<<20 || e.Log.Level != "info" ||
		e.StateDir != "/var/lib/proxmox-mcp" {
		t.Errorf("effective %+v", e)
	}
	if c.Schema.Path != "" || c.Listen.Loopback.Address != "" {
		t.Error("Effective changed the parsed configuration")
	}
}

// CheckFiles names every file the daemon would fail to read, and picks the
// host certificate the way the daemon does (by existence).
func TestCheckFiles(t *testing.T) {
	c, err := Parse("t", []byte(`{"version": 1, "schema": {"path": "/s/apidoc.js"},
		"pve": {"cert_file": "/c/cert.pem", "ca_file": "/c/ca.pem",
		        "tokens": {"root": {"id": "mcp@pve!root", "secret_file": "/t/root"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{"/s/apidoc.js": true}
	exists := func(p string) bool { return present[p] }
	readable := func(p string) error {
		if present[p] {
			return nil
		}
		return fs.ErrNotExist
	}
	var got []string
	for _, err := range c.CheckFiles(exists, readable) {
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("not a FileError: %v", err)
		}
		got = append(got, fe.Field)
	}
	if strings.Join(got, " ") != "pve.tokens.root.secret_file pve.cert_file pve.ca_file" {
		t.Errorf("problems %v", got)
	}

	// No trust configured: the host's pveproxy certificate, chosen by
	// existence; none at all is one error naming pve.
	c.PVE.CertFile, c.PVE.CAFile = "", ""
	present["/t/root"] = true
	present["/etc/pve/local/pve-ssl.pem"] = true
	if errs := c.CheckFiles(exists, readable); len(errs) != 0 {
		t.Errorf("host certificate: %v", errs)
	}
	delete(present, "/etc/pve/local/pve-ssl.pem")
	errs := c.CheckFiles(exists, readable)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `field "pve": no way to verify`) {
		t.Errorf("no trust: %v", errs)
	}
}

// With a LAN listener the server certificate and key must be readable (the
// CA key is not needed); with a Tailnet auth key file, that file.
func TestCheckFilesListeners(t *testing.T) {
	c, err := Parse("t", []byte(`{"version": 1, "schema": {"path": "/s/apidoc.js"}, "pki": {"dir": "/p"},
		"listen": {"lan": [{"address": "10.0.0.5:8443"}], "tailnet": {"auth_key_file": "/k/ts"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{"/s/apidoc.js": true, "/p/server.pem": true}
	readable := func(p string) error {
		if present[p] {
			return nil
		}
		return fs.ErrNotExist
	}
	errs := c.CheckFiles(func(p string) bool { return present[p] }, readable)
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	want := []string{
		`field "pki.dir": file does not exist: the LAN listeners need server-key.pem; run ` + "`proxmox-mcp pki init`" + ` as root`,
		`field "listen.tailnet.auth_key_file": file does not exist`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	present["/p/server-key.pem"], present["/k/ts"] = true, true
	if errs := c.CheckFiles(func(p string) bool { return present[p] }, readable); len(errs) != 0 {
		t.Errorf("all present: %v", errs)
	}
}
