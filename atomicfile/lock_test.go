package atomicfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two holders exclude each other, within one process as across processes;
// a waiter gives up when its context ends, saying who holds the lock.
func TestLockExcludes(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir)
	unlock, err := d.Lock(context.Background(), "x.lock")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "x.lock"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file %v, %v: want mode 0600", fi, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Lock(ctx, "x.lock"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another process holds it") {
		t.Fatalf("second lock while held: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := mustOpen(t, dir).Lock(context.Background(), "x.lock")
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("lock after release: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter did not get the lock once it was released")
	}
}

// A lock file the service user replaced with a link to a file that does
// not exist creates nothing: the old Lock opened it with O_CREATE through
// the link, so root made any empty file it named.
func TestLockLinkCreatesNothing(t *testing.T) {
	dir := foreignDir(t)
	target := filepath.Join(t.TempDir(), "made-by-root")
	if err := os.Symlink(target, filepath.Join(dir, "keys.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := mustOpen(t, dir).Lock(context.Background(), "keys.lock"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("lock through a link: %v", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the link's target was created: %v", err)
	}
}
