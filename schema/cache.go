package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// cacheMagic opens every cache file; the version changes if the layout does.
const cacheMagic = "proxmox-mcp schema cache v1\n"

// CacheFile is the name of the last-known-good copy in the state directory.
const CacheFile = "apidoc-lkg.cache"

// Cache is the last-known-good copy of a validated apidoc.js: the file's
// exact bytes behind a one-line JSON header, written atomically (write,
// fsync, rename). Loading it runs the same extraction and validation as
// the original file, so a cache can never yield a registry the file could
// not.
type Cache struct {
	path string
}

// CacheMeta is the header of a cache file.
type CacheMeta struct {
	// Source is where the cached file was read from.
	Source string `json:"source"`
	// SHA256 is the hex SHA-256 of the cached bytes (and of the source file).
	SHA256 string `json:"sha256"`
	// Size is the number of cached bytes.
	Size int `json:"size"`
	// ValidatedAt is when the bytes were parsed into a registry.
	ValidatedAt time.Time `json:"validated_at"`
}

// NewCache keeps the cache at dir/CacheFile.
func NewCache(dir string) *Cache { return &Cache{path: filepath.Join(dir, CacheFile)} }

// Path is the cache file's path.
func (c *Cache) Path() string { return c.path }

// Store writes data, already validated as a registry, with its metadata.
func (c *Cache) Store(meta CacheMeta, data []byte) error {
	sum := sha256.Sum256(data)
	meta.SHA256 = hex.EncodeToString(sum[:])
	meta.Size = len(data)
	header, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("schema cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o750); err != nil {
		return fmt.Errorf("schema cache: %w", err)
	}
	buf := make([]byte, 0, len(cacheMagic)+len(header)+1+len(data))
	buf = append(buf, cacheMagic...)
	buf = append(buf, header...)
	buf = append(buf, '\n')
	buf = append(buf, data...)
	if err := atomicfile.WriteFile(c.path, buf, 0o640); err != nil {
		return fmt.Errorf("schema cache: %w", err)
	}
	return nil
}

// ErrNoCache is returned by Load when there is no cache file.
var ErrNoCache = errors.New("no last-known-good schema cache")

// Load reads the cache and checks its integrity. It does not parse the
// cached schema; LoadRegistry does.
func (c *Cache) Load() (CacheMeta, []byte, error) {
	var meta CacheMeta
	raw, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return meta, nil, fmt.Errorf("%w at %s", ErrNoCache, c.path)
	}
	if err != nil {
		return meta, nil, fmt.Errorf("schema cache: %w", err)
	}
	rest, ok := bytes.CutPrefix(raw, []byte(cacheMagic))
	if !ok {
		return meta, nil, fmt.Errorf("schema cache %s: not a proxmox-mcp schema cache (bad header)", c.path)
	}
	header, data, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return meta, nil, fmt.Errorf("schema cache %s: truncated header", c.path)
	}
	if err := json.Unmarshal(header, &meta); err != nil {
		return meta, nil, fmt.Errorf("schema cache %s: header: %w", c.path, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != meta.SHA256 || len(data) != meta.Size {
		return meta, nil, fmt.Errorf("schema cache %s: content does not match its header (sha256 %s, want %s): damaged", c.path, got, meta.SHA256)
	}
	return meta, data, nil
}

// LoadRegistry loads and parses the cached schema.
func (c *Cache) LoadRegistry() (*Registry, CacheMeta, error) {
	meta, data, err := c.Load()
	if err != nil {
		return nil, meta, err
	}
	r, err := Parse(data)
	if err != nil {
		return nil, meta, fmt.Errorf("schema cache %s: %w", c.path, err)
	}
	return r, meta, nil
}
