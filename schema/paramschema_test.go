package schema

import (
	"encoding/json"
	"slices"
	"testing"
)

// ParamSchema gives each parameter what InputSchema says of it, to the
// byte once encoded, on every endpoint of the real files; numbered keys
// and unknown names have none.
func TestParamSchemaMatchesInputSchema(t *testing.T) {
	for _, rel := range []string{pve91, pve845} {
		r := fixtureRegistry(t, rel)
		checked := 0
		for _, ep := range r.endpoints {
			var in struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			if err := json.Unmarshal(ep.InputSchema(), &in); err != nil {
				t.Fatalf("%s %s: %v", rel, ep.Key(), err)
			}
			for _, p := range ep.Params {
				got, req := ep.ParamSchema(p.Name)
				if p.Indexed {
					if got != nil {
						t.Errorf("%s %s: numbered key %s has a ParamSchema", rel, ep.Key(), p.Name)
					}
					continue
				}
				want, _ := json.Marshal(in.Properties[p.Name])
				if enc, _ := json.Marshal(got); string(enc) != string(want) {
					t.Errorf("%s %s %s:\n ParamSchema %s\n InputSchema %s", rel, ep.Key(), p.Name, enc, want)
				}
				if wantReq := slices.Contains(in.Required, p.Name); req != wantReq {
					t.Errorf("%s %s %s: required %v, InputSchema says %v", rel, ep.Key(), p.Name, req, wantReq)
				}
				checked++
			}
			if s, _ := ep.ParamSchema("no-such-parameter"); s != nil {
				t.Errorf("%s %s: a schema for an unknown parameter", rel, ep.Key())
			}
		}
		if checked < 2000 {
			t.Errorf("%s: only %d parameters checked", rel, checked)
		}
	}
}

// The map is the caller's: changing it changes neither the next answer
// nor InputSchema.
func TestParamSchemaIsACopy(t *testing.T) {
	ep := fixtureRegistry(t, pve91).Lookup("POST", "/nodes/{node}/qemu/{vmid}/status/start")
	before := string(ep.InputSchema())
	s, _ := ep.ParamSchema("timeout")
	if s == nil {
		t.Fatal("no schema for timeout")
	}
	s["description"] = "changed"
	if again, _ := ep.ParamSchema("timeout"); again["description"] == "changed" {
		t.Error("ParamSchema returned the same map twice")
	}
	if string(ep.InputSchema()) != before {
		t.Error("InputSchema changed with the map")
	}
}
