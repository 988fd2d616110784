package installer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// Owner names a file's user and group.
type Owner struct{ User, Group string }

func (o Owner) String() string { return o.User + ":" + o.Group }

// rootOwner owns what only root may change.
var rootOwner = Owner{"root", "root"}

// account is one line of /etc/passwd or /etc/group.
type account struct {
	name string
	id   int
	gid  int // the user's primary group
}

// accounts reads /etc/passwd or /etc/group under the root. System users
// are always local (systemd-sysusers and useradd write these files), so NSS
// is not consulted.
func (s *System) accounts(file string) ([]account, error) {
	data, err := s.readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	var out []account
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		id, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		a := account{name: f[0], id: id}
		if file == "/etc/passwd" && len(f) > 3 {
			a.gid, _ = strconv.Atoi(f[3])
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// lookup finds an account by name; ok is false when there is none.
func (s *System) lookup(file, name string) (account, bool, error) {
	all, err := s.accounts(file)
	if err != nil {
		return account{}, false, err
	}
	for _, a := range all {
		if a.name == name {
			return a, true, nil
		}
	}
	return account{}, false, nil
}

// nameOf is the name of a user or group id, or the number.
func (s *System) nameOf(file string, id int) string {
	all, _ := s.accounts(file)
	for _, a := range all {
		if a.id == id {
			return a.name
		}
	}
	return strconv.Itoa(id)
}

// ids resolves an Owner; a missing user or group is an error naming it.
func (s *System) ids(o Owner) (uid, gid int, err error) {
	u, ok, err := s.lookup("/etc/passwd", o.User)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("there is no user %q (/etc/passwd)", o.User)
	}
	g, ok, err := s.lookup("/etc/group", o.Group)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("there is no group %q (/etc/group)", o.Group)
	}
	return u.id, g.id, nil
}

// fileState is what a stat says about a path.
type fileState struct {
	exists bool
	dir    bool
	mode   fs.FileMode // permission bits
	uid    int
	gid    int
	size   int64
}

// stat describes a host path (not following a final symlink).
func (s *System) stat(p string) (fileState, error) {
	fi, err := os.Lstat(s.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	uid, gid, err := s.Owners.Owner(fi)
	if err != nil {
		return fileState{}, err
	}
	return fileState{exists: true, dir: fi.IsDir(), mode: fi.Mode().Perm(), uid: uid, gid: gid, size: fi.Size()}, nil
}

// owner is the names of a state's owner.
func (s *System) owner(st fileState) Owner {
	return Owner{s.nameOf("/etc/passwd", st.uid), s.nameOf("/etc/group", st.gid)}
}

// readFile reads a host path, following a symbolic link only in a
// directory nobody but root can write (atomicfile.ReadFile): as root, the
// installer never reads through a link another user planted.
func (s *System) readFile(p string) ([]byte, error) {
	return atomicfile.ReadFile(s.path(p))
}

// exists reports whether a host path exists.
func (s *System) exists(p string) bool {
	_, err := os.Lstat(s.path(p))
	return err == nil
}

// change says what a write did to a path: "" when nothing changed.
type change string

const (
	unchanged change = ""
	created   change = "created"
	updated   change = "updated"
	fixed     change = "set the owner and mode of"
)

// writeFile replaces p atomically with data, with owner and mode. The
// new file is written readable by its writer (root) alone and given its
// owner and then its mode through its descriptor before it takes its name,
// so a secret is never readable by anyone it is not meant for. Nothing is
// written when content, owner and mode are already right. The directory
// is opened without following a link another user could plant, and a
// symbolic link at p is replaced, never written through.
func (s *System) writeFile(p string, data []byte, mode fs.FileMode, o Owner) (change, error) {
	uid, gid, err := s.ids(o)
	if err != nil {
		return unchanged, fmt.Errorf("%s: %w", p, err)
	}
	d, name, err := atomicfile.OpenParent(s.path(p))
	if err != nil {
		return unchanged, fmt.Errorf("write %s: %w", p, err)
	}
	defer d.Close()
	fi, err := d.Lstat(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return unchanged, fmt.Errorf("write %s: %w", p, err)
	}
	what := created
	if err == nil {
		if fi.IsDir() {
			return unchanged, fmt.Errorf("%s is a directory; move it away", p)
		}
		if fi.Mode().IsRegular() {
			old, err := d.ReadFile(name)
			if err != nil {
				return unchanged, fmt.Errorf("write %s: %w", p, err)
			}
			if bytes.Equal(old, data) {
				return s.fixAttrs(p, mode, uid, gid)
			}
		}
		what = updated
	}
	err = d.WriteFileFunc(name, data, mode, func(f *os.File) error { return s.Owners.Chown(f, uid, gid) })
	if err != nil {
		return unchanged, err
	}
	s.logger().Debug("installer: wrote", "path", p, "owner", o.String(), "mode", fmt.Sprintf("%04o", mode))
	return what, nil
}

// fixAttrs gives an existing path its owner and mode, through a
// descriptor of it: a symbolic link is followed only in a directory
// nobody but root can write, and refused elsewhere (where the service user
// could have planted it to make root chmod /etc/passwd), as are special
// files and, there, files with more than one hard link.
func (s *System) fixAttrs(p string, mode fs.FileMode, uid, gid int) (change, error) {
	d, name, err := atomicfile.Resolve(s.path(p))
	if err != nil {
		return unchanged, fmt.Errorf("set the owner and mode of %s: %w", p, err)
	}
	defer d.Close()
	f, fi, err := d.OpenEntry(name)
	if err != nil {
		return unchanged, fmt.Errorf("set the owner and mode of %s: %w", p, err)
	}
	defer f.Close()
	haveUID, haveGID, err := s.Owners.Owner(fi)
	if err != nil {
		return unchanged, err
	}
	what := unchanged
	if haveUID != uid || haveGID != gid {
		if err := s.Owners.Chown(f, uid, gid); err != nil {
			return unchanged, err
		}
		what = fixed
	}
	if fi.Mode().Perm() != mode {
		if err := f.Chmod(mode); err != nil {
			return unchanged, fmt.Errorf("chmod %s: %w", p, err)
		}
		what = fixed
	}
	return what, nil
}

// ensureAttrs gives an existing path its owner and mode.
func (s *System) ensureAttrs(p string, mode fs.FileMode, o Owner) (change, error) {
	uid, gid, err := s.ids(o)
	if err != nil {
		return unchanged, fmt.Errorf("%s: %w", p, err)
	}
	st, err := s.stat(p)
	if err != nil {
		return unchanged, err
	}
	if !st.exists {
		return unchanged, fmt.Errorf("%s does not exist", p)
	}
	return s.fixAttrs(p, mode, uid, gid)
}

// ensureDir creates a directory (its missing parents 0755 root) with
// owner and mode, or fixes an existing one.
func (s *System) ensureDir(p string, mode fs.FileMode, o Owner) (change, error) {
	uid, gid, err := s.ids(o)
	if err != nil {
		return unchanged, fmt.Errorf("%s: %w", p, err)
	}
	st, err := s.stat(p)
	if err != nil {
		return unchanged, err
	}
	if st.exists {
		if !st.dir {
			return unchanged, fmt.Errorf("%s exists and is not a directory; move it away", p)
		}
		return s.fixAttrs(p, mode, uid, gid)
	}
	parent, err := atomicfile.MkdirAll(s.path(filepath.Dir(p)), 0o755)
	if err != nil {
		return unchanged, fmt.Errorf("mkdir %s: %w", filepath.Dir(p), err)
	}
	defer parent.Close()
	d, err := parent.Mkdir(filepath.Base(p), mode&0o700)
	if err != nil {
		return unchanged, fmt.Errorf("mkdir %s: %w", p, err)
	}
	defer d.Close()
	if err := s.Owners.Chown(d.File(), uid, gid); err != nil {
		return unchanged, err
	}
	if err := d.File().Chmod(mode); err != nil {
		return unchanged, fmt.Errorf("chmod %s: %w", p, err)
	}
	return created, nil
}

// remove deletes a file, a symbolic link (never what it points to) or an
// empty directory; a missing one is no error. The directory holding it is
// opened without following a link another user could plant.
func (s *System) remove(p string) (bool, error) {
	d, name, err := atomicfile.OpenParent(s.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", p, err)
	}
	defer d.Close()
	return d.Remove(name)
}

// removeAll deletes a tree, never following a symbolic link in it; a
// missing one is no error.
func (s *System) removeAll(p string) (bool, error) {
	if p == "/" {
		return false, errors.New("installer: refusing to remove /")
	}
	d, name, err := atomicfile.OpenParent(s.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", p, err)
	}
	defer d.Close()
	return d.RemoveAll(name)
}

// checkAttrs is a Check of a path's kind, owner and mode.
func (s *System) checkAttrs(p string, dir bool, mode fs.FileMode, o Owner, fix string) []Problem {
	st, err := s.stat(p)
	switch {
	case err != nil:
		return []Problem{{What: fmt.Sprintf("%s cannot be examined: %v", p, err), Fix: fix}}
	case !st.exists:
		return []Problem{{What: p + " is missing", Fix: fix}}
	case st.dir != dir:
		kind := "a file"
		if dir {
			kind = "a directory"
		}
		return []Problem{{What: fmt.Sprintf("%s is not %s", p, kind), Fix: "move it away, then " + fix}}
	}
	have := s.owner(st)
	if have != o || st.mode != mode {
		return []Problem{{
			What: fmt.Sprintf("%s is %s %04o, want %s %04o", p, have, st.mode, o, mode),
			Fix:  fmt.Sprintf("chown %s %s && chmod %04o %s (or %s)", o, p, mode, p, fix),
		}}
	}
	return nil
}

// readableBy says whether uid (with gid as its group) can read a host path,
// walking every directory above it as the kernel does. Root reads
// everything.
func (s *System) readableBy(p string, uid, gid int) error {
	if uid == 0 {
		if !s.exists(p) {
			return fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
		}
		return nil
	}
	allowed := func(st fileState, bit fs.FileMode) bool {
		switch {
		case st.uid == uid:
			return st.mode&(bit<<6) != 0
		case st.gid == gid:
			return st.mode&(bit<<3) != 0
		default:
			return st.mode&bit != 0
		}
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	dir := "/"
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		st, err := s.stat(dir)
		if err != nil {
			return err
		}
		if !st.exists {
			return fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
		}
		if !allowed(st, 0o1) {
			return fmt.Errorf("open %s: %w (the directory %s is %s %04o)", p, fs.ErrPermission, dir, s.owner(st), st.mode)
		}
	}
	st, err := s.stat(p)
	if err != nil {
		return err
	}
	if !st.exists {
		return fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
	}
	if !allowed(st, 0o4) {
		return fmt.Errorf("open %s: %w (it is %s %04o)", p, fs.ErrPermission, s.owner(st), st.mode)
	}
	return nil
}
