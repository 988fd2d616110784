package schema

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// miniSchema is a small valid apidoc.js: /version plus one GET per name,
// followed by viewer code as in the real file.
func miniSchema(names ...string) []byte {
	node := func(path string) string {
		return fmt.Sprintf(`{"path":%q,"text":%q,"leaf":1,"info":{"GET":{"method":"GET","name":"get","description":"Read %s.","allowtoken":1,"parameters":{"additionalProperties":0},"permissions":{"user":"all"},"returns":{"type":"object"}}}}`,
			path, filepath.Base(path), path)
	}
	parts := []string{node("/version")}
	for _, n := range names {
		parts = append(parts, node("/"+n))
	}
	return []byte("const apiSchema = [" + strings.Join(parts, ",") + "];\nExt.onReady(function() { var x = [1,2]; });\n")
}

// watchHarness runs a Source on a temporary apidoc.js and records events.
type watchHarness struct {
	t      *testing.T
	dir    string
	path   string
	src    *Source
	events chan Event
	cancel context.CancelFunc
	done   chan error
}

func newWatchHarness(t *testing.T, initial []byte) *watchHarness {
	t.Helper()
	dir := t.TempDir()
	h := &watchHarness{t: t, dir: dir, path: filepath.Join(dir, "apidoc.js"), events: make(chan Event, 64)}
	if initial != nil {
		writeFile(t, h.path, initial)
	}
	h.src = NewSource(SourceOptions{
		Path:     h.path,
		Cache:    NewCache(filepath.Join(dir, "state")),
		Debounce: 30 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observe:  func(ev Event) { h.events <- ev },
	})
	return h
}

func (h *watchHarness) start() {
	h.t.Helper()
	if err := h.src.Load(context.Background()); err != nil {
		h.t.Fatalf("Load: %v", err)
	}
	h.expect(EventLoaded)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.src.Watch(ctx) }()
	h.expect(EventUnchanged) // Watch's own first check
	h.t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			h.t.Errorf("Watch: %v", err)
		}
	})
}

// expect waits for the next event and checks its kind.
func (h *watchHarness) expect(kind EventKind) Event {
	h.t.Helper()
	select {
	case ev := <-h.events:
		if ev.Kind != kind {
			h.t.Fatalf("event %s (err %v), want %s", ev.Kind, ev.Err, kind)
		}
		return ev
	case <-time.After(5 * time.Second):
		h.t.Fatalf("no %s event within 5s", kind)
	}
	return Event{}
}

// quiet asserts that no event arrives for a while.
func (h *watchHarness) quiet() {
	h.t.Helper()
	select {
	case ev := <-h.events:
		h.t.Fatalf("unexpected %s event (err %v)", ev.Kind, ev.Err)
	case <-time.After(300 * time.Millisecond):
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchPackageManagerRenameOver(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.start()
	before := h.src.Current()
	// dpkg writes apidoc.js.dpkg-new, then renames it over the file.
	tmp := h.path + ".dpkg-new"
	writeFile(t, tmp, miniSchema("nodes", "cluster"))
	if err := os.Rename(tmp, h.path); err != nil {
		t.Fatal(err)
	}
	ev := h.expect(EventReloaded)
	if ev.Registry.Methods() != 3 || h.src.Current() != ev.Registry {
		t.Fatalf("live registry has %d methods, want 3", h.src.Current().Methods())
	}
	if before.Methods() != 1 {
		t.Errorf("the old registry changed under its holder: %d methods", before.Methods())
	}
	st := h.src.Status()
	if st.Reloads != 1 || st.LastError != "" || st.Methods != 3 || st.Origin != OriginFile {
		t.Errorf("status after reload: %+v", st)
	}
}

func TestWatchTruncatedWriteThenComplete(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.start()
	full := miniSchema("nodes")
	writeFile(t, h.path, full[:len(full)/2])
	ev := h.expect(EventRejected)
	if !strings.Contains(ev.Err.Error(), "truncated") {
		t.Errorf("error %q does not say truncated", ev.Err)
	}
	if h.src.Current().Methods() != 1 {
		t.Fatal("a truncated file replaced the registry")
	}
	if st := h.src.Status(); st.LastError == "" || st.LastErrorAt == nil {
		t.Errorf("status does not show the error: %+v", st)
	}
	writeFile(t, h.path, full)
	h.expect(EventReloaded)
	if st := h.src.Status(); st.LastError != "" || st.Methods != 2 {
		t.Errorf("status after the complete write: %+v", st)
	}
}

func TestWatchDeleteAndRecreate(t *testing.T) {
	h := newWatchHarness(t, miniSchema("nodes"))
	h.start()
	if err := os.Remove(h.path); err != nil {
		t.Fatal(err)
	}
	ev := h.expect(EventRejected)
	if !strings.Contains(ev.Err.Error(), "missing") || h.src.Current().Methods() != 2 {
		t.Fatalf("after delete: err %v, %d methods", ev.Err, h.src.Current().Methods())
	}
	writeFile(t, h.path, miniSchema("nodes", "storage"))
	h.expect(EventReloaded)
	if h.src.Current().Methods() != 3 {
		t.Fatalf("after re-creation: %d methods", h.src.Current().Methods())
	}
}

func TestWatchIdenticalRewriteDoesNotReload(t *testing.T) {
	h := newWatchHarness(t, miniSchema("nodes"))
	h.start()
	live := h.src.Current()
	writeFile(t, h.path, miniSchema("nodes"))
	h.expect(EventUnchanged)
	h.quiet()
	if h.src.Current() != live || h.src.Status().Reloads != 0 {
		t.Fatal("an identical rewrite swapped the registry")
	}
}

func TestWatchMalformedUpdateKeepsGoodRegistry(t *testing.T) {
	h := newWatchHarness(t, miniSchema("nodes"))
	h.start()
	live := h.src.Current()
	writeFile(t, h.path, []byte("const apiSchema = [{\"path\": 42}];"))
	h.expect(EventRejected)
	if h.src.Current() != live {
		t.Fatal("a malformed file replaced the registry")
	}
	if st := h.src.Status(); !strings.Contains(st.LastError, "path") || st.Healthy() {
		t.Errorf("status: %+v", st)
	}
}

// A request that took the registry before a reload finishes on it.
func TestInFlightKeepsItsRegistry(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.start()
	var wg sync.WaitGroup
	held := make(chan *Registry)
	release := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		reg := h.src.Current()
		held <- reg
		<-release
		if reg.Lookup("GET", "/nodes") != nil || reg.Methods() != 1 {
			t.Error("the in-flight registry changed")
		}
	}()
	<-held
	writeFile(t, h.path, miniSchema("nodes"))
	h.expect(EventReloaded)
	close(release)
	wg.Wait()
	if h.src.Current().Lookup("GET", "/nodes") == nil {
		t.Fatal("new requests do not see the new registry")
	}
}

func TestLoadFallsBackToCache(t *testing.T) {
	h := newWatchHarness(t, miniSchema("nodes"))
	if err := h.src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cachePath := h.src.Status().CachePath
	if _, err := os.Stat(cachePath); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	// The next start finds a malformed apidoc.js and uses the cache.
	writeFile(t, h.path, []byte("garbage"))
	next := NewSource(SourceOptions{Path: h.path, Cache: NewCache(filepath.Dir(cachePath)), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := next.Load(context.Background()); err != nil {
		t.Fatalf("Load with a good cache: %v", err)
	}
	st := next.Status()
	if st.Origin != OriginCache || st.Methods != 2 || !strings.Contains(st.LastError, "marker") || st.Healthy() {
		t.Errorf("status: %+v", st)
	}
	// And with the file missing too.
	os.Remove(h.path)
	again := NewSource(SourceOptions{Path: h.path, Cache: NewCache(filepath.Dir(cachePath)), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := again.Load(context.Background()); err != nil || again.Status().Origin != OriginCache {
		t.Fatalf("Load with missing file: %v, %+v", err, again.Status())
	}
}

func TestLoadFailsWithNeither(t *testing.T) {
	dir := t.TempDir()
	src := NewSource(SourceOptions{Path: filepath.Join(dir, "apidoc.js"), Cache: NewCache(filepath.Join(dir, "state")), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err := src.Load(context.Background())
	if err == nil {
		t.Fatal("Load succeeded without a file or a cache")
	}
	for _, want := range []string{"no usable API schema", "missing", "last-known-good"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if src.Current() != nil {
		t.Error("a registry exists after a failed Load")
	}
}

func TestCacheDetectsDamage(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(dir)
	if err := c.Store(CacheMeta{Source: "x"}, miniSchema("nodes")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.LoadRegistry(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(c.Path())
	raw[len(raw)-5] ^= 0xff
	writeFile(t, c.Path(), raw)
	if _, _, err := c.LoadRegistry(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged cache: %v", err)
	}
	writeFile(t, c.Path(), []byte("not a cache"))
	if _, _, err := c.Load(); err == nil || !strings.Contains(err.Error(), "bad header") {
		t.Fatalf("foreign file: %v", err)
	}
	if st, _ := os.Stat(dir); st == nil {
		t.Fatal("cache dir vanished")
	}
}

// The real file survives the rename-over path too.
func TestWatchRealSchemaReload(t *testing.T) {
	h := newWatchHarness(t, fixture(t, pve845))
	h.start()
	tmp := h.path + ".dpkg-new"
	writeFile(t, tmp, fixture(t, pve91))
	if err := os.Rename(tmp, h.path); err != nil {
		t.Fatal(err)
	}
	ev := h.expect(EventReloaded)
	if ev.Registry.Methods() != 646 {
		t.Fatalf("%d methods after upgrading to 9.1", ev.Registry.Methods())
	}
}
