package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// BenchmarkServeSchemaSwapLatency: the built binary (`serve`) on the real
// PVE 9.1 schema, whose apidoc.js becomes 8.4.5, 9.1, 8.4.5, ... in turn.
// "rename" writes the new bytes beside the file and renames them over it,
// as dpkg does (the clock starts when rename returns); "in-place" rewrites
// the file itself (the clock starts when the write is closed). The clock
// stops at the first proxmox_schema_status, called back to back by one
// session, that reports the new bytes' SHA-256. Meanwhile two other
// sessions call proxmox_api_call (a VM's status, through PVE) back to
// back; any call that fails counts. Reports p50/p99 in ms and the failed
// calls. Run with -benchtime 40x: one op is one swap.
func BenchmarkServeSchemaSwapLatency(b *testing.B) {
	versions := [][]byte{readFixture(b, "pve-8.4.5/apidoc.js"), readFixture(b, "pve-9.1/apidoc.js")}
	h := startStdioHostWith(b, versions[1])
	key := h.key(b, "swap-latency", "read-only")
	s := startServe(b, h, func(cfg map[string]any) { cfg["http"] = map[string]any{"rate_per_key": 1e6, "burst_per_key": 1000} })
	path := filepath.Clean(s.cfg["schema"].(map[string]any)["path"].(string))
	for _, mode := range []struct {
		name  string
		write func(path string, data []byte) error
	}{
		{"rename", func(path string, data []byte) error {
			if err := os.WriteFile(path+".dpkg-new", data, 0o644); err != nil {
				return err
			}
			return os.Rename(path+".dpkg-new", path)
		}},
		{"in-place", func(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			poll := dialBench(b, s.url, key)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var calls, failed atomic.Int64
			for range 2 {
				ss := dialBench(b, s.url, key)
				wg.Go(func() { callUntil(stop, ss, &calls, &failed) })
			}
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				data := versions[i%2]
				sum := sha256.Sum256(data)
				if err := mode.write(path, data); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				waitStatus(b, poll, hex.EncodeToString(sum[:]))
				lat = append(lat, time.Since(start))
			}
			close(stop)
			wg.Wait()
			// End on the 9.1 file, as the next mode starts.
			if len(lat)%2 == 1 {
				sum := sha256.Sum256(versions[1])
				if err := mode.write(path, versions[1]); err != nil {
					b.Fatal(err)
				}
				waitStatus(b, poll, hex.EncodeToString(sum[:]))
			}
			slices.Sort(lat)
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[(len(lat)-1)*99/100]), "p99-ms")
			b.ReportMetric(float64(calls.Load()), "calls")
			b.ReportMetric(float64(failed.Load()), "failed-calls")
		})
	}
}

func readFixture(b *testing.B, rel string) []byte {
	data, err := os.ReadFile(fixture(b, rel))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func dialBench(b *testing.B, url, key string) *mcptest.Session {
	ss, err := mcptest.Dial(url+"/mcp", key)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.End() }) //nolint:errcheck // a measurement's session
	return ss
}

// callUntil reads a VM's status through the daemon back to back until
// stop closes, counting the calls and those that fail.
func callUntil(stop <-chan struct{}, ss *mcptest.Session, calls, failed *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		calls.Add(1)
		if _, err := ss.Call("proxmox_api_call", map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}); err != nil {
			failed.Add(1)
		}
	}
}

// waitStatus calls proxmox_schema_status back to back until it reports
// the SHA-256 want.
func waitStatus(b *testing.B, ss *mcptest.Session, want string) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := ss.Call("proxmox_schema_status", nil)
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(res), want) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the daemon did not serve the new apidoc.js within 30 s: %.300s", res)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
