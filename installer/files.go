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
	data, err := os.ReadFile(s.path(file))
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
	uid, gid, err := s.Owners.Owner(s.path(p))
	if err != nil {
		return fileState{}, err
	}
	return fileState{exists: true, dir: fi.IsDir(), mode: fi.Mode().Perm(), uid: uid, gid: gid, size: fi.Size()}, nil
}

// owner is the names of a state's owner.
func (s *System) owner(st fileState) Owner {
	return Owner{s.nameOf("/etc/passwd", st.uid), s.nameOf("/etc/group", st.gid)}
}

// readFile reads a host path.
func (s *System) readFile(p string) ([]byte, error) {
	return os.ReadFile(s.path(p))
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

// writeFile replaces p atomically with data, then gives it owner and mode.
// The new file is written readable by its writer (root) alone and opened
// up only once it has its owner, so a secret is never readable by anyone
// it is not meant for. Nothing is written when content, owner and mode are
// already right.
func (s *System) writeFile(p string, data []byte, mode fs.FileMode, o Owner) (change, error) {
	uid, gid, err := s.ids(o)
	if err != nil {
		return unchanged, fmt.Errorf("%s: %w", p, err)
	}
	st, err := s.stat(p)
	if err != nil {
		return unchanged, err
	}
	if st.exists && st.dir {
		return unchanged, fmt.Errorf("%s is a directory; move it away", p)
	}
	what := created
	if st.exists {
		old, err := s.readFile(p)
		if err != nil {
			return unchanged, err
		}
		if bytes.Equal(old, data) {
			return s.fixAttrs(p, st, mode, uid, gid)
		}
		what = updated
	}
	host := s.path(p)
	if err := atomicfile.WriteFile(host, data, mode&0o700); err != nil {
		return unchanged, err
	}
	if err := s.Owners.Chown(host, uid, gid); err != nil {
		return unchanged, err
	}
	if err := os.Chmod(host, mode); err != nil {
		return unchanged, fmt.Errorf("chmod %s: %w", p, err)
	}
	s.logger().Debug("installer: wrote", "path", p, "owner", o.String(), "mode", fmt.Sprintf("%04o", mode))
	return what, nil
}

// fixAttrs gives an existing path its owner and mode.
func (s *System) fixAttrs(p string, st fileState, mode fs.FileMode, uid, gid int) (change, error) {
	what := unchanged
	host := s.path(p)
	if st.uid != uid || st.gid != gid {
		if err := s.Owners.Chown(host, uid, gid); err != nil {
			return unchanged, err
		}
		what = fixed
	}
	if st.mode != mode {
		if err := os.Chmod(host, mode); err != nil {
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
	return s.fixAttrs(p, st, mode, uid, gid)
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
		return s.fixAttrs(p, st, mode, uid, gid)
	}
	if err := os.MkdirAll(s.path(filepath.Dir(p)), 0o755); err != nil {
		return unchanged, fmt.Errorf("mkdir %s: %w", filepath.Dir(p), err)
	}
	if err := os.Mkdir(s.path(p), mode&0o700); err != nil {
		return unchanged, fmt.Errorf("mkdir %s: %w", p, err)
	}
	if err := s.Owners.Chown(s.path(p), uid, gid); err != nil {
		return unchanged, err
	}
	if err := os.Chmod(s.path(p), mode); err != nil {
		return unchanged, fmt.Errorf("chmod %s: %w", p, err)
	}
	return created, nil
}

// remove deletes a file or an empty directory; a missing one is no error.
func (s *System) remove(p string) (bool, error) {
	err := os.Remove(s.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", p, err)
	}
	return true, nil
}

// removeAll deletes a tree; a missing one is no error.
func (s *System) removeAll(p string) (bool, error) {
	if p == "/" {
		return false, errors.New("installer: refusing to remove /")
	}
	if !s.exists(p) {
		return false, nil
	}
	if err := os.RemoveAll(s.path(p)); err != nil {
		return false, fmt.Errorf("remove %s: %w", p, err)
	}
	return true, nil
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
