package config

import (
	"strings"
	"testing"
	"time"
)

func TestClusterChecks(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`"cluster": {"pmxcfs_dir": "etc/pve"}`, `field "cluster.pmxcfs_dir": "etc/pve" must be an absolute path`},
		{`"cluster": {"cache_dir": "/var/lib/x/"}`, `field "cluster.cache_dir"`},
		{`"cluster": {"poll_interval": "10ms"}`, `field "cluster.poll_interval": 10ms is outside 100ms to 1m`},
		{`"cluster": {"poll_interval": "5s", "rescan_interval": "2s"}`, `field "cluster.rescan_interval": 2s is outside poll_interval (5s) to 10m`},
		{`"cluster": {"lock_timeout": "5m"}`, `field "cluster.lock_timeout": 5m0s is outside 1s to 2m`},
		{`"cluster": {"enabled": "yes"}`, `field "cluster.enabled"`},
		{`"cluster": {"nodes": 3}`, `field "cluster.nodes" is not known`},
	} {
		_, err := Parse("test", []byte(`{"version": 1, `+c.body+`}`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.body, err, c.want)
		}
	}
	cfg, err := Parse("test", []byte(`{"version": 1, "cluster": {"enabled": true, "poll_interval": "500ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Effective().Cluster
	if !cl.Enabled || cl.PmxcfsDir != DefaultPmxcfsDir || cl.CacheDir != DefaultClusterCache || cl.PollInterval.Std() != 500*time.Millisecond ||
		cl.RescanInterval.Std() != DefaultRescanInterval || cl.LockTimeout.Std() != DefaultLockTimeout {
		t.Errorf("effective cluster section: %+v", cl)
	}
}

// SetClusterEnabled keeps the file's comments and other fields, adds the
// section when it is missing and changes only enabled when it is there.
func TestSetClusterEnabled(t *testing.T) {
	const file = `{
  // the node's configuration
  "version": 1,
  "allow_mutations": true, // reviewed
}
`
	on, err := SetClusterEnabled([]byte(file), true)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("on", on)
	if err != nil || !cfg.Cluster.Enabled || !cfg.AllowMutations {
		t.Fatalf("after enabling: %+v, %v\n%s", cfg, err, on)
	}
	if !strings.Contains(string(on), "// the node's configuration") || !strings.Contains(string(on), "// reviewed") {
		t.Errorf("comments lost:\n%s", on)
	}
	withDir := strings.Replace(string(on), `"enabled": true`, `"enabled": true, "pmxcfs_dir": "/srv/pve"`, 1)
	off, err := SetClusterEnabled([]byte(withDir), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = Parse("off", off)
	if err != nil || cfg.Cluster.Enabled || cfg.Cluster.PmxcfsDir != "/srv/pve" {
		t.Fatalf("after disabling: %+v, %v\n%s", cfg.Cluster, err, off)
	}
	if _, err := SetClusterEnabled([]byte(`{"version": 2}`), true); err == nil {
		t.Error("SetClusterEnabled accepted a file Parse refuses")
	}
}
