package schema

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRejects(t *testing.T) {
	node := func(path, info string) string {
		return `{"path":"` + path + `","text":"x","leaf":1` + info + `}`
	}
	get := `,"info":{"GET":{"method":"GET","name":"x","description":"x","parameters":{"additionalProperties":0}}}`
	for _, tc := range []struct {
		name, data, want string
	}{
		{"no marker", `var pveapi = [];`, "marker"},
		{"marker only", `const apiSchema = [`, "truncated"},
		{"truncated", `const apiSchema = [` + node("/a", get)[:40], "truncated"},
		{"invalid JSON", `const apiSchema = [{"path": "/a",}];`, "not valid"},
		{"wrong element type", `const apiSchema = ["/a"];`, "not valid"},
		{"null element", `const apiSchema = [null];`, "null"},
		{"empty", `const apiSchema = [];`, "empty"},
		{"no methods", `const apiSchema = [` + node("/a", "") + `];`, "no methods"},
		{"relative path", `const apiSchema = [` + node("a", get) + `];`, "must start with '/'"},
		{"empty segment", `const apiSchema = [` + node("/a//b", get) + `];`, "empty segment"},
		{"broken variable", `const apiSchema = [` + node("/a/{b", get) + `];`, "not a {variable}"},
		{"duplicate path", `const apiSchema = [` + node("/a", get) + `,` + node("/a", get) + `];`, "appears twice"},
		{"method mismatch", `const apiSchema = [` + node("/a", `,"info":{"GET":{"method":"POST"}}`) + `];`, "entry says method"},
		{"unknown method", `const apiSchema = [` + node("/a", `,"info":{"PATCH":{}}`) + `];`, "unsupported HTTP method"},
		{"bad optional", `const apiSchema = [` + node("/a", `,"info":{"GET":{"parameters":{"properties":{"x":{"type":"string","optional":"maybe"}}}}}`) + `];`, "not 0 or 1"},
		{"unknown type", `const apiSchema = [` + node("/a", `,"info":{"GET":{"parameters":{"properties":{"x":{"type":"colour"}}}}}`) + `];`, `unknown type "colour"`},
		{"bad alias", `const apiSchema = [` + node("/a", `,"info":{"GET":{"parameters":{"properties":{"x":{"type":"string","format":{"k":{"alias":"nope"}}}}}}}`) + `];`, "alias of unknown key"},
		{"duplicate key", `const apiSchema = [{"path":"/a","path":"/b"}];`, "not valid"},
		{"too large", "const apiSchema = [" + strings.Repeat(" ", MaxFileSize) + "]", "over the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.data))
			if err == nil {
				t.Fatalf("parsed: %d methods", r.Methods())
			}
			if r != nil {
				t.Error("a registry came back with the error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// The viewer code after the array is never parsed, and quirks PVE's schema
// has are accepted: optional as "1", null proxyto, numeric-string bounds,
// a null enum, no additionalProperties.
func TestParseQuirks(t *testing.T) {
	data := `const apiSchema = [{"path":"/a/{id}","text":"{id}","leaf":1,"info":{"POST":{
		"method":"POST","name":"x","description":"d","allowtoken":0,"protected":1,"proxyto":null,
		"download_allowed":1,"expose_credentials":1,
		"permissions":{"check":["perm","/a/{id}",["Sys.Audit"]],"description":"why"},
		"parameters":{"properties":{
			"id":{"type":"string","optional":1},
			"n":{"type":"integer","optional":"1","minimum":"0","maximum":10},
			"e":{"type":"string","optional":1,"enum":null},
			"b":{"type":"boolean","optional":1,"default":0}
		}},
		"returns":{"type":"null"}}}}]
;
let method2cmd = { x: [1, 2, "]" };`
	r, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	ep := r.Lookup("POST", "/a/{id}")
	if ep == nil || ep.AllowToken || !ep.Protected || ep.ProxyTo != "" || !ep.DownloadAllowed || !ep.ExposeCredentials {
		t.Fatalf("endpoint flags: %+v", ep)
	}
	if ep.Permissions == nil || !bytes.Contains(ep.Permissions.Check, []byte("Sys.Audit")) || ep.Permissions.Description != "why" {
		t.Errorf("permissions: %+v", ep.Permissions)
	}
	if p := ep.Param("id"); p.Optional {
		t.Error("path variable left optional")
	}
	if p := ep.Param("n"); !p.Optional || *p.Minimum != 0 || *p.Maximum != 10 {
		t.Errorf("n: %+v", p)
	}
	if p := ep.Param("e"); p.Enum != nil {
		t.Errorf("null enum became %q", p.Enum)
	}
	if ep.AdditionalParams {
		t.Error("missing additionalProperties read as allowed")
	}
	if string(ep.Returns) != `{"type":"null"}` {
		t.Errorf("returns %s", ep.Returns)
	}
	if ep.PathParams[0] != "id" {
		t.Errorf("path params %v", ep.PathParams)
	}
}

func TestNormalizeRealFlags(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	var noToken, protected, proxyNode, download, credentials, noPerms int
	for _, ep := range r.Endpoints() {
		if !ep.AllowToken {
			noToken++
		}
		if ep.Protected {
			protected++
		}
		if ep.ProxyTo == "node" {
			proxyNode++
		}
		if ep.DownloadAllowed {
			download++
		}
		if ep.ExposeCredentials {
			credentials++
		}
		if ep.Permissions == nil {
			noPerms++
		}
	}
	// Counts from ../shared/reference/pve-schema.md.
	for name, got := range map[string][2]int{
		"allowtoken 0":       {noToken, 5},
		"protected":          {protected, 452},
		"proxyto node":       {proxyNode, 271},
		"download_allowed":   {download, 3},
		"expose_credentials": {credentials, 5},
		"no permissions":     {noPerms, 15},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %d endpoints, want %d", name, got[0], got[1])
		}
	}
	start := r.Lookup("POST", "/nodes/{node}/qemu/{vmid}/status/start")
	if string(start.Permissions.Check) == "" || start.Handler != "vm_start" {
		t.Errorf("vm_start: handler %q, check %s", start.Handler, start.Permissions.Check)
	}
	net := r.Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config").Param("net[n]")
	if net == nil || !net.Indexed || net.Prefix != "net" || net.Properties == nil || net.Properties.Key("bridge") == nil {
		t.Fatalf("net[n]: %+v", net)
	}
	if scsi := r.Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config").Param("scsi[n]"); scsi.IndexMax != 30 {
		t.Errorf("scsi[n] IndexMax = %d, want 30", scsi.IndexMax)
	}
	if link := r.Lookup("POST", "/cluster/config").Param("link[n]"); link == nil || link.IndexMax != 7 {
		t.Errorf("link[n]: %+v", link)
	}
}

func TestMatch(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	for _, tc := range []struct {
		method, path string
		want         string
		vars         map[string]string
	}{
		{"GET", "/version", "GET /version", map[string]string{}},
		{"get", "/nodes/pve1/qemu/", "GET /nodes/{node}/qemu", map[string]string{"node": "pve1"}},
		{"POST", "/nodes/pve1/qemu/100/status/start", "POST /nodes/{node}/qemu/{vmid}/status/start", map[string]string{"node": "pve1", "vmid": "100"}},
		{"GET", "/nodes/pve1/storage/local/content/local%3Aiso%2Fdebian.iso", "GET /nodes/{node}/storage/{storage}/content/{volume}",
			map[string]string{"node": "pve1", "storage": "local", "volume": "local:iso/debian.iso"}},
		{"GET", "/nodes/pve1/tasks/UPID:pve1:0000A1B2:00C0FFEE:66D5E3A1:qmstart:100:root@pam:/status", "GET /nodes/{node}/tasks/{upid}/status",
			map[string]string{"node": "pve1", "upid": "UPID:pve1:0000A1B2:00C0FFEE:66D5E3A1:qmstart:100:root@pam:"}},
		// A literal segment wins over a variable at the same place.
		{"GET", "/cluster/firewall/groups/web/5", "GET /cluster/firewall/groups/{group}/{pos}", map[string]string{"group": "web", "pos": "5"}},
	} {
		ep, vars, err := r.Match(tc.method, tc.path)
		if err != nil {
			t.Errorf("Match(%s %s): %v", tc.method, tc.path, err)
			continue
		}
		if ep.Key() != tc.want {
			t.Errorf("Match(%s %s) = %s, want %s", tc.method, tc.path, ep.Key(), tc.want)
		}
		if len(vars) != len(tc.vars) {
			t.Errorf("Match(%s %s) vars %v, want %v", tc.method, tc.path, vars, tc.vars)
		}
		for k, v := range tc.vars {
			if vars[k] != v {
				t.Errorf("Match(%s %s) %s = %q, want %q", tc.method, tc.path, k, vars[k], v)
			}
		}
	}
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/nodes/pve1/qemu/100/nonsense", "no such endpoint"},
		{"PATCH", "/version", "methods: GET"},
		{"GET", "nodes", "must start with '/'"},
		{"GET", "/nodes//qemu", "empty segment"},
		{"GET", "/nodes/%zz", "invalid URL escape"},
	} {
		if _, _, err := r.Match(tc.method, tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Match(%s %s) = %v, want error containing %q", tc.method, tc.path, err, tc.want)
		}
	}
}
