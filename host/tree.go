package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is a directory beneath which file operations are allowed. Its path
// is the directory's real path in the host's view: a root that is reached
// through a symbolic link is refused when the tree is opened.
type Root struct {
	Path string `json:"path"`
	// Write allows writes beneath the root; reads, listings and stats
	// are allowed in every root.
	Write bool `json:"write,omitempty"`
	// CrossMounts allows paths that cross a mount point beneath the root
	// (for "/" or /etc/pve, say). Without it a bind mount inside the
	// root, which may lead anywhere, is refused.
	CrossMounts bool `json:"cross_mounts,omitempty"`
}

// Refused is what no file operation may touch, whatever a policy allows.
type Refused struct {
	// Dirs are refused with everything beneath them.
	Dirs []string
	// Files are patterns (path.Match) of refused single files.
	Files []string
	// WriteDirs may be read but never written, with everything beneath
	// them, by a file write or a command's writable path.
	WriteDirs []string
}

// SecretPaths are the places of this install's own secrets.
type SecretPaths struct {
	ConfigDir string // /etc/proxmox-mcp: the configuration, PVE tokens, the PKI (CA key)
	StateDir  string // /var/lib/proxmox-mcp: keys, policies, the journal
	Extra     []string
}

// DefaultRefused is the list DESIGN.md names: the daemon's configuration,
// tokens and state (keys, journal), the installer's state, the CA and
// break-glass keys (under the configuration), PVE's private keys, the
// shadow files, SSH host keys and root's SSH directory, and corosync's
// key.
func DefaultRefused(s SecretPaths) Refused {
	dirs := []string{
		"/etc/pve/priv",
		"/root/.ssh",
		"/var/lib/proxmox-mcp-install",
		"/etc/pve/proxmox-mcp",
	}
	for _, d := range append([]string{s.ConfigDir, s.StateDir}, s.Extra...) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return Refused{
		Dirs: dirs,
		Files: []string{
			"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
			"/etc/ssh/ssh_host_*_key",
			"/etc/corosync/authkey",
			"/etc/pve/authkey.key", "/etc/pve/pve-root-ca.key",
			"/etc/pve/nodes/*/pve-ssl.key", "/etc/pve/nodes/*/pveproxy-ssl.key",
			"/etc/pve/local/pve-ssl.key", "/etc/pve/local/pveproxy-ssl.key",
		},
		// PVE's cluster configuration (pmxcfs): guests' configurations,
		// storages, users and permissions. Written through the API, PVE
		// checks each change and the protected-repository guard sees a
		// disk or bind mount of the repository; written as a file,
		// neither would.
		WriteDirs: []string{"/etc/pve"},
	}
}

// ErrRefused marks what is refused whatever a policy allows.
var ErrRefused = errors.New("refused")

// Tree is a set of opened roots and the refused list. It is safe for
// concurrent use.
type Tree struct {
	roots   []*openRoot
	refused Refused
	sums    sumCache
}

type openRoot struct {
	Root
	f *os.File // O_PATH|O_DIRECTORY
}

// OpenTree opens every root. A root must be a canonical absolute path
// that names a directory without a symbolic link on the way.
func OpenTree(roots []Root, refused Refused) (*Tree, error) {
	t := &Tree{refused: refused}
	for i, r := range roots {
		field := "roots[" + strconv.Itoa(i) + "].path"
		if _, err := CleanPath(field, r.Path); err != nil {
			t.Close()
			return nil, err
		}
		fd, err := unix.Open(r.Path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("host: open root %s: %w", r.Path, err)
		}
		f := os.NewFile(uintptr(fd), r.Path)
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err == nil && real != r.Path {
			f.Close()
			t.Close()
			return nil, fmt.Errorf("host: root %s is %s once its links are followed: name the real directory", r.Path, real)
		}
		t.roots = append(t.roots, &openRoot{Root: r, f: f})
	}
	// The longest root first: a path belongs to the innermost root.
	slices.SortFunc(t.roots, func(a, b *openRoot) int { return len(b.Path) - len(a.Path) })
	return t, nil
}

// Close closes the roots.
func (t *Tree) Close() error {
	for _, r := range t.roots {
		r.f.Close()
	}
	t.roots = nil
	return nil
}

// Roots are the tree's roots, innermost first.
func (t *Tree) Roots() []Root {
	out := make([]Root, len(t.roots))
	for i, r := range t.roots {
		out[i] = r.Root
	}
	return out
}

// rootOf is the innermost root p lies beneath.
func (t *Tree) rootOf(field, p string) (*openRoot, error) {
	for _, r := range t.roots {
		if beneath(p, r.Path) {
			return r, nil
		}
	}
	names := make([]string, len(t.roots))
	for i, r := range t.roots {
		names[i] = r.Path
	}
	slices.Sort(names)
	return nil, &PathError{Field: field, Path: p, Rule: fmt.Sprintf("is not beneath an allowed root (%s)", strings.Join(names, ", "))}
}

// refusedName is the refused entry p names lexically, or "".
func (t *Tree) refusedName(p string) string {
	for _, d := range t.refused.Dirs {
		if beneath(p, d) {
			return d
		}
	}
	for _, pat := range t.refused.Files {
		if ok, _ := path.Match(pat, p); ok {
			return pat
		}
	}
	return ""
}

// access is what an operation does with what it opens.
type access int

const (
	accessStat  access = iota // O_PATH|O_NOFOLLOW: a link itself may be named
	accessRead                // a regular file's content, or a directory's entries
	accessWrite               // the parent directory of a file to write
	accessDir                 // a directory (a command's working directory)
)

// opened is a path opened beneath its root.
type opened struct {
	f    *os.File
	root *openRoot
	path string
	st   unix.Stat_t
}

// open canonicalizes p, finds its root, refuses what is refused by name,
// opens it with openat2 and checks what it opened.
func (t *Tree) open(field, p string, a access) (*opened, error) {
	p, err := CleanPath(field, p)
	if err != nil {
		return nil, err
	}
	root, err := t.rootOf(field, p)
	if err != nil {
		return nil, err
	}
	if a == accessWrite && !root.Write {
		return nil, &PathError{Field: field, Path: p, Rule: fmt.Sprintf("is beneath %s, which allows no writes", root.Path)}
	}
	if what := t.refusedName(p); what != "" {
		return nil, fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: field, Path: p, Rule: fmt.Sprintf("is refused whatever the policy (%s holds this install's or the host's secrets)", what)})
	}
	how := unix.OpenHow{
		Flags:   unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if !root.CrossMounts {
		how.Resolve |= unix.RESOLVE_NO_XDEV
	}
	switch a {
	case accessStat:
		how.Flags |= unix.O_PATH | unix.O_NOFOLLOW
	case accessRead:
		how.Flags |= unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	case accessWrite, accessDir:
		how.Flags |= unix.O_RDONLY | unix.O_DIRECTORY
	}
	fd, err := openat2(int(root.f.Fd()), relative(p, root.Path), &how)
	if err != nil {
		return nil, openError(field, p, root, err)
	}
	o := &opened{f: os.NewFile(uintptr(fd), p), root: root, path: p}
	if err := t.check(field, o, a); err != nil {
		o.f.Close()
		return nil, err
	}
	return o, nil
}

// openat2 retries where the kernel asks to (a rename raced the lookup).
func openat2(dirfd int, rel string, how *unix.OpenHow) (int, error) {
	for range 16 {
		fd, err := unix.Openat2(dirfd, rel, how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// openError says why openat2 refused, in the words of the rule.
func openError(field, p string, root *openRoot, err error) error {
	rule := func(format string, args ...any) error {
		return &PathError{Field: field, Path: p, Rule: fmt.Sprintf(format, args...)}
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return rule("has a symbolic link on the way or at its end; links are never followed (name the real path)")
	case errors.Is(err, unix.EXDEV):
		return rule("crosses a mount point beneath %s, which this root does not allow", root.Path)
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w", &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist})
	case errors.Is(err, unix.ENOTDIR):
		return rule("has an element on the way that is not a directory")
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("host: openat2 is refused (ENOSYS): it needs Linux 5.6 or later, and no seccomp filter that blocks it (systemd's RestrictSUIDSGID= does): %w", err)
	}
	return &fs.PathError{Op: "open", Path: p, Err: err}
}

// configfsMagic is CONFIGFS_MAGIC (linux/magic.h), which x/sys/unix lacks.
const configfsMagic = 0x62656570

// kernelFS are file systems whose files are the kernel's, not the host's:
// never read, listed or written through the helper (commands are for them).
var kernelFS = map[int64]string{
	unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs", unix.DEBUGFS_MAGIC: "debugfs",
	unix.SECURITYFS_MAGIC: "securityfs", unix.TRACEFS_MAGIC: "tracefs", unix.EFIVARFS_MAGIC: "efivarfs",
	unix.BPF_FS_MAGIC: "bpf", configfsMagic: "configfs", unix.DEVPTS_SUPER_MAGIC: "devpts",
}

// check refuses what was opened when it is not what the operation may
// touch: its type, its file system, or its identity (a refused file
// reached through a hard link, or through a mount where mounts may be
// crossed).
func (t *Tree) check(field string, o *opened, a access) error {
	fd := int(o.f.Fd())
	if err := unix.Fstat(fd, &o.st); err != nil {
		return &fs.PathError{Op: "fstat", Path: o.path, Err: err}
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return &fs.PathError{Op: "fstatfs", Path: o.path, Err: err}
	}
	if name, ok := kernelFS[int64(sfs.Type)]; ok {
		return fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: field, Path: o.path, Rule: fmt.Sprintf("is on %s, the kernel's file system; run a command to read it", name)})
	}
	typ := o.st.Mode & unix.S_IFMT
	switch a {
	case accessRead:
		if typ != unix.S_IFREG && typ != unix.S_IFDIR {
			return &PathError{Field: field, Path: o.path, Rule: fmt.Sprintf("is a %s; only regular files and directories are read", typeName(o.st.Mode))}
		}
	case accessWrite, accessDir:
		if typ != unix.S_IFDIR {
			return &PathError{Field: field, Path: o.path, Rule: "is not a directory"}
		}
	}
	if typ == unix.S_IFREG && o.st.Nlink <= 1 && !o.root.CrossMounts {
		// Its only name is the one opened, which is not refused.
		return nil
	}
	if typ != unix.S_IFREG && typ != unix.S_IFDIR {
		return nil
	}
	if what := t.refusedIdentity(o.st.Dev, o.st.Ino); what != "" {
		return fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: field, Path: o.path, Rule: fmt.Sprintf("is %s under another name (a hard link or a mount); refused whatever the policy", what)})
	}
	return nil
}

// identityWalkLimit bounds the walk of the refused directories.
const identityWalkLimit = 20000

// refusedIdentity is the refused file or directory whose identity is
// (dev, ino), or "": the refused files, the refused directories and
// everything in them (a file with other names, or reached across a mount,
// may be one of them).
func (t *Tree) refusedIdentity(dev, ino uint64) string {
	same := func(p string) bool {
		var st unix.Stat_t
		return unix.Lstat(p, &st) == nil && st.Dev == dev && st.Ino == ino
	}
	for _, pat := range t.refused.Files {
		matches, _ := filepath.Glob(pat)
		for _, m := range matches {
			if same(m) {
				return m
			}
		}
	}
	for _, d := range t.refused.Dirs {
		if same(d) {
			return d
		}
	}
	seen := 0
	for _, d := range t.refused.Dirs {
		found := ""
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error { //nolint:errcheck // an unreadable part is skipped
			if err != nil || seen > identityWalkLimit {
				return filepath.SkipDir
			}
			seen++
			if same(p) {
				found = p
				return fs.SkipAll
			}
			return nil
		})
		if found != "" {
			return found
		}
	}
	return ""
}

// typeName names a file's type as ls does.
func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "special file"
}

// precheck is what the helper checks of a path before the policy sees it:
// canonical, beneath an allowed root (one that allows writes, for a
// write), not refused by name. It returns the root.
func (t *Tree) precheck(field, p string, write bool) (string, error) {
	p, err := CleanPath(field, p)
	if err != nil {
		return "", err
	}
	root, err := t.rootOf(field, p)
	if err != nil {
		return "", err
	}
	if write && !root.Write {
		return "", &PathError{Field: field, Path: p, Rule: fmt.Sprintf("is beneath %s, which allows no writes", root.Path)}
	}
	if what := t.refusedName(p); what != "" {
		return "", fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: field, Path: p, Rule: fmt.Sprintf("is refused whatever the policy (%s holds this install's or the host's secrets)", what)})
	}
	if write {
		for _, d := range t.refused.WriteDirs {
			if beneath(p, d) || beneath(d, p) {
				return "", fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: field, Path: p, Rule: fmt.Sprintf(
					"is not written whatever the policy: %s is PVE's configuration, which changes through PVE's API (proxmox_api_call), where PVE checks each change and the protected-repository guard sees what it attaches", d)})
			}
		}
	}
	return root.Path, nil
}
