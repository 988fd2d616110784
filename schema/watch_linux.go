package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// inotifyMask is what the watcher asks inotify for on the directory: each
// change of a name in it, and the directory itself going away
// (IN_IGNORED, IN_UNMOUNT and IN_Q_OVERFLOW come unasked).
const inotifyMask = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// inotifyWatcher watches one directory with inotify itself: fsnotify
// (1.10) does not report IN_CLOSE_WRITE through its API, and that is the
// event that says a file written in place is complete.
type inotifyWatcher struct {
	fd     int
	file   *os.File // fd, nonblocking, so that Close ends a Read in progress
	events chan watchEvent
	errors chan error
	done   chan struct{} // closed by Close: the reader stops sending
	exited chan struct{} // closed by the reader when it returns

	mu  sync.Mutex // guards dir and wd between Add and the reader
	dir string
	wd  int32 // the directory's watch; -1 when there is none
}

func newDirWatcher() (dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	w := &inotifyWatcher{
		fd:     fd,
		file:   os.NewFile(uintptr(fd), "inotify"),
		events: make(chan watchEvent),
		errors: make(chan error),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		wd:     -1,
	}
	go w.read()
	return w, nil
}

func (w *inotifyWatcher) Events() <-chan watchEvent { return w.events }
func (w *inotifyWatcher) Errors() <-chan error      { return w.errors }

// Add watches dir in place of the directory watched before, which may
// have been moved away and still exist elsewhere: its events would name
// files that are no longer at the path.
func (w *inotifyWatcher) Add(dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wd >= 0 {
		unix.InotifyRmWatch(w.fd, uint32(w.wd)) //nolint:errcheck // EINVAL once the kernel has dropped it
		w.wd = -1
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, inotifyMask)
	if err != nil {
		return fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	w.dir, w.wd = dir, int32(wd)
	return nil
}

// Close stops the reader and closes the inotify descriptor; call it once.
func (w *inotifyWatcher) Close() error {
	close(w.done)
	err := w.file.Close()
	<-w.exited
	return err
}

// read turns inotify's records into events until Close.
func (w *inotifyWatcher) read() {
	defer close(w.exited)
	defer close(w.errors)
	defer close(w.events)
	// Room for 256 records with names of the longest length; the kernel
	// returns as many whole records as fit.
	buf := make([]byte, 256*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.sendError(fmt.Errorf("read inotify events: %w", err))
			}
			return
		}
		recs, err := decodeInotify(buf[:n])
		for _, r := range recs {
			if ev, ok := w.event(r); ok && !w.send(ev) {
				return
			}
		}
		if err != nil && !w.sendError(err) {
			return
		}
	}
}

// event translates r, dropping the records of a directory watched before.
func (w *inotifyWatcher) event(r inotifyRecord) (watchEvent, bool) {
	op := inotifyOp(r.Mask)
	if op == opOverflow {
		return watchEvent{Op: op}, true
	}
	w.mu.Lock()
	dir, current := w.dir, r.WD == w.wd
	w.mu.Unlock()
	if !current || op == opNone {
		return watchEvent{}, false
	}
	name := dir
	if r.Name != "" {
		name = filepath.Join(dir, r.Name)
	}
	return watchEvent{Name: name, Op: op}, true
}

func (w *inotifyWatcher) send(ev watchEvent) bool {
	select {
	case w.events <- ev:
		return true
	case <-w.done:
		return false
	}
}

func (w *inotifyWatcher) sendError(err error) bool {
	select {
	case w.errors <- err:
		return true
	case <-w.done:
		return false
	}
}

// inotifyOp is the op of an inotify event mask; opNone for none the
// watcher uses. A record carries one event, with flags beside it.
func inotifyOp(mask uint32) watchOp {
	for _, m := range []struct {
		bits uint32
		op   watchOp
	}{
		{unix.IN_Q_OVERFLOW, opOverflow},
		{unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED | unix.IN_UNMOUNT, opDirGone},
		{unix.IN_CLOSE_WRITE, opCloseWrite},
		{unix.IN_MOVED_TO, opMovedTo},
		{unix.IN_MOVED_FROM, opMovedFrom},
		{unix.IN_CREATE, opCreate},
		{unix.IN_MODIFY, opWrite},
		{unix.IN_DELETE, opRemove},
		{unix.IN_ATTRIB, opChmod},
	} {
		if mask&m.bits != 0 {
			return m.op
		}
	}
	return opNone
}

// inotifyRecord is one struct inotify_event read from the descriptor.
type inotifyRecord struct {
	WD   int32
	Mask uint32
	Name string // the file's name in the directory; empty for the directory itself
}

// decodeInotify splits what a read of an inotify descriptor returned into
// its records: a header (wd, mask, cookie, len, in the machine's byte
// order) and len bytes of name, NUL-padded. A length that runs past buf
// ends the decoding with an error, after the whole records before it.
func decodeInotify(buf []byte) ([]inotifyRecord, error) {
	var recs []inotifyRecord
	for off := 0; off < len(buf); {
		rest := buf[off:]
		if len(rest) < unix.SizeofInotifyEvent {
			return recs, fmt.Errorf("inotify record at byte %d: %d bytes, shorter than its header", off, len(rest))
		}
		nameLen := binary.NativeEndian.Uint32(rest[12:16])
		if uint64(nameLen) > uint64(len(rest)-unix.SizeofInotifyEvent) {
			return recs, fmt.Errorf("inotify record at byte %d: name of %d bytes, %d left", off, nameLen, len(rest)-unix.SizeofInotifyEvent)
		}
		name := rest[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+int(nameLen)]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		recs = append(recs, inotifyRecord{
			WD:   int32(binary.NativeEndian.Uint32(rest[0:4])),
			Mask: binary.NativeEndian.Uint32(rest[4:8]),
			Name: string(name),
		})
		off += unix.SizeofInotifyEvent + int(nameLen)
	}
	return recs, nil
}
