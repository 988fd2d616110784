package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Reproduces: ReadFile grew its buffer by doubling (io.ReadAll), so each
// read of PVE 9.1's 3.9 MB allocated two to three times that, garbage the
// daemon kept at every start and every check of the file (issue 16). Now
// it allocates the file's size once, and still reads it whole.
func TestReadFileAllocatesTheFileOnce(t *testing.T) {
	const size = 4 << 20
	data := bytes.Repeat([]byte("apidoc "), size/7)
	path := filepath.Join(t.TempDir(), "apidoc.js")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The least of a few reads: goroutines other tests left (watchers
	// ending) may allocate meanwhile.
	least := ^uint64(0)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := ReadFile(path)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, want the file's %d", len(got), len(data))
		}
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > uint64(len(data))*5/4 {
		t.Errorf("reading %d bytes allocated %d", len(data), least)
	}
}
