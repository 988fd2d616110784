package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every endpoint's input schema is a valid draft 2020-12 schema with an
// object root, and uses no construct a major MCP client rejects.
func TestInputSchemasCompile(t *testing.T) {
	for _, file := range []string{pve91, pve845} {
		r := fixtureRegistry(t, file)
		for _, ep := range r.Endpoints() {
			raw := ep.InputSchema()
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("%s: %v", ep.Key(), err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			url := "mem://" + ep.Tool + ".json"
			if err := c.AddResource(url, doc); err != nil {
				t.Fatalf("%s: %v", ep.Key(), err)
			}
			if _, err := c.Compile(url); err != nil {
				t.Errorf("%s: schema does not compile: %v", ep.Key(), err)
			}
			root := doc.(map[string]any)
			if root["type"] != "object" {
				t.Errorf("%s: root type %v, want object", ep.Key(), root["type"])
			}
			for _, banned := range []string{`"$schema"`, `"$ref"`, `"$defs"`, `"type":[`, `"oneOf"`, `"allOf"`, `"if"`} {
				if bytes.Contains(raw, []byte(banned)) {
					t.Errorf("%s: schema uses %s", ep.Key(), banned)
				}
			}
		}
	}
}

// Arguments that Validate accepts also pass the JSON Schema (the schema is
// never stricter than the server), and the schema refuses what clients
// can know is wrong.
func TestInputSchemaAgreesWithValidate(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	for _, tc := range []struct {
		method, path, args string
		schemaOK           bool
	}{
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", `{"node":"pve1","vmid":100,"skiplock":true}`, true},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", `{"node":"pve1"}`, false},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", `{"node":"pve1","vmid":100,"bogus":1}`, false},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/start", `{"node":"pve1","vmid":100,"migration_type":"fast"}`, false},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", `{"node":"pve1","vmid":100,"net0":"virtio,bridge=vmbr0","scsi1":"local-lvm:4"}`, true},
		{"GET", "/cluster/resources", `{"type":"vm"}`, true},
		{"GET", "/cluster/resources", `{"type":"cow"}`, false},
		{"POST", "/cluster/notifications/endpoints/sendmail", `{"name":"ops","mailto":["root"]}`, true},
	} {
		ep := r.Lookup(tc.method, tc.path)
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ep.InputSchema()))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem://s.json", doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("mem://s.json")
		if err != nil {
			t.Fatal(err)
		}
		schemaErr := s.Validate(args)
		if (schemaErr == nil) != tc.schemaOK {
			t.Errorf("%s %s %s: schema validation error %v, want ok=%v", tc.method, tc.path, tc.args, schemaErr, tc.schemaOK)
		}
		if _, verr := ep.Validate(args); schemaErr == nil && verr != nil {
			t.Errorf("%s %s %s: schema accepts but Validate refuses: %v", tc.method, tc.path, tc.args, verr)
		}
	}
}

func TestInputSchemaGolden(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	var b strings.Builder
	for _, key := range []string{
		"POST /nodes/{node}/qemu/{vmid}/status/start",
		"GET /cluster/resources",
		"POST /nodes/{node}/qemu/{vmid}/snapshot",
		"POST /cluster/sdn/fabrics/fabric",
		"POST /cluster/notifications/endpoints/sendmail",
	} {
		method, path, _ := strings.Cut(key, " ")
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, r.Lookup(method, path).InputSchema(), "", "  "); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", key, pretty.String())
	}
	golden(t, "inputschemas-pve-9.1.golden", []byte(b.String()))
}

func TestInputSchemaDeterministic(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	ep := r.Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config")
	a, b := ep.InputSchema(), ep.InputSchema()
	if !bytes.Equal(a, b) {
		t.Fatal("InputSchema is not deterministic")
	}
	var root map[string]any
	if err := json.Unmarshal(a, &root); err != nil {
		t.Fatal(err)
	}
	pp, _ := root["patternProperties"].(map[string]any)
	if _, ok := pp[`^net\d+$`]; !ok {
		t.Errorf("numbered key net[n] missing from patternProperties: %v", keys(pp))
	}
	if root["additionalProperties"] != false {
		t.Errorf("additionalProperties = %v", root["additionalProperties"])
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
