package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// EnableReport says what `cluster enable` moved onto pmxcfs.
type EnableReport struct {
	// Added are the ids of this node's keys the cluster did not have;
	// Present those it had already, identical.
	Added   []string `json:"keys_added"`
	Present []string `json:"keys_present"`
	// Policies are the ids of this node's custom policies, now shared.
	Policies   []string `json:"policies"`
	Generation uint64   `json:"generation"`
	Shared     string   `json:"shared"`
}

// ConflictError lists what keeps a node's keys and policies from joining
// the cluster's: nothing was written.
type ConflictError struct{ Conflicts []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("cluster: this node's keys and policies conflict with the cluster's, so nothing was moved: %s", joinSemi(e.Conflicts))
}

func joinSemi(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// Enable moves this node's keys and policies (its state directory's
// keys.json and policies/, as the local stores wrote them) onto pmxcfs,
// beside what other nodes put there, under the cluster lock, then
// mirrors the union back. A key the cluster has with other content, a
// current key name another current key has on the cluster, or a policy
// the cluster has with other versions is a conflict, and any conflict
// refuses the whole move. Running it again changes nothing.
//
// The node's own files are read as they are: they belong to the service
// user, so review `proxmox-mcp key list` before enabling.
func (n *Node) Enable(ctx context.Context) (EnableReport, error) {
	rep := EnableReport{Shared: path.Join(n.fs.Root(), SharedDir)}
	local, err := readLocal(n.opts.StateDir)
	if err != nil {
		return rep, err
	}
	localPol := local.policies
	err = n.change(ctx, func(c *cache, snap *snapshot, stage string) error {
		shared, err := snap.st.records()
		if err != nil {
			return err
		}
		byID := map[string]keys.Record{}
		for _, r := range shared {
			byID[r.ID] = r
		}
		now := n.opts.Now()
		var conflicts []string
		merged := slices.Clone(shared)
		for _, r := range local.keys {
			if s, ok := byID[r.ID]; ok {
				a, _ := encodeKey(r)
				b, _ := encodeKey(s)
				if !bytes.Equal(a, b) {
					conflicts = append(conflicts, fmt.Sprintf("key %s (%s) is on the cluster with other content", r.ID, r.Name))
				} else {
					rep.Present = append(rep.Present, r.ID)
				}
				continue
			}
			if r.StateAt(now) == keys.StateActive {
				for _, s := range shared {
					if s.Name == r.Name && s.StateAt(now) == keys.StateActive {
						conflicts = append(conflicts, fmt.Sprintf("the name %q is key %s here and key %s on the cluster; names are unique among current keys (rotate or revoke one first)", r.Name, r.ID, s.ID))
					}
				}
			}
			merged = append(merged, r)
			rep.Added = append(rep.Added, r.ID)
		}
		pol, perr := policy.MergeTrees(snap.st.policyFiles(), localPol)
		if perr != nil {
			conflicts = append(conflicts, perr.Error())
		}
		if len(conflicts) > 0 {
			return &ConflictError{Conflicts: conflicts}
		}
		st := &state{Files: map[string][]byte{}}
		for _, r := range merged {
			b, err := encodeKey(r)
			if err != nil {
				return err
			}
			st.Files[keyFileName(r.ID)] = b
		}
		for p, b := range pol {
			st.Files[path.Join(policiesDir, p)] = b
		}
		if err := os.RemoveAll(filepath.Join(stage, policiesDir)); err != nil {
			return err
		}
		if _, err := materialize(stage, st); err != nil {
			return err
		}
		rep.Policies = policyIDs(pol)
		return nil
	})
	if err != nil {
		return rep, err
	}
	st, err := ReadLocalStatus(n.opts.StateDir)
	if err == nil {
		rep.Generation = st.Generation
	}
	return rep, nil
}

// policyIDs are the policies a checked tree's index names.
func policyIDs(files map[string][]byte) []string {
	var ix struct {
		Policies map[string]json.RawMessage `json:"policies"`
	}
	if json.Unmarshal(files[policy.IndexFile], &ix) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(ix.Policies))
}

// localFiles are a state directory's keys and policies as the local
// stores keep them, checked.
type localFiles struct {
	keys     []keys.Record
	policies map[string][]byte
}

// readLocal reads a state directory's keys.json and policies/ as the
// authority reads them (authority.ReadTree: through atomicfile, never
// following a link the service user planted, every file checked).
func readLocal(stateDir string) (localFiles, error) {
	sd, err := atomicfile.OpenDir(stateDir)
	if err != nil {
		return localFiles{}, fmt.Errorf("cluster: the state directory: %w", err)
	}
	defer sd.Close()
	t, err := authority.ReadTree(sd)
	if err != nil {
		return localFiles{}, fmt.Errorf("cluster: this node's keys and policies: %w", err)
	}
	out := localFiles{policies: t.Policies}
	if t.Keys != nil {
		out.keys, _ = keys.DecodeFile(t.Keys) // checked by ReadTree
	}
	return out, nil
}

// Disable ends cluster mode on this node: a last refresh makes its state
// directory a copy of the shared state (when pmxcfs can be read; else the
// mirror stays as last good), its report leaves pmxcfs (with quorum) and
// the daemon's status file goes. The shared files stay for the other
// nodes; from now on this node's keys and policies are its own.
func (n *Node) Disable(ctx context.Context) (LocalStatus, error) {
	st, rerr := n.Rescan(ctx)
	if rerr != nil {
		n.opts.Logger.Warn("cluster: disable: pmxcfs could not be read; the state directory keeps the last good mirror", "err", rerr)
	}
	if st.Quorate && st.Node != "" {
		if err := n.fs.Remove(path.Join(SharedDir, nodesDir, st.Node+".json")); err != nil {
			n.opts.Logger.Warn("cluster: disable: this node's report stays on pmxcfs", "err", err)
		}
	}
	sd, err := atomicfile.OpenDir(n.opts.StateDir)
	if err != nil {
		return st, fmt.Errorf("cluster: the state directory: %w", err)
	}
	defer sd.Close()
	if _, err := sd.Remove(StatusFile); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	return st, nil
}

// Run is the sync (`proxmox-mcp cluster sync`): a first refresh, then a
// cheap poll every poll interval (quorum, and cluster.json, which every
// change rewrites last) with a refresh when either moved, and a full
// refresh every rescan interval whatever happened (edits made by hand,
// the heartbeat). enabled, asked at each rescan, ends the sync with a
// nil error when cluster mode was turned off. Errors of one refresh are
// logged and reported in the status; the loop goes on.
func (n *Node) Run(ctx context.Context, enabled func() bool, ready func(LocalStatus)) error {
	if err := requireRoot(); err != nil {
		return err
	}
	st, err := n.Rescan(ctx)
	if err != nil {
		n.opts.Logger.Warn("cluster: refresh", "err", err)
	}
	if ready != nil {
		ready(st)
	}
	lastGen, lastQ := n.peek()
	lastFull := n.opts.Now()
	t := time.NewTicker(n.opts.Cluster.Poll())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		gen, q := n.peek()
		due := n.opts.Now().Sub(lastFull) >= n.opts.Cluster.Rescan()
		if due && !enabled() {
			n.opts.Logger.Info("cluster: cluster mode is off in the configuration; the sync stops")
			sd, err := atomicfile.OpenDir(n.opts.StateDir)
			if err == nil {
				sd.Remove(StatusFile) //nolint:errcheck // best effort: the daemon no longer reads it
				sd.Close()
			}
			return nil
		}
		if !due && q == lastQ && bytes.Equal(gen, lastGen) {
			continue
		}
		// A full read at each rescan; in between, only what changed.
		if _, err := n.refresh(ctx, due); err != nil && ctx.Err() == nil {
			n.opts.Logger.Warn("cluster: refresh", "err", err)
		}
		lastGen, lastQ, lastFull = gen, q, n.opts.Now()
	}
}

// peek is the poll's reading: cluster.json's bytes and the quorum.
func (n *Node) peek() ([]byte, bool) {
	gen, _ := n.fs.ReadFile(path.Join(SharedDir, generationFile))
	q, _ := n.fs.Quorate()
	return gen, q
}
