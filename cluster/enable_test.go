package cluster

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/cluster/pmxcfstest"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// localKeys is the node's key store before cluster mode.
func (n *testNode) localKeys(t *testing.T) *keys.Store {
	t.Helper()
	s, err := keys.Open(n.state, keys.Options{Params: fastParams, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cluster enable moves a node's keys and policies onto pmxcfs; another
// node's are merged beside them; a conflicting name, key or policy refuses
// the whole move and writes nothing; running it again changes nothing;
// disable leaves the node a copy and its report off pmxcfs.
func TestEnableAndDisable(t *testing.T) {
	c, nodes := simCluster(t, 3, pmxcfstest.Options{})
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()
	alice := create(t, n1.localKeys(t), "alice")
	local1, err := policy.NewStore(n1.state, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := local1.Draft(ctx, "ops", []byte(opsPolicy), []byte(opsTests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local1.Activate(ctx, "ops", d.Digest); err != nil {
		t.Fatal(err)
	}
	rep, err := n1.node.Enable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 1 || rep.Added[0] != alice.Record.ID || len(rep.Policies) != 1 || rep.Policies[0] != "ops" || rep.Generation != 1 {
		t.Fatalf("enable on pve1: %+v", rep)
	}
	again, err := n1.node.Enable(ctx)
	if err != nil || len(again.Added) != 0 || len(again.Present) != 1 || again.Generation != 1 {
		t.Fatalf("enable again: %+v, %v; want nothing new and no new generation", again, err)
	}

	// pve2 has its own key and another version of ops: both conflict.
	create(t, n2.localKeys(t), "alice")
	local2, err := policy.NewStore(n2.state, nil)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := local2.Draft(ctx, "ops", []byte(opsPolicy+"# other\n"), []byte(opsTests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local2.Activate(ctx, "ops", d2.Digest); err != nil {
		t.Fatal(err)
	}
	before := c.Files()
	_, err = n2.node.Enable(ctx)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 2 || !strings.Contains(err.Error(), `the name "alice"`) || !strings.Contains(err.Error(), "policy ops:") {
		t.Fatalf("enable on pve2 with a conflicting key name and policy: %v", err)
	}
	if after := c.Files(); len(after) != len(before) {
		t.Fatalf("a refused enable wrote to pmxcfs: %d files, were %d", len(after), len(before))
	}

	// pve3's own key joins beside pve1's.
	bob := create(t, n3.localKeys(t), "bob")
	if rep, err := n3.node.Enable(ctx); err != nil || len(rep.Added) != 1 || rep.Generation != 2 {
		t.Fatalf("enable on pve3: %+v, %v", rep, err)
	}
	ks := n3.keys(t)
	for _, id := range []string{alice.Record.ID, bob.Record.ID} {
		if _, err := ks.Get(id); err != nil {
			t.Fatalf("pve3 after enable: %v", err)
		}
	}
	if _, err := n3.policies(t).Active("ops"); err != nil {
		t.Fatalf("pve3 after enable lacks ops: %v", err)
	}

	st, err := n3.node.Disable(ctx)
	if err != nil || st.Keys != 2 {
		t.Fatalf("disable on pve3: %+v, %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(n3.state, StatusFile)); !os.IsNotExist(err) {
		t.Fatalf("disable left the daemon's status file (%v)", err)
	}
	if _, ok := c.Files()[SharedDir+"/nodes/pve3.json"]; ok {
		t.Fatal("disable left pve3's report on pmxcfs")
	}
	if _, err := n3.localKeys(t).Get(bob.Record.ID); err != nil {
		t.Fatalf("pve3's copy after disable: %v", err)
	}
}
