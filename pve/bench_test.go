package pve_test

import (
	"io"
	"net/http"
	"testing"
)

var versionBody = []byte(`{"data":{"version":"9.1.2","release":"9.1","repoid":"9d436f37a0ac4172"}}`)

func versionHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Write(versionBody)
}

// BenchmarkClientRoundTrip is one GET through the client to a TLS server
// that answers at once: the client's cost plus TLS and loopback.
func BenchmarkClientRoundTrip(b *testing.B) {
	c, _ := server(b, versionHandler)
	var v map[string]string
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Get(ctx, "/version", nil, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareHTTPRoundTrip is the same request with a bare net/http
// client: the baseline the client's own overhead is measured against.
func BenchmarkBareHTTPRoundTrip(b *testing.B) {
	_, srv := server(b, versionHandler)
	hc := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := hc.Get(srv.URL + "/api2/json/version")
		if err != nil {
			b.Fatal(err)
		}
		io.ReadAll(resp.Body) //nolint:errcheck // benchmark
		resp.Body.Close()
	}
}
