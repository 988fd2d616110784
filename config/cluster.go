package config

import (
	"bytes"
	"cmp"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/tailscale/hujson"
)

// Cluster is cluster mode (docs/cluster.md): the keys and policies of
// every node of a PVE cluster live on pmxcfs, and each node's root-run
// sync (`proxmox-mcp cluster sync`) mirrors them into its state
// directory. `proxmox-mcp cluster enable` sets it.
type Cluster struct {
	// Enabled turns cluster mode on: key and policy changes are made on
	// pmxcfs under the cluster's lock, and the daemon reports the sync's
	// view in /readyz.
	Enabled bool `json:"enabled,omitzero"`
	// PmxcfsDir is where pmxcfs is mounted (/etc/pve).
	PmxcfsDir string `json:"pmxcfs_dir,omitempty"`
	// CacheDir is root's own copy of the last good shared state
	// (/var/lib/proxmox-mcp-cluster); root-only, outside the state
	// directory, which the service user can write.
	CacheDir string `json:"cache_dir,omitempty"`
	// PollInterval is how often the sync reads the shared generation
	// ("1s"; 100ms to 1m).
	PollInterval Duration `json:"poll_interval,omitzero"`
	// RescanInterval is how often the sync reads every shared file,
	// whether or not the generation moved, to see edits made by hand
	// ("10s"; at least poll_interval, at most 10m).
	RescanInterval Duration `json:"rescan_interval,omitzero"`
	// LockTimeout bounds the wait for the cluster lock ("10s", as PVE's
	// cfs_lock; 1s to 2m).
	LockTimeout Duration `json:"lock_timeout,omitzero"`
}

// Defaults of cluster mode.
const (
	DefaultPmxcfsDir      = "/etc/pve"
	DefaultClusterCache   = "/var/lib/proxmox-mcp-cluster"
	DefaultPollInterval   = time.Second
	DefaultRescanInterval = 10 * time.Second
	DefaultLockTimeout    = 10 * time.Second
)

func (c Cluster) check() error {
	if c.PmxcfsDir != "" {
		if err := checkDir(c.PmxcfsDir); err != nil {
			return fmt.Errorf("field \"cluster.pmxcfs_dir\": %w", err)
		}
	}
	if c.CacheDir != "" {
		if err := checkDir(c.CacheDir); err != nil {
			return fmt.Errorf("field \"cluster.cache_dir\": %w", err)
		}
	}
	if p := c.PollInterval.Std(); p != 0 && (p < 100*time.Millisecond || p > time.Minute) {
		return fmt.Errorf("field \"cluster.poll_interval\": %s is outside 100ms to 1m", p)
	}
	if r := c.RescanInterval.Std(); r != 0 && (r < c.Poll() || r > 10*time.Minute) {
		return fmt.Errorf("field \"cluster.rescan_interval\": %s is outside poll_interval (%s) to 10m", r, c.Poll())
	}
	if l := c.LockTimeout.Std(); l != 0 && (l < time.Second || l > 2*time.Minute) {
		return fmt.Errorf("field \"cluster.lock_timeout\": %s is outside 1s to 2m", l)
	}
	return nil
}

// Pmxcfs is cluster.pmxcfs_dir, or its default.
func (c Cluster) Pmxcfs() string { return cmp.Or(c.PmxcfsDir, DefaultPmxcfsDir) }

// Cache is cluster.cache_dir, or its default.
func (c Cluster) Cache() string { return cmp.Or(c.CacheDir, DefaultClusterCache) }

// Poll is cluster.poll_interval, or its default.
func (c Cluster) Poll() time.Duration { return cmp.Or(c.PollInterval.Std(), DefaultPollInterval) }

// Rescan is cluster.rescan_interval, or its default (never below Poll).
func (c Cluster) Rescan() time.Duration {
	return max(cmp.Or(c.RescanInterval.Std(), DefaultRescanInterval), c.Poll())
}

// Lock is cluster.lock_timeout, or its default.
func (c Cluster) Lock() time.Duration { return cmp.Or(c.LockTimeout.Std(), DefaultLockTimeout) }

// effective spells out the defaults.
func (c Cluster) effective() Cluster {
	c.PmxcfsDir, c.CacheDir = c.Pmxcfs(), c.Cache()
	c.PollInterval, c.RescanInterval, c.LockTimeout = Duration(c.Poll()), Duration(c.Rescan()), Duration(c.Lock())
	return c
}

// SetClusterEnabled returns the HuJSON text of a configuration file with
// cluster.enabled set to on, its comments and layout kept; the result is
// checked as Parse checks a file.
func SetClusterEnabled(raw []byte, on bool) ([]byte, error) {
	std, err := hujson.Standardize(bytes.Clone(raw))
	if err != nil {
		return nil, fmt.Errorf("config: not valid HuJSON: %w", err)
	}
	var probe map[string]jsontext.Value
	if err := json.Unmarshal(std, &probe); err != nil {
		return nil, fmt.Errorf("config: %w", describe(err))
	}
	op := map[string]any{"op": "add", "path": "/cluster", "value": map[string]bool{"enabled": on}}
	if _, ok := probe["cluster"]; ok {
		op = map[string]any{"op": "add", "path": "/cluster/enabled", "value": on}
	}
	patch, err := json.Marshal([]any{op})
	if err != nil {
		return nil, err
	}
	v, err := hujson.Parse(bytes.Clone(raw))
	if err != nil {
		return nil, fmt.Errorf("config: not valid HuJSON: %w", err)
	}
	if err := v.Patch(patch); err != nil {
		return nil, fmt.Errorf("config: set cluster.enabled: %w", err)
	}
	v.Format()
	out := v.Pack()
	if _, err := Parse("the edited configuration", bytes.Clone(out)); err != nil {
		return nil, err
	}
	return out, nil
}
