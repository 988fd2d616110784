package atomicfile

import (
	"os"
	"testing"
)

// TestCheckPrivate: a directory is private only when this process's user
// owns it and no group or other bit is set.
func TestCheckPrivate(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o750, false}, {0o701, false}, {0o755, false}} {
		if err := os.Chmod(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		err = d.CheckPrivate()
		d.Close()
		if (err == nil) != c.ok {
			t.Errorf("mode %04o: %v", c.mode, err)
		}
	}
}
