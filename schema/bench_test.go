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
