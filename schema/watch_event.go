package schema

import "path/filepath"

// dirWatcher is the seam between Watch's loop and the platform's file
// events: inotify itself on Linux (watch_linux.go), fsnotify elsewhere
// (watch_other.go). Events and Errors are closed once it stops.
type dirWatcher interface {
	// Add watches dir (again, after it went away).
	Add(dir string) error
	Events() <-chan watchEvent
	// Errors reports trouble that may have cost events.
	Errors() <-chan error
	// Close stops the watcher; it is called once.
	Close() error
}

// watchOp is what happened to a name, as a watcher reports it. inotify
// reports exactly when a file is complete (closed after writing, or moved
// onto the name); fsnotify reports five kinds of change, and a rename
// onto the name as a Create.
type watchOp uint8

const (
	opNone       watchOp = iota
	opCloseWrite         // closed after writing (inotify's IN_CLOSE_WRITE)
	opMovedTo            // moved onto the name (IN_MOVED_TO)
	opMovedFrom          // moved away from the name (IN_MOVED_FROM): its arrival is an opMovedTo
	opCreate             // created (with fsnotify, also moved onto the name)
	opWrite              // written (IN_MODIFY)
	opRemove             // removed (IN_DELETE)
	opRename             // renamed away, by fsnotify: the new name shows as an opCreate
	opChmod              // attributes changed (IN_ATTRIB)
	opDirGone            // the watched directory itself deleted, moved or unmounted
	opOverflow           // the kernel's queue overflowed: events were lost
)

// watchEvent is one event of a dirWatcher: Name is the path of the file
// in the watched directory, or the directory's own path for an event of
// the directory itself; empty for opOverflow.
type watchEvent struct {
	Name string
	Op   watchOp
}

// watchAction is what the watcher does with one event.
type watchAction int

const (
	watchIgnore         watchAction = iota // another file's event
	watchSiblingRenamed                    // another file renamed away, as fsnotify reports it
	watchReadNow                           // the file is complete (closed after writing, or moved in): read it now
	watchDebounce                          // the file written, created, changed or removed: read it once quiet
	watchReread                            // events were lost: read the file once quiet
	watchRewatch                           // the directory itself went away
)

// eventAction classifies ev for the file base in dir. A file closed after
// writing or moved onto the path is complete, and read at once; any other
// change of it may be a writer still at work (one that keeps the file
// open, or a file written from empty), and waits for the debounce.
// fsnotify reports a rename(2) within the directory as a Rename of the old
// name followed at once by a Create of the new one, so a Create of base
// right after a sibling's Rename (afterRename) is a complete file moved
// into place too. inotify reports the same rename as opMovedFrom and
// opMovedTo, so afterRename never follows its events.
func eventAction(ev watchEvent, dir, base string, afterRename bool) watchAction {
	name, dir := filepath.Clean(ev.Name), filepath.Clean(dir)
	switch {
	case ev.Op == opOverflow:
		return watchReread
	case ev.Op == opDirGone:
		return watchRewatch
	case filepath.Base(name) == base && filepath.Dir(name) == dir:
		if ev.Op == opCloseWrite || ev.Op == opMovedTo || afterRename && ev.Op == opCreate {
			return watchReadNow
		}
		return watchDebounce
	case name == dir && (ev.Op == opRemove || ev.Op == opRename):
		return watchRewatch // fsnotify's report of the directory going away
	case filepath.Dir(name) == dir && ev.Op == opRename:
		return watchSiblingRenamed
	}
	return watchIgnore
}
