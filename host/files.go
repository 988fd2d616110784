package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"golang.org/x/sys/unix"
)

// Entry is what a stat or a listing says of one file.
type Entry struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Type    string    `json:"type"` // file, directory, symlink, fifo, socket, character device, block device
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // the permission bits in octal, as chmod takes them: "0644"
	UID     uint32    `json:"uid"`
	GID     uint32    `json:"gid"`
	ModTime time.Time `json:"mtime"`
	// Target is a symbolic link's target, as written; never followed.
	Target string `json:"target,omitempty"`
}

func entryOf(name, p string, st *unix.Stat_t) Entry {
	return Entry{
		Name: name, Path: p, Type: typeName(st.Mode), Size: st.Size,
		Mode: fmt.Sprintf("%04o", st.Mode&0o7777), UID: st.Uid, GID: st.Gid,
		ModTime: time.Unix(st.Mtim.Unix()).UTC(),
	}
}

// Stat says what p is, without following it when it is a symbolic link.
func (t *Tree) Stat(p string) (Entry, error) {
	o, err := t.open("path", p, accessStat)
	if err != nil {
		return Entry{}, err
	}
	defer o.f.Close()
	e := entryOf(path.Base(o.path), o.path, &o.st)
	if o.st.Mode&unix.S_IFMT == unix.S_IFLNK {
		e.Target, _ = readlinkat(int(o.f.Fd()), "")
	}
	return e, nil
}

// Listing limits.
const (
	DefaultListLimit = 200
	MaxListLimit     = 1000
	maxDirEntries    = 1 << 20
)

// ListRequest asks for one page of a directory's entries, sorted by name.
type ListRequest struct {
	Path string `json:"path"`
	// After is the last name of the previous page ("" for the first).
	After string `json:"after,omitempty"`
	// Limit is the page's size: DefaultListLimit when 0, at most MaxListLimit.
	Limit int `json:"limit,omitempty"`
}

// Listing is one page of a directory.
type Listing struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
	Total   int     `json:"total"`
	// Next is After for the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// List pages through a directory. Entries are stat'ed without following
// links; a link's target is shown, never followed.
func (t *Tree) List(req ListRequest) (Listing, error) {
	limit, err := pageLimit("limit", req.Limit, DefaultListLimit, MaxListLimit)
	if err != nil {
		return Listing{}, err
	}
	if req.After != "" {
		if _, err := CleanName("after", req.After); err != nil {
			return Listing{}, err
		}
	}
	o, err := t.open("path", req.Path, accessRead)
	if err != nil {
		return Listing{}, err
	}
	defer o.f.Close()
	if o.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Listing{}, &PathError{Field: "path", Path: o.path, Rule: "is a file, not a directory; read it instead"}
	}
	names, err := o.f.Readdirnames(maxDirEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return Listing{}, fmt.Errorf("host: list %s: %w", o.path, err)
	}
	slices.Sort(names)
	out := Listing{Path: o.path, Total: len(names), Entries: []Entry{}}
	start, _ := slices.BinarySearch(names, req.After)
	if req.After != "" && start < len(names) && names[start] == req.After {
		start++
	}
	dirfd := int(o.f.Fd())
	for _, name := range names[start:] {
		if len(out.Entries) == limit {
			out.Next = out.Entries[len(out.Entries)-1].Name
			break
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed since the names were read
		}
		e := entryOf(name, path.Join(o.path, name), &st)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			e.Target, _ = readlinkat(dirfd, name)
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// Read limits.
const (
	DefaultReadLength = 64 << 10
	MaxReadLength     = 1 << 20
)

// ReadRequest asks for one page of a file.
type ReadRequest struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset,omitempty"`
	// Length is the page's size: DefaultReadLength when 0, at most
	// MaxReadLength.
	Length int `json:"length,omitempty"`
}

// Content is one page of a file.
type Content struct {
	Path string `json:"path"`
	// Size is the file's size when it was opened; SHA256 is the hash of
	// its first Size bytes, the same on every page while the file does
	// not change.
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	ModTime time.Time `json:"mtime"`
	Offset  int64     `json:"offset"`
	Length  int       `json:"length"`
	EOF     bool      `json:"eof"`
	// Encoding is "utf-8" when the page is text (valid UTF-8 without
	// NUL), else "base64". A text page never ends inside a character:
	// it may be up to three bytes shorter than asked.
	Encoding string `json:"encoding"`
	Data     string `json:"data"`
}

// Read returns one page of a regular file, with the file's size and
// SHA-256.
func (t *Tree) Read(req ReadRequest) (Content, error) {
	length, err := pageLimit("length", req.Length, DefaultReadLength, MaxReadLength)
	if err != nil {
		return Content{}, err
	}
	if req.Offset < 0 {
		return Content{}, fmt.Errorf("offset %d: must be 0 or more", req.Offset)
	}
	o, err := t.open("path", req.Path, accessRead)
	if err != nil {
		return Content{}, err
	}
	defer o.f.Close()
	if o.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Content{}, &PathError{Field: "path", Path: o.path, Rule: "is a directory, not a file; list it instead"}
	}
	size := o.st.Size
	if req.Offset > size {
		return Content{}, fmt.Errorf("offset %d: is past the end of %s (%d bytes)", req.Offset, o.path, size)
	}
	sum, err := t.sums.of(o)
	if err != nil {
		return Content{}, err
	}
	n := min(int64(length), size-req.Offset)
	buf := make([]byte, n)
	got, err := o.f.ReadAt(buf, req.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return Content{}, fmt.Errorf("host: read %s: %w", o.path, err)
	}
	buf = buf[:got]
	c := Content{Path: o.path, Size: size, SHA256: sum, ModTime: time.Unix(o.st.Mtim.Unix()).UTC(), Offset: req.Offset}
	eof := req.Offset+int64(len(buf)) >= size
	if text, ok := textPage(buf, eof); ok {
		buf = text
		c.Encoding, c.Data = "utf-8", string(text)
	} else {
		c.Encoding, c.Data = "base64", base64.StdEncoding.EncodeToString(buf)
	}
	c.Length = len(buf)
	c.EOF = req.Offset+int64(len(buf)) >= size
	return c, nil
}

// textPage is buf as text when it is, trimmed of a character cut at its
// end when the file goes on.
func textPage(buf []byte, eof bool) ([]byte, bool) {
	if bytes.IndexByte(buf, 0) >= 0 {
		return nil, false
	}
	if utf8.Valid(buf) {
		return buf, true
	}
	if eof {
		return nil, false
	}
	for cut := 1; cut <= utf8.UTFMax-1 && cut < len(buf); cut++ {
		if utf8.Valid(buf[:len(buf)-cut]) && !utf8.FullRune(buf[len(buf)-cut:]) {
			return buf[:len(buf)-cut], true
		}
	}
	return nil, false
}

func pageLimit(field string, n, def, max int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 0 || n > max:
		return 0, fmt.Errorf("%s %d: must be between 1 and %d", field, n, max)
	}
	return n, nil
}

// sumCache remembers the SHA-256 of files by identity and version, so a
// paged read hashes the file once, not once per page.
type sumCache struct {
	mu sync.Mutex
	m  map[sumKey]string
}

type sumKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

const sumCacheSize = 64

func (c *sumCache) of(o *opened) (string, error) {
	k := sumKey{o.st.Dev, o.st.Ino, o.st.Size, o.st.Mtim.Nano(), o.st.Ctim.Nano()}
	c.mu.Lock()
	sum, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return sum, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(o.f, 0, o.st.Size)); err != nil {
		return "", fmt.Errorf("host: hash %s: %w", o.path, err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	if c.m == nil || len(c.m) >= sumCacheSize {
		c.m = make(map[sumKey]string, sumCacheSize)
	}
	c.m[k] = sum
	c.mu.Unlock()
	return sum, nil
}

// MaxWriteSize bounds a whole write.
const MaxWriteSize = 8 << 20

// WriteRequest replaces or creates a regular file atomically.
type WriteRequest struct {
	Path string `json:"path"`
	Data []byte `json:"-"`
	// SHA256 is the hash of Data, checked before anything is written.
	SHA256 string `json:"sha256"`
	// IfSHA256 makes the write conditional: the file's current content
	// must have this hash ("" for no condition).
	IfSHA256 string `json:"if_sha256,omitempty"`
	// Create: "" writes either way, "new" only when the file does not
	// exist, "existing" only when it does.
	Create string `json:"create,omitempty"`
	// Mode, UID and GID default to the replaced file's, or 0644 and
	// root for a new file.
	Mode *uint32 `json:"mode,omitempty"`
	UID  *int    `json:"uid,omitempty"`
	GID  *int    `json:"gid,omitempty"`
	// Size, when set, makes this one chunk of a chunked write: the whole
	// file's size, SHA256 the whole file's hash, and Data the chunk at
	// Offset (upload.go).
	Size   int64 `json:"size,omitempty"`
	Offset int64 `json:"offset,omitempty"`
}

// Written is what a write did: evidence of the change.
type Written struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Created bool   `json:"created"`
	// Previous is the replaced content's hash (empty when created).
	Previous string `json:"previous_sha256,omitempty"`
	Mode     string `json:"mode"`
	UID      int    `json:"uid"`
	GID      int    `json:"gid"`
}

// ErrConflict is a conditional write whose condition no longer holds.
var ErrConflict = errors.New("conflict")

// Write writes a whole file: to a temporary file in the same directory,
// given its mode and owner through its descriptor, fsynced and renamed
// over the target, which is never followed when it is a link (a link, a
// directory or a file with other hard links at the target is refused).
func (t *Tree) Write(req WriteRequest) (Written, error) {
	p, err := CleanPath("path", req.Path)
	if err != nil {
		return Written{}, err
	}
	if p == "/" {
		return Written{}, &PathError{Field: "path", Path: p, Rule: "names a directory"}
	}
	if err := checkWrite(req); err != nil {
		return Written{}, err
	}
	if what := t.refusedName(p); what != "" {
		return Written{}, fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: "path", Path: p, Rule: fmt.Sprintf("is refused whatever the policy (%s holds this install's or the host's secrets)", what)})
	}
	parent, name := path.Dir(p), path.Base(p)
	o, err := t.open("path", parent, accessWrite)
	if err != nil {
		return Written{}, err
	}
	defer o.f.Close()
	w, mode, uid, gid, err := target(int(o.f.Fd()), p, name, req)
	if err != nil {
		return Written{}, err
	}
	w.Size = int64(len(req.Data))
	d, err := atomicfile.FromFile(o.f)
	if err != nil {
		return Written{}, fmt.Errorf("host: write %s: %w", p, err)
	}
	defer d.Close()
	chown := func(f *os.File) error { return f.Chown(uid, gid) }
	if err := d.WriteFileFunc(name, req.Data, fs.FileMode(mode&0o777), chown); err != nil {
		return Written{}, fmt.Errorf("host: %w", err)
	}
	return w, nil
}

// target checks the conditions of a write on what is at name now (never
// followed) and says what the write will be: created or replacing which
// content, with which mode and owner.
func target(dirfd int, p, name string, req WriteRequest) (w Written, mode uint32, uid, gid int, err error) {
	w = Written{Path: p, SHA256: req.SHA256}
	mode = 0o644
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		if req.Create == "existing" {
			return w, 0, 0, 0, fmt.Errorf("%w: %s does not exist (create is \"existing\")", ErrConflict, p)
		}
		if req.IfSHA256 != "" {
			return w, 0, 0, 0, fmt.Errorf("%w: %s does not exist, so its content is not %s (if_sha256)", ErrConflict, p, req.IfSHA256)
		}
		w.Created = true
	case err != nil:
		return w, 0, 0, 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	default:
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return w, 0, 0, 0, &PathError{Field: "path", Path: p, Rule: fmt.Sprintf("is a %s; only regular files are written (a link is never written through)", typeName(st.Mode))}
		}
		if st.Nlink > 1 {
			return w, 0, 0, 0, &PathError{Field: "path", Path: p, Rule: fmt.Sprintf("has %d hard links; a file with other names is not replaced", st.Nlink)}
		}
		if req.Create == "new" {
			return w, 0, 0, 0, fmt.Errorf("%w: %s exists (create is \"new\")", ErrConflict, p)
		}
		prev, err := hashAt(dirfd, name, p)
		if err != nil {
			return w, 0, 0, 0, err
		}
		if req.IfSHA256 != "" && prev != req.IfSHA256 {
			return w, 0, 0, 0, fmt.Errorf("%w: %s has changed: its content is %s, not %s (if_sha256)", ErrConflict, p, prev, req.IfSHA256)
		}
		w.Previous = prev
		mode, uid, gid = st.Mode&0o7777, int(st.Uid), int(st.Gid)
	}
	if req.Mode != nil {
		mode = *req.Mode
	}
	if req.UID != nil {
		uid = *req.UID
	}
	if req.GID != nil {
		gid = *req.GID
	}
	w.Mode, w.UID, w.GID = fmt.Sprintf("%04o", mode&0o777), uid, gid
	return w, mode, uid, gid, nil
}

// commit puts a checked staging file in place of name: the conditions of
// the write checked on what is there now, the staging file given its
// owner and mode, fsynced and renamed over name, the directory fsynced.
func (t *Tree) commit(dirfd int, p, name, staging string, f *os.File, req WriteRequest) (Written, error) {
	w, mode, uid, gid, err := target(dirfd, p, name, req)
	if err != nil {
		return Written{}, err
	}
	w.Size = req.Size
	if err := f.Chown(uid, gid); err != nil {
		return Written{}, fmt.Errorf("host: %s: %w", p, err)
	}
	if err := f.Chmod(fs.FileMode(mode & 0o777)); err != nil {
		return Written{}, fmt.Errorf("host: %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return Written{}, fmt.Errorf("host: fsync %s: %w", p, err)
	}
	if err := unix.Renameat(dirfd, staging, dirfd, name); err != nil {
		return Written{}, &fs.PathError{Op: "rename", Path: p, Err: err}
	}
	if err := unix.Fsync(dirfd); err != nil {
		return Written{}, &fs.PathError{Op: "fsync", Path: path.Dir(p), Err: err}
	}
	return w, nil
}

func checkWrite(req WriteRequest) error {
	if len(req.Data) > MaxWriteSize {
		return fmt.Errorf("data: %d bytes; at most %d are written at once (write a bigger file in chunks: offset and size)", len(req.Data), MaxWriteSize)
	}
	if err := checkWriteMeta(req); err != nil {
		return err
	}
	sum := sha256.Sum256(req.Data)
	if got := hex.EncodeToString(sum[:]); got != req.SHA256 {
		return fmt.Errorf("sha256: the data's SHA-256 is %s, not %s: the content was changed or cut on the way", got, req.SHA256)
	}
	return nil
}

// checkWriteMeta checks what a write says besides its data.
func checkWriteMeta(req WriteRequest) error {
	switch {
	case !isSHA256(req.SHA256):
		return fmt.Errorf("sha256 %q: must be the 64 lower-case hex digits of the data's SHA-256", req.SHA256)
	case req.IfSHA256 != "" && !isSHA256(req.IfSHA256):
		return fmt.Errorf("if_sha256 %q: must be 64 lower-case hex digits", req.IfSHA256)
	case req.Create != "" && req.Create != "new" && req.Create != "existing":
		return fmt.Errorf("create %q: must be \"new\", \"existing\" or empty", req.Create)
	case req.Mode != nil && *req.Mode&^0o777 != 0:
		return fmt.Errorf("mode %04o: only permission bits (0 to 0777) are set; setuid, setgid and sticky bits are refused", *req.Mode)
	case req.UID != nil && (*req.UID < 0 || *req.UID > 1<<31-2):
		return fmt.Errorf("uid %d: out of range", *req.UID)
	case req.GID != nil && (*req.GID < 0 || *req.GID > 1<<31-2):
		return fmt.Errorf("gid %d: out of range", *req.GID)
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// hashAt hashes a regular file of a directory, never following a link.
func hashAt(dirfd int, name, p string) (string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("host: hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readlinkat reads a link; name "" reads the link an O_PATH descriptor
// names.
func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= maxPath+1 {
			return string(buf[:n]), nil
		}
		buf = make([]byte, len(buf)*4)
	}
}
