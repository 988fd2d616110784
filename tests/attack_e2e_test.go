package tests

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// BenchmarkServeUnderAttack: the built binary (`serve`, default limits) on
// the real PVE 9.1 schema for 10 s under an attack load: 50 operator keys
// each loop tools/list, a read through PVE and proxmox_schema_status in a
// session of their own; 206 more sessions of the same keys stay open (256
// in all, the default cap); four clients flood /mcp with bad keys (a
// well-formed key of an unknown id, a known id with a wrong secret, and
// garbage, in turn). Reports the daemon's peak resident memory (VmHWM), its
// resident memory (VmRSS) and private memory (RssAnon) at the end, in MiB,
// and the calls and refused keys per second. Run it with -benchtime 1x.
func BenchmarkServeUnderAttack(b *testing.B) {
	base, err := os.ReadFile(fixture(b, "pve-9.1/apidoc.js"))
	if err != nil {
		b.Fatal(err)
	}
	h := startStdioHostWith(b, base)
	var keys []string
	for i := range 50 {
		keys = append(keys, h.key(b, fmt.Sprintf("loop-%d", i), "operator"))
	}
	s := startServe(b, h)
	pid := s.proc.cmd.Process.Pid
	for b.Loop() {
		var held []*mcptest.Session
		for i := range 206 {
			ss, err := mcptest.Dial(s.url+"/mcp", keys[i%len(keys)])
			if err != nil {
				b.Fatalf("session %d: %v", i, err)
			}
			if _, _, err := ss.ToolsList(); err != nil {
				b.Fatal(err)
			}
			held = append(held, ss)
		}
		deadline := time.Now().Add(10 * time.Second)
		var calls, refused, failed atomic.Int64
		var wg sync.WaitGroup
		for _, k := range keys {
			wg.Go(func() { loopKey(s.url, k, deadline, &calls, &failed) })
		}
		for i := range 4 {
			wg.Go(func() { floodBadKeys(s.url, keys, i, deadline, &refused) })
		}
		wg.Wait()
		for _, ss := range held {
			ss.End() //nolint:errcheck // the measurement is over
		}
		hwm, rss := procMemory(b, pid)
		anon, _ := procRss(b, pid)
		b.ReportMetric(hwm, "peak-RSS-MiB")
		b.ReportMetric(rss, "RSS-end-MiB")
		b.ReportMetric(anon, "RssAnon-end-MiB")
		b.ReportMetric(float64(calls.Load())/10, "calls/s")
		b.ReportMetric(float64(refused.Load())/10, "refused/s")
		b.ReportMetric(float64(failed.Load()), "failed-calls")
	}
}

// loopKey calls tools until the deadline in a session of key's own.
func loopKey(url, key string, deadline time.Time, calls, failed *atomic.Int64) {
	ss, err := mcptest.Dial(url+"/mcp", key)
	if err != nil {
		failed.Add(1)
		return
	}
	defer ss.End() //nolint:errcheck // the measurement is over
	for time.Now().Before(deadline) {
		if _, _, err := ss.ToolsList(); err != nil {
			failed.Add(1)
		}
		if _, err := ss.Call("proxmox_api_call", map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}); err != nil {
			failed.Add(1)
		}
		if _, err := ss.Call("proxmox_schema_status", nil); err != nil {
			failed.Add(1)
		}
		calls.Add(3)
	}
}

// floodBadKeys sends initialize requests with bad keys until the deadline:
// an unknown id, a known id with a wrong secret, garbage, in turn.
func floodBadKeys(url string, keys []string, seed int, deadline time.Time, refused *atomic.Int64) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	defer hc.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + mcptest.ProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	for n := seed; time.Now().Before(deadline); n++ {
		req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+badKey(keys, n))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status counts
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusTooManyRequests {
			refused.Add(1)
		}
	}
}

// badKey is the n-th bad key of the flood.
func badKey(keys []string, n int) string {
	secret := make([]byte, 32)
	rand.Read(secret) //nolint:errcheck // crypto/rand does not fail
	s := base64.RawURLEncoding.EncodeToString(secret)
	switch n % 3 {
	case 0:
		id := make([]byte, 10)
		rand.Read(id) //nolint:errcheck // crypto/rand does not fail
		return "pmcp_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(id)) + "_" + s
	case 1:
		known := keys[n%len(keys)]
		return known[:strings.LastIndexByte(known, '_')+1] + s
	}
	return "garbage-" + s[:12]
}
