package schema

import (
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// decodedWithDigest is what objectWithDigest replaced: the return schema
// decoded whole by encoding/json into the two fields it needs.
func decodedWithDigest(ret []byte) bool {
	var r struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(ret, &r) != nil || r.Type != "object" {
		return false
	}
	_, ok := r.Properties["digest"]
	return ok
}

func TestObjectWithDigest(t *testing.T) {
	for _, tc := range []struct {
		ret  string
		want bool
	}{
		{`{"type":"object","properties":{"digest":{"type":"string"},"name":{}}}`, true},
		{`{"properties":{"a":[1,{"digest":1}],"digest":{}},"type":"object"}`, true},
		{`{"type":"object","properties":{"name":{"properties":{"digest":{}}}}}`, false},
		{`{"type":"array","properties":{"digest":{}}}`, false},
		{`{"type":"object"}`, false},
		{`{"type":"object","properties":null}`, false},
		{`{"type":"object","properties":{"digest":null}}`, true},
		{`{"type":"object","properties":[]}`, false},
		{`{"type":1,"properties":{"digest":{}}}`, false},
		{`{"type":null,"properties":{"digest":{}}}`, false},
		{`{"type":"object","type":null,"properties":{"digest":{}}}`, true},
		{`{"type":"string","type":"object","properties":{"digest":{}}}`, true},
		{`{"Type":"object","PROPERTIES":{"digest":{}}}`, true},
		{`{"type":"object","properties":{"Digest":{}}}`, false},
		{`{"type":"object","properties":{"digest":{}},"items":{"type":"x","properties":{}}}`, true},
		{`[{"type":"object","properties":{"digest":{}}}]`, false},
		{`"object"`, false},
		{`{"type":"object","properties":{"digest":{}}`, false},
	} {
		if got := objectWithDigest(jsontext.Value(tc.ret)); got != tc.want {
			t.Errorf("objectWithDigest(%s) = %v, want %v", tc.ret, got, tc.want)
		}
		if got := decodedWithDigest([]byte(tc.ret)); got != tc.want {
			t.Errorf("encoding/json reads %s as %v, the table says %v", tc.ret, got, tc.want)
		}
	}
}

// Every return schema of the real files answers as decoding it whole did,
// so the config edits (and the reads of their configurations) are the
// same endpoints.
func TestObjectWithDigestMatchesDecodeOnRealSchemas(t *testing.T) {
	for _, rel := range []string{pve91, pve845} {
		r := fixtureRegistry(t, rel)
		n, edits := 0, 0
		for _, ep := range r.endpoints {
			if len(ep.Returns) == 0 {
				continue
			}
			n++
			got, want := objectWithDigest(ep.Returns), decodedWithDigest(ep.Returns)
			if got != want {
				t.Errorf("%s %s: objectWithDigest = %v, decoding it whole = %v", rel, ep.Key(), got, want)
			}
			if ep.Facts.ConfigEdit {
				edits++
			}
		}
		if n < 500 || edits < 10 {
			t.Errorf("%s: %d return schemas and %d config edits: not the real file?", rel, n, edits)
		}
	}
}
