package tools

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkConfigEdit measures what the change contract costs on a config
// edit against the simulator: "raw" is the PUT alone, straight to PVE
// with the admin token (unconditional: no digest, nothing journaled);
// "contract" is the same edit through proxmox_api_call (plan, policy,
// guard, the configuration read before, intent and receipt in a real
// journal, the configuration read after for the evidence).
func BenchmarkConfigEdit(b *testing.B) {
	h := newHarness(b, harnessOpts{journal: true})
	b.Run("raw", func(b *testing.B) {
		client, err := h.srv.opts.PVE.Client(TierAdmin)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := client.Do(b.Context(), "PUT", "/nodes/pve1/qemu/100/config", map[string][]string{"description": {fmt.Sprint("raw ", i)}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("contract", func(b *testing.B) {
		c, ctx := h.as("admin")
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			res, _ := call(b, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/100/config",
				"params": map[string]any{"description": fmt.Sprint("contract ", i)}})
			if res.IsError {
				b.Fatal(text(res))
			}
		}
	})
}

// BenchmarkConfigRead is one GET of a configuration from the simulator,
// the read a config edit makes before and after itself.
func BenchmarkConfigRead(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	client, err := h.srv.opts.PVE.Client(TierAdmin)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var conf map[string]any
		if err := client.Get(b.Context(), "/nodes/pve1/qemu/100/config", nil, &conf); err != nil {
			b.Fatal(err)
		}
	}
}

// One 1 MiB page of a host file (random bytes: base64 on the wire)
// through MCP, the daemon, the root helper over its socket and back: the
// throughput of proxmox_host_file_read.
func BenchmarkHostReadPage(b *testing.B) {
	hb := newHostBed(b)
	data := make([]byte, 8<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(hb.root, "big.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	admin, ctx := hb.as(b, "admin", "")
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, _ := call(b, admin, ctx, ToolHostRead, map[string]any{"path": hb.root + "/big.bin", "offset": (i % 8) << 20, "length": 1 << 20})
		if res.IsError {
			b.Fatal(text(res))
		}
	}
}
