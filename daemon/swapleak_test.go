package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"
	"weak"

	"go.uber.org/goleak"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// swapRig is a daemon serving the real PVE 9.1 schema from a file of its
// own, which the test rewrites as a package upgrade does.
type swapRig struct {
	*rig
	path string
	base []byte
	keys []string
	n    int
}

func newSwapRig(t *testing.T) *swapRig {
	t.Helper()
	src, _ := filepath.Abs("../../shared/fixtures/pve-9.1/apidoc.js")
	base, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("the real PVE 9.1 schema is not here: %v", err)
	}
	sr := &swapRig{base: base}
	sr.rig = newRig(t, func(cfg map[string]any) {
		sr.path = filepath.Join(filepath.Dir(cfg["state_dir"].(string)), "pve-apidoc.js")
		if err := os.WriteFile(sr.path, base, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg["schema"] = map[string]any{"path": sr.path}
	})
	sr.start()
	for _, p := range []string{"read-only", "operator", "admin", "root"} {
		sr.keys = append(sr.keys, sr.key(p))
	}
	return sr
}

// swap renames other bytes of the schema over the file (a package upgrade
// writes a new file and renames it) and waits until the daemon serves them.
func (sr *swapRig) swap(t *testing.T) {
	t.Helper()
	sr.n++
	want := sr.d.schema.Status().Reloads + 1
	tmp := sr.path + ".new"
	if err := os.WriteFile(tmp, fmt.Appendf(sr.base[:len(sr.base):len(sr.base)], "\n// upgrade %d\n", sr.n), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, sr.path); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for sr.d.schema.Status().Reloads < want {
		if time.Now().After(deadline) {
			t.Fatalf("swap %d was not served within 30 s: %+v", sr.n, sr.d.schema.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// churn opens a session per key, lists the tools, reads a VM's status
// through PVE and ends the session.
func (sr *swapRig) churn(t *testing.T) {
	t.Helper()
	for _, k := range sr.keys {
		s := sr.session(t, k)
		if _, n, err := s.ToolsList(); err != nil || n == 0 {
			t.Fatalf("tools/list after swap %d: %d tools, %v", sr.n, n, err)
		}
		if _, err := s.Call("proxmox_api_call", map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/101/status/current"}); err != nil {
			t.Fatalf("call after swap %d: %v", sr.n, err)
		}
		if err := s.End(); err != nil {
			t.Fatal(err)
		}
	}
}

// heapInuse collects the garbage and returns the heap in use, in MiB; with
// PMCP_HEAP_PROFILES set to a directory it also writes the heap profile
// there as name.pprof (go tool pprof -sample_index=inuse_space).
func heapInuse(t *testing.T, name string) float64 {
	t.Helper()
	runtime.GC()
	runtime.GC()
	if dir := os.Getenv("PMCP_HEAP_PROFILES"); dir != "" {
		f, err := os.Create(filepath.Join(dir, name+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// Reproduces: every schema swap that calls followed kept the old registry
// alive (4.6 MiB of PVE 9.1 each, never returned: the tool server cached
// visibility maps by registry, and each map points into its registry), and
// the policy engine kept each old registry's visibility answers. Now a
// registry swapped out is collected once no call uses it, the heap stays
// where it was after the first swaps, and sessions that come and go leave
// no goroutine behind.
func TestSchemaSwapsAndSessionChurnKeepMemoryFlat(t *testing.T) {
	sr := newSwapRig(t)
	// Warm up: every key verified (scrypt), two registries listed (the
	// live one and the one before, which calls in flight may still use).
	sr.churn(t)
	for range 2 {
		sr.swap(t)
		sr.churn(t)
	}
	ignore := goleak.IgnoreCurrent()
	before := heapInuse(t, "before")
	const swaps = 20
	var old []weak.Pointer[schema.Registry]
	for range swaps {
		old = append(old, weak.Make(sr.d.schema.Current()))
		sr.swap(t)
		sr.churn(t)
	}
	after := heapInuse(t, "after")
	// The registry before the live one may stay (the engine keeps its
	// listing); any other is garbage.
	alive := 0
	for _, w := range old[:len(old)-1] {
		if w.Value() != nil {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of the %d registries swapped out before the last are still alive", alive, len(old)-1)
	}
	// One registry is 4.6 MiB; a leak of one per swap would add 92 MiB.
	if growth := after - before; growth > 8 {
		t.Errorf("the heap grew by %.1f MiB over %d swaps (%.1f → %.1f MiB), want under 8", growth, swaps, before, after)
	}
	t.Logf("heap in use %.1f → %.1f MiB over %d swaps with %d sessions each", before, after, swaps, len(sr.keys))
	goleak.VerifyNone(t, ignore)
}
