package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/cluster/pmxcfstest"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// BenchmarkRescan is one full refresh of a node (read and check every
// shared file through the simulated pmxcfs, compare with the cache,
// write the status) with 10 and 1000 shared keys and nothing changed:
// what the sync does every rescan interval.
func BenchmarkRescan(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			_, nodes := simCluster(b, 2, pmxcfstest.Options{})
			seedKeys(b, nodes[0], n)
			nodes[1].refresh(b)
			for b.Loop() {
				if _, err := nodes[1].node.Rescan(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKeyChange is a key creation made through the cluster lock
// with 10 and 1000 shared keys (lock, read, stage, run the store with a
// cheap scrypt, write one key file and the generation, refresh the
// mirror), and the other node's refresh that mirrors it: the work between
// `key create` and its effect on another node, without the poll's wait.
func BenchmarkKeyChange(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			_, nodes := simCluster(b, 2, pmxcfstest.Options{})
			seedKeys(b, nodes[0], n)
			store := nodes[0].keys(b)
			i := 0
			for b.Loop() {
				if _, err := store.Create(context.Background(), keys.CreateRequest{Name: fmt.Sprintf("new%d", i), Binding: keys.Binding{Profile: "read-only"}}); err != nil {
					b.Fatal(err)
				}
				if _, err := nodes[1].node.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// seedKeys writes n keys straight into the shared tree (as many key
// creations would) and returns their ids.
func seedKeys(b *testing.B, n *testNode, count int) []string {
	b.Helper()
	var ids []string
	err := n.node.Change(context.Background(), func(stateDir string) error {
		local, err := keys.Open(stateDir, keys.Options{Params: fastParams, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		for i := range count {
			c, err := local.Create(context.Background(), keys.CreateRequest{Name: fmt.Sprintf("k%d", i), Binding: keys.Binding{Profile: "read-only"}})
			if err != nil {
				return err
			}
			ids = append(ids, c.Record.ID)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ids
}
