package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock takes an exclusive flock on path (created 0600 and given to owner
// when it does not exist), waiting until ctx ends. The lock is held by the
// open file description, so two opens in one process exclude each other as
// two processes do. unlock releases it.
func Lock(ctx context.Context, path string, owner Owner) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := owner.Apply(path); err != nil {
		f.Close()
		return nil, err
	}
	delay := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: another process holds it: %w", path, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Owner is the owner files in a directory must have: the directory's own.
// Only root can give files away, and only root needs to: the service
// user's own writes already have the right owner. The zero Owner changes
// nothing.
type Owner struct {
	UID, GID int
	// Enabled is set when Apply changes anything.
	Enabled bool
}

// OwnerOf returns the owner of dir, enabled when this process runs as root
// and dir belongs to someone else.
func OwnerOf(dir string) (Owner, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return Owner{}, fmt.Errorf("state directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Owner{}, nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	return Owner{UID: uid, GID: gid, Enabled: os.Geteuid() == 0 && (uid != 0 || gid != 0)}, nil
}

// Apply gives path to the owner.
func (o Owner) Apply(path string) error {
	if !o.Enabled {
		return nil
	}
	if err := os.Lchown(path, o.UID, o.GID); err != nil {
		return fmt.Errorf("give %s to the state directory's owner %d:%d: %w", path, o.UID, o.GID, err)
	}
	return nil
}
