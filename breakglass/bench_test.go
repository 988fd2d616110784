package breakglass

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkGuardCheck decides a config change of a guest with the
// inventory warm: the guest's configuration (pending values, snapshots)
// is read from the in-memory simulator at each decision.
func BenchmarkGuardCheck(b *testing.B) {
	bed := newBed(b)
	g, err := NewGuard(repository, Options{PVE: bed.ro, ResolvePath: repoFS.resolve, MaxAge: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ep, vars, err := bed.reg.Match("PUT", "/nodes/pve1/qemu/100/config")
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"memory": 4096, "scsi2": "local-lvm:4"}
	g.Check(context.Background(), ep, vars, args)
	b.ReportAllocs()
	for b.Loop() {
		if got := g.Check(context.Background(), ep, vars, args); len(got.Hits) != 0 {
			b.Fatal(got.Hits)
		}
	}
}

// BenchmarkGuardInventory reads the whole inventory of the demo cluster
// (three nodes, one offline) from the in-memory simulator.
func BenchmarkGuardInventory(b *testing.B) {
	bed := newBed(b)
	g, err := NewGuard(repository, Options{PVE: bed.ro, ResolvePath: repoFS.resolve})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.load(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBreakglassProtocol is one whole request on a repository in a
// temporary directory: request (resolve, hash, preview, record),
// confirm, approve (sign, queue), and the runner (verify, nonce, resolve
// and compare again, delete the file, result).
func BenchmarkBreakglassProtocol(b *testing.B) {
	bed := newPBed(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := fmt.Sprintf("f%d", i)
		bed.write(name, "weights")
		b.StartTimer()
		rec, err := bed.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: bed.path(name)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bed.svc.Confirm(ctx, alice, rec.Preview.ID, rec.Phrase()); err != nil {
			b.Fatal(err)
		}
		if _, err := bed.svc.Approve(ctx, bob, rec.Preview.ID, rec.Digest); err != nil {
			b.Fatal(err)
		}
		if err := bed.svc.RunQueue(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
