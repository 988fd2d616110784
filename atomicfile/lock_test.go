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
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(context.Background(), path, Owner{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file %v, %v: want mode 0600", fi, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path, Owner{}); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another process holds it") {
		t.Fatalf("second lock while held: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := Lock(context.Background(), path, Owner{})
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

func TestLockErrors(t *testing.T) {
	if _, err := Lock(context.Background(), filepath.Join(t.TempDir(), "missing", "x.lock"), Owner{}); err == nil || !strings.HasPrefix(err.Error(), "lock ") {
		t.Errorf("lock in a missing directory: %v", err)
	}
	if err := (Owner{}).Apply("/nonexistent"); err != nil {
		t.Errorf("the zero owner changed something: %v", err)
	}
}
