package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxFileSize is pmxcfs's limit per file (memdb.h MEMDB_MAX_FILE_SIZE).
const MaxFileSize = 1 << 20

// Errors callers branch on.
var (
	// ErrNoQuorum: this node has no quorum, so pmxcfs is read-only here.
	ErrNoQuorum = errors.New("this node has no quorum: /etc/pve is read-only until it returns (pvecm status)")
	// ErrNotMounted: pmxcfs is not mounted where the configuration says.
	ErrNotMounted = errors.New("pmxcfs is not mounted")
)

// FS is a mounted pmxcfs as root uses it. pmxcfs has no links but its own
// (local, qemu-server, lxc, openvz) and only root writes it, so paths in
// it are used as they are.
type FS struct {
	root string
}

// NewFS returns the pmxcfs mounted at root (/etc/pve).
func NewFS(root string) (*FS, error) {
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return nil, fmt.Errorf("cluster: pmxcfs directory %q: want an absolute, clean path", root)
	}
	return &FS{root: root}, nil
}

// Root is where pmxcfs is mounted.
func (f *FS) Root() string { return f.root }

func (f *FS) path(rel string) string { return filepath.Join(f.root, filepath.FromSlash(rel)) }

// Quorate reports whether this node has quorum. A node in a cluster says
// so in .members (cluster.quorate), which pmxcfs generates on each read;
// outside a cluster, PVE::Cluster's check_cfs_quorum tells: pmxcfs gives
// its "local" link the write bit only with quorum (an attribute the
// kernel may cache for a second, which .members is not). A missing link
// means pmxcfs is not mounted.
func (f *FS) Quorate() (bool, error) {
	fi, err := os.Lstat(f.path("local"))
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return false, fmt.Errorf("cluster: %w at %s (no %s link; is pve-cluster running?)", ErrNotMounted, f.root, f.path("local"))
	}
	if m, err := f.Members(); err == nil && m.Cluster != nil {
		return m.Cluster.Quorate == 1, nil
	}
	return fi.Mode()&0o200 != 0, nil
}

// Members is pmxcfs's .members: this node's name and the cluster's nodes
// as this node sees them (status.c cfs_create_memberlist_msg). A node
// outside any cluster has a name and no list.
type Members struct {
	NodeName string `json:"nodename"`
	Cluster  *struct {
		Name    string `json:"name"`
		Nodes   int    `json:"nodes"`
		Quorate int    `json:"quorate"`
	} `json:"cluster"`
	NodeList map[string]struct {
		ID     int    `json:"id"`
		Online int    `json:"online"`
		IP     string `json:"ip"`
	} `json:"nodelist"`
}

// Members reads .members.
func (f *FS) Members() (Members, error) {
	var m Members
	data, err := f.ReadFile(".members")
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("cluster: %s: %w", f.path(".members"), err)
	}
	if !validNodeName(m.NodeName) {
		return m, fmt.Errorf("cluster: %s names this node %q, which is not a node name", f.path(".members"), m.NodeName)
	}
	return m, nil
}

func validNodeName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// ReadFile reads a file of pmxcfs (rel with slashes), up to its limit.
func (f *FS) ReadFile(rel string) ([]byte, error) {
	fh, err := os.Open(f.path(rel))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", fh.Name(), err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than pmxcfs's %d bytes", fh.Name(), MaxFileSize)
	}
	return data, nil
}

// ReadDir lists a directory of pmxcfs; a missing one is empty.
func (f *FS) ReadDir(rel string) ([]fs.DirEntry, error) {
	ents, err := os.ReadDir(f.path(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}

// MkdirAll makes a directory and its parents. pmxcfs fixes the mode.
func (f *FS) MkdirAll(rel string) error {
	cur := ""
	for _, name := range strings.Split(rel, "/") {
		cur = path.Join(cur, name)
		err := os.Mkdir(f.path(cur), 0o700)
		if err == nil || errors.Is(err, fs.ErrExist) {
			continue
		}
		return f.writeError("mkdir", cur, err)
	}
	return nil
}

// tempName is the temporary file a write goes through, as PVE's
// file_set_contents names it: <name>.tmp.<pid>.
func tempName(name string) string { return name + ".tmp." + strconv.Itoa(os.Getpid()) }

// isTemp reports whether a name is a writer's temporary file.
func isTemp(name string) bool { return strings.Contains(name, ".tmp.") }

// WriteFile replaces a file of pmxcfs atomically, as PVE's
// file_set_contents does: a temporary file beside it (created with
// O_EXCL; a stale one of this pid is removed first), written, closed and
// renamed over it. pmxcfs applies each write and the rename on every node
// in one order, so other nodes see the old content or the new. A file
// over pmxcfs's limit is refused before anything is written.
func (f *FS) WriteFile(rel string, data []byte) error {
	if len(data) > MaxFileSize {
		return fmt.Errorf("cluster: %s would be %d bytes; pmxcfs holds at most %d per file", f.path(rel), len(data), MaxFileSize)
	}
	tmp := tempName(rel)
	var fh *os.File
	var err error
	for range 3 {
		fh, err = os.OpenFile(f.path(tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		os.Remove(f.path(tmp)) //nolint:errcheck // the next create says
	}
	if err != nil {
		return f.writeError("create", tmp, err)
	}
	_, err = fh.Write(data)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.path(tmp), f.path(rel))
	}
	if err != nil {
		os.Remove(f.path(tmp)) //nolint:errcheck // best effort: the write failed already
		return f.writeError("write", rel, err)
	}
	return nil
}

// Remove removes a file of pmxcfs; a missing one is no error.
func (f *FS) Remove(rel string) error {
	err := os.Remove(f.path(rel))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return f.writeError("remove", rel, err)
}

// writeError explains a refused change: without quorum pmxcfs answers
// EACCES to root too.
func (f *FS) writeError(op, rel string, err error) error {
	if errors.Is(err, syscall.EACCES) {
		if q, qerr := f.Quorate(); qerr == nil && !q {
			return fmt.Errorf("cluster: %s %s: %w", op, f.path(rel), ErrNoQuorum)
		}
	}
	if errors.Is(err, syscall.EFBIG) {
		return fmt.Errorf("cluster: %s %s: pmxcfs holds at most %d bytes per file: %w", op, f.path(rel), MaxFileSize, err)
	}
	return fmt.Errorf("cluster: %s %s: %w", op, f.path(rel), err)
}

// The cluster lock, as PVE::Cluster's cfs_lock takes its locks.
const (
	lockDir = "priv/lock"
	// LockID is the lock of proxmox-mcp's shared files:
	// /etc/pve/priv/lock/proxmox-mcp.
	LockID = "proxmox-mcp"
	// lockHold is how long a change may hold the lock: PVE's cfs_lock
	// allows its code 60 s of pmxcfs's 120.
	lockHold = 60 * time.Second
)

// LockError is a lock that was not obtained in time.
type LockError struct {
	Path    string
	Timeout time.Duration
}

func (e *LockError) Error() string {
	return fmt.Sprintf("cfs-lock %q: not obtained within %s: another node is changing proxmox-mcp's keys or policies (or a crashed change left the lock, which pmxcfs removes 120 s after its last renewal)", e.Path, e.Timeout)
}

// Lock takes the cluster lock, waiting up to timeout as PVE's cfs_lock
// does: mkdir of priv/lock/<id>, which pmxcfs makes exclusive across the
// cluster; while another holds it, utime(0, 0) asks pmxcfs to remove it
// should it have expired, then a short sleep (a tenth of a second per
// second left, at most one). unlock removes the lock.
func (f *FS) Lock(ctx context.Context, id string, timeout time.Duration) (unlock func() error, err error) {
	if err := os.Mkdir(f.path(lockDir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, f.writeError("mkdir", lockDir, err)
	}
	if fi, err := os.Stat(f.path(lockDir)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("cluster: %s is not a directory: pve cluster filesystem not online", f.path(lockDir))
	}
	p := f.path(path.Join(lockDir, id))
	deadline := time.Now().Add(timeout)
	for {
		err := os.Mkdir(p, 0o700)
		if err == nil {
			return func() error {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("cluster: unlock %s: %w", p, err)
				}
				return nil
			}, nil
		}
		// ENOENT is retried too: a lock another node has just removed
		// can answer it through this node's mount for as long as the
		// kernel keeps the lock's entry (pmxcfs's FUSE caches entries for
		// a second), and PVE's cfs_lock retries every failed mkdir.
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, fs.ErrNotExist) {
			return nil, f.writeError("lock", path.Join(lockDir, id), err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, &LockError{Path: p, Timeout: timeout}
		}
		zero := time.Unix(0, 0)
		os.Chtimes(p, zero, zero) //nolint:errcheck // the unlock request; pmxcfs answers it with an error either way
		wait := min(max(left/10, 100*time.Millisecond), time.Second)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: waiting for %s: %w", p, ctx.Err())
		case <-time.After(wait):
		}
	}
}
