package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

func TestEventAction(t *testing.T) {
	dir := filepath.Join("srv", "api-viewer")
	file := filepath.Join(dir, "apidoc.js")
	sibling := filepath.Join(dir, "apidoc.js.dpkg-new")
	for _, tc := range []struct {
		name        string
		ev          fsnotify.Event
		afterRename bool
		want        watchAction
	}{
		{"renamed onto the path", fsnotify.Event{Name: file, Op: fsnotify.Create}, true, watchReadNow},
		{"created empty, then written", fsnotify.Event{Name: file, Op: fsnotify.Create}, false, watchDebounce},
		{"written in place", fsnotify.Event{Name: file, Op: fsnotify.Write}, false, watchDebounce},
		{"written just after a sibling's rename", fsnotify.Event{Name: file, Op: fsnotify.Write}, true, watchDebounce},
		{"chmod", fsnotify.Event{Name: file, Op: fsnotify.Chmod}, false, watchDebounce},
		{"removed", fsnotify.Event{Name: file, Op: fsnotify.Remove}, false, watchDebounce},
		{"renamed away", fsnotify.Event{Name: file, Op: fsnotify.Rename}, false, watchDebounce},
		{"a sibling renamed away", fsnotify.Event{Name: sibling, Op: fsnotify.Rename}, false, watchSiblingRenamed},
		{"a sibling written", fsnotify.Event{Name: sibling, Op: fsnotify.Write}, false, watchIgnore},
		{"a sibling created after a rename", fsnotify.Event{Name: sibling, Op: fsnotify.Create}, true, watchIgnore},
		{"same name in a subdirectory", fsnotify.Event{Name: filepath.Join(dir, "old", "apidoc.js"), Op: fsnotify.Create}, true, watchIgnore},
		{"the directory removed", fsnotify.Event{Name: dir, Op: fsnotify.Remove}, false, watchRewatch},
		{"the directory renamed", fsnotify.Event{Name: dir, Op: fsnotify.Rename}, false, watchRewatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventAction(tc.ev, dir, "apidoc.js", tc.afterRename); got != tc.want {
				t.Errorf("eventAction(%v, afterRename=%v) = %d, want %d", tc.ev, tc.afterRename, got, tc.want)
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
