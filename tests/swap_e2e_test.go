package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/transport/mcptest"
)

// BenchmarkServeSchemaSwaps: the built binary (`serve`) on the real PVE
// 9.1 schema, whose apidoc.js is replaced 100 times (other bytes renamed
// over it, as a package upgrade does); after each swap is served, a
// session of each of four keys (read-only, operator, admin, root) lists the
// tools, reads a VM's status through PVE and ends. Reports the daemon's
// resident memory (VmRSS, MiB) once warm (every key verified, one swap
// done), after 20, 40 and 100 swaps, its peak (VmHWM), and the growth per
// swap from the 20th to the 100th. Run it with -benchtime 1x: one run is
// 100 swaps.
func BenchmarkServeSchemaSwaps(b *testing.B) {
	base, err := os.ReadFile(fixture(b, "pve-9.1/apidoc.js"))
	if err != nil {
		b.Fatal(err)
	}
	h := startStdioHostWith(b, base)
	var keys []string
	for _, p := range []string{"read-only", "operator", "admin", "root"} {
		keys = append(keys, h.key(b, "swap-"+p, p))
	}
	s := startServe(b, h, func(cfg map[string]any) { cfg["http"] = map[string]any{"rate_per_key": 1e6, "burst_per_key": 1000} })
	path := s.cfg["schema"].(map[string]any)["path"].(string)
	pid := s.proc.cmd.Process.Pid
	rounds := 0
	round := func() {
		rounds++
		data := fmt.Appendf(base[:len(base):len(base)], "\n// upgrade %d\n", rounds)
		swapSchema(b, s.url, keys[0], path, data)
		for _, k := range keys {
			churnSession(b, s.url, k)
		}
	}
	for b.Loop() {
		round()
		_, warm := procMemory(b, pid)
		rss := map[int]float64{}
		for n := 1; n <= 100; n++ {
			round()
			if n == 20 || n == 40 || n == 100 {
				_, rss[n] = procMemory(b, pid)
			}
		}
		hwm, _ := procMemory(b, pid)
		anon, file := procRss(b, pid)
		b.ReportMetric(anon, "RssAnon-100-swaps-MiB")
		b.ReportMetric(file, "RssFile-100-swaps-MiB")
		b.ReportMetric(warm, "RSS-warm-MiB")
		b.ReportMetric(rss[20], "RSS-20-swaps-MiB")
		b.ReportMetric(rss[40], "RSS-40-swaps-MiB")
		b.ReportMetric(rss[100], "RSS-100-swaps-MiB")
		b.ReportMetric((rss[100]-rss[20])/80, "MiB/swap")
		b.ReportMetric(hwm, "peak-RSS-MiB")
	}
}

// swapSchema renames data over apidoc.js and waits until the daemon's
// proxmox_schema_status reports its SHA-256.
func swapSchema(tb testing.TB, url, key, path string, data []byte) {
	tb.Helper()
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Clean(path)); err != nil {
		tb.Fatal(err)
	}
	ss, err := mcptest.Dial(url+"/mcp", key)
	if err != nil {
		tb.Fatal(err)
	}
	defer ss.End() //nolint:errcheck // a measurement's session
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := ss.Call("proxmox_schema_status", nil)
		if err != nil {
			tb.Fatal(err)
		}
		if strings.Contains(string(res), want) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the daemon did not serve the new apidoc.js within 30 s: %.300s", res)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// churnSession opens a session with key, lists the tools, reads a VM's
// status through PVE and ends the session.
func churnSession(tb testing.TB, url, key string) {
	tb.Helper()
	ss, err := mcptest.Dial(url+"/mcp", key)
	if err != nil {
		tb.Fatal(err)
	}
	if _, n, err := ss.ToolsList(); err != nil || n == 0 {
		tb.Fatalf("tools/list: %d tools, %v", n, err)
	}
	if _, err := ss.Call("proxmox_api_call", map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}); err != nil {
		tb.Fatal(err)
	}
	if err := ss.End(); err != nil {
		tb.Fatal(err)
	}
}

// procRss reads RssAnon (the heap, stacks and other private memory) and
// RssFile (the binary's pages read from disk) of a process, in MiB.
func procRss(tb testing.TB, pid int) (anon, file float64) {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc here: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "RssAnon:":
			anon = kb / 1024
		case "RssFile:":
			file = kb / 1024
		}
	}
	return anon, file
}

// oldRecordKey is the key of keys/testdata/n32768/keys.json, a record
// hashed at N=32768 (the parameters before issue 16). A test fixture.
const oldRecordKey = "pmcp_f73f4ov6fbocedeq_u4ZwpikXDJCKdzOJeqPUarpIddvDxDvRjXhsTI4VWww"

// BenchmarkServeIdleMemory: the built binary (`serve`) on the real PVE 9.1
// schema, idle one second after /healthz first answers, and then after the
// first call of one key (its first verification: one scrypt), with a key
// created by this build (new) and with a record hashed at N=32768 (old).
// Reports VmRSS idle and after the call, VmHWM after it, RssAnon idle and
// after the call, and RssFile idle, in MiB. Each run starts a daemon of its own: run it with
// -benchtime 1x -count N.
func BenchmarkServeIdleMemory(b *testing.B) {
	base, err := os.ReadFile(fixture(b, "pve-9.1/apidoc.js"))
	if err != nil {
		b.Fatal(err)
	}
	old, err := os.ReadFile("../keys/testdata/n32768/keys.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, record := range []string{"new", "old"} {
		b.Run("key="+record, func(b *testing.B) {
			for b.Loop() {
				h := startStdioHostWith(b, base)
				key := oldRecordKey
				if record == "new" {
					key = h.key(b, "first", "read-only")
				} else if err := writeKeys(h, old); err != nil {
					b.Fatal(err)
				}
				s := startServe(b, h)
				pid := s.proc.cmd.Process.Pid
				time.Sleep(time.Second)
				_, idle := procMemory(b, pid)
				anon, file := procRss(b, pid)
				ss, err := mcptest.Dial(s.url+"/mcp", key)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ss.Call("proxmox_schema_status", nil); err != nil {
					b.Fatal(err)
				}
				ss.Close()
				hwm, first := procMemory(b, pid)
				firstAnon, _ := procRss(b, pid)
				b.ReportMetric(idle, "RSS-idle-MiB")
				b.ReportMetric(anon, "RssAnon-idle-MiB")
				b.ReportMetric(file, "RssFile-idle-MiB")
				b.ReportMetric(first, "RSS-first-key-MiB")
				b.ReportMetric(firstAnon, "RssAnon-first-key-MiB")
				b.ReportMetric(hwm, "peak-RSS-MiB")
			}
		})
	}
}

// writeKeys replaces the host's keys.json.
func writeKeys(h stdioHost, data []byte) error {
	if err := os.MkdirAll(h.stateDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.stateDir, "keys.json"), data, 0o600)
}
