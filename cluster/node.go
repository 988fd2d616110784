package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// Options configure this node's cluster mode.
type Options struct {
	// Cluster is the configuration's cluster section.
	Cluster config.Cluster
	// StateDir is the daemon's state directory, which the mirror writes.
	StateDir string
	// Version is this build's version, in the node's report.
	Version string
	// Logger receives what the sync does and what it keeps.
	Logger *slog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Node is this node's side of cluster mode, run as root: it reads pmxcfs,
// keeps root's cache, writes the mirror and the reports, and makes
// changes under the cluster lock. A Node serves one process; the sync and
// the CLI of one node take turns through the cache's lock.
type Node struct {
	opts Options
	fs   *FS

	mu sync.Mutex // one refresh or change at a time in this process
	// forced is set once this process has written the whole mirror.
	forced bool
	// lastStatus is the status last written, for rewriting it only on
	// change or as a heartbeat; lastReport likewise for the report.
	lastStatus LocalStatus
	lastReport Report
	// raw is the shared files as last read, with the read problems and
	// the cluster.json they went with: a refresh whose cluster.json is the
	// same reads nothing more, and one whose generation is the next reads
	// only the files that change wrote.
	raw         map[string][]byte
	rawProblems []Problem
	rawGen      []byte
	// memo holds the records of the key files last checked.
	memo memo
}

// Open returns this node's cluster mode. It needs root to do anything.
func Open(opts Options) (*Node, error) {
	if opts.Logger == nil {
		return nil, errors.New("cluster: Open needs a logger")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if !filepath.IsAbs(opts.StateDir) {
		return nil, fmt.Errorf("cluster: state directory %q must be absolute", opts.StateDir)
	}
	f, err := NewFS(opts.Cluster.Pmxcfs())
	if err != nil {
		return nil, err
	}
	return &Node{opts: opts, fs: f}, nil
}

// FS is the pmxcfs this node uses.
func (n *Node) FS() *FS { return n.fs }

// requireRoot refuses what only root can do: read and write priv/.
func requireRoot() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("cluster: only root reads and writes %s on pmxcfs (running as uid %d)", SharedDir, os.Geteuid())
	}
	return nil
}

// locked runs fn holding this process's lock and the node's cache lock,
// with the cache loaded; fn's cache changes are saved.
func (n *Node) locked(ctx context.Context, fn func(d *atomicfile.Dir, c *cache) error) error {
	if err := requireRoot(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	d, err := openCache(n.opts.Cluster.Cache())
	if err != nil {
		return err
	}
	defer d.Close()
	unlock, err := lockCache(ctx, d)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := loadCache(d)
	if c == nil {
		return err
	}
	if err != nil {
		n.opts.Logger.Warn("cluster: cache damaged", "err", err)
	}
	before, _ := json.Marshal(c)
	ferr := fn(d, c)
	if after, _ := json.Marshal(c); !bytes.Equal(before, after) {
		if err := saveCache(d, c); err != nil {
			return errors.Join(ferr, err)
		}
	}
	return ferr
}

// snapshot is one reading of pmxcfs.
type snapshot struct {
	quorate bool
	members Members
	raw     map[string][]byte // the shared files as read
	st      *state            // the good state they give
}

// read reads pmxcfs and checks what it holds against the cache's last
// good state. Unless full is set it reads as little as it can: nothing
// more than cluster.json when that is unchanged, and only the files the
// change named when the generation is the next one (a hand edit, which
// moves no generation, waits for a full read: each rescan).
func (n *Node) read(c *cache, full bool) (*snapshot, error) {
	q, err := n.fs.Quorate()
	if err != nil {
		return nil, err
	}
	m, err := n.fs.Members()
	if err != nil {
		return nil, err
	}
	gen, gerr := n.fs.ReadFile(path.Join(SharedDir, generationFile))
	var raw map[string][]byte
	var problems []Problem
	switch {
	case full || n.raw == nil || gerr != nil && !errors.Is(gerr, fs.ErrNotExist):
	case bytes.Equal(gen, n.rawGen):
		raw, problems = n.raw, n.rawProblems
	default:
		prev, perr := decodeGeneration(n.rawGen)
		next, nerr := decodeGeneration(gen)
		if perr == nil && nerr == nil && next.Generation == prev.Generation+1 && len(next.Paths) > 0 {
			raw, problems = readPaths(n.fs, n.raw, n.rawProblems, next.Paths)
		}
	}
	if raw == nil {
		if gen, raw, problems, err = readShared(n.fs); err != nil {
			return nil, err
		}
	}
	n.raw, n.rawProblems, n.rawGen = raw, problems, gen
	var st *state
	st, n.memo = checkMemo(gen, raw, problems, c.State, n.memo)
	return &snapshot{quorate: q, members: m, raw: raw, st: st}, nil
}

// Refresh reads what changed on pmxcfs since this process last read it
// (everything, the first time; see read), checks the shared files, keeps
// the good state as the last good one, mirrors it into the state
// directory when it changed (all of it on a process's first refresh), and
// writes the status the daemon reads and, with quorum, this node's
// report. When pmxcfs cannot be read the mirror stays as it is and the
// status says why.
func (n *Node) Refresh(ctx context.Context) (LocalStatus, error) { return n.refresh(ctx, false) }

// Rescan is Refresh reading every shared file, which also sees edits made
// by hand (they move no generation).
func (n *Node) Rescan(ctx context.Context) (LocalStatus, error) { return n.refresh(ctx, true) }

// refresh is Refresh, reading every shared file (full) or as little as
// it can (see read).
func (n *Node) refresh(ctx context.Context, full bool) (LocalStatus, error) {
	var out LocalStatus
	err := n.locked(ctx, func(_ *atomicfile.Dir, c *cache) error {
		var err error
		out, err = n.refreshLocked(ctx, c, full)
		return err
	})
	return out, err
}

func (n *Node) refreshLocked(ctx context.Context, c *cache, full bool) (LocalStatus, error) {
	now := n.opts.Now().UTC()
	snap, err := n.read(c, full)
	if err != nil {
		st := n.status(c, nil, now)
		st.Error = err.Error()
		n.writeStatus(st, now)
		return st, err
	}
	if snap.quorate != c.Quorate || c.QuorateSince.IsZero() {
		c.Quorate, c.QuorateSince = snap.quorate, now
		if !snap.quorate {
			n.opts.Logger.Warn("cluster: this node has no quorum; serving the last good keys and policies, refusing changes", "generation", snap.st.Generation)
		}
	}
	for _, p := range snap.st.Problems {
		if c.State == nil || !slices.Contains(c.State.Problems, p) {
			n.opts.Logger.Warn("cluster: a shared file failed its checks", "path", p.Path, "kept", p.Kept, "err", p.Err)
		}
	}
	c.State = snap.st
	m, changed, err := mirror(ctx, n.opts.StateDir, snap.st, c.Mirrored, !n.forced)
	if err != nil {
		st := n.status(c, snap, now)
		st.Error = err.Error()
		n.writeStatus(st, now)
		return st, err
	}
	n.forced = true
	if changed && m != c.Mirrored {
		c.Applied = now
		n.opts.Logger.Info("cluster: mirrored the shared keys and policies", "generation", snap.st.Generation, "state_dir", n.opts.StateDir)
	}
	c.Mirrored = m
	st := n.status(c, snap, now)
	n.writeStatus(st, now)
	if snap.quorate {
		n.writeReport(st, now)
	}
	return st, nil
}

// status is the LocalStatus of a reading (snap nil: pmxcfs unreadable).
func (n *Node) status(c *cache, snap *snapshot, now time.Time) LocalStatus {
	st := LocalStatus{Format: formatVersion, Quorate: c.Quorate, QuorateSince: c.QuorateSince, Applied: c.Applied, Checked: now}
	if snap != nil {
		st.Node, st.Members, st.Checked = snap.members.NodeName, membersOf(snap.members), now
	} else {
		st.Node, st.Members = n.lastStatus.Node, n.lastStatus.Members
		st.Checked = n.lastStatus.Checked
	}
	if s := c.State; s != nil {
		st.Generation, st.Changed, st.ChangedBy = s.Generation, s.Changed, s.ChangedBy
		st.Digest = digest(s.Files, "")
		st.Problems = s.Problems
		for p := range s.Files {
			if strings.HasPrefix(p, keysDir+"/") {
				st.Keys++
			}
		}
		if ix, ok := s.Files[path.Join(policiesDir, policy.IndexFile)]; ok {
			var v struct {
				Policies map[string]json.RawMessage `json:"policies"`
			}
			if json.Unmarshal(ix, &v) == nil {
				st.Policies = len(v.Policies)
			}
		}
	}
	return st
}

// writeStatus writes the daemon's status file when it changed, and at
// least once per rescan interval as the sync's heartbeat.
func (n *Node) writeStatus(st LocalStatus, now time.Time) {
	prev := n.lastStatus
	prev.Checked = st.Checked
	same, _ := json.Marshal(prev)
	cur, _ := json.Marshal(st)
	if bytes.Equal(same, cur) && now.Sub(n.lastStatus.Checked) < n.opts.Cluster.Rescan() {
		return
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = writeState(n.opts.StateDir, StatusFile, append(data, '\n'))
	}
	if err != nil {
		n.opts.Logger.Warn("cluster: cannot write the status for the daemon", "path", filepath.Join(n.opts.StateDir, StatusFile), "err", err)
		return
	}
	n.lastStatus = st
}

func writeState(stateDir, name string, data []byte) error {
	d, err := atomicfile.OpenDir(stateDir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data, 0o600)
}

// writeReport writes this node's report on pmxcfs when what it applied
// changed, and once a minute as a heartbeat.
func (n *Node) writeReport(st LocalStatus, now time.Time) {
	r := Report{Format: formatVersion, Node: st.Node, Generation: st.Generation, Digest: st.Digest, Applied: st.Applied, Heartbeat: now, Problems: st.Problems, Version: n.opts.Version}
	prev := n.lastReport
	prev.Heartbeat = now
	a, _ := json.Marshal(prev)
	b, _ := json.Marshal(r)
	if bytes.Equal(a, b) && now.Sub(n.lastReport.Heartbeat) < reportEvery {
		return
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = n.fs.MkdirAll(path.Join(SharedDir, nodesDir))
	}
	if err == nil {
		err = n.fs.WriteFile(path.Join(SharedDir, nodesDir, st.Node+".json"), append(data, '\n'))
	}
	if err != nil {
		n.opts.Logger.Warn("cluster: cannot write this node's report", "err", err)
		return
	}
	n.lastReport = r
}

// Change is keys.Shared and policy.Shared: fn runs on a root-owned
// staging copy of the shared state, under the cluster lock, and what it
// changed is written to pmxcfs, file by file (policy texts, the policy
// index, key files), then the generation. Without quorum nothing is
// attempted.
func (n *Node) Change(ctx context.Context, fn func(stateDir string) error) error {
	return n.change(ctx, func(c *cache, snap *snapshot, stage string) error { return fn(stage) })
}

// change takes the cluster lock, reads the shared state fresh, stages it,
// runs fn, writes back what differs and refreshes the mirror.
func (n *Node) change(ctx context.Context, fn func(c *cache, snap *snapshot, stage string) error) error {
	if err := requireRoot(); err != nil {
		return err
	}
	q, err := n.fs.Quorate()
	if err != nil {
		return err
	}
	if !q {
		return fmt.Errorf("cluster: key and policy changes are refused: %w", ErrNoQuorum)
	}
	ctx, cancel := context.WithTimeout(ctx, n.opts.Cluster.Lock()+lockHold)
	defer cancel()
	unlock, err := n.fs.Lock(ctx, LockID, n.opts.Cluster.Lock())
	if err != nil {
		return err
	}
	held := n.opts.Now()
	defer func() {
		if err := unlock(); err != nil {
			n.opts.Logger.Warn("cluster: unlock", "err", err)
		}
	}()
	return n.locked(ctx, func(d *atomicfile.Dir, c *cache) error {
		snap, err := n.read(c, false)
		if err != nil {
			return err
		}
		stage, err := os.MkdirTemp(d.Path(), "stage-")
		if err != nil {
			return fmt.Errorf("cluster: staging directory: %w", err)
		}
		defer os.RemoveAll(stage)
		before, err := materialize(stage, snap.st)
		if err != nil {
			return err
		}
		if err := fn(c, snap, stage); err != nil {
			return err
		}
		after, err := readStage(stage)
		if err != nil {
			return err
		}
		writes, removes := changes(before, after, snap.raw)
		if len(writes) == 0 && len(removes) == 0 {
			_, err := n.refreshLocked(ctx, c, false)
			return err
		}
		if d := n.opts.Now().Sub(held); d > lockHold {
			return fmt.Errorf("cluster: the change took %s, longer than the %s the cluster lock allows; nothing was written", d.Round(time.Second), lockHold)
		}
		gen, err := n.export(snap, writes, removes)
		if err != nil {
			n.raw = nil // partly written, perhaps: read everything next time
			return err
		}
		// What pmxcfs now holds, as written under the lock: the refresh
		// needs to read nothing back.
		raw := maps.Clone(snap.raw)
		maps.Copy(raw, writes)
		for _, p := range removes {
			delete(raw, p)
		}
		n.raw, n.rawGen = raw, gen
		if _, err := n.refreshLocked(ctx, c, false); err != nil {
			// Stored on every node already: the sync will mirror it.
			n.opts.Logger.Warn("cluster: the change is stored on pmxcfs; this node's mirror is not refreshed yet", "err", err)
		}
		return nil
	})
}

// materialize writes a state into a fresh staging directory as a state
// directory holds it (keys.json, policies/), and returns the state's
// files as export compares them: key files re-encoded, policies as they
// are.
func materialize(stage string, st *state) (map[string][]byte, error) {
	recs, err := st.records()
	if err != nil {
		return nil, err
	}
	data, err := keys.EncodeFile(recs)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, keys.FileName), data, 0o600); err != nil {
		return nil, fmt.Errorf("cluster: stage: %w", err)
	}
	for p, b := range st.policyFiles() {
		full := filepath.Join(stage, policiesDir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return nil, fmt.Errorf("cluster: stage: %w", err)
		}
		if err := os.WriteFile(full, b, 0o600); err != nil {
			return nil, fmt.Errorf("cluster: stage: %w", err)
		}
	}
	return readStage(stage)
}

// readStage reads a staging directory back as shared files: one file per
// key, and the policies the index names (checked: what a store wrote must
// pass the checks every node applies).
func readStage(stage string) (map[string][]byte, error) {
	out := map[string][]byte{}
	data, err := os.ReadFile(filepath.Join(stage, keys.FileName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cluster: stage: %w", err)
	}
	if err == nil {
		recs, err := keys.DecodeFile(data)
		if err != nil {
			return nil, fmt.Errorf("cluster: stage: %w", err)
		}
		for _, r := range recs {
			b, err := encodeKey(r)
			if err != nil {
				return nil, err
			}
			out[keyFileName(r.ID)] = b
		}
	}
	pol := map[string][]byte{}
	root := filepath.Join(stage, policiesDir)
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			return err
		}
		if e.IsDir() || e.Name() == policiesLock {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		pol[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: stage: %w", err)
	}
	good, err := policy.CheckTree(pol)
	if err != nil {
		return nil, fmt.Errorf("cluster: the staged policies fail their checks: %w", err)
	}
	for p, b := range good {
		out[path.Join(policiesDir, p)] = b
	}
	return out, nil
}

// changes is what export writes: key files that differ from before (a
// key file fn did not touch is left as it is on pmxcfs, even a malformed
// one, which keeps its last good content everywhere); and, when fn
// changed the policies, every policy file that differs from what pmxcfs
// holds and the removal of those the new index no longer names.
func changes(before, after, raw map[string][]byte) (writes map[string][]byte, removes []string) {
	writes = map[string][]byte{}
	for p, b := range after {
		if strings.HasPrefix(p, keysDir+"/") && !bytes.Equal(before[p], b) {
			writes[p] = b
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && strings.HasPrefix(p, keysDir+"/") {
			removes = append(removes, p)
		}
	}
	if !maps.EqualFunc(sub(before, policiesDir+"/"), sub(after, policiesDir+"/"), bytes.Equal) {
		for p, b := range after {
			if strings.HasPrefix(p, policiesDir+"/") && !bytes.Equal(raw[p], b) {
				writes[p] = b
			}
		}
		for p := range raw {
			if _, ok := after[p]; !ok && strings.HasPrefix(p, policiesDir+"/") {
				removes = append(removes, p)
			}
		}
	}
	slices.Sort(removes)
	return writes, removes
}

// export writes the changes and the next generation to pmxcfs, and
// returns the cluster.json it wrote. Every file is checked against
// pmxcfs's size limit before the first is written.
func (n *Node) export(snap *snapshot, writes map[string][]byte, removes []string) ([]byte, error) {
	for p, b := range writes {
		if len(b) > MaxFileSize {
			return nil, fmt.Errorf("cluster: %s would be %d bytes; pmxcfs holds at most %d per file; nothing was written", path.Join(n.fs.Root(), SharedDir, p), len(b), MaxFileSize)
		}
	}
	order := slices.Sorted(maps.Keys(writes))
	rank := func(p string) int {
		switch {
		case p == path.Join(policiesDir, policy.IndexFile):
			return 1
		case strings.HasPrefix(p, policiesDir+"/"):
			return 0
		default:
			return 2
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(a) - rank(b) })
	for _, p := range order {
		if err := n.fs.MkdirAll(path.Join(SharedDir, path.Dir(p))); err != nil {
			return nil, err
		}
		if err := n.fs.WriteFile(path.Join(SharedDir, p), writes[p]); err != nil {
			return nil, fmt.Errorf("%w (the change may be partly stored; `proxmox-mcp cluster status` shows the state)", err)
		}
	}
	for _, p := range removes {
		if err := n.fs.Remove(path.Join(SharedDir, p)); err != nil {
			return nil, err
		}
	}
	g := generation{Format: formatVersion, Generation: snap.st.Generation + 1, Changed: n.opts.Now().UTC(), Node: snap.members.NodeName,
		Paths: append(order, removes...)}
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cluster: encode %s: %w", generationFile, err)
	}
	data = append(data, '\n')
	if err := n.fs.WriteFile(path.Join(SharedDir, generationFile), data); err != nil {
		return nil, err
	}
	return data, nil
}

// Status is `cluster status`: the shared generation, every member and its
// report, and this node's mirror.
func (n *Node) Status(ctx context.Context) (ClusterStatus, error) {
	var out ClusterStatus
	err := n.locked(ctx, func(_ *atomicfile.Dir, c *cache) error {
		snap, err := n.read(c, false)
		if err != nil {
			return err
		}
		reports, problems := readReports(n.fs)
		out = ClusterStatus{
			Node: snap.members.NodeName, Quorate: snap.quorate, Shared: path.Join(n.fs.Root(), SharedDir),
			Generation: snap.st.Generation, Digest: digest(snap.st.Files, ""), Changed: snap.st.Changed, ChangedBy: snap.st.ChangedBy,
			Problems: append(slices.Clone(snap.st.Problems), problems...),
		}
		if snap.members.Cluster != nil {
			out.Cluster = snap.members.Cluster.Name
		}
		st := n.status(&cache{State: snap.st}, snap, n.opts.Now())
		out.Keys, out.Policies = st.Keys, st.Policies
		now := n.opts.Now()
		for _, m := range membersOf(snap.members) {
			ns := NodeStatus{Name: m.Name, Online: m.Online, Report: reports[m.Name]}
			if r := ns.Report; r != nil {
				ns.Current = r.Generation == out.Generation && r.Digest == out.Digest
				ns.Stale = now.Sub(r.Heartbeat) > staleReport
			}
			out.Nodes = append(out.Nodes, ns)
		}
		if ls, err := ReadLocalStatus(n.opts.StateDir); err == nil {
			out.Local = &ls
		}
		return nil
	})
	return out, err
}
