package pmxcfstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/fuse/nodefs"
	"github.com/hanwen/go-fuse/v2/fuse/pathfs"
)

// The errors memdb answers with.
var (
	errENOENT    error = syscall.ENOENT
	errENOTDIR   error = syscall.ENOTDIR
	errEEXIST    error = syscall.EEXIST
	errEACCES    error = syscall.EACCES
	errEFBIG     error = syscall.EFBIG
	errENOTEMPTY error = syscall.ENOTEMPTY
)

// status turns memdb's error into FUSE's.
func status(err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	if errno, ok := err.(syscall.Errno); ok {
		return fuse.Status(errno)
	}
	return fuse.EIO
}

// Node is one node's pmxcfs: its view of the cluster's tree, its quorum
// and its mount.
type Node struct {
	c    *Cluster
	id   int
	name string

	// Guarded by c.mu.
	quorate bool
	frozen  *entry // the tree as it was when quorum went
	locks   map[string]lockSeen
	dir     string
	server  *fuse.Server
}

// lockSeen is memdb_lock_info: when this node first saw a lock in its
// present state (pmxcfs ages locks by each node's own clock, not by the
// mtime in the tree).
type lockSeen struct {
	since   time.Time
	version uint64
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Dir is where the node's pmxcfs is mounted ("" before Mount).
func (n *Node) Dir() string {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.dir
}

// Mount mounts the node's pmxcfs at dir, an empty directory, as pmxcfs
// mounts /etc/pve (default_permissions, allow_other). It needs root and
// /dev/fuse.
func (n *Node) Mount(dir string) error {
	n.c.mu.Lock()
	if n.server != nil {
		n.c.mu.Unlock()
		return fmt.Errorf("pmxcfstest: node %s is already mounted at %s", n.name, n.dir)
	}
	n.c.mu.Unlock()
	pfs := pathfs.NewPathNodeFs(&nodeFS{FileSystem: pathfs.NewDefaultFileSystem(), n: n}, &pathfs.PathNodeFsOptions{})
	conn := nodefs.NewFileSystemConnector(pfs.Root(), &nodefs.Options{
		// libfuse's defaults, which pmxcfs keeps.
		EntryTimeout: time.Second, AttrTimeout: time.Second,
		Owner: &fuse.Owner{Uid: 0, Gid: n.c.gid},
	})
	srv, err := fuse.NewServer(rawFS{RawFileSystem: conn.RawFS(), entries: new(sync.Mutex)}, dir, &fuse.MountOptions{
		AllowOther: true, Options: []string{"default_permissions"},
		FsName: "/dev/fuse", Name: "pmxcfs", DirectMount: true,
		DisableXAttrs: true, MaxWrite: 128 << 10,
	})
	if err != nil {
		return fmt.Errorf("pmxcfstest: mount node %s at %s: %w", n.name, dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount() //nolint:errcheck // the mount failed already
		return fmt.Errorf("pmxcfstest: mount node %s at %s: %w", n.name, dir, err)
	}
	n.c.mu.Lock()
	n.dir, n.server = dir, srv
	n.c.mu.Unlock()
	return nil
}

// Available says why FUSE mounts cannot be made here, or nil: they need
// root and /dev/fuse.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("pmxcfstest: mounting FUSE needs root (euid %d)", os.Geteuid())
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("pmxcfstest: %w", err)
	}
	return f.Close()
}

// Unmount unmounts the node's pmxcfs (a node whose pmxcfs stopped); the
// cluster's tree stays. An unmounted node is not online.
func (n *Node) Unmount() error {
	n.c.mu.Lock()
	srv := n.server
	n.server = nil
	n.c.mu.Unlock()
	if srv == nil {
		return nil
	}
	var err error
	for range 50 {
		if err = srv.Unmount(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // busy: a process still has it open
	}
	return fmt.Errorf("pmxcfstest: unmount node %s: %w", n.name, err)
}

// SetQuorate gives the node quorum or takes it away. Without quorum the
// node keeps reading the tree as it was at that moment and every change
// through it fails with EACCES; with quorum back it sees the cluster's
// tree again, as pmxcfs does after its state transfer.
func (n *Node) SetQuorate(q bool) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if q == n.quorate {
		return
	}
	n.quorate = q
	if q {
		n.frozen = nil
	} else {
		n.frozen = n.c.root.clone()
	}
}

// Quorate reports whether the node has quorum.
func (n *Node) Quorate() bool {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.quorate
}

// view is the tree the node reads. c.mu is held.
func (n *Node) view() *entry {
	if n.frozen != nil {
		return n.frozen
	}
	return n.c.root
}

// rawFS is the kernel interface of one node: renameat2's flags are
// refused as libfuse 2 refuses them (the kernel then answers EINVAL).
//
// The kernel's FORGET of an inode also runs one at a time with every
// request that makes a directory entry. go-fuse's nodefs serializes
// FORGET only with LOOKUP, and a forgotten inode leaves its parent by
// name: a lock directory that expired and went (inside pmxcfs, not by an
// rmdir through the kernel) and was made again at once lost its new entry
// to the old inode's FORGET, so the mkdir made the lock and answered
// ENOENT, and the retry found it held (TestLocks, about 1 run in 25).
type rawFS struct {
	fuse.RawFileSystem
	entries *sync.Mutex
}

func (r rawFS) Forget(nodeID, nlookup uint64) {
	r.entries.Lock()
	defer r.entries.Unlock()
	r.RawFileSystem.Forget(nodeID, nlookup)
}

func (r rawFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	r.entries.Lock()
	defer r.entries.Unlock()
	return r.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (r rawFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	r.entries.Lock()
	defer r.entries.Unlock()
	return r.RawFileSystem.Mknod(cancel, in, name, out)
}

func (r rawFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	r.entries.Lock()
	defer r.entries.Unlock()
	return r.RawFileSystem.Create(cancel, in, name, out)
}

func (r rawFS) Symlink(cancel <-chan struct{}, header *fuse.InHeader, pointedTo, linkName string, out *fuse.EntryOut) fuse.Status {
	r.entries.Lock()
	defer r.entries.Unlock()
	return r.RawFileSystem.Symlink(cancel, header, pointedTo, linkName, out)
}

func (r rawFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	r.entries.Lock()
	defer r.entries.Unlock()
	return r.RawFileSystem.Link(cancel, in, name, out)
}

func (r rawFS) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if in.Flags != 0 {
		return fuse.ENOSYS
	}
	r.entries.Lock()
	defer r.entries.Unlock()
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

// nodeFS is one node's pmxcfs as the FUSE layer sees it: pmxcfs.c's
// cfs_fuse_* over the memdb and the plugins.
type nodeFS struct {
	pathfs.FileSystem
	n *Node
}

// The plugins of the root directory (pmxcfs.c create_symlinks).
var (
	links     = []string{"local", "qemu-server", "openvz", "lxc"}
	funcFiles = []string{".version", ".members", ".vmlist", ".clusterlog", ".rrd"}
)

func (f *nodeFS) linkTarget(name string) string {
	if name == "local" {
		return "nodes/" + f.n.name
	}
	return "nodes/" + f.n.name + "/" + name
}

// GetAttr is cfs_fuse_getattr over tree_entry_stat and the plugins'.
func (f *nodeFS) GetAttr(name string, _ *fuse.Context) (*fuse.Attr, fuse.Status) {
	c := f.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	q := f.n.quorate
	a := &fuse.Attr{Owner: fuse.Owner{Uid: 0, Gid: c.gid}}
	switch {
	case slices.Contains(links, name):
		a.Mode = syscall.S_IFLNK | 0o777
		if !q {
			a.Mode = syscall.S_IFLNK | 0o555
		}
		a.Size, a.Nlink = uint64(len(f.linkTarget(name))), 1
		a.Mode &= 0o777755 | syscall.S_IFMT
		return a, fuse.OK
	case slices.Contains(funcFiles, name):
		a.Mode, a.Nlink = syscall.S_IFREG|0o440, 1
		a.Size = uint64(len(f.funcFile(name)))
		return a, fuse.OK
	}
	e := lookup(f.n.view(), name)
	if e == nil {
		return nil, fuse.ENOENT
	}
	if e.dir {
		a.Mode, a.Nlink = syscall.S_IFDIR|0o777, 2
		if !q {
			a.Mode = syscall.S_IFDIR | 0o555
		}
	} else {
		a.Mode, a.Nlink = syscall.S_IFREG|0o666, 1
		if !q {
			a.Mode = syscall.S_IFREG | 0o444
		}
	}
	switch {
	case isPrivate(name):
		a.Mode &= syscall.S_IFMT | 0o700
	case e.dir:
		a.Mode &= syscall.S_IFMT | 0o755
	default:
		a.Mode &= syscall.S_IFMT | 0o750
	}
	a.Size = uint64(len(e.data))
	a.Blocks = (a.Size + 4095) / 4096
	a.Atime, a.Mtime, a.Ctime = uint64(e.mtime), uint64(e.mtime), uint64(e.mtime)
	return a, fuse.OK
}

// OpenDir is cfs_fuse_readdir.
func (f *nodeFS) OpenDir(name string, _ *fuse.Context) ([]fuse.DirEntry, fuse.Status) {
	c := f.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	e := lookup(f.n.view(), name)
	if e == nil {
		return nil, fuse.ENOENT
	}
	if !e.dir {
		return nil, fuse.Status(syscall.ENOTDIR)
	}
	var out []fuse.DirEntry
	for n, ch := range e.children {
		mode := uint32(syscall.S_IFREG)
		if ch.dir {
			mode = syscall.S_IFDIR
		}
		out = append(out, fuse.DirEntry{Name: n, Mode: mode})
	}
	if name == "" {
		for _, l := range links {
			out = append(out, fuse.DirEntry{Name: l, Mode: syscall.S_IFLNK})
		}
		for _, ff := range funcFiles {
			out = append(out, fuse.DirEntry{Name: ff, Mode: syscall.S_IFREG})
		}
	}
	return out, fuse.OK
}

// Readlink serves the link plugins.
func (f *nodeFS) Readlink(name string, _ *fuse.Context) (string, fuse.Status) {
	if !slices.Contains(links, name) {
		return "", fuse.EINVAL
	}
	return f.linkTarget(name), fuse.OK
}

// write runs a change of the tree, refused without quorum (dcdb.c
// dcdb_send_fuse_message: EACCES when not quorate). A plugin's name is
// refused too: the plugins are not memdb entries.
func (f *nodeFS) write(name string, fn func(c *Cluster) error) fuse.Status {
	c := f.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !f.n.quorate {
		return fuse.EACCES
	}
	if slices.Contains(links, name) || slices.Contains(funcFiles, name) {
		return fuse.EACCES
	}
	return status(fn(c))
}

func (f *nodeFS) Mkdir(name string, _ uint32, _ *fuse.Context) fuse.Status {
	return f.write(name, func(c *Cluster) error {
		e, err := c.mkdir(c.root, name, f.n.id)
		if err == nil && isLockDir(name) && !strings.Contains(strings.TrimPrefix(name, "priv/lock/"), "/") {
			for _, n := range c.nodes {
				n.locks[name] = lockSeen{since: c.opts.Now(), version: e.version}
			}
		}
		return err
	})
}

func (f *nodeFS) Rmdir(name string, _ *fuse.Context) fuse.Status {
	return f.write(name, func(c *Cluster) error {
		if e := lookup(c.root, name); e != nil && !e.dir {
			return errENOTDIR
		}
		return c.remove(name)
	})
}

func (f *nodeFS) Unlink(name string, _ *fuse.Context) fuse.Status {
	return f.write(name, func(c *Cluster) error { return c.remove(name) })
}

func (f *nodeFS) Rename(from, to string, _ *fuse.Context) fuse.Status {
	if slices.Contains(links, to) || slices.Contains(funcFiles, to) {
		return fuse.EACCES // another plugin: cfs_fuse_rename refuses
	}
	return f.write(from, func(c *Cluster) error { return c.rename(from, to, f.n.id) })
}

// Chmod is cfs_fuse_chmod: only the mode the path has (0600 under priv,
// 0640 elsewhere) is accepted, and nothing changes.
func (f *nodeFS) Chmod(name string, mode uint32, _ *fuse.Context) fuse.Status {
	allowed := uint32(0o600)
	if !isPrivate(name) {
		allowed |= 0o040
	}
	if mode&0o7777 == allowed {
		return fuse.OK
	}
	return fuse.EPERM
}

// Chown is cfs_fuse_chown: only root and www-data (or "no change").
func (f *nodeFS) Chown(name string, uid, gid uint32, _ *fuse.Context) fuse.Status {
	const unchanged = ^uint32(0)
	if (uid == 0 || uid == unchanged) && (gid == f.n.c.gid || gid == unchanged) {
		return fuse.OK
	}
	return fuse.EPERM
}

func (f *nodeFS) Truncate(name string, size uint64, _ *fuse.Context) fuse.Status {
	return f.write(name, func(c *Cluster) error {
		_, err := c.pwrite(name, f.n.id, nil, int64(size), true, false)
		return err
	})
}

// Utimens is cfs_plug_memdb_utimens: on a lock directory, mtime 0 asks
// for the lock to be removed once it expired; otherwise memdb_mtime, which
// lets only the lock's own node move a lock's time, and only forward.
func (f *nodeFS) Utimens(name string, _, mtime *time.Time, _ *fuse.Context) fuse.Status {
	var mt uint32
	if mtime != nil {
		mt = uint32(mtime.Unix())
	}
	return f.write(name, func(c *Cluster) error {
		e := lookup(c.root, name)
		if e == nil {
			return errENOENT
		}
		lock := e.dir && isLockDir(name)
		if lock && mt == 0 {
			// The unlock request (dcdb_send_unlock): the member with the
			// lowest node id removes the lock when it has seen it
			// unchanged past the timeout (dcdb.c, dfsm_lowest_nodeid and
			// memdb_lock_expired). Then, as pmxcfs does, the time itself
			// is set (memdb_mtime), which a lock refuses (0 is older than
			// its mtime), or which finds the lock gone.
			judge := f.n
			for _, n := range c.nodes {
				if n.quorate {
					judge = n
					break
				}
			}
			seen, ok := judge.locks[name]
			now := c.opts.Now()
			switch {
			case !ok || seen.version != e.version:
				// "wrong lock csum - reset timeout"
				judge.locks[name] = lockSeen{since: now, version: e.version}
			case now.Sub(seen.since) > c.opts.LockTimeout:
				if err := c.remove(name); err != nil {
					return err
				}
				return errENOENT
			}
			return errEACCES
		}
		if lock && (mt < e.mtime || e.writer != f.n.id) {
			return errEACCES
		}
		c.version++
		c.root.version = c.version
		e.version, e.mtime, e.writer = c.version, mt, f.n.id
		if lock {
			for _, n := range c.nodes {
				n.locks[name] = lockSeen{since: c.opts.Now(), version: e.version}
			}
		}
		return nil
	})
}

// Open is cfs_fuse_open: the file must exist; reads and writes go to the
// memdb at once (direct_io).
func (f *nodeFS) Open(name string, flags uint32, _ *fuse.Context) (nodefs.File, fuse.Status) {
	c := f.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Contains(funcFiles, name) {
		return &nodefs.WithFlags{File: nodefs.NewDataFile([]byte(f.funcFile(name))), FuseFlags: fuse.FOPEN_DIRECT_IO}, fuse.OK
	}
	e := lookup(f.n.view(), name)
	if e == nil {
		return nil, fuse.ENOENT
	}
	if e.dir {
		return nil, fuse.Status(syscall.EISDIR)
	}
	return &nodefs.WithFlags{File: &file{File: nodefs.NewDefaultFile(), fs: f, name: name}, FuseFlags: fuse.FOPEN_DIRECT_IO}, fuse.OK
}

// Create is cfs_fuse_create: memdb_create, which fails when the file
// exists (so O_EXCL holds across nodes).
func (f *nodeFS) Create(name string, flags uint32, _ uint32, _ *fuse.Context) (nodefs.File, fuse.Status) {
	st := f.write(name, func(c *Cluster) error {
		_, err := c.pwrite(name, f.n.id, nil, 0, false, true)
		return err
	})
	if !st.Ok() {
		return nil, st
	}
	return &nodefs.WithFlags{File: &file{File: nodefs.NewDefaultFile(), fs: f, name: name}, FuseFlags: fuse.FOPEN_DIRECT_IO}, fuse.OK
}

func (f *nodeFS) StatFs(string) *fuse.StatfsOut {
	return &fuse.StatfsOut{Bsize: 4096, Blocks: 128 << 20 / 4096, Bfree: 64 << 20 / 4096, Bavail: 64 << 20 / 4096, Files: 256 << 10, Ffree: 128 << 10, NameLen: 255}
}

// file is an open memdb file: each read and write goes by path, as
// pmxcfs's do.
type file struct {
	nodefs.File
	fs   *nodeFS
	name string
}

func (h *file) Read(dest []byte, off int64) (fuse.ReadResult, fuse.Status) {
	c := h.fs.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	e := lookup(h.fs.n.view(), h.name)
	if e == nil || e.dir {
		return nil, fuse.ENOENT
	}
	if off >= int64(len(e.data)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	n := copy(dest, e.data[off:])
	return fuse.ReadResultData(dest[:n]), fuse.OK
}

func (h *file) Write(data []byte, off int64) (uint32, fuse.Status) {
	var n int
	st := h.fs.write(h.name, func(c *Cluster) error {
		var err error
		n, err = c.pwrite(h.name, h.fs.n.id, data, off, false, false)
		return err
	})
	return uint32(n), st
}

func (h *file) Truncate(size uint64) fuse.Status { return h.fs.Truncate(h.name, size, nil) }

// Flush and Release do nothing; Fsync is not implemented, as in pmxcfs
// (the kernel then treats fsync as done).
func (h *file) Flush() fuse.Status { return fuse.OK }

// funcFile is the content of a function plugin for this node. c.mu is
// held.
func (f *nodeFS) funcFile(name string) string {
	c := f.n.c
	switch name {
	case ".members":
		return f.members()
	case ".version":
		// status.c cfs_create_version_msg: start time, change counters of
		// the observed configuration files (none of ours), kvstore.
		return fmt.Sprintf("{\n\"starttime\": %d,\n\"clinfo\": 1,\n\"vmlist\": 1,\n\"corosync.conf\": 1,\n\"user.cfg\": 1,\n\"storage.cfg\": 1,\n\"kvstore\": {\n}\n}\n", c.start.Unix())
	case ".vmlist":
		return "{\n\"version\": 1,\n\"ids\": {\n}\n}\n"
	}
	return ""
}

// members is status.c cfs_create_memberlist_msg as the node sees the
// cluster: a quorate node sees every mounted, quorate node online; a node
// without quorum sees only itself.
func (f *nodeFS) members() string {
	c := f.n.c
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\"nodename\": %q,\n\"version\": %d,\n", f.n.name, len(c.nodes)+1)
	fmt.Fprintf(&b, "\"cluster\": { \"name\": %q, \"version\": 1, \"nodes\": %d, \"quorate\": %d },\n", c.opts.Name, len(c.nodes), boolInt(f.n.quorate))
	b.WriteString("\"nodelist\": {\n")
	for i, n := range c.nodes {
		online := n == f.n || f.n.quorate && n.quorate && n.server != nil
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "  %q: { \"id\": %d, \"online\": %d, \"ip\": \"192.0.2.%d\"}", n.name, n.id, boolInt(online), n.id)
	}
	b.WriteString("\n  }\n}\n")
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Members is the parsed .members of a node, for tests that check it.
type Members struct {
	NodeName string `json:"nodename"`
	Cluster  struct {
		Name    string `json:"name"`
		Quorate int    `json:"quorate"`
	} `json:"cluster"`
	NodeList map[string]struct {
		ID     int `json:"id"`
		Online int `json:"online"`
	} `json:"nodelist"`
}

// ReadMembers reads and parses a mounted node's .members.
func ReadMembers(mount string) (Members, error) {
	var m Members
	b, err := os.ReadFile(path.Join(mount, ".members"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}
