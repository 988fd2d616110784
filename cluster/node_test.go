package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/cluster/pmxcfstest"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// requireFUSE skips without root and /dev/fuse, or fails when end-to-end
// tests are required (CI runs as root with FUSE).
func requireFUSE(t testing.TB) {
	t.Helper()
	if err := pmxcfstest.Available(); err != nil {
		if os.Getenv("PMCP_REQUIRE_E2E") == "1" {
			t.Fatalf("PMCP_REQUIRE_E2E=1 and the pmxcfs simulator cannot mount: %v", err)
		}
		t.Skipf("the pmxcfs simulator cannot mount here: %v", err)
	}
}

// testNode is one simulated node: its pmxcfs mount, its state directory
// (owned by uid 65534, as the service user's is) and root's cache.
type testNode struct {
	name  string
	sim   *pmxcfstest.Node
	node  *Node
	state string
	cfg   config.Cluster
}

// fastParams keep scrypt cheap in tests.
var fastParams = keys.Params{N: 1 << 10, R: 8, P: 1}

func (n *testNode) keys(t testing.TB) *keys.Store {
	t.Helper()
	s, err := keys.Open(n.state, keys.Options{Params: fastParams, Shared: n.node, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (n *testNode) policies(t testing.TB) *policy.Store {
	t.Helper()
	s, err := policy.NewSharedStore(n.state, nil, n.node)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (n *testNode) refresh(t testing.TB) LocalStatus {
	t.Helper()
	st, err := n.node.Refresh(context.Background())
	if err != nil {
		t.Fatalf("%s: refresh: %v", n.name, err)
	}
	return st
}

// simCluster mounts a simulated cluster of nodes named pve1, pve2, ...
func simCluster(t testing.TB, nodes int, opts pmxcfstest.Options) (*pmxcfstest.Cluster, []*testNode) {
	t.Helper()
	requireFUSE(t)
	for i := range nodes {
		opts.Nodes = append(opts.Nodes, "pve"+string(rune('1'+i)))
	}
	c, err := pmxcfstest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir() // removed after the unmounts (cleanups run last first)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	var out []*testNode
	for _, name := range opts.Nodes {
		mp, err := pmxcfstest.Mountpoint(base, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Node(name).Mount(mp); err != nil {
			t.Fatal(err)
		}
		out = append(out, newTestNode(t, base, name, c.Node(name)))
	}
	return c, out
}

func newTestNode(t testing.TB, base, name string, sim *pmxcfstest.Node) *testNode {
	t.Helper()
	state := filepath.Join(base, name, "state")
	if err := os.MkdirAll(state, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cfg := config.Cluster{Enabled: true, PmxcfsDir: sim.Dir(), CacheDir: filepath.Join(base, name, "cache"), LockTimeout: config.Duration(5 * time.Second)}
	n, err := Open(Options{Cluster: cfg, StateDir: state, Version: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &testNode{name: name, sim: sim, node: n, state: state, cfg: cfg}
}

func create(t testing.TB, s *keys.Store, name string) keys.Created {
	t.Helper()
	c, err := s.Create(context.Background(), keys.CreateRequest{Name: name, Binding: keys.Binding{Profile: "operator"}})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return c
}

// A key made on one node is in its own mirror at once, and in every other
// node's after a refresh; its revocation on a third node reaches all;
// each node reports what it applied.
func TestKeysAcrossNodes(t *testing.T) {
	_, nodes := simCluster(t, 3, pmxcfstest.Options{})
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	alice := create(t, n1.keys(t), "alice")
	if _, err := n1.keys(t).Get("alice"); err != nil {
		t.Fatalf("node 1's own mirror right after the create: %v", err)
	}
	for _, n := range nodes[1:] {
		st := n.refresh(t)
		if st.Generation != 1 || st.Keys != 1 || !st.Quorate || st.Node != n.name {
			t.Fatalf("%s's status: %+v", n.name, st)
		}
		got, err := n.keys(t).Get("alice")
		if err != nil || got.ID != alice.Record.ID || !reflect.DeepEqual(got.Hash, alice.Record.Hash) {
			t.Fatalf("%s mirrors alice as %+v, %v", n.name, got, err)
		}
	}
	// The mirror is the service user's, as the daemon needs it.
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(n2.state, keys.FileName), &st); err != nil || st.Uid != 65534 || st.Mode&0o777 != 0o600 {
		t.Fatalf("node 2's keys.json: uid %d mode %o (%v), want 65534 and 0600", st.Uid, st.Mode&0o777, err)
	}
	if _, err := n3.keys(t).Revoke(context.Background(), alice.Record.ID); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*testNode{n1, n2} {
		n.refresh(t)
		if got, err := n.keys(t).Get(alice.Record.ID); err != nil || got.Revoked.IsZero() {
			t.Fatalf("%s after the revocation on pve3: %+v, %v", n.name, got, err)
		}
	}
	cs, err := n1.node.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cs.Generation != 2 || len(cs.Nodes) != 3 || cs.ChangedBy != "pve3" {
		t.Fatalf("cluster status: %+v", cs)
	}
	for _, ns := range cs.Nodes {
		if ns.Report == nil || !ns.Current || ns.Stale || !ns.Online {
			t.Errorf("cluster status of %s: %+v (report %+v), want current", ns.Name, ns, ns.Report)
		}
	}
}

// Policies drafted on one node are activated on another by digest, and a
// key bound to the policy works on a third.
func TestPoliciesAcrossNodes(t *testing.T) {
	_, nodes := simCluster(t, 3, pmxcfstest.Options{})
	ctx := context.Background()
	d, err := nodes[0].policies(t).Draft(ctx, "ops", []byte(opsPolicy), []byte(opsTests))
	if err != nil {
		t.Fatal(err)
	}
	nodes[1].refresh(t)
	if _, err := nodes[1].policies(t).Activate(ctx, "ops", d.Digest); err != nil {
		t.Fatalf("activate on pve2 of the draft made on pve1: %v", err)
	}
	n3 := nodes[2]
	if st := n3.refresh(t); st.Policies != 1 {
		t.Fatalf("pve3 status: %+v, want one policy", st)
	}
	if v, err := n3.policies(t).Active("ops"); err != nil || v.Digest != d.Digest {
		t.Fatalf("pve3's active ops: %+v, %v", v, err)
	}
	if _, err := n3.keys(t).Create(ctx, keys.CreateRequest{Name: "bot", Binding: keys.Binding{Policy: "ops"}}); err != nil {
		t.Fatal(err)
	}
}

const opsPolicy = `package proxmox_mcp.policy

import data.proxmox_mcp.lib

decision := lib.allow("ops") if input.method == "GET"
`

const opsTests = `package proxmox_mcp.policy_test

import data.proxmox_mcp.policy

test_get if policy.decision.effect == "allow" with input as {"method": "GET"}
`

// Two nodes creating keys at once take turns under the cluster lock: both
// names are made when they differ, one is refused when they are the same.
func TestConcurrentCreates(t *testing.T) {
	_, nodes := simCluster(t, 3, pmxcfstest.Options{})
	for _, same := range []bool{false, true} {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			name := "k" + string(rune('a'+i))
			if same {
				name = "shared-name"
			}
			wg.Go(func() {
				_, errs[i] = nodes[i].keys(t).Create(context.Background(), keys.CreateRequest{Name: name, Binding: keys.Binding{Profile: "read-only"}})
			})
		}
		wg.Wait()
		if !same && (errs[0] != nil || errs[1] != nil) {
			t.Fatalf("two different names at once: %v", errs)
		}
		if same && (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("the same name at once from two nodes: %v, want exactly one ErrConflict", errs)
		}
		if same {
			if err := errors.Join(errs...); !errors.Is(err, keys.ErrConflict) {
				t.Fatalf("the refusal: %v, want ErrConflict", err)
			}
		}
	}
	recs, err := func() ([]keys.Record, error) { nodes[2].refresh(t); return nodes[2].keys(t).List() }()
	if err != nil || len(recs) != 3 {
		t.Fatalf("pve3 sees %d keys (%v), want ka, kb and one shared-name", len(recs), err)
	}
	if st := nodes[2].refresh(t); st.Generation != 3 {
		t.Fatalf("generation %d after three changes", st.Generation)
	}
}

// A node without quorum refuses changes with a clear error, keeps serving
// its last good keys, says so in its status, misses what the others do
// meanwhile, and catches up when quorum returns.
func TestQuorumLost(t *testing.T) {
	_, nodes := simCluster(t, 3, pmxcfstest.Options{})
	n1, n3 := nodes[0], nodes[2]
	alice := create(t, n1.keys(t), "alice")
	n3.refresh(t)
	n3.sim.SetQuorate(false)
	_, err := n3.keys(t).Create(context.Background(), keys.CreateRequest{Name: "carol", Binding: keys.Binding{Profile: "operator"}})
	if !errors.Is(err, ErrNoQuorum) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("create without quorum: %v, want ErrNoQuorum", err)
	}
	bob := create(t, n1.keys(t), "bob")
	st := n3.refresh(t)
	if st.Quorate || st.Generation != 1 {
		t.Fatalf("pve3's status without quorum: %+v", st)
	}
	if r := st.Readiness(time.Now(), time.Minute); !strings.Contains(r, "no quorum since") || !strings.Contains(r, "refused") {
		t.Fatalf("readiness without quorum: %q", r)
	}
	if _, err := n3.keys(t).Get(alice.Record.ID); err != nil {
		t.Fatalf("pve3 without quorum lost alice: %v", err)
	}
	if _, err := n3.keys(t).Get(bob.Record.ID); err == nil {
		t.Fatal("pve3 without quorum sees bob, made on the other side")
	}
	n3.sim.SetQuorate(true)
	if st := n3.refresh(t); !st.Quorate || st.Generation != 2 || st.Readiness(time.Now(), time.Minute) != "ok" {
		t.Fatalf("pve3 with quorum back: %+v", st)
	}
	if _, err := n3.keys(t).Get(bob.Record.ID); err != nil {
		t.Fatalf("pve3 with quorum back does not see bob: %v", err)
	}
}

// A node that joins late (empty cache and state directory) gets the whole
// shared state on its first refresh.
func TestLateJoin(t *testing.T) {
	c, nodes := simCluster(t, 2, pmxcfstest.Options{})
	alice := create(t, nodes[0].keys(t), "alice")
	if _, err := nodes[0].policies(t).Draft(context.Background(), "ops", []byte(opsPolicy), []byte(opsTests)); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	late := newTestNode(t, base, "late", c.Node("pve2"))
	if st := late.refresh(t); st.Keys != 1 || st.Generation != 2 {
		t.Fatalf("the late node's first status: %+v", st)
	}
	if got, err := late.keys(t).Get("alice"); err != nil || got.ID != alice.Record.ID {
		t.Fatalf("the late node's alice: %+v, %v", got, err)
	}
	if l, err := late.policies(t).List(); err != nil || len(l) != 1 || len(l[0].Drafts) != 1 {
		t.Fatalf("the late node's policies: %+v, %v", l, err)
	}
}

// A corrupted shared file keeps its last good content on every node and
// is named in the status; the other files still move; a repaired file
// clears the problem. A policies tree that fails its checks keeps its last
// good tree as a whole.
func TestCorruptedSharedFile(t *testing.T) {
	_, nodes := simCluster(t, 2, pmxcfstest.Options{})
	n1, n2 := nodes[0], nodes[1]
	ctx := context.Background()
	alice := create(t, n1.keys(t), "alice")
	d, err := n1.policies(t).Draft(ctx, "ops", []byte(opsPolicy), []byte(opsTests))
	if err != nil {
		t.Fatal(err)
	}
	n2.refresh(t)
	keyFile := filepath.Join(n1.sim.Dir(), SharedDir, "keys", alice.Record.ID+".json")
	good, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(`{"version":1,"keys":[{"id":"broken"`), 0o600); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(n1.sim.Dir(), SharedDir, "policies", "index.json")
	if err := os.WriteFile(index, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	bob := create(t, n1.keys(t), "bob") // a change made while the files are broken
	// The change's generation names bob's file only: an incremental
	// refresh reads that, and sees the hand edits at the next rescan.
	if st := n2.refresh(t); len(st.Problems) != 0 || st.Keys != 2 {
		t.Fatalf("pve2's incremental refresh: %+v, want bob and no problem seen yet", st)
	}
	st, err := n2.node.Rescan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 2 || !st.Problems[0].Kept || !st.Problems[1].Kept {
		t.Fatalf("pve2's problems: %+v, want the key file and the policies, both kept", st.Problems)
	}
	if r := st.Readiness(time.Now(), time.Minute); !strings.Contains(r, "keys/"+alice.Record.ID+".json") || !strings.Contains(r, "last good") {
		t.Fatalf("readiness: %q", r)
	}
	ks := n2.keys(t)
	if got, err := ks.Get(alice.Record.ID); err != nil || !reflect.DeepEqual(got.Hash, alice.Record.Hash) {
		t.Fatalf("pve2's alice with her shared file corrupted: %+v, %v", got, err)
	}
	if _, err := ks.Get(bob.Record.ID); err != nil {
		t.Fatalf("pve2 misses bob, made while another file was broken: %v", err)
	}
	if l, err := n2.policies(t).List(); err != nil || len(l) != 1 || l[0].Drafts[0] != d.Digest {
		t.Fatalf("pve2's policies with the shared index broken: %+v, %v", l, err)
	}
	// A change made on top of the broken key file leaves it alone.
	raw, _ := os.ReadFile(keyFile)
	if !bytes.Contains(raw, []byte("broken")) {
		t.Fatalf("bob's creation rewrote alice's broken file: %s", raw)
	}
	if err := os.WriteFile(keyFile, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.policies(t).Draft(ctx, "ops2", []byte(opsPolicy+"# two\n"), []byte(opsTests)); err != nil {
		t.Fatalf("a draft on top of a broken index: %v", err)
	}
	if st, err := n2.node.Rescan(context.Background()); err != nil || len(st.Problems) != 0 || st.Readiness(time.Now(), time.Minute) != "ok" {
		t.Fatalf("after the repair and a new draft: %+v, %v", st, err)
	}
	if l, err := n2.policies(t).List(); err != nil || len(l) != 2 {
		t.Fatalf("pve2's policies after a draft on the broken index: %+v, %v", l, err)
	}
}

// A lock left by a crashed change holds others off until pmxcfs removes
// it on an unlock request after its timeout; a lock that outlasts the
// wait is a LockError naming it.
func TestStaleLock(t *testing.T) {
	_, nodes := simCluster(t, 2, pmxcfstest.Options{LockTimeout: time.Second})
	lock := filepath.Join(nodes[0].sim.Dir(), "priv/lock", LockID)
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	create(t, nodes[1].keys(t), "alice")
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("the create waited %s for a lock pmxcfs keeps for 1 s", waited)
	}
	// pve1's kernel may still hold the entry of the lock pve2 removed
	// (FUSE caches entries for a second) and answer ENOENT meanwhile.
	for deadline := time.Now().Add(3 * time.Second); ; {
		err := os.Mkdir(lock, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f := nodes[1].node.FS()
	_, err := f.Lock(context.Background(), LockID, 300*time.Millisecond)
	var le *LockError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), lock[len(nodes[0].sim.Dir()):]) {
		t.Fatalf("a held lock: %v, want a LockError naming it", err)
	}
}

// Nothing over pmxcfs's 1 MiB per file is stored, and nothing of such a
// change is written.
func TestFileSizeLimit(t *testing.T) {
	_, nodes := simCluster(t, 1, pmxcfstest.Options{})
	big := opsPolicy + "# " + strings.Repeat("x", MaxFileSize) + "\n"
	_, err := nodes[0].policies(t).Draft(context.Background(), "big", []byte(big), []byte(opsTests))
	if err == nil || !strings.Contains(err.Error(), "at most 1048576") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("a 1 MiB policy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(nodes[0].sim.Dir(), SharedDir, generationFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused change bumped the generation (%v)", err)
	}
}

// The mirror writes into the service user's directory without following
// what the service user planted there, and root's cache must be root's.
func TestMirrorAndCacheRefuseTheServiceUser(t *testing.T) {
	_, nodes := simCluster(t, 1, pmxcfstest.Options{})
	n := nodes[0]
	create(t, n.keys(t), "alice")
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("root's file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(n.state, keys.FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(n.state, keys.FileName)); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(n.node.opts) // a new process: its first refresh writes everything
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "root's file\n" {
		t.Fatalf("the mirror wrote through the planted link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(n.state, keys.FileName)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("keys.json after the refresh: %v, %v; want the link replaced by the file", fi, err)
	}
	if err := os.Chown(n.cfg.CacheDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := n.node.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "root's alone") {
		t.Fatalf("a refresh with the cache owned by uid 65534: %v", err)
	}
}

// The root helper's copy in cluster mode: each refresh writes the state it
// checked into root's copy beside the state directory (root's alone), so
// a key made on another node verifies there, a revocation reaches it, and
// an edit of the state directory by the service user does not.
func TestRootsCopyForTheHelper(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: root's copy is root's")
	}
	_, nodes := simCluster(t, 2, pmxcfstest.Options{})
	n1, n2 := nodes[0], nodes[1]
	alice := create(t, n1.keys(t), "alice")
	n2.refresh(t)
	auth := authority.New(n2.state, nil, nil)
	var st syscall.Stat_t
	if err := syscall.Stat(auth.Dir(), &st); err != nil || st.Uid != 0 || st.Mode&0o077 != 0 {
		t.Fatalf("root's copy %s: uid %d mode %o (%v); want root's alone", auth.Dir(), st.Uid, st.Mode&0o777, err)
	}
	rootKeys, err := keys.Open(auth.Dir(), keys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := keys.NewVerifier(rootKeys, keys.VerifierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), alice.Key.Reveal(), "helper"); err != nil {
		t.Fatalf("alice, made on pve1, in pve2's copy for the helper: %v", err)
	}
	// The service user edits its state directory: the copy is not it.
	forged, err := keys.Open(n2.state, keys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mallory := create(t, forged, "mallory")
	if _, err := v.Verify(context.Background(), mallory.Key.Reveal(), "helper"); err == nil {
		t.Fatal("a key written into the state directory verifies in root's copy")
	}
	if _, err := n1.keys(t).Revoke(context.Background(), alice.Record.ID); err != nil {
		t.Fatal(err)
	}
	n2.refresh(t)
	v2, _ := keys.NewVerifier(rootKeys, keys.VerifierOptions{})
	if _, err := v2.Verify(context.Background(), alice.Key.Reveal(), "helper"); err == nil {
		t.Fatal("alice, revoked on pve1, still verifies in pve2's copy for the helper")
	}
}
