package tools

import "testing"

// BenchmarkRefresh measures tools.Server.Refresh on the real PVE 9.1
// registry in each mode: the rebuild of the tool set that follows every
// schema swap (the catalog's tools, the curated tools' input and output
// schemas, mcp-go's SetTools), which the swap's latency includes.
func BenchmarkRefresh(b *testing.B) {
	for _, mode := range []Mode{ModeCompact, ModeExpanded, ModeSearch} {
		b.Run(string(mode), func(b *testing.B) {
			h := newHarness(b, harnessOpts{mode: mode})
			b.ReportAllocs()
			for b.Loop() {
				h.srv.Refresh()
			}
		})
	}
}
