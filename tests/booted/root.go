package booted

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Root is a container's file system seen from the host. Paths are the
// container's (absolute); every operation stays inside it (os.Root), so a
// link in the container never makes the host write one of its own files.
// An absolute link on the way is an error, not a path on the host.
type Root struct {
	dir string
	r   *os.Root
}

// OpenRoot opens dir as a container's root.
func OpenRoot(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("booted: %w", err)
	}
	return &Root{dir: dir, r: r}, nil
}

// Close releases the root.
func (r *Root) Close() error { return r.r.Close() }

func rel(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("booted: %q is not an absolute path inside the container", p)
	}
	p = strings.TrimPrefix(path.Clean(p), "/")
	if p == "" {
		p = "."
	}
	return p, nil
}

// WriteFile writes a file with mode (its parents made 0755), replacing
// what is there.
func (r *Root) WriteFile(p string, data []byte, mode fs.FileMode) error {
	name, err := rel(p)
	if err != nil {
		return err
	}
	if err := r.r.MkdirAll(path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("booted: mkdir %s: %w", path.Dir(p), err)
	}
	if err := r.r.WriteFile(name, data, mode); err != nil {
		return fmt.Errorf("booted: write %s: %w", p, err)
	}
	if err := r.r.Chmod(name, mode); err != nil {
		return fmt.Errorf("booted: chmod %s: %w", p, err)
	}
	return nil
}

// MkdirAll makes a directory and its parents.
func (r *Root) MkdirAll(p string, mode fs.FileMode) error {
	name, err := rel(p)
	if err != nil {
		return err
	}
	if err := r.r.MkdirAll(name, mode); err != nil {
		return fmt.Errorf("booted: mkdir %s: %w", p, err)
	}
	return r.r.Chmod(name, mode)
}

// Symlink makes a link at p pointing to target (as the container reads
// it).
func (r *Root) Symlink(target, p string) error {
	name, err := rel(p)
	if err != nil {
		return err
	}
	if err := r.r.MkdirAll(path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("booted: mkdir %s: %w", path.Dir(p), err)
	}
	if err := r.r.Symlink(target, name); err != nil {
		return fmt.Errorf("booted: symlink %s: %w", p, err)
	}
	return nil
}

// ReadFile reads a file.
func (r *Root) ReadFile(p string) ([]byte, error) {
	name, err := rel(p)
	if err != nil {
		return nil, err
	}
	return r.r.ReadFile(name)
}

// Lstat stats p without following a final link.
func (r *Root) Lstat(p string) (fs.FileInfo, error) {
	name, err := rel(p)
	if err != nil {
		return nil, err
	}
	return r.r.Lstat(name)
}

// Remove removes a file or an empty directory.
func (r *Root) Remove(p string) error {
	name, err := rel(p)
	if err != nil {
		return err
	}
	return r.r.Remove(name)
}
