// Package cluster owns cluster mode: the keys, policies and activation
// records of every node of a PVE cluster kept on pmxcfs (/etc/pve, which
// corosync replicates), and each node's mirror of them. docs/cluster.md
// states the design and the pmxcfs rules it follows, with their sources.
//
// The shared files live in /etc/pve/priv/proxmox-mcp, root's alone as
// pmxcfs makes everything under priv/: one file per key (keys/<id>.json,
// the keys.json format with one record), the policy store's files as the
// local store lays them out (policies/), a generation counter
// (cluster.json) and each node's report of what it applied
// (nodes/<node>.json). The daemon, which runs as an unprivileged user and
// must not join www-data (the group that reads the node's TLS key on
// pmxcfs), never reads them: a root-run sync ([Node.Run], `proxmox-mcp
// cluster sync`) polls the generation, checks every file, keeps root's
// own copy of the last good state (outside the service user's reach) and
// mirrors it into the daemon's state directory, where the local key and
// policy stores read it as before.
//
// Changes ([Node.Change], behind keys.Shared and policy.Shared) are made
// under PVE's own cluster lock (a directory in /etc/pve/priv/lock, as
// PVE::Cluster's cfs_lock takes it) on a root-owned staging copy of the
// shared state, by the ordinary local stores; what they changed is written
// back file by file, the generation last, and the node's mirror refreshed.
// A node without quorum keeps serving its last good state, says so, and
// refuses changes; a shared file that fails its checks keeps its last
// good content.
package cluster
