package breakglass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"golang.org/x/sys/unix"
)

// Execute does a signed request's operation once, after resolving every
// target again and comparing it with the identity approved: a target
// replaced, changed, moved behind a symbolic link or gone since is
// refused (ErrTarget) and nothing is done. It returns what it changed.
func (r Repository) Execute(ctx context.Context, s Signed, staged Staging) ([]string, error) {
	now, changes, err := r.Resolve(ctx, s.Operation, staged)
	if err != nil {
		return nil, fmt.Errorf("resolving the targets again: %w", err)
	}
	if len(now) != len(s.Targets) {
		return nil, targetErr("the operation has %d targets now, %d when approved", len(now), len(s.Targets))
	}
	for i, t := range s.Targets {
		if t.Role != now[i].Role || t.Path != now[i].Path || t.Volume != now[i].Volume {
			return nil, targetErr("target %d is %s %s%s now, %s %s%s when approved", i, now[i].Role, now[i].Path, now[i].Volume, t.Role, t.Path, t.Volume)
		}
		if why := Same(t, now[i]); why != "" {
			return nil, targetErr("%s %s%s: %s; nothing was done", t.Role, t.Path, t.Volume, why)
		}
	}
	op := s.Operation
	switch op.Kind {
	case OpPutFile:
		err = r.putFile(s.ID, op, now[1], staged)
	case OpMove:
		err = r.move(op)
	case OpDeleteFile, OpDeleteDirectory:
		err = r.delete(op)
	case OpDeleteVolume:
		err = r.LVM.Remove(ctx, op.Volume, now[0].LVUUID)
	default:
		err = fmt.Errorf("operation %q is not known", op.Kind)
	}
	if err != nil {
		return nil, err
	}
	return changes, nil
}

// putFile writes the staged content beside the target and renames it
// into place: the old file, when there is one, is replaced at once.
func (r Repository) putFile(id string, op Operation, old Target, staged Staging) (err error) {
	d, name, err := r.openParent("operation.path", op.Path)
	if err != nil {
		return err
	}
	defer d.Close()
	src, err := staged.Open(op.SHA256)
	if err != nil {
		return err
	}
	defer src.Close()
	mode, uid, gid, err := r.newFileOwner(d, name, op, old)
	if err != nil {
		return err
	}
	tmp := ".pmcp-breakglass-" + id
	dfd := int(d.File().Fd())
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("breakglass: create %s/%s: %w", d.Path(), tmp, err)
	}
	f := os.NewFile(uintptr(fd), d.Path()+"/"+tmp)
	defer func() {
		f.Close()
		if err != nil {
			unix.Unlinkat(dfd, tmp, 0) //nolint:errcheck // the temporary file only
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if err != nil {
		return fmt.Errorf("breakglass: write %s: %w", f.Name(), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != op.SHA256 || n != op.Size && op.Size != 0 {
		return fmt.Errorf("breakglass: the staged upload reads as %d bytes with sha256 %s, not the %s approved: nothing was replaced", n, got, op.SHA256)
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("breakglass: chown %s: %w", f.Name(), err)
	}
	if err := f.Chmod(os.FileMode(mode)); err != nil {
		return fmt.Errorf("breakglass: chmod %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("breakglass: fsync %s: %w", f.Name(), err)
	}
	if old.Exists {
		err = unix.Renameat(dfd, tmp, dfd, name)
	} else {
		err = unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		return fmt.Errorf("breakglass: rename into %s: %w", op.Path, err)
	}
	return d.Sync()
}

// newFileOwner is the written file's mode and owner: the old file's, or
// the directory's owner with 0644; an asked mode wins.
func (r Repository) newFileOwner(d *atomicfile.Dir, name string, op Operation, old Target) (mode uint32, uid, gid int, err error) {
	fi, err := d.File().Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	mode, uid, gid = 0o644, int(st.Uid), int(st.Gid)
	if old.Exists {
		ofi, err := d.Lstat(name)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("breakglass: %s: %w", op.Path, err)
		}
		ost := ofi.Sys().(*syscall.Stat_t)
		mode, uid, gid = uint32(ofi.Mode().Perm()), int(ost.Uid), int(ost.Gid)
	}
	if op.Mode != "" {
		if mode, err = parseMode(op.Mode); err != nil {
			return 0, 0, 0, err
		}
	}
	return mode, uid, gid, nil
}

func (r Repository) move(op Operation) error {
	sd, sname, err := r.openParent("operation.path", op.Path)
	if err != nil {
		return err
	}
	defer sd.Close()
	dd, dname, err := r.openParent("operation.to", op.To)
	if err != nil {
		return err
	}
	defer dd.Close()
	if err := unix.Renameat2(int(sd.File().Fd()), sname, int(dd.File().Fd()), dname, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EXDEV) {
			return targetErr("%s and %s are on different file systems: a move cannot copy", op.Path, op.To)
		}
		return fmt.Errorf("breakglass: move %s to %s: %w", op.Path, op.To, err)
	}
	return errors.Join(sd.Sync(), dd.Sync())
}

func (r Repository) delete(op Operation) error {
	d, name, err := r.openParent("operation.path", op.Path)
	if err != nil {
		return err
	}
	defer d.Close()
	var removed bool
	if op.Kind == OpDeleteDirectory {
		removed, err = d.RemoveAll(name)
	} else {
		removed, err = d.Remove(name)
	}
	switch {
	case err != nil:
		return fmt.Errorf("breakglass: delete %s: %w", op.Path, err)
	case !removed:
		return targetErr("%s vanished while it was being deleted", op.Path)
	}
	return nil
}
