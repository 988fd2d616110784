// Package pmxcfstest is a pmxcfs simulator for tests: one in-memory
// cluster file system, kept as PVE's pmxcfs keeps it (pve-cluster's
// src/pmxcfs: memdb.c, cfs-plug-memdb.c, pmxcfs.c, status.c), mounted
// over FUSE once per simulated node, so that programs under test use it
// through the kernel exactly as they use /etc/pve.
//
// What it enforces, each rule from pmxcfs's source (docs/cluster.md cites
// them):
//
//   - Only directories and regular files, owned by root and the www-data
//     group. Modes are fixed by path: 0640 files and 0755 directories,
//     0600 and 0700 under priv/ and nodes/<node>/priv/; without quorum the
//     write bits go. chmod succeeds only to the mode a path already has,
//     chown only to root:www-data; symbolic links, hard links and special
//     files cannot be made (ENOSYS). The only links are pmxcfs's own:
//     local, qemu-server, lxc and openvz, pointing into nodes/<this node>.
//   - A file holds at most 1 MiB (EFBIG). Each write is applied at once,
//     for every node; a rename replaces its target; a non-empty directory
//     cannot be renamed (ENOTEMPTY), nor can a lock directory (EACCES);
//     renameat2's flags are not supported (EINVAL), as with libfuse 2.
//   - Locks are directories in priv/lock: mkdir fails with EEXIST while
//     one exists; utime(0, 0) on it asks for it to be removed, which
//     happens when the node asking has seen the lock unchanged for longer
//     than the lock timeout (120 s); utime to a newer time, by the node
//     that made it, renews it.
//   - A node without quorum reads the tree as it was when quorum went,
//     and every change fails with EACCES; it sees the cluster's tree again
//     when quorum returns.
//   - .members (node name, quorum, node list) and .version (pmxcfs's
//     change counters, which count only PVE's own configuration files)
//     are generated per node, mode 0440.
//   - Reads are direct (no page cache); attributes and names are cached by
//     the kernel for a second, as libfuse's defaults do. A change made
//     through one node's mount raises no inotify event on another's.
//
// Flock on a file works only within one mount, as on pmxcfs, where it
// is a local lock of one node.
package pmxcfstest

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits of memdb.h.
const (
	// MaxFileSize is MEMDB_MAX_FILE_SIZE.
	MaxFileSize = 1 << 20
	// LockTimeout is CFS_LOCK_TIMEOUT.
	LockTimeout = 120 * time.Second
)

// Options configure a simulated cluster.
type Options struct {
	// Name is the cluster's name ("pmxcfs-sim").
	Name string
	// Nodes are the node names, in node id order; at least one.
	Nodes []string
	// LockTimeout replaces pmxcfs's 120 s, so that tests of stale locks
	// need not wait two minutes.
	LockTimeout time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Cluster is the shared state of every node's pmxcfs: one memdb, as the
// corosync-replicated database is one.
type Cluster struct {
	opts  Options
	gid   uint32
	start time.Time

	mu      sync.Mutex
	root    *entry
	version uint64 // memdb's root version: every change increments it
	nodes   []*Node
}

// entry is a memdb tree entry.
type entry struct {
	name     string
	dir      bool
	children map[string]*entry
	data     []byte
	inode    uint64
	version  uint64
	writer   int // the id of the node that last changed it
	mtime    uint32
}

func (e *entry) clone() *entry {
	c := *e
	c.data = slices.Clone(e.data)
	if e.dir {
		c.children = make(map[string]*entry, len(e.children))
		for n, ch := range e.children {
			c.children[n] = ch.clone()
		}
	}
	return &c
}

// New makes a cluster whose nodes are named by opts.Nodes; nothing is
// mounted until Mount. Each node has nodes/<name>/ (with qemu-server/,
// lxc/ and priv/ in it), and the tree has priv/ and priv/lock/, as a
// fresh PVE cluster does.
func New(opts Options) (*Cluster, error) {
	if len(opts.Nodes) == 0 {
		return nil, errors.New("pmxcfstest: a cluster needs at least one node")
	}
	if opts.Name == "" {
		opts.Name = "pmxcfs-sim"
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = LockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	gid, err := wwwData()
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, gid: gid, start: opts.Now()}
	c.root = &entry{dir: true, children: map[string]*entry{}, mtime: c.now()}
	for i, name := range opts.Nodes {
		if !validNodeName(name) || slices.Contains(opts.Nodes[:i], name) {
			return nil, fmt.Errorf("pmxcfstest: node name %q: want a unique host name", name)
		}
		c.nodes = append(c.nodes, &Node{c: c, id: i + 1, name: name, quorate: true, locks: map[string]lockSeen{}})
	}
	for _, d := range []string{"priv", "priv/lock", "nodes"} {
		if _, err := c.mkdir(c.root, d, 0); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes {
		for _, d := range []string{"", "/qemu-server", "/lxc", "/priv"} {
			if _, err := c.mkdir(c.root, "nodes/"+n.name+d, 0); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// wwwData is the gid of the www-data group pmxcfs gives every file (33 on
// Debian when the group is missing).
func wwwData() (uint32, error) {
	g, err := user.LookupGroup("www-data")
	if err != nil {
		return 33, nil
	}
	id, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("pmxcfstest: www-data's gid %q: %w", g.Gid, err)
	}
	return uint32(id), nil
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

// GID is the group every file has (www-data's).
func (c *Cluster) GID() uint32 { return c.gid }

// Node returns the node of that name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// Close unmounts every node.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Unmount())
	}
	return errors.Join(errs...)
}

func (c *Cluster) now() uint32 { return uint32(c.opts.Now().Unix()) }

// lookup finds the entry at a clean relative path ("" is the root).
func lookup(root *entry, p string) *entry {
	e := root
	if p == "" {
		return e
	}
	for _, name := range strings.Split(p, "/") {
		if !e.dir {
			return nil
		}
		if e = e.children[name]; e == nil {
			return nil
		}
	}
	return e
}

// split is memdb's split_path: the parent's path and the last name.
func split(p string) (dir, base string) {
	dir, base = path.Split(p)
	return strings.TrimSuffix(dir, "/"), base
}

// badName is memdb's refusal of empty, "." and ".." names.
func badName(base string) bool { return base == "" || base == "." || base == ".." }

// bump is a change: memdb increments the root version and stamps the
// entry with it, the writer and the time.
func (c *Cluster) bump(e *entry, writer int) {
	c.version++
	c.root.version, c.root.mtime, c.root.writer = c.version, c.now(), writer
	e.version, e.mtime, e.writer = c.version, c.now(), writer
}

// mkdir is memdb_mkdir.
func (c *Cluster) mkdir(root *entry, p string, writer int) (*entry, error) {
	dir, base := split(p)
	parent := lookup(root, dir)
	switch {
	case parent == nil:
		return nil, errENOENT
	case !parent.dir:
		return nil, errENOTDIR
	case badName(base):
		return nil, errEACCES
	case parent.children[base] != nil:
		return nil, errEEXIST
	}
	e := &entry{name: base, dir: true, children: map[string]*entry{}}
	c.bump(e, writer)
	e.inode = c.version
	parent.children[base] = e
	return e, nil
}

// pwrite is memdb_pwrite: write count bytes at offset, truncating the
// rest when truncate is set; create makes a new, empty file and fails
// when one exists.
func (c *Cluster) pwrite(p string, writer int, data []byte, offset int64, truncate, create bool) (int, error) {
	if offset < 0 || offset+int64(len(data)) > MaxFileSize {
		return 0, errEFBIG
	}
	dir, base := split(p)
	parent := lookup(c.root, dir)
	switch {
	case parent == nil:
		return 0, errENOENT
	case !parent.dir:
		return 0, errENOTDIR
	case badName(base):
		return 0, errEACCES
	}
	e := parent.children[base]
	switch {
	case e != nil && e.dir:
		return 0, errENOTDIR
	case e != nil && create:
		return 0, errEEXIST
	case e == nil && !create:
		return 0, errENOENT
	case e == nil:
		e = &entry{name: base}
		c.bump(e, writer)
		e.inode = c.version
		parent.children[base] = e
		return 0, nil
	}
	end := offset + int64(len(data))
	size := int64(len(e.data))
	switch {
	case end > size:
		grown := make([]byte, end)
		copy(grown, e.data)
		e.data = grown
	case truncate:
		e.data = e.data[:end:end]
	}
	e.data = slices.Clone(e.data)
	copy(e.data[offset:], data)
	c.bump(e, writer)
	return len(data), nil
}

// remove is memdb_delete (unlink and rmdir).
func (c *Cluster) remove(p string) error {
	dir, base := split(p)
	parent := lookup(c.root, dir)
	if parent == nil || !parent.dir || parent.children[base] == nil {
		return errENOENT
	}
	if p == "" {
		return errEACCES
	}
	e := parent.children[base]
	if e.dir && len(e.children) > 0 {
		return errENOTEMPTY
	}
	delete(parent.children, base)
	c.version++
	c.root.version, c.root.mtime = c.version, c.now()
	if dir == "priv/lock" {
		for _, n := range c.nodes {
			delete(n.locks, p)
		}
	}
	return nil
}

// rename is memdb_rename.
func (c *Cluster) rename(from, to string, writer int) error {
	fdir, fbase := split(from)
	fparent := lookup(c.root, fdir)
	if fparent == nil || !fparent.dir || fparent.children[fbase] == nil {
		return errENOENT
	}
	if from == "" {
		return errEACCES
	}
	src := fparent.children[fbase]
	if src.dir && isLockDir(from) {
		return errEACCES
	}
	tdir, tbase := split(to)
	tparent := lookup(c.root, tdir)
	if tparent == nil {
		return errENOENT
	}
	if !tparent.dir {
		return errENOTDIR
	}
	if badName(tbase) {
		return errEACCES
	}
	if dst := tparent.children[tbase]; dst != nil {
		if dst == src {
			return nil
		}
		if dst.dir && len(dst.children) > 0 {
			return errENOTEMPTY
		}
	}
	// unlink_tree_entry: only empty directories can be renamed.
	if src.dir && len(src.children) > 0 {
		return errENOTEMPTY
	}
	delete(tparent.children, tbase)
	delete(fparent.children, fbase)
	src.name = tbase
	tparent.children[tbase] = src
	c.bump(src, writer)
	return nil
}

// isLockDir is path_is_lockdir: an entry of priv/lock.
func isLockDir(p string) bool {
	rest, ok := strings.CutPrefix(p, "priv/lock/")
	return ok && rest != ""
}

// isPrivate is path_is_private: priv/ and nodes/<node>/priv/.
func isPrivate(p string) bool {
	if p == "priv" || strings.HasPrefix(p, "priv/") {
		return true
	}
	rest, ok := strings.CutPrefix(p, "nodes/")
	if !ok {
		return false
	}
	_, sub, ok := strings.Cut(rest, "/")
	return ok && (sub == "priv" || strings.HasPrefix(sub, "priv/"))
}

// Files lists every regular file of the cluster's tree with its content:
// what the memdb holds, whatever any node sees.
func (c *Cluster) Files() map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]byte{}
	var walk func(prefix string, e *entry)
	walk = func(prefix string, e *entry) {
		for name, ch := range e.children {
			p := path.Join(prefix, name)
			if ch.dir {
				walk(p, ch)
			} else {
				out[p] = slices.Clone(ch.data)
			}
		}
	}
	walk("", c.root)
	return out
}

// Version is memdb's root version: it moves on every change anywhere.
func (c *Cluster) Version() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Mountpoint makes an empty directory for a node's mount under dir.
func Mountpoint(dir, node string) (string, error) {
	p := path.Join(dir, node, "etc-pve")
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", err
	}
	return p, nil
}
