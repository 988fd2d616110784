package authority

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// The files of a state directory this package reads and writes.
const (
	policiesDir  = "policies"
	keysLock     = "keys.lock"
	policiesLock = "policies.lock"
)

// Tree is the keys and policies of a state directory.
type Tree struct {
	// Keys is keys.json as the key store writes it (nil: no keys file).
	Keys []byte
	// Policies maps paths relative to policies/, with slashes, to their
	// content: only what the index names, each file checked.
	Policies map[string][]byte
}

// ReadTree reads a state directory's keys and policies through d, never
// following a link, and checks them as the stores would (a malformed
// keys.json or a policy whose text does not match the index is an error).
func ReadTree(d *atomicfile.Dir) (Tree, error) {
	var t Tree
	data, err := d.ReadFile(keys.FileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Tree{}, fmt.Errorf("authority: read %s: %w", path.Join(d.Path(), keys.FileName), err)
	default:
		if _, err := keys.DecodeFile(data); err != nil {
			return Tree{}, fmt.Errorf("authority: %s is invalid, so it is left alone: %w", path.Join(d.Path(), keys.FileName), err)
		}
		t.Keys = data
	}
	files := map[string][]byte{}
	pd, err := d.OpenDir(policiesDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Tree{}, fmt.Errorf("authority: %w", err)
	default:
		err = readFiles(pd, "", files)
		pd.Close()
		if err != nil {
			return Tree{}, fmt.Errorf("authority: read %s: %w", path.Join(d.Path(), policiesDir), err)
		}
	}
	if t.Policies, err = policy.CheckTree(files); err != nil {
		return Tree{}, fmt.Errorf("authority: %s: %w", path.Join(d.Path(), policiesDir), err)
	}
	return t, nil
}

// maxTreeFiles bounds what ReadTree reads of a policies directory.
const maxTreeFiles = 10000

func readFiles(d *atomicfile.Dir, prefix string, out map[string][]byte) error {
	names, err := d.ReadDirNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		rel := path.Join(prefix, name)
		if rel == policiesLock || strings.HasPrefix(name, ".") {
			continue
		}
		fi, err := d.Lstat(name)
		if err != nil {
			continue // gone meanwhile
		}
		switch {
		case fi.IsDir():
			sub, err := d.OpenDir(name)
			if err != nil {
				return err
			}
			err = readFiles(sub, rel, out)
			sub.Close()
			if err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if len(out) >= maxTreeFiles {
				return fmt.Errorf("more than %d files", maxTreeFiles)
			}
			b, err := d.ReadFile(name)
			if err != nil {
				return err
			}
			out[rel] = b
		}
	}
	return nil
}

// MirrorPolicies makes sd's policies/ hold exactly files: the texts
// first, then the index (so it never names a text not yet written), then
// what files does not name is removed. Everything goes through
// atomicfile, under the policy store's lock.
func MirrorPolicies(ctx context.Context, sd *atomicfile.Dir, files map[string][]byte) error {
	if len(files) == 0 {
		// Nothing to mirror: no empty policies/ is made.
		if _, err := sd.Lstat(policiesDir); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	pd, err := sd.Mkdir(policiesDir, 0o700)
	if err != nil {
		return fmt.Errorf("mirror the policies: %w", err)
	}
	defer pd.Close()
	unlock, err := pd.Lock(ctx, policiesLock)
	if err != nil {
		return fmt.Errorf("mirror the policies: %w", err)
	}
	defer unlock()
	names := slices.Sorted(maps.Keys(files))
	names = append(slices.DeleteFunc(names, func(p string) bool { return p == policy.IndexFile }), policy.IndexFile)
	for _, p := range names {
		data, ok := files[p]
		if !ok {
			continue
		}
		if err := writeUnder(pd, p, data); err != nil {
			return fmt.Errorf("mirror policies/%s: %w", p, err)
		}
	}
	if err := removeOthers(pd, "", files); err != nil {
		return fmt.Errorf("mirror the policies: %w", err)
	}
	return nil
}

// MirrorKeys writes keys.json into sd under the key store's lock.
func MirrorKeys(ctx context.Context, sd *atomicfile.Dir, data []byte) error {
	unlock, err := sd.Lock(ctx, keysLock)
	if err != nil {
		return fmt.Errorf("mirror the keys: %w", err)
	}
	defer unlock()
	if err := sd.WriteFile(keys.FileName, data, 0o600); err != nil {
		return fmt.Errorf("mirror the keys: %w", err)
	}
	return nil
}

// writeUnder writes rel (slash-separated) under d, making its directories.
func writeUnder(d *atomicfile.Dir, rel string, data []byte) error {
	elems := strings.Split(rel, "/")
	cur := d
	for _, name := range elems[:len(elems)-1] {
		next, err := cur.Mkdir(name, 0o700)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return err
		}
		cur = next
	}
	if cur != d {
		defer cur.Close()
	}
	return cur.WriteFile(elems[len(elems)-1], data, 0o600)
}

// removeOthers removes the files under d (at prefix) that keep does not
// name, the lock and directories aside.
func removeOthers(d *atomicfile.Dir, prefix string, keep map[string][]byte) error {
	names, err := d.ReadDirNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		rel := path.Join(prefix, name)
		if rel == policiesLock {
			continue
		}
		fi, err := d.Lstat(name)
		if err != nil {
			continue // gone meanwhile
		}
		if fi.IsDir() {
			sub, err := d.OpenDir(name)
			if err != nil {
				return err
			}
			err = removeOthers(sub, rel, keep)
			sub.Close()
			if err != nil {
				return err
			}
			continue
		}
		if _, ok := keep[rel]; !ok {
			if _, err := d.Remove(name); err != nil {
				return err
			}
		}
	}
	return nil
}
