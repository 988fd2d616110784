package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock on the entry name, waiting until ctx ends.
// The lock file is created 0600 and given to the directory's owner when
// it does not exist; an existing one is opened read-only and must be a
// regular file (never a symbolic link, and with one hard link in a
// directory someone else can write), so a lock file planted by another
// user makes nobody create or open anything else. The lock is held by the
// open file description, so two opens in one process exclude each other
// as two processes do. unlock releases it.
func (d *Dir) Lock(ctx context.Context, name string) (unlock func(), err error) {
	f, err := d.openLock(name)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", d.join(name), err)
	}
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it too
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", d.join(name), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: another process holds it: %w", d.join(name), ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// openLock creates the lock file, or opens the one there.
func (d *Dir) openLock(name string) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	for range 3 {
		fd, err := d.openat(name, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if err == nil {
			f := os.NewFile(uintptr(fd), d.join(name))
			if err := d.owner.chown(f); err != nil {
				f.Close()
				return nil, err
			}
			if err := f.Chmod(0o600); err != nil {
				f.Close()
				return nil, err
			}
			return f, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return nil, d.pathError("create", name, err)
		}
		f, err := d.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed a moment ago: create it
		}
		return f, err
	}
	return nil, fmt.Errorf("%s keeps appearing and vanishing", d.join(name))
}
