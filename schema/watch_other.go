//go:build !linux

package schema

import (
	"fmt"

	"github.com/fsnotify/fsnotify"
)

// fsnotifyWatcher watches a directory with fsnotify, where there is no
// inotify (the demo on a laptop): it cannot tell when a file written in
// place is closed, so such a file is read once the debounce has passed.
type fsnotifyWatcher struct {
	w      *fsnotify.Watcher
	events chan watchEvent
	done   chan struct{} // closed by Close: translate stops sending
	exited chan struct{} // closed by translate when it returns
}

func newDirWatcher() (dirWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("fsnotify: %w", err)
	}
	fw := &fsnotifyWatcher{w: w, events: make(chan watchEvent), done: make(chan struct{}), exited: make(chan struct{})}
	go fw.translate()
	return fw, nil
}

func (fw *fsnotifyWatcher) Add(dir string) error      { return fw.w.Add(dir) }
func (fw *fsnotifyWatcher) Events() <-chan watchEvent { return fw.events }
func (fw *fsnotifyWatcher) Errors() <-chan error      { return fw.w.Errors }

// Close stops fsnotify, whose closed channel ends the translation.
func (fw *fsnotifyWatcher) Close() error {
	close(fw.done)
	err := fw.w.Close()
	<-fw.exited
	return err
}

// translate passes fsnotify's events on as watchEvents until it closes.
func (fw *fsnotifyWatcher) translate() {
	defer close(fw.exited)
	defer close(fw.events)
	for ev := range fw.w.Events {
		op := fsnotifyOp(ev.Op)
		if op == opNone {
			continue
		}
		select {
		case fw.events <- watchEvent{Name: ev.Name, Op: op}:
		case <-fw.done:
			return
		}
	}
}

// fsnotifyOp is the op of an fsnotify event (which carries one, on every
// platform it supports).
func fsnotifyOp(op fsnotify.Op) watchOp {
	switch {
	case op.Has(fsnotify.Create):
		return opCreate
	case op.Has(fsnotify.Write):
		return opWrite
	case op.Has(fsnotify.Remove):
		return opRemove
	case op.Has(fsnotify.Rename):
		return opRename
	case op.Has(fsnotify.Chmod):
		return opChmod
	}
	return opNone
}
