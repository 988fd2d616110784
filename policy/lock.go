package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path (created 0600 and given to
// owner when it does not exist), waiting until ctx ends. The lock is held by
// the open file description, so two opens in one process exclude each other
// as two processes do.
func lockFile(ctx context.Context, path string, owner ownership) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := owner.apply(path); err != nil {
		f.Close()
		return nil, err
	}
	delay := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
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

// ownership is the owner files in the state directory must have: the
// directory's own. Only root can give files away, and only root needs to:
// the service user's own writes already have the right owner.
type ownership struct {
	uid, gid int
	enabled  bool
}

// ownerOf returns the ownership of dir, enabled when this process runs as
// root and dir belongs to someone else.
func ownerOf(dir string) (ownership, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return ownership{}, fmt.Errorf("state directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ownership{}, nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	return ownership{uid: uid, gid: gid, enabled: os.Geteuid() == 0 && (uid != 0 || gid != 0)}, nil
}

// apply gives path to the owner.
func (o ownership) apply(path string) error {
	if !o.enabled {
		return nil
	}
	if err := os.Lchown(path, o.uid, o.gid); err != nil {
		return fmt.Errorf("give %s to the state directory's owner %d:%d: %w", path, o.uid, o.gid, err)
	}
	return nil
}

type statInfo struct {
	ino   uint64
	ctime time.Time
}

func sysStat(fi os.FileInfo) (statInfo, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statInfo{}, false
	}
	return statInfo{ino: st.Ino, ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec)}, true
}
