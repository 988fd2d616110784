package schema

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A load keeps the file as last-known-good: it writes the cache unless
// the cache already holds these bytes intact, whatever the cache held.
func TestLoadStoresCacheUnlessItHoldsTheFile(t *testing.T) {
	file, other := miniSchema("nodes"), miniSchema("cluster")
	damage := func(t *testing.T, c *Cache) {
		raw, err := os.ReadFile(c.Path())
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)-5] ^= 0xff // the header still names the file's bytes
		writeFile(t, c.Path(), raw)
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, c *Cache)
		kept    bool // the cache file is not written again
	}{
		{"absent", func(*testing.T, *Cache) {}, false},
		{"other bytes", func(t *testing.T, c *Cache) { store(t, c, other) }, false},
		{"these bytes", func(t *testing.T, c *Cache) { store(t, c, file) }, true},
		{"these bytes damaged", func(t *testing.T, c *Cache) { store(t, c, file); damage(t, c) }, false},
		{"foreign file", func(t *testing.T, c *Cache) { writeFile(t, c.Path(), []byte("not a cache")) }, false},
		{"header only", func(t *testing.T, c *Cache) { writeFile(t, c.Path(), []byte(cacheMagic+`{"sha256":"x"`)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "apidoc.js")
			writeFile(t, path, file)
			c := NewCache(filepath.Join(dir, "state"))
			if err := os.MkdirAll(filepath.Dir(c.Path()), 0o750); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, c)
			before, _ := os.Stat(c.Path())
			src := NewSource(SourceOptions{Path: path, Cache: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Now: func() time.Time { return time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC) }})
			if err := src.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			meta, data, err := c.Load()
			wantSource := path
			if tc.kept {
				wantSource = "earlier"
			}
			if err != nil || string(data) != string(file) || meta.SHA256 != sha256Hex(file) || meta.Source != wantSource {
				t.Fatalf("cache after Load: %+v, %d bytes, %v; want the file's %d bytes", meta, len(data), err, len(file))
			}
			if st := src.Status(); st.CacheError != "" {
				t.Errorf("cache error: %s", st.CacheError)
			}
			after, _ := os.Stat(c.Path())
			if kept := before != nil && os.SameFile(before, after); kept != tc.kept {
				t.Errorf("cache file kept = %v, want %v", kept, tc.kept)
			}
		})
	}
}

func store(t *testing.T, c *Cache, data []byte) {
	t.Helper()
	if err := c.Store(CacheMeta{Source: "earlier"}, data); err != nil {
		t.Fatal(err)
	}
}
