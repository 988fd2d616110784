package daemon

import (
	"slices"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// BenchmarkCatalogBytes: the bytes of the whole tools/list (every page)
// per mode and profile, with the real PVE 9.1 schema when the fixtures are
// present (the demo schema otherwise). docs/benchmarks.md records them
// beside the reference server's 622 KB.
func BenchmarkCatalogBytes(b *testing.B) {
	for _, mode := range []string{"compact", "search", "expanded"} {
		for _, profile := range []string{"read-only", "operator", "admin", "root"} {
			b.Run(mode+"/"+profile, func(b *testing.B) {
				real := realSchema(b)
				r := newRig(b, func(cfg map[string]any) {
					if real != nil {
						real(cfg)
					}
					cfg["tools"] = map[string]any{"mode": mode}
				})
				r.start()
				s := r.session(b, r.key(profile))
				var list mcptest.ToolList
				for b.Loop() {
					var err error
					if list, err = s.Tools(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(list.Bytes), "bytes")
				b.ReportMetric(float64(len(list.Tools)), "tools")
				b.ReportMetric(float64(list.Pages), "pages")
				b.ReportMetric(float64(slices.Max(list.PageBytes)), "page-bytes")
			})
		}
	}
}
