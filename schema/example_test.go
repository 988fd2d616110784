package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every parameter of every endpoint of the real 9.1 schema gets an example
// that the validation of that parameter accepts: the example is written as
// a call's argument ({"memory": 512}), decoded as a client's JSON would
// be, and checked by the endpoint's Check.
func TestEveryParameterHasAValidExample(t *testing.T) {
	for _, rel := range []string{pve91, pve845} {
		r := fixtureRegistry(t, rel)
		checked := 0
		for _, ep := range r.Endpoints() {
			for _, p := range ep.Params {
				name := p.exampleIndexName()
				arg, ok := p.ExampleArg(name)
				if !ok {
					t.Errorf("%s: %s %s: no example (type %q, format %q)", rel, ep.Key(), name, p.Type, p.Format)
					continue
				}
				args := map[string]any{}
				dec := json.NewDecoder(strings.NewReader(arg))
				dec.UseNumber()
				if err := dec.Decode(&args); err != nil {
					t.Fatalf("%s %s: example %s is no JSON: %v", ep.Key(), name, arg, err)
				}
				if p.TypeProperty != "" && len(p.InstanceTypes) > 0 {
					args[p.TypeProperty] = p.InstanceTypes[0]
				}
				if len(p.OneOf) > 0 && len(p.OneOf[0].InstanceTypes) > 0 {
					args[p.TypeProperty] = p.OneOf[0].InstanceTypes[0]
				}
				_, err := ep.Check(args)
				if msg := paramErrors(err, name); msg != "" {
					t.Errorf("%s: %s %s: example %s refused: %s", rel, ep.Key(), name, arg, msg)
				}
				checked++
			}
		}
		if checked < 2500 {
			t.Errorf("%s: only %d parameters checked", rel, checked)
		}
	}
}

// paramErrors are the validation errors of one parameter (its sub-keys
// and items included).
func paramErrors(err error, name string) string {
	ve, ok := err.(*ValidationError)
	if !ok {
		if err != nil {
			return err.Error()
		}
		return ""
	}
	var out []string
	for k, msg := range ve.Errors {
		if k == name || strings.HasPrefix(k, name+".") || strings.HasPrefix(k, name+"[") {
			out = append(out, k+": "+msg)
		}
	}
	return strings.Join(out, "; ")
}

// Examples read as PVE's documentation writes values.
func TestParamExample(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	for _, tc := range []struct {
		method, path, param, want string
	}{
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "memory", `{"memory": "512"}`},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "cores", `{"cores": 1}`},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "net[n]", `{"net0": "model=e1000"}`},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "scsi[n]", `{"scsi0": "file=local-lvm:vm-100-disk-0"}`},
		{"PUT", "/nodes/{node}/qemu/{vmid}/config", "onboot", `{"onboot": true}`},
		{"POST", "/nodes/{node}/qemu/{vmid}/clone", "newid", `{"newid": 100}`},
		{"PUT", "/nodes/{node}/qemu/{vmid}/resize", "size", `{"size": "+1G"}`},
		{"POST", "/nodes/{node}/storage/{storage}/download-url", "url", `{"url": "https://example.com/debian-13.0.0-amd64-netinst.iso"}`},
	} {
		ep := r.Lookup(tc.method, tc.path)
		if ep == nil {
			t.Fatalf("no %s %s", tc.method, tc.path)
		}
		p := ep.Param(tc.param)
		if p == nil {
			t.Fatalf("%s %s has no %s", tc.method, tc.path, tc.param)
		}
		if got, _ := p.ExampleArg(p.exampleIndexName()); got != tc.want {
			t.Errorf("%s of %s %s: %s, want %s", tc.param, tc.method, tc.path, got, tc.want)
		}
	}
}
