package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	return c.store(meta, data, hex.EncodeToString(sum[:]))
}

// store is Store of bytes whose hex SHA-256 the caller has computed.
func (c *Cache) store(meta CacheMeta, data []byte, sha string) error {
	meta.SHA256 = sha
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

// maxCacheHeader bounds the header loadHeader reads: a few hundred bytes
// of JSON (the source path, the hash, the size and a time).
const maxCacheHeader = 64 << 10

// loadHeader reads the header of the cache alone, without the cached
// bytes and without checking them: enough to see that the cache holds
// other bytes than a reload's, which is then written over it without
// reading and hashing the 3.9 MB it held.
func (c *Cache) loadHeader() (CacheMeta, error) {
	var meta CacheMeta
	f, err := os.Open(c.path)
	if err != nil {
		return meta, fmt.Errorf("schema cache: %w", err)
	}
	defer f.Close()
	buf := make([]byte, len(cacheMagic)+maxCacheHeader)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return meta, fmt.Errorf("schema cache %s: %w", c.path, err)
	}
	rest, ok := bytes.CutPrefix(buf[:n], []byte(cacheMagic))
	if !ok {
		return meta, fmt.Errorf("schema cache %s: not a proxmox-mcp schema cache (bad header)", c.path)
	}
	header, _, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return meta, fmt.Errorf("schema cache %s: truncated header", c.path)
	}
	if err := json.Unmarshal(header, &meta); err != nil {
		return meta, fmt.Errorf("schema cache %s: header: %w", c.path, err)
	}
	return meta, nil
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
