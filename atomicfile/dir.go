package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxHops bounds the symbolic links one path may go through, as the
// kernel's own limit does.
const maxHops = 40

// Dir is an open directory. Every operation on it names one entry (a
// single path element: not empty, not "." or "..", no "/") and acts
// relative to the directory's descriptor, never following a symbolic
// link: a link planted where a file or directory is expected is refused
// with ELOOP, whoever owns the directory. Files created in it are given
// to the directory's owner when root creates them (see [Owner]).
//
// A Dir is opened by [OpenDir] or [MkdirAll], which walk the path from
// "/" one element at a time and follow a symbolic link only in a
// directory that nobody but root (or this process's own user) can write:
// only such a user could have put it there.
type Dir struct {
	f       *os.File // O_RDONLY|O_DIRECTORY
	path    string
	owner   Owner
	trusted bool
}

// Owner is the owner files created in a directory are given: the
// directory's own. Only root can give files away, and only root needs to:
// the service user's own writes already have the right owner. The zero
// Owner changes nothing.
type Owner struct {
	UID, GID int
	// Enabled is set when this process runs as root and the directory
	// belongs to someone else.
	Enabled bool
}

// chown gives an open file to the owner.
func (o Owner) chown(f *os.File) error {
	if !o.Enabled {
		return nil
	}
	if err := f.Chown(o.UID, o.GID); err != nil {
		return fmt.Errorf("give %s to the directory's owner %d:%d: %w", f.Name(), o.UID, o.GID, err)
	}
	return nil
}

// newDir wraps an open directory, reading its owner and mode; on error
// it closes f.
func newDir(f *os.File) (*Dir, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	uid, gid := int(st.Uid), int(st.Gid)
	euid := os.Geteuid()
	return &Dir{
		f:       f,
		path:    f.Name(),
		owner:   Owner{UID: uid, GID: gid, Enabled: euid == 0 && (uid != 0 || gid != 0)},
		trusted: trustedStat(&st, euid),
	}, nil
}

// FromFile is a Dir of a directory the caller opened itself (O_RDONLY|
// O_DIRECTORY), for example beneath a root with openat2; the Dir owns f
// and closes it, also when it returns an error.
func FromFile(f *os.File) (*Dir, error) { return newDir(f) }

// trustedStat says whether a directory can be written only by root or by
// this process's own user: a symbolic link in it was put there by one of
// them.
func trustedStat(st *unix.Stat_t, euid int) bool {
	return (st.Uid == 0 || int(st.Uid) == euid) && st.Mode&0o022 == 0
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// CheckPrivate refuses a directory that is not this process's user's
// alone: another owner, or any group or other permission bit (a root
// process keeps its keys and records only in such a directory).
func (d *Dir) CheckPrivate() error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: d.path, Err: err}
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s must be a directory of uid %d alone (mode 0700); it is uid %d mode %04o: check it, then fix it",
			d.path, os.Geteuid(), st.Uid, st.Mode&0o7777)
	}
	return nil
}

// Path is the directory's path as it was opened, links on the way replaced
// by their targets (for messages).
func (d *Dir) Path() string { return d.path }

// File is the directory's open file (O_RDONLY|O_DIRECTORY), for changing
// its own owner and mode through the descriptor (f.Chown, f.Chmod). It
// belongs to the Dir: do not close it.
func (d *Dir) File() *os.File { return d.f }

// Owner is the owner files created in the directory are given.
func (d *Dir) Owner() Owner { return d.owner }

// Sync makes the directory's entries durable.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", d.path, err)
	}
	return nil
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) join(name string) string { return filepath.Join(d.path, name) }

// checkName refuses anything but one path element.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("entry name %q: want one path element (not empty, \".\" or \"..\")", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("entry name %q: want one path element, without / or NUL", name)
	}
	return nil
}

// openat opens an entry of the directory, retrying on EINTR.
func (d *Dir) openat(name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(d.fd(), name, flags|unix.O_CLOEXEC, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// symlinkError says why a link was not followed.
func (d *Dir) symlinkError(op, name string) error {
	return &fs.PathError{Op: op, Path: d.join(name), Err: fmt.Errorf("refusing to follow a symbolic link: %w", unix.ELOOP)}
}

// pathError wraps a system call's error for an entry. A symbolic link
// refused by O_NOFOLLOW (ELOOP, or ENOTDIR with O_DIRECTORY) gets its
// reason spelled out.
func (d *Dir) pathError(op, name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && d.isLink(name) {
		return d.symlinkError(op, name)
	}
	return &fs.PathError{Op: op, Path: d.join(name), Err: err}
}

// isLink reports whether an entry is a symbolic link.
func (d *Dir) isLink(name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// Lstat describes an entry without following a symbolic link.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	// An O_PATH descriptor of the entry itself (the link, for a link):
	// fstat of it is lstat, with the os package's FileInfo.
	fd, err := d.openat(name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.join(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.join(name))
	defer f.Close()
	return f.Stat()
}

// OpenDir opens an existing subdirectory.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, d.pathError("open", name, err)
	}
	return newDir(os.NewFile(uintptr(fd), d.join(name)))
}

// Mkdir opens a subdirectory, creating it with perm (given to the
// directory's owner) when it is missing.
func (d *Dir) Mkdir(name string, perm fs.FileMode) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	for range 3 {
		sub, err := d.OpenDir(name)
		if !errors.Is(err, fs.ErrNotExist) {
			return sub, err
		}
		err = unix.Mkdirat(d.fd(), name, uint32(perm.Perm()&0o700))
		if errors.Is(err, unix.EEXIST) {
			continue // made by someone else a moment ago: open it
		}
		if err != nil {
			return nil, d.pathError("mkdir", name, err)
		}
		fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil, d.pathError("open", name, err)
		}
		f := os.NewFile(uintptr(fd), d.join(name))
		if err := d.owner.chown(f); err != nil {
			f.Close()
			return nil, err
		}
		// The umask may have narrowed the mode; set it exactly, once owned.
		if err := f.Chmod(perm.Perm()); err != nil {
			f.Close()
			return nil, fmt.Errorf("chmod %s: %w", f.Name(), err)
		}
		if err := d.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		return newDir(f)
	}
	return nil, fmt.Errorf("mkdir %s: it keeps appearing and vanishing", d.join(name))
}

// Open opens a regular file of the directory for reading. A symbolic
// link, a special file (a FIFO would block a reader) and, in a directory
// someone else can write, a file with more than one hard link (which
// could be any file of the file system) are refused.
func (d *Dir) Open(name string) (*os.File, error) {
	f, fi, err := d.OpenEntry(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	return f, nil
}

// OpenEntry opens an existing regular file or directory of the directory
// read-only, to read it or to change its owner and mode through the
// descriptor (f.Chown, f.Chmod): never a symbolic link, never a special
// file, and in a directory someone else can write, never a file with more
// than one hard link.
func (d *Dir) OpenEntry(name string) (*os.File, fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, d.pathError("open", name, err)
	}
	f := os.NewFile(uintptr(fd), d.join(name))
	fi, err := d.checkOpened(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// checkOpened refuses what an opened entry must not be.
func (d *Dir) checkOpened(f *os.File) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf("not a regular file or directory (%s)", fi.Mode().Type())}
	case !d.trusted && links(fi) != 1:
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf(
			"it has %d hard links, in a directory uid %d can write: a hard link there could be any file of the file system, so it is refused", links(fi), d.owner.UID)}
	}
	return fi, nil
}

// links is a file's hard link count.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// ReadFile reads a regular file of the directory, as Open checks it.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return data, nil
}

// ReadDirNames lists the directory's entries.
func (d *Dir) ReadDirNames() ([]string, error) {
	fd, err := d.openat(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", d.path, err)
	}
	return names, nil
}

// WriteFile atomically replaces name with data, created with mode perm
// and given to the directory's owner: a temporary file is created in the
// directory (O_EXCL|O_NOFOLLOW), written, given its owner and mode,
// fsynced and renamed over name, and the directory is fsynced. A symbolic
// link at name is replaced, never followed.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return d.WriteFileFunc(name, data, perm, nil)
}

// WriteFileFunc is WriteFile with the owner chosen by chown, which is
// called on the new file's descriptor before the file has its mode or its
// name; nil gives it to the directory's owner.
func (d *Dir) WriteFileFunc(name string, data []byte, perm fs.FileMode, chown func(*os.File) error) error {
	return d.write(name, data, perm, chown, false)
}

// CreateFile writes a file that must not exist yet, as WriteFile does
// but never replacing anything: when name exists the error wraps
// fs.ErrExist and nothing is changed.
func (d *Dir) CreateFile(name string, data []byte, perm fs.FileMode) error {
	return d.write(name, data, perm, nil, true)
}

func (d *Dir) write(name string, data []byte, perm fs.FileMode, chown func(*os.File) error, noReplace bool) (err error) {
	if err := checkName(name); err != nil {
		return err
	}
	f, tmp, err := d.createTemp(name)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			unix.Unlinkat(d.fd(), tmp, 0) //nolint:errcheck // best effort: the write already failed
		}
	}()
	target := d.join(name)
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("atomic write %s: %w", target, err)
	}
	if chown == nil {
		chown = d.owner.chown
	}
	if err = chown(f); err != nil {
		return fmt.Errorf("atomic write %s: %w", target, err)
	}
	if err = f.Chmod(perm.Perm()); err != nil {
		return fmt.Errorf("atomic write %s: %w", target, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("atomic write %s: fsync: %w", target, err)
	}
	err = f.Close()
	f = nil
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", target, err)
	}
	if noReplace {
		err = d.renameNoReplace(tmp, name)
	} else {
		err = unix.Renameat(d.fd(), tmp, d.fd(), name)
	}
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", target, &fs.PathError{Op: "rename", Path: target, Err: err})
	}
	return d.Sync()
}

// createTemp creates a new, empty, root-only temporary file beside name.
func (d *Dir) createTemp(name string) (*os.File, string, error) {
	var b [8]byte
	for range 10 {
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", fmt.Errorf("atomic write %s: %w", d.join(name), err)
		}
		tmp := "." + name + ".tmp-" + hex.EncodeToString(b[:])
		if len(tmp) > 255 {
			tmp = ".tmp-" + hex.EncodeToString(b[:])
		}
		fd, err := d.openat(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("atomic write %s: %w", d.join(name), d.pathError("create", tmp, err))
		}
		return os.NewFile(uintptr(fd), d.join(tmp)), tmp, nil
	}
	return nil, "", fmt.Errorf("atomic write %s: no free temporary name", d.join(name))
}

// renameNoReplace renames old to name unless name exists
// (RENAME_NOREPLACE; a link and an unlink where the file system lacks it).
func (d *Dir) renameNoReplace(old, name string) error {
	err := unix.Renameat2(d.fd(), old, d.fd(), name, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if err := unix.Linkat(d.fd(), old, d.fd(), name, 0); err != nil {
		return err
	}
	return unix.Unlinkat(d.fd(), old, 0)
}

// Remove removes a file, a symbolic link (not what it points to) or an
// empty directory; a missing one is no error.
func (d *Dir) Remove(name string) (removed bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	err = unix.Unlinkat(d.fd(), name, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return false, nil
	case err != nil:
		return false, &fs.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return true, d.Sync()
}

// RemoveAll removes an entry and, for a directory, everything in it,
// walking the tree by descriptors and never following a symbolic link
// (a link is removed, not what it points to). A missing entry is no error.
func (d *Dir) RemoveAll(name string) (removed bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	removed, err = removeAllAt(d.fd(), name, d.join(name))
	if err != nil || !removed {
		return removed, err
	}
	return true, d.Sync()
}

func removeAllAt(dirfd int, name, path string) (bool, error) {
	for range 5 {
		err := unix.Unlinkat(dirfd, name, 0)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.ENOENT):
			return false, nil
		case !errors.Is(err, unix.EISDIR):
			return false, &fs.PathError{Op: "remove", Path: path, Err: err}
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return false, nil
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			continue // replaced by a link or a file meanwhile: unlink that
		case err != nil:
			return false, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		f := os.NewFile(uintptr(fd), path)
		names, err := f.Readdirnames(-1)
		if err != nil {
			f.Close()
			return false, fmt.Errorf("read directory %s: %w", path, err)
		}
		for _, n := range names {
			if _, err := removeAllAt(fd, n, filepath.Join(path, n)); err != nil {
				f.Close()
				return false, err
			}
		}
		f.Close()
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.ENOENT):
			return false, nil
		case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
			continue // something was added meanwhile: go again
		default:
			return false, &fs.PathError{Op: "remove", Path: path, Err: err}
		}
	}
	return false, fmt.Errorf("remove %s: it keeps changing while it is removed", path)
}

// OpenDir opens the directory at an absolute path. The path is walked
// from "/" one element at a time; a symbolic link on the way is followed
// only when the directory holding it can be written by nobody but root or
// this process's user, and refused otherwise (with ELOOP).
func OpenDir(path string) (*Dir, error) {
	return walkDir(path, false, 0)
}

// MkdirAll opens the directory at an absolute path as OpenDir does,
// creating the missing directories with perm, each given to the owner of
// the directory it is made in.
func MkdirAll(path string, perm fs.FileMode) (*Dir, error) {
	return walkDir(path, true, perm)
}

// OpenParent opens the directory that holds path's last element (as
// OpenDir does) and returns it with that element's name. The last element
// itself is not looked at.
func OpenParent(path string) (*Dir, string, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" {
		return nil, "", fmt.Errorf("path %q: want an absolute, clean path of a file or directory other than /", path)
	}
	d, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, "", err
	}
	return d, filepath.Base(path), nil
}

// Resolve is OpenParent that also follows a symbolic link at the last
// element when the directory holding it is trusted (as OpenDir follows
// links on the way), so that what it returns names no trusted link.
func Resolve(path string) (*Dir, string, error) {
	for range maxHops {
		d, name, err := OpenParent(path)
		if err != nil {
			return nil, "", err
		}
		if !d.trusted {
			return d, name, nil
		}
		target, err := readlinkat(d.fd(), name)
		if err != nil {
			return d, name, nil // not a link (or missing): the caller's operation says
		}
		dpath := d.path
		d.Close()
		if !filepath.IsAbs(target) {
			// d.path names real directories only (OpenDir replaced every
			// link on the way by its target), so ".." is the real parent.
			target = filepath.Join(dpath, target)
		}
		path = filepath.Clean(target)
	}
	return nil, "", &fs.PathError{Op: "resolve", Path: path, Err: unix.ELOOP}
}

// ReadFile reads the file at an absolute path, following symbolic links
// only in trusted directories (see Resolve).
func ReadFile(path string) ([]byte, error) {
	d, name, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(name)
}

// walkDir opens (and with create, makes) the directory at path.
func walkDir(path string, create bool, perm fs.FileMode) (*Dir, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("directory %q: want an absolute path", path)
	}
	rest := split(filepath.Clean(path))
	cur, err := openRoot()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	hops := 0
	for len(rest) > 0 {
		name := rest[0]
		var next *Dir
		if create {
			next, err = cur.Mkdir(name, perm)
		} else {
			next, err = cur.OpenDir(name)
		}
		if err == nil {
			cur.Close()
			cur, rest = next, rest[1:]
			continue
		}
		var st unix.Stat_t
		if serr := unix.Fstatat(cur.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if serr == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return nil, fmt.Errorf("open directory %s: %s is not a directory", path, cur.join(name))
			}
			return nil, fmt.Errorf("open directory %s: %w", path, err)
		}
		if !cur.trusted {
			return nil, fmt.Errorf("open directory %s: %s is a symbolic link in a directory uid %d can write: %w",
				path, cur.join(name), cur.owner.UID, &fs.PathError{Op: "open", Path: cur.join(name), Err: unix.ELOOP})
		}
		if hops++; hops > maxHops {
			return nil, &fs.PathError{Op: "open", Path: path, Err: unix.ELOOP}
		}
		target, err := readlinkat(cur.fd(), name)
		if err != nil {
			return nil, fmt.Errorf("open directory %s: %w", path, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur.path, target)
		}
		// cur.path names real directories only (every link on the way
		// was replaced by its target), so ".." in the target is the
		// real parent.
		rest = append(split(filepath.Clean(target)), rest[1:]...)
		cur.Close()
		if cur, err = openRoot(); err != nil {
			return nil, err
		}
	}
	d := cur
	cur = nil
	return d, nil
}

func openRoot() (*Dir, error) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	return newDir(os.NewFile(uintptr(fd), "/"))
}

// split is the elements of a clean absolute path.
func split(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; size <= 1<<16; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
	return "", unix.ENAMETOOLONG
}
