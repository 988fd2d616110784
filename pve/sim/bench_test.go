package sim

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHandlerVersion is the simulator's own cost of GET /version,
// in process (no network, no TLS).
func BenchmarkHandlerVersion(b *testing.B) {
	e := newEnv(b)
	tok, _ := e.sim.Token("mcp@pve!operator")
	req := httptest.NewRequest("GET", APIPrefix+"/version", nil)
	req.Header.Set("Authorization", tok.Header())
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.sim.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkClientVersion is one GET /version through the PVE client, TLS
// and keep-alive, against the simulator: the client's cost per call is this
// minus BenchmarkHandlerVersion.
func BenchmarkClientVersion(b *testing.B) {
	e := newEnv(b)
	c := e.client("mcp@pve!operator")
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Get(ctx, "/version", nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientClusterResources is a larger read (every guest, node and
// storage) through the client.
func BenchmarkClientClusterResources(b *testing.B) {
	e := newEnv(b)
	c := e.client("mcp@pve!operator")
	var out []map[string]any
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Get(ctx, "/cluster/resources", nil, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSimulatorParallel is the simulator's throughput over HTTPS with
// concurrent keep-alive clients: requests per second = 1e9 / ns/op.
func BenchmarkSimulatorParallel(b *testing.B) {
	e := newEnv(b)
	c := e.client("mcp@pve!operator")
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Get(ctx, "/nodes/pve1/qemu/100/status/current", nil, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
