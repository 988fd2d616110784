package breakglass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"golang.org/x/sys/unix"
)

// Repository is the protected repository in the host's view: its paths,
// walked from each path's own directory one element at a time without
// ever following a symbolic link, and its logical volumes.
type Repository struct {
	// Paths are the protected paths (absolute, clean): a target must lie
	// strictly beneath one of them, by whole path elements.
	Paths []string
	// Volumes are the protected logical volumes as vg/lv: the only
	// volumes delete_volume removes.
	Volumes []string
	// LVM looks up and removes logical volumes; nil refuses
	// delete_volume.
	LVM LVM
	// HashLimit is the largest file whose SHA-256 a preview computes
	// (DefaultHashLimit); a larger one is identified by device, inode,
	// size and modification time.
	HashLimit int64
	// MaxEntries bounds what delete_directory walks (DefaultMaxEntries).
	MaxEntries int64
}

// Defaults of a Repository.
const (
	DefaultHashLimit  = 1 << 30
	DefaultMaxEntries = 1_000_000
)

// ErrTarget marks a target the repository refuses (outside it, through a
// link, of the wrong type, changed since the preview): the caller's
// error, not the host's.
var ErrTarget = errors.New("break-glass target refused")

func targetErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrTarget, fmt.Sprintf(format, args...))
}

// anchor is the protected path p lies strictly beneath, with the path's
// elements below it.
func (r Repository) anchor(field, p string) (string, []string, error) {
	roots := slices.Clone(r.Paths)
	slices.SortFunc(roots, func(a, b string) int { return len(b) - len(a) })
	for _, root := range roots {
		if beneath(p, root) {
			return root, strings.Split(strings.TrimPrefix(p, strings.TrimSuffix(root, "/")+"/"), "/"), nil
		}
	}
	for _, root := range roots {
		if p == root || beneath(root, p) {
			return "", nil, &FieldError{Field: field, Rule: fmt.Sprintf("%s is the protected repository %s itself or above it: break-glass changes what is inside it", p, root)}
		}
	}
	if len(roots) == 0 {
		return "", nil, &FieldError{Field: field, Rule: "no protected repository path is configured (protected.paths)"}
	}
	return "", nil, &FieldError{Field: field, Rule: fmt.Sprintf("%s is not inside the protected repository (%s): break-glass changes only what it protects, and a name that merely starts the same is another path",
		p, strings.Join(r.Paths, ", "))}
}

// openParent opens the directory holding p's last element, walked from
// the repository's own directory, and returns it with that element.
func (r Repository) openParent(field, p string) (*atomicfile.Dir, string, error) {
	root, elems, err := r.anchor(field, p)
	if err != nil {
		return nil, "", err
	}
	d, err := atomicfile.OpenDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", targetErr("the protected repository %s does not exist on this host", root)
		}
		return nil, "", fmt.Errorf("breakglass: open the repository %s: %w", root, err)
	}
	at := root
	for _, e := range elems[:len(elems)-1] {
		next, err := d.OpenDir(e)
		d.Close()
		at += "/" + e
		if err != nil {
			return nil, "", walkErr(field, at, err)
		}
		d = next
	}
	return d, elems[len(elems)-1], nil
}

// walkErr says why a directory on the way could not be opened.
func walkErr(field, at string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return targetErr("%s: %s is a symbolic link, and break-glass never follows one", field, at)
	case errors.Is(err, unix.ENOTDIR):
		return targetErr("%s: %s is not a directory", field, at)
	case errors.Is(err, fs.ErrNotExist):
		return targetErr("%s: %s does not exist", field, at)
	}
	return fmt.Errorf("breakglass: open %s: %w", at, err)
}

// identify is the target of role at p: what is there now.
func (r Repository) identify(field, role, p string) (Target, error) {
	d, name, err := r.openParent(field, p)
	if err != nil {
		return Target{}, err
	}
	defer d.Close()
	return r.identifyIn(d, field, role, p, name)
}

func (r Repository) identifyIn(d *atomicfile.Dir, field, role, p, name string) (Target, error) {
	t := Target{Role: role, Path: p}
	fi, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return Target{}, fmt.Errorf("breakglass: %s: %w", p, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	t.Exists, t.Dev, t.Ino, t.Mtime = true, st.Dev, st.Ino, st.Mtim.Nano()
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return Target{}, targetErr("%s: %s is a symbolic link, and break-glass never follows or changes one", field, p)
	case fi.Mode().IsRegular():
		t.Type, t.Size = "file", fi.Size()
		if fi.Size() <= r.hashLimit() {
			f, err := d.Open(name)
			if err != nil {
				return Target{}, fmt.Errorf("breakglass: %s: %w", p, err)
			}
			defer f.Close()
			if t.SHA256, err = hashReader(f); err != nil {
				return Target{}, fmt.Errorf("breakglass: hash %s: %w", p, err)
			}
		}
	case fi.IsDir():
		t.Type = "directory"
		sub, err := d.OpenDir(name)
		if err != nil {
			return Target{}, walkErr(field, p, err)
		}
		defer sub.Close()
		if err := r.summarize(sub, p, st.Dev, &t); err != nil {
			return Target{}, err
		}
	default:
		return Target{}, targetErr("%s: %s is a %s, not a file or directory", field, p, fi.Mode().Type())
	}
	return t, nil
}

func (r Repository) hashLimit() int64 {
	if r.HashLimit > 0 {
		return r.HashLimit
	}
	return DefaultHashLimit
}

func (r Repository) maxEntries() int64 {
	if r.MaxEntries > 0 {
		return r.MaxEntries
	}
	return DefaultMaxEntries
}

// summarize counts what a directory holds, refusing a mount point inside
// it (removing it would stop there, half done).
func (r Repository) summarize(d *atomicfile.Dir, p string, dev uint64, t *Target) error {
	names, err := d.ReadDirNames()
	if err != nil {
		return fmt.Errorf("breakglass: list %s: %w", p, err)
	}
	for _, n := range names {
		if t.Files+t.Dirs >= r.maxEntries() {
			return targetErr("%s holds more than %d entries: delete it in parts", p, r.maxEntries())
		}
		fi, err := d.Lstat(n)
		if err != nil {
			return fmt.Errorf("breakglass: %s/%s: %w", p, n, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Dev != dev {
			return targetErr("%s/%s is on another file system (a mount point): unmount it first", p, n)
		}
		if !fi.IsDir() {
			t.Files++
			t.Size += fi.Size()
			continue
		}
		t.Dirs++
		sub, err := d.OpenDir(n)
		if err != nil {
			return walkErr("path", p+"/"+n, err)
		}
		err = r.summarize(sub, p+"/"+n, dev, t)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func hashReader(rd io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, rd); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// parentTarget is the directory a new entry at p goes in.
func (r Repository) parentTarget(field, p string) (Target, error) {
	d, _, err := r.openParent(field, p)
	if err != nil {
		return Target{}, err
	}
	defer d.Close()
	fi, err := d.File().Stat()
	if err != nil {
		return Target{}, fmt.Errorf("breakglass: %s: %w", d.Path(), err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return Target{Role: "parent", Path: parentOf(p), Exists: true, Type: "directory", Dev: st.Dev, Ino: st.Ino}, nil
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// Resolve finds op's targets in the host's view and says what it will
// change. staged gives put_file's content (nil refuses put_file).
func (r Repository) Resolve(ctx context.Context, op Operation, staged Staging) ([]Target, []string, error) {
	if err := op.Check(); err != nil {
		return nil, nil, err
	}
	switch op.Kind {
	case OpPutFile:
		if staged == nil {
			return nil, nil, fieldErr("operation.sha256", "no staged upload can be read here")
		}
		size, err := staged.Size(op.SHA256)
		if err != nil {
			return nil, nil, err
		}
		if op.Size != 0 && op.Size != size {
			return nil, nil, fieldErr("operation.size", "%d bytes, but the staged upload %s holds %d", op.Size, op.SHA256[:12], size)
		}
		parent, err := r.parentTarget("operation.path", op.Path)
		if err != nil {
			return nil, nil, err
		}
		file, err := r.identify("operation.path", "file", op.Path)
		if err != nil {
			return nil, nil, err
		}
		if file.Exists && file.Type != "file" {
			return nil, nil, targetErr("operation.path: %s is a %s; put_file writes a file", op.Path, file.Type)
		}
		change := fmt.Sprintf("write %d bytes (sha256 %s) to %s", size, op.SHA256, op.Path)
		if file.Exists {
			change += fmt.Sprintf(", replacing %d bytes%s", file.Size, shaText(file.SHA256))
		} else {
			change += ", a new file"
		}
		return []Target{parent, file}, []string{change}, nil
	case OpMove:
		src, err := r.identify("operation.path", "source", op.Path)
		if err != nil {
			return nil, nil, err
		}
		if !src.Exists {
			return nil, nil, targetErr("operation.path: %s does not exist", op.Path)
		}
		parent, err := r.parentTarget("operation.to", op.To)
		if err != nil {
			return nil, nil, err
		}
		dst, err := r.identify("operation.to", "destination", op.To)
		if err != nil {
			return nil, nil, err
		}
		if dst.Exists {
			return nil, nil, targetErr("operation.to: %s exists; a move never replaces anything (delete it first)", op.To)
		}
		return []Target{src, parent, dst}, []string{fmt.Sprintf("move the %s %s (%s) to %s", src.Type, op.Path, sizeText(src), op.To)}, nil
	case OpDeleteFile, OpDeleteDirectory:
		want := map[string]string{OpDeleteFile: "file", OpDeleteDirectory: "directory"}[op.Kind]
		t, err := r.identify("operation.path", want, op.Path)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case !t.Exists:
			return nil, nil, targetErr("operation.path: %s does not exist", op.Path)
		case t.Type != want:
			return nil, nil, targetErr("operation.path: %s is a %s; %s deletes a %s", op.Path, t.Type, op.Kind, want)
		}
		return []Target{t}, []string{fmt.Sprintf("delete the %s %s (%s)", want, op.Path, sizeText(t))}, nil
	case OpDeleteVolume:
		if !slices.Contains(r.Volumes, op.Volume) {
			return nil, nil, fieldErr("operation.volume", "%s is not one of the protected volumes (%s): break-glass removes only those", op.Volume, strings.Join(r.Volumes, ", "))
		}
		if r.LVM == nil {
			return nil, nil, targetErr("operation.volume: this host has no LVM tools to remove %s with", op.Volume)
		}
		lv, err := r.LVM.Lookup(ctx, op.Volume)
		if err != nil {
			return nil, nil, err
		}
		if lv.Open {
			return nil, nil, targetErr("operation.volume: %s is open (mounted or in use): unmount it first", op.Volume)
		}
		t := Target{Role: "volume", Volume: op.Volume, Exists: true, Type: "volume", Size: lv.Size, LVUUID: lv.UUID}
		return []Target{t}, []string{fmt.Sprintf("remove the logical volume %s (uuid %s, %d bytes) and everything on it", op.Volume, lv.UUID, lv.Size)}, nil
	}
	return nil, nil, fieldErr("operation.kind", "%q is not known", op.Kind)
}

func shaText(sha string) string {
	if sha == "" {
		return " (not hashed: over the hash limit)"
	}
	return " (sha256 " + sha + ")"
}

func sizeText(t Target) string {
	if t.Type == "directory" {
		return fmt.Sprintf("%d files and %d directories, %d bytes", t.Files, t.Dirs, t.Size)
	}
	return fmt.Sprintf("%d bytes%s", t.Size, shaText(t.SHA256))
}

// Same reports how now differs from the target approved, or "" when it
// is the same thing: existence, type, device and inode, size, time,
// content, counts, LV UUID.
func Same(approved, now Target) string {
	a, b := approved, now
	switch {
	case a.Exists != b.Exists:
		if a.Exists {
			return "it no longer exists"
		}
		return "it exists now, and did not when it was approved"
	case a.Type != b.Type:
		return fmt.Sprintf("it is a %s now, a %s when approved", b.Type, a.Type)
	case a.Dev != b.Dev || a.Ino != b.Ino:
		return fmt.Sprintf("it is another file now (device %d inode %d, approved %d/%d): it was replaced", b.Dev, b.Ino, a.Dev, a.Ino)
	case a.Size != b.Size || a.SHA256 != b.SHA256 || a.Mtime != b.Mtime:
		return "its content changed since it was approved"
	case a.Files != b.Files || a.Dirs != b.Dirs:
		return fmt.Sprintf("it holds %d files and %d directories now, %d and %d when approved", b.Files, b.Dirs, a.Files, a.Dirs)
	case a.LVUUID != b.LVUUID:
		return fmt.Sprintf("its UUID is %s now, %s when approved: it is another volume", b.LVUUID, a.LVUUID)
	}
	return ""
}

// Staging is where put_file's content waits: uploads staged with the
// helper, named by their SHA-256.
type Staging interface {
	// Size is the staged upload's size, or an error naming the field.
	Size(sha string) (int64, error)
	// Open opens the staged upload for reading.
	Open(sha string) (*os.File, error)
}
