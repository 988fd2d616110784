package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// StatusFile is the sync's report to the daemon, in the state directory.
const StatusFile = "cluster-status.json"

// LocalStatus is what this node's sync last saw and mirrored: the daemon
// reads it for /readyz, `proxmox-mcp status` and `cluster status`.
type LocalStatus struct {
	Format int    `json:"format"`
	Node   string `json:"node"`
	// Quorate and QuorateSince: the node's quorum, and since when it has
	// (or has lacked) it.
	Quorate      bool      `json:"quorate"`
	QuorateSince time.Time `json:"quorate_since"`
	// Generation and Digest identify the state mirrored: the shared
	// counter, and SHA-256 over its files.
	Generation uint64    `json:"generation"`
	Digest     string    `json:"digest"`
	Changed    time.Time `json:"changed,omitzero"`
	ChangedBy  string    `json:"changed_by,omitempty"`
	Keys       int       `json:"keys"`
	Policies   int       `json:"policies"`
	// Applied is when the mirror last changed; Checked when pmxcfs was
	// last read.
	Applied time.Time `json:"applied,omitzero"`
	Checked time.Time `json:"checked"`
	// Problems are shared files that failed their checks.
	Problems []Problem `json:"problems,omitempty"`
	// Error says why pmxcfs could not be read at all (the mirror stays).
	Error string `json:"error,omitempty"`
	// Members are the cluster's nodes as this node sees them.
	Members []Member `json:"members,omitempty"`
}

// Member is a node of the cluster.
type Member struct {
	Name   string `json:"name"`
	Online bool   `json:"online"`
}

const maxStatusSize = 1 << 20

// ReadLocalStatus reads the sync's report in a state directory; it fails
// with fs.ErrNotExist when the sync has not written one.
func ReadLocalStatus(stateDir string) (LocalStatus, error) {
	var st LocalStatus
	d, err := atomicfile.OpenDir(stateDir)
	if err != nil {
		return st, err
	}
	defer d.Close()
	data, err := d.ReadFile(StatusFile)
	if err != nil {
		return st, err
	}
	if len(data) > maxStatusSize {
		return st, fmt.Errorf("cluster: %s is larger than %d bytes", StatusFile, maxStatusSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("cluster: %s: %w", path.Join(stateDir, StatusFile), err)
	}
	if st.Format != formatVersion {
		return st, fmt.Errorf("cluster: %s: format %d is not supported (this build reads %d)", path.Join(stateDir, StatusFile), st.Format, formatVersion)
	}
	return st, nil
}

// Readiness is the cluster check of /readyz: "ok", or what is wrong.
// stale is how old the sync's last reading may be (a few rescan
// intervals).
func Readiness(stateDir string, now time.Time, stale time.Duration) string {
	st, err := ReadLocalStatus(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "no report from the cluster sync yet (proxmox-mcp-cluster.service; `proxmox-mcp cluster status`)"
	}
	if err != nil {
		return "the cluster sync's report cannot be read: " + err.Error()
	}
	return st.Readiness(now, stale)
}

// Readiness says "ok", or what is wrong with the state this node serves.
func (st LocalStatus) Readiness(now time.Time, stale time.Duration) string {
	var wrong []string
	if age := now.Sub(st.Checked); age > stale {
		wrong = append(wrong, fmt.Sprintf("the cluster sync last read pmxcfs %s ago (is proxmox-mcp-cluster.service running?)", age.Round(time.Second)))
	}
	if st.Error != "" {
		wrong = append(wrong, "pmxcfs cannot be read: "+st.Error)
	}
	if !st.Quorate {
		wrong = append(wrong, fmt.Sprintf("no quorum since %s: serving the keys and policies of generation %d as last seen; key and policy changes are refused",
			st.QuorateSince.UTC().Format(time.RFC3339), st.Generation))
	}
	for _, p := range st.Problems {
		wrong = append(wrong, "shared file "+p.String())
	}
	if len(wrong) == 0 {
		return "ok"
	}
	return strings.Join(wrong, "; ")
}

// Report is a node's account of what it applied, in
// priv/proxmox-mcp/nodes/<node>.json: what `cluster status` shows for
// each node.
type Report struct {
	Format     int       `json:"format"`
	Node       string    `json:"node"`
	Generation uint64    `json:"generation"`
	Digest     string    `json:"digest"`
	Applied    time.Time `json:"applied,omitzero"`
	Heartbeat  time.Time `json:"heartbeat"`
	Problems   []Problem `json:"problems,omitempty"`
	Version    string    `json:"version,omitempty"`
}

// reportEvery is how often a node rewrites its report when nothing
// changed; staleReport is when `cluster status` calls it stale.
const (
	reportEvery = time.Minute
	staleReport = 3 * reportEvery
)

// NodeStatus is a node of `cluster status`.
type NodeStatus struct {
	Name   string `json:"name"`
	Online bool   `json:"online"`
	// Report is the node's sync's last report; nil when it never wrote
	// one (not in cluster mode, or its sync never ran).
	Report *Report `json:"report"`
	// Current: its report names the shared generation and digest.
	Current bool `json:"current"`
	// Stale: its report is older than three heartbeats.
	Stale bool `json:"stale"`
}

// ClusterStatus is `cluster status`: the shared state and every node's
// view of it.
type ClusterStatus struct {
	Node       string       `json:"node"`
	Cluster    string       `json:"cluster,omitempty"`
	Quorate    bool         `json:"quorate"`
	Shared     string       `json:"shared"`
	Generation uint64       `json:"generation"`
	Digest     string       `json:"digest"`
	Changed    time.Time    `json:"changed,omitzero"`
	ChangedBy  string       `json:"changed_by,omitempty"`
	Keys       int          `json:"keys"`
	Policies   int          `json:"policies"`
	Problems   []Problem    `json:"problems,omitempty"`
	Nodes      []NodeStatus `json:"nodes"`
	// Local is this node's mirror as its sync reported it, when it did.
	Local *LocalStatus `json:"local,omitempty"`
}

// readReports reads every node's report; one that cannot be read is left
// out (and named in problems).
func readReports(f *FS) (map[string]*Report, []Problem) {
	out := map[string]*Report{}
	var problems []Problem
	ents, err := f.ReadDir(path.Join(SharedDir, nodesDir))
	if err != nil {
		return out, []Problem{{Path: nodesDir, Err: err.Error()}}
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || isTemp(e.Name()) {
			continue
		}
		p := path.Join(nodesDir, e.Name())
		data, err := f.ReadFile(path.Join(SharedDir, p))
		if err != nil {
			problems = append(problems, Problem{Path: p, Err: err.Error()})
			continue
		}
		var r Report
		if err := json.Unmarshal(data, &r); err != nil || r.Node != name {
			problems = append(problems, Problem{Path: p, Err: fmt.Sprintf("not a report of node %s (%v)", name, err)})
			continue
		}
		out[name] = &r
	}
	return out, problems
}

// membersOf lists the nodes of .members by name.
func membersOf(m Members) []Member {
	var out []Member
	for name, n := range m.NodeList {
		out = append(out, Member{Name: name, Online: n.Online == 1})
	}
	if len(out) == 0 && m.NodeName != "" {
		out = append(out, Member{Name: m.NodeName, Online: true})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}
