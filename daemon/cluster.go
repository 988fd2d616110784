package daemon

import (
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/cluster"
)

// clusterReadiness is the cluster check of /readyz in cluster mode (ok
// false outside it): what the node's root-run sync last reported in the
// state directory. A node without quorum, a sync that stopped reporting
// or a shared file kept at its last good content is not ready, and says
// which; the daemon goes on serving the keys and policies it has.
func (d *Daemon) clusterReadiness() (check string, ok bool) {
	if !d.cfg.Cluster.Enabled {
		return "", false
	}
	// The sync rewrites its report at least once per rescan interval.
	stale := 3*d.cfg.Cluster.Rescan() + 5*time.Second
	return cluster.Readiness(d.cfg.StateDir, time.Now(), stale), true
}
