// Package atomicfile is how proxmox-mcp touches files, above all where
// root works in a directory another user can write (the CLI and the
// installer, run as root, in the service user's state directory).
//
// A [Dir] is a directory opened by walking its path from "/" one element
// at a time, following a symbolic link only in a directory that nobody
// but root (or this process's own user) can write. Every operation on a
// Dir names one entry and acts relative to the directory's descriptor,
// never following a symbolic link: files are opened with O_NOFOLLOW (and
// refused when they are not regular files, or, in a directory someone
// else can write, when they have more than one hard link), owners and
// modes are changed through the opened descriptor (fchown, fchmod),
// trees are removed by descriptors, and new files are given to the
// directory's owner when root creates them.
//
// Writes are atomic: readers see either the old content or the new,
// never a mix, and the new content survives a crash once the write
// returns. A temporary file is created in the same directory
// (O_CREAT|O_EXCL|O_NOFOLLOW), written, given its owner and mode,
// fsynced and renamed over the target relative to the directory's
// descriptor, and the directory is fsynced. The package also owns the
// advisory lock (flock) that serialises writers of a directory.
//
// os.Root is not enough for this: it follows links that stay inside the
// root (keys.lock planted as a link to another file of the directory),
// OpenRoot resolves the root's own path through any link, and its Chmod
// and Chown act by name and follow a final link.
package atomicfile

import (
	"fmt"
	"io/fs"
)

// WriteFile atomically replaces the file at an absolute path with data,
// created with mode perm and given to the directory's owner (see
// [Dir.WriteFile]). The directory is opened as [OpenDir] opens it.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	d, name, err := OpenParent(path)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	defer d.Close()
	return d.WriteFile(name, data, perm)
}
