package tools

import (
	"encoding/json"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// decodedShape is what returnShape replaced: the whole schema decoded.
func decodedShape(ret []byte) (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(ret, &m)
	return m, err
}

// sameTolerant reports whether tolerant makes the same schema of both
// readings of ret, and says what each made.
func sameTolerant(t *testing.T, ret []byte) (got, want string, same bool) {
	t.Helper()
	a, errA := returnShape(ret)
	b, errB := decodedShape(ret)
	if (errA != nil) != (errB != nil) {
		return "error " + errString(errA), "error " + errString(errB), false
	}
	if errA != nil {
		return "", "", true
	}
	x, _ := json.Marshal(tolerant(a, 0))
	y, _ := json.Marshal(tolerant(b, 0))
	return string(x), string(y), string(x) == string(y)
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

func TestReturnShapeReadsAsDecodingWhole(t *testing.T) {
	for _, ret := range []string{
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"object","properties":{"c":{"type":"integer"}}}}}}`,
		`{"type":"array","items":{"type":"object","properties":{"vmid":{"type":"integer"},"x[n]":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"object","properties":{"d":{}}}}}}}}}`,
		`{"type":"object","type":1,"properties":{"a":{}}}`,
		`{"type":1,"type":"object","properties":{"a":{}}}`,
		`{"type":"object","properties":{"a":{}},"properties":[1]}`,
		`{"type":"object","properties":{"a":{},"a":"x","b":1,"c":null}}`,
		`{"type":"array","items":{"type":"string"},"items":null}`,
		`{"type":"array","items":[{"type":"string"}]}`,
		`{"type":"object","properties":null}`,
		`{"description":"x \u00e9 \"q\"","type":"object","properties":{"\u0061":{"type":"string","enum":[1,2]}}}`,
		`{"Type":"object","properties":{"a":{}}}`,
		`null`,
		`[]`,
		`"object"`,
		`{"type":"object"`,
	} {
		if got, want, same := sameTolerant(t, []byte(ret)); !same {
			t.Errorf("%s:\n returnShape %s\n decoded     %s", ret, got, want)
		}
	}
}

// Every return schema of the real files makes the same output schema.
func TestReturnShapeMatchesOnRealSchemas(t *testing.T) {
	for _, path := range []string{"../../shared/fixtures/pve-9.1/apidoc.js", "../../shared/fixtures/pve-8.4.5/apidoc.js"} {
		reg := realRegistry(t) // skips without the fixtures
		if path != "../../shared/fixtures/pve-9.1/apidoc.js" {
			var err error
			if reg, err = schema.ParseFile(path); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		for _, ep := range reg.Endpoints() {
			if len(ep.Returns) == 0 {
				continue
			}
			n++
			if got, want, same := sameTolerant(t, ep.Returns); !same {
				t.Errorf("%s %s:\n returnShape %s\n decoded     %s", path, ep.Key(), got, want)
			}
		}
		if n < 500 {
			t.Errorf("%s: only %d return schemas", path, n)
		}
	}
}
