package schema

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A file written in place and closed is complete: it is served without
// waiting for the debounce (here an hour). The fsnotify watcher waited
// for it, so this failed on it at expect's deadline.
func TestWatchInPlaceCloseIsReadAtOnce(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.src.opts.Debounce = time.Hour
	h.start()
	next := miniSchema("nodes", "cluster")
	writeFile(t, h.path, next)
	ev := h.expect(EventReloaded)
	if ev.Registry.SHA256() != sha256Hex(next) || h.src.Current() != ev.Registry {
		t.Fatalf("served %s, want the written file's %s", ev.Registry.SHA256(), sha256Hex(next))
	}
	if st := h.src.Status(); st.SHA256 != sha256Hex(next) || st.Reloads != 1 {
		t.Errorf("status after the write: %+v", st)
	}
}

// A file moved onto the path from another directory (where no sibling's
// rename precedes it) is complete too: served without the debounce.
func TestWatchMovedInIsReadAtOnce(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.src.opts.Debounce = time.Hour
	h.start()
	next := miniSchema("storage")
	elsewhere := filepath.Join(t.TempDir(), "apidoc.js")
	writeFile(t, elsewhere, next)
	if err := os.Rename(elsewhere, h.path); err != nil {
		t.Fatal(err)
	}
	if ev := h.expect(EventReloaded); ev.Registry.SHA256() != sha256Hex(next) {
		t.Fatalf("served %s, want the moved file's %s", ev.Registry.SHA256(), sha256Hex(next))
	}
}

// A writer that keeps the file open is not read until it closes it (or,
// had it kept writing, until the debounce): with an hour's debounce,
// nothing is read while it is open, and the file is served on close.
func TestWatchOpenWriterIsReadOnClose(t *testing.T) {
	h := newWatchHarness(t, miniSchema())
	h.src.opts.Debounce = time.Hour
	h.start()
	next := miniSchema("nodes", "pools")
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(next[:len(next)/2]); err != nil {
		t.Fatal(err)
	}
	h.quiet()
	if _, err := f.Write(next[len(next)/2:]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if ev := h.expect(EventReloaded); ev.Registry.SHA256() != sha256Hex(next) {
		t.Fatalf("served %s, want the closed file's %s", ev.Registry.SHA256(), sha256Hex(next))
	}
}

// Close ends the reader blocked in read(2), and the channels close.
func TestInotifyWatcherClose(t *testing.T) {
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := <-w.Events(); ok {
		t.Error("an event after Close")
	}
	if _, ok := <-w.Errors(); ok {
		t.Error("an error after Close")
	}
}

func TestInotifyOp(t *testing.T) {
	for _, tc := range []struct {
		mask uint32
		want watchOp
	}{
		{unix.IN_CLOSE_WRITE, opCloseWrite},
		{unix.IN_MOVED_TO, opMovedTo},
		{unix.IN_MOVED_FROM, opMovedFrom},
		{unix.IN_CREATE, opCreate},
		{unix.IN_CREATE | unix.IN_ISDIR, opCreate},
		{unix.IN_MODIFY, opWrite},
		{unix.IN_DELETE, opRemove},
		{unix.IN_ATTRIB, opChmod},
		{unix.IN_DELETE_SELF, opDirGone},
		{unix.IN_MOVE_SELF, opDirGone},
		{unix.IN_IGNORED, opDirGone},
		{unix.IN_UNMOUNT, opDirGone},
		{unix.IN_Q_OVERFLOW, opOverflow},
		{unix.IN_OPEN, opNone},
		{unix.IN_CLOSE_NOWRITE, opNone},
		{0, opNone},
	} {
		if got := inotifyOp(tc.mask); got != tc.want {
			t.Errorf("inotifyOp(%#x) = %d, want %d", tc.mask, got, tc.want)
		}
	}
}

// encodeInotify lays records out as the kernel does, each name padded
// with pad NULs (the kernel pads to a multiple of the header's size).
func encodeInotify(recs []inotifyRecord, pad int) []byte {
	var buf []byte
	for _, r := range recs {
		n := len(r.Name)
		if n > 0 || pad > 0 {
			n += pad
		}
		buf = binary.NativeEndian.AppendUint32(buf, uint32(r.WD))
		buf = binary.NativeEndian.AppendUint32(buf, r.Mask)
		buf = binary.NativeEndian.AppendUint32(buf, 0) // cookie
		buf = binary.NativeEndian.AppendUint32(buf, uint32(n))
		buf = append(buf, r.Name...)
		buf = append(buf, make([]byte, n-len(r.Name))...)
	}
	return buf
}

// kernelRecords returns what a read of a real inotify descriptor gives
// for a file created, written, closed and renamed in a watched directory.
func kernelRecords(t testing.TB) []byte {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dir := t.TempDir()
	if _, err := unix.InotifyAddWatch(fd, dir, inotifyMask); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "apidoc.js.tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "apidoc.js.tmp"), filepath.Join(dir, "apidoc.js")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestDecodeInotifyKernelRecords(t *testing.T) {
	recs, err := decodeInotify(kernelRecords(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []watchOp
	var names []string
	for _, r := range recs {
		got = append(got, inotifyOp(r.Mask))
		names = append(names, r.Name)
	}
	want := []watchOp{opCreate, opWrite, opCloseWrite, opMovedFrom, opMovedTo}
	wantNames := []string{"apidoc.js.tmp", "apidoc.js.tmp", "apidoc.js.tmp", "apidoc.js.tmp", "apidoc.js"}
	if !slices.Equal(got, want) || !slices.Equal(names, wantNames) {
		t.Errorf("decoded %v %q, want %v %q", got, names, want, wantNames)
	}
}

func TestDecodeInotify(t *testing.T) {
	two := []inotifyRecord{{WD: 1, Mask: unix.IN_CLOSE_WRITE, Name: "apidoc.js"}, {WD: 1, Mask: unix.IN_DELETE_SELF}}
	whole := encodeInotify(two, 7)
	for _, tc := range []struct {
		name    string
		buf     []byte
		want    []inotifyRecord
		wantErr bool
	}{
		{"empty", nil, nil, false},
		{"two records", whole, two, false},
		{"unpadded name", encodeInotify(two[:1], 0), two[:1], false},
		{"short header", whole[:10], nil, true},
		{"name cut short", whole[:unix.SizeofInotifyEvent+5], nil, true},
		{"second header cut short", whole[:len(whole)-4], two[:1], true},
		{"name length past the buffer", func() []byte {
			b := slices.Clone(whole)
			binary.NativeEndian.PutUint32(b[12:], 0xffffffff)
			return b
		}(), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeInotify(tc.buf)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("decoded %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzDecodeInotify: any bytes give whole records and maybe an error,
// never a panic; the records fit in the buffer, their names hold no NUL,
// and without an error, the records encoded again decode to themselves.
func FuzzDecodeInotify(f *testing.F) {
	f.Add(kernelRecords(f))
	f.Add(encodeInotify([]inotifyRecord{{WD: 1, Mask: unix.IN_CLOSE_WRITE, Name: "apidoc.js"}, {WD: -1, Mask: unix.IN_Q_OVERFLOW}}, 7))
	f.Add(encodeInotify([]inotifyRecord{{WD: 1, Mask: unix.IN_MOVED_TO, Name: "apidoc.js"}}, 0)[:20])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		recs, err := decodeInotify(buf)
		size := 0
		for _, r := range recs {
			if slices.Contains([]byte(r.Name), 0) {
				t.Fatalf("name %q holds a NUL", r.Name)
			}
			size += unix.SizeofInotifyEvent + len(r.Name)
		}
		if size > len(buf) {
			t.Fatalf("%d records need %d bytes, more than the %d read", len(recs), size, len(buf))
		}
		if err != nil {
			return
		}
		again, err := decodeInotify(encodeInotify(recs, 0))
		if err != nil || !slices.Equal(again, recs) {
			t.Fatalf("re-encoded records decode to %+v (%v), want %+v", again, err, recs)
		}
	})
}
