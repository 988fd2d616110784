package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// eventAction over the events of both watchers: inotify's (Linux), which
// say when a file is complete, and fsnotify's (elsewhere), where only a
// Create right after a sibling's Rename does.
func TestEventAction(t *testing.T) {
	dir := filepath.Join("srv", "api-viewer")
	file := filepath.Join(dir, "apidoc.js")
	sibling := filepath.Join(dir, "apidoc.js.dpkg-new")
	for _, tc := range []struct {
		name        string
		ev          watchEvent
		afterRename bool
		want        watchAction
	}{
		// inotify's
		{"inotify: closed after writing", watchEvent{file, opCloseWrite}, false, watchReadNow},
		{"inotify: moved onto the path", watchEvent{file, opMovedTo}, false, watchReadNow},
		{"inotify: created", watchEvent{file, opCreate}, false, watchDebounce},
		{"inotify: written, still open", watchEvent{file, opWrite}, false, watchDebounce},
		{"inotify: attributes changed", watchEvent{file, opChmod}, false, watchDebounce},
		{"inotify: deleted", watchEvent{file, opRemove}, false, watchDebounce},
		{"inotify: moved away", watchEvent{file, opMovedFrom}, false, watchDebounce},
		{"inotify: a sibling moved away", watchEvent{sibling, opMovedFrom}, false, watchIgnore},
		{"inotify: a sibling closed after writing", watchEvent{sibling, opCloseWrite}, false, watchIgnore},
		{"inotify: a sibling moved in", watchEvent{sibling, opMovedTo}, false, watchIgnore},
		{"inotify: same name in a subdirectory", watchEvent{filepath.Join(dir, "old", "apidoc.js"), opCloseWrite}, false, watchIgnore},
		{"inotify: the directory gone", watchEvent{dir, opDirGone}, false, watchRewatch},
		{"inotify: queue overflow", watchEvent{"", opOverflow}, false, watchReread},
		// fsnotify's
		{"fsnotify: renamed onto the path", watchEvent{file, opCreate}, true, watchReadNow},
		{"fsnotify: created empty, then written", watchEvent{file, opCreate}, false, watchDebounce},
		{"fsnotify: written in place", watchEvent{file, opWrite}, false, watchDebounce},
		{"fsnotify: written just after a sibling's rename", watchEvent{file, opWrite}, true, watchDebounce},
		{"fsnotify: chmod", watchEvent{file, opChmod}, false, watchDebounce},
		{"fsnotify: removed", watchEvent{file, opRemove}, false, watchDebounce},
		{"fsnotify: renamed away", watchEvent{file, opRename}, false, watchDebounce},
		{"fsnotify: a sibling renamed away", watchEvent{sibling, opRename}, false, watchSiblingRenamed},
		{"fsnotify: a sibling written", watchEvent{sibling, opWrite}, false, watchIgnore},
		{"fsnotify: a sibling created after a rename", watchEvent{sibling, opCreate}, true, watchIgnore},
		{"fsnotify: same name in a subdirectory", watchEvent{filepath.Join(dir, "old", "apidoc.js"), opCreate}, true, watchIgnore},
		{"fsnotify: the directory removed", watchEvent{dir, opRemove}, false, watchRewatch},
		{"fsnotify: the directory renamed", watchEvent{dir, opRename}, false, watchRewatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventAction(tc.ev, dir, "apidoc.js", tc.afterRename); got != tc.want {
				t.Errorf("eventAction(%+v, afterRename=%v) = %d, want %d", tc.ev, tc.afterRename, got, tc.want)
			}
		})
	}
}

// The events of a rename within the directory, and of a file created
// after another was moved away, as each watcher reports them, carried
// through eventAction as Watch carries afterRename.
func TestEventActionSequences(t *testing.T) {
	dir := filepath.Join("srv", "api-viewer")
	file := filepath.Join(dir, "apidoc.js")
	sibling := filepath.Join(dir, "apidoc.js.dpkg-new")
	for _, tc := range []struct {
		name   string
		events []watchEvent
		want   watchAction // for the last event
	}{
		{"inotify: rename over", []watchEvent{{sibling, opMovedFrom}, {file, opMovedTo}}, watchReadNow},
		{"inotify: created after a sibling moved away", []watchEvent{{sibling, opMovedFrom}, {file, opCreate}}, watchDebounce},
		{"fsnotify: rename over", []watchEvent{{sibling, opRename}, {file, opCreate}}, watchReadNow},
		{"fsnotify: created after another event", []watchEvent{{sibling, opRename}, {sibling, opWrite}, {file, opCreate}}, watchDebounce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			afterRename, act := false, watchIgnore
			for _, ev := range tc.events {
				act = eventAction(ev, dir, "apidoc.js", afterRename)
				afterRename = act == watchSiblingRenamed
			}
			if act != tc.want {
				t.Errorf("last action %d, want %d", act, tc.want)
			}
		})
	}
}

// renameInto writes data beside path and renames it over path, as dpkg
// installs a file.
func renameInto(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".dpkg-new"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A file renamed over apidoc.js is complete: it is served without waiting
// for the debounce (here an hour, which the old watcher waited for any
// event, so this fails on it at expect's deadline).
func TestWatchRenameOverIsReadAtOnce(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.src.opts.Debounce = time.Hour
	h.start()
	next := miniSchema("nodes", "cluster")
	renameInto(t, h.path, next)
	ev := h.expect(EventReloaded)
	if ev.Registry.SHA256() != sha256Hex(next) || h.src.Current() != ev.Registry {
		t.Fatalf("served %s, want the renamed file's %s", ev.Registry.SHA256(), sha256Hex(next))
	}
}

// A partial file renamed over apidoc.js (a writer that renamed before it
// finished) is refused at once, the good registry stays, and the next
// complete file renamed over it is served.
func TestWatchPartialRenameKeepsGood(t *testing.T) {
	full := miniSchema("nodes", "storage")
	closeAt := bytes.Index(full, []byte("];\n")) // the schema array's end
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"the marker only", full[:len("const apiSchema = [")]},
		{"half", full[:len(full)/2]},
		{"one byte short of the array's end", full[:closeAt]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newWatchHarness(t, miniSchema())
			h.src.opts.Debounce = time.Hour
			h.start()
			live := h.src.Current()
			renameInto(t, h.path, tc.data)
			h.expect(EventRejected)
			if h.src.Current() != live {
				t.Fatal("a partial file replaced the registry")
			}
			if st := h.src.Status(); st.LastError == "" || st.SHA256 != live.SHA256() {
				t.Errorf("status after the partial file: %+v", st)
			}
			renameInto(t, h.path, full)
			ev := h.expect(EventReloaded)
			if ev.Registry.SHA256() != sha256Hex(full) {
				t.Fatalf("served %s, want the complete file's", ev.Registry.SHA256())
			}
			if st := h.src.Status(); st.LastError != "" || st.Methods != 3 {
				t.Errorf("status after the complete file: %+v", st)
			}
		})
	}
}

// A file rewritten in place and still open for writing, cut short inside
// the schema array, is read once the writes pause (the debounce), refused,
// and never served; when the writer finishes, the complete file is.
func TestWatchInPlaceWriteInProgress(t *testing.T) {
	full := miniSchema("nodes", "storage")
	closeAt := bytes.Index(full, []byte("];\n")) // the schema array's end
	for _, tc := range []struct {
		name string
		cut  int
	}{
		{"the marker only", len("const apiSchema = [")},
		{"half", len(full) / 2},
		{"one byte short of the array's end", closeAt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newWatchHarness(t, miniSchema())
			h.start()
			live := h.src.Current()
			f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(full[:tc.cut]); err != nil {
				t.Fatal(err)
			}
			h.expect(EventRejected)
			if h.src.Current() != live {
				t.Fatal("a file being written replaced the registry")
			}
			if _, err := f.Write(full[tc.cut:]); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			h.expectServed(full)
		})
	}
}

// expectServed waits for the registry of data to be served, skipping
// refusals of partial reads on the way; any other registry served first is
// a failure.
func (h *watchHarness) expectServed(data []byte) {
	h.t.Helper()
	want := sha256Hex(data)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-h.events:
			switch {
			case ev.Kind == EventRejected:
				continue
			case ev.Kind != EventReloaded || ev.Registry.SHA256() != want:
				h.t.Fatalf("event %s of %s (err %v), want the complete file's %s served", ev.Kind, ev.Registry.SHA256(), ev.Err, want)
			case h.src.Current() != ev.Registry:
				h.t.Fatal("the reloaded registry is not the one served")
			}
			return
		case <-deadline:
			h.t.Fatalf("the complete file (%s) was not served within 5s", want)
		}
	}
}

// The directory moved away and another put at its path: the new one is
// watched (after the second Watch waits between tries), and the old one,
// which still exists elsewhere, is not.
func TestWatchDirectoryReplaced(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.start()
	moved := h.dir + ".old"
	if err := os.Rename(h.dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(moved) })
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	next := miniSchema("nodes")
	renameInto(t, h.path, next)
	h.expectServed(next)
	writeFile(t, filepath.Join(moved, "apidoc.js"), miniSchema("cluster"))
	h.quiet()
	if h.src.Current().SHA256() != sha256Hex(next) {
		t.Fatal("the moved directory's file was served")
	}
}
