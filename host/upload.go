package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Chunked writes: a file larger than one request (MaxWriteSize) is
// written in chunks, in order, each a request of its own with the whole
// file's size and SHA-256. The chunks go into a staging file beside the
// target (".pmcp-upload-<id>", root's, 0600, one name), which the last
// chunk checks against the SHA-256, gives its mode and owner, fsyncs and
// renames over the target under the same conditions as a whole write.
// The id is derived from the caller's key, the path, the size and the
// hash, so the same upload resumes after a lost answer or a restart of
// the helper, and no other caller's chunks reach it.

// MaxUploadSize bounds a file written in chunks.
const MaxUploadSize = 16 << 30

// stagingPrefix names the staging files; staleUpload is when one left
// behind is removed.
const (
	stagingPrefix = ".pmcp-upload-"
	staleUpload   = 24 * time.Hour
)

// Staged is what a chunk that is not the last did.
type Staged struct {
	Path string `json:"path"`
	// Staged is how many bytes of Size are in place: the next chunk's
	// offset.
	Staged int64 `json:"staged"`
	Size   int64 `json:"size"`
}

// UploadID is the staging id of an upload by the key keyID.
func UploadID(keyID string, req WriteRequest) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s", keyID, req.Path, req.Size, req.SHA256)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// checkChunk holds a chunk to the rules of a chunked write.
func checkChunk(req WriteRequest) error {
	switch {
	case req.Size < 1 || req.Size > MaxUploadSize:
		return &PathError{Field: "size", Rule: fmt.Sprintf("%d: a chunked write's whole size must be 1 to %d bytes", req.Size, int64(MaxUploadSize))}
	case req.Offset < 0 || req.Offset >= req.Size:
		return &PathError{Field: "offset", Rule: fmt.Sprintf("%d: must be 0 to size-1 (%d)", req.Offset, req.Size-1)}
	case len(req.Data) == 0:
		return &PathError{Field: "content", Rule: "a chunk must hold at least one byte"}
	case len(req.Data) > MaxWriteSize:
		return &PathError{Field: "content", Rule: fmt.Sprintf("a chunk is %d bytes; at most %d", len(req.Data), MaxWriteSize)}
	case req.Offset+int64(len(req.Data)) > req.Size:
		return &PathError{Field: "content", Rule: fmt.Sprintf("the chunk at %d of %d bytes ends past size %d", req.Offset, len(req.Data), req.Size)}
	}
	return nil
}

// WriteChunk writes one chunk of a chunked write (req.Size set) into the
// staging file of id, and when it is the last, checks and puts the file
// in place. It answers Staged, or Written for the last chunk.
func (t *Tree) WriteChunk(req WriteRequest, id string) (any, error) {
	p, err := CleanPath("path", req.Path)
	if err != nil {
		return nil, err
	}
	if p == "/" {
		return nil, &PathError{Field: "path", Path: p, Rule: "names a directory"}
	}
	if err := checkChunk(req); err != nil {
		return nil, err
	}
	meta := req
	meta.Data = nil
	if err := checkWriteMeta(meta); err != nil {
		return nil, err
	}
	if what := t.refusedName(p); what != "" {
		return nil, fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: "path", Path: p, Rule: fmt.Sprintf("is refused whatever the policy (%s holds this install's or the host's secrets)", what)})
	}
	o, err := t.open("path", path.Dir(p), accessWrite)
	if err != nil {
		return nil, err
	}
	defer o.f.Close()
	dirfd := int(o.f.Fd())
	name := stagingPrefix + id
	if req.Offset == 0 {
		removeStale(dirfd, time.Now())
	}
	f, err := openStaging(dirfd, name, p, req.Offset)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.WriteAt(req.Data, req.Offset); err != nil {
		return nil, fmt.Errorf("host: stage %s: %w", p, err)
	}
	end := req.Offset + int64(len(req.Data))
	if end < req.Size {
		return Staged{Path: p, Staged: end, Size: req.Size}, nil
	}
	// The last chunk: the whole file must be what the caller hashed.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("host: hash the staged %s: %w", p, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != req.SHA256 {
		unix.Unlinkat(dirfd, name, 0) //nolint:errcheck // the upload is void either way
		return nil, &PathError{Field: "sha256", Rule: fmt.Sprintf("the %d bytes written hash to %s, not %s: the upload was removed; write it again from offset 0", req.Size, got, req.SHA256)}
	}
	w, err := t.commit(dirfd, p, path.Base(p), name, f, req)
	if err != nil {
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
		unix.Unlinkat(dirfd, name, 0) //nolint:errcheck // a conflict voids the upload
		return nil, err
	}
	return w, nil
}

// openStaging opens the staging file for a chunk at offset: made afresh
// for offset 0, else the one there, which must be root's regular file of
// one name, as long as offset (chunks come in order; a chunk the staging
// file already holds is written again, for a retry).
func openStaging(dirfd int, name, p string, offset int64) (*os.File, error) {
	if offset == 0 {
		unix.Unlinkat(dirfd, name, 0) //nolint:errcheck // a former attempt, or none
		fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, &fs.PathError{Op: "create the staging file of", Path: p, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%w: no upload of this file, size and sha256 is under way (it was finished, voided or never begun): write it from offset 0", ErrConflict)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open the staging file of", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fstat", Path: p, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Nlink != 1 || st.Mode&0o077 != 0:
		f.Close()
		return nil, fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: "path", Path: p, Rule: fmt.Sprintf("its staging file %s is not the helper's own (a regular file of root's, 0600, one name); it is not used", name)})
	case st.Size < offset:
		f.Close()
		return nil, fmt.Errorf("%w: %d bytes are staged, so the next chunk is at offset %d, not %d", ErrConflict, st.Size, st.Size, offset)
	}
	return f, nil
}

// removeStale removes this directory's staging files nobody has written
// for a day.
func removeStale(dirfd int, now time.Time) {
	d, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(d), ".")
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if !strings.HasPrefix(n, stagingPrefix) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Uid == 0 &&
			now.Sub(time.Unix(st.Mtim.Unix())) > staleUpload {
			unix.Unlinkat(dirfd, n, 0) //nolint:errcheck // best effort
		}
	}
}
