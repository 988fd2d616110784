package schema

import "testing"

// BenchmarkParse measures extraction and normalization of the 9.1 file in
// a warm process: what a reload costs.
func BenchmarkParse(b *testing.B) {
	data := fixture(b, pve91)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtract measures the JSON decode of the schema array alone.
func BenchmarkExtract(b *testing.B) {
	data := fixture(b, pve91)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := extract(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup: method+path and tool-name lookups are map reads.
func BenchmarkLookup(b *testing.B) {
	r := fixtureRegistry(b, pve91)
	b.ReportAllocs()
	for b.Loop() {
		if r.Lookup("POST", "/nodes/{node}/qemu/{vmid}/status/start") == nil || r.Tool("post_nodes_qemu_status_start") == nil {
			b.Fatal("lookup failed")
		}
	}
}

// BenchmarkMatch resolves a concrete path to its endpoint.
func BenchmarkMatch(b *testing.B) {
	r := fixtureRegistry(b, pve91)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Match("POST", "/nodes/pve1/qemu/100/status/start"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate checks a typical config edit with a property string.
func BenchmarkValidate(b *testing.B) {
	ep := fixtureRegistry(b, pve91).Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config")
	args := map[string]any{"node": "pve1", "vmid": 100.0, "net0": "virtio,bridge=vmbr0,firewall=1", "memory": "4096", "delete": "ide2"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ep.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearch ranks all endpoints for a two-word query.
func BenchmarkSearch(b *testing.B) {
	r := fixtureRegistry(b, pve91)
	r.Search("warm", SearchOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if len(r.Search("start vm", SearchOptions{Limit: 10})) == 0 {
			b.Fatal("no results")
		}
	}
}

// BenchmarkInputSchema converts the largest endpoint (QEMU config) to JSON Schema.
func BenchmarkInputSchema(b *testing.B) {
	ep := fixtureRegistry(b, pve91).Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config")
	b.ReportAllocs()
	for b.Loop() {
		_ = ep.InputSchema()
	}
}
