package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// cache is root's own record of the shared state, in cluster.cache_dir:
// the last good state (what a malformed shared file falls back to, and
// what a change is staged from), what was last mirrored into the state
// directory, and the quorum's history. It lives outside the state
// directory because root must never take back what the service user can
// write.
type cache struct {
	Format       int       `json:"format"`
	State        *state    `json:"state"`
	Mirrored     mirrored  `json:"mirrored"`
	Quorate      bool      `json:"quorate"`
	QuorateSince time.Time `json:"quorate_since"`
	// Applied is when the mirror last changed.
	Applied time.Time `json:"applied"`
}

// mirrored are the digests of what was last written into the state
// directory.
type mirrored struct {
	Keys     string `json:"keys"`
	Policies string `json:"policies"`
}

const (
	cacheFile = "state.json"
	cacheLock = "lock"
)

// openCache opens (making it, 0700) root's cache directory, refusing one
// that anybody but root owns or can write.
func openCache(dir string) (*atomicfile.Dir, error) {
	d, err := atomicfile.MkdirAll(dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("cluster: cache directory: %w", err)
	}
	fi, err := d.File().Stat()
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("cluster: cache directory: %w", err)
	}
	if d.Owner().Enabled || fi.Mode().Perm()&0o022 != 0 {
		d.Close()
		return nil, fmt.Errorf("cluster: cache directory %s must be root's alone (owner root, not writable by others; it is %v owned by %d:%d)",
			d.Path(), fi.Mode().Perm(), d.Owner().UID, d.Owner().GID)
	}
	return d, nil
}

// lockCache takes the node's own lock of the cache: the sync and the CLI
// of one node take turns.
func lockCache(ctx context.Context, d *atomicfile.Dir) (func(), error) {
	unlock, err := d.Lock(ctx, cacheLock)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return unlock, nil
}

func loadCache(d *atomicfile.Dir) (*cache, error) {
	data, err := d.ReadFile(cacheFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &cache{Format: formatVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var c cache
	if err := json.Unmarshal(data, &c); err != nil || c.Format != formatVersion {
		// Root's own file, so this is damage, not an attack: start over
		// from what pmxcfs holds, without a last good state, and say so.
		return &cache{Format: formatVersion}, fmt.Errorf("cluster: %s is damaged (%v); starting again from what pmxcfs holds", d.Path()+"/"+cacheFile, cmpErr(err, c.Format))
	}
	return &c, nil
}

func cmpErr(err error, format int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("format %d, want %d", format, formatVersion)
}

func saveCache(d *atomicfile.Dir, c *cache) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("cluster: encode cache: %w", err)
	}
	if err := d.WriteFile(cacheFile, data, 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}
