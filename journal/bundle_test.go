package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bundle holds an operation's rows (intent, receipt, resolution) and the
// later rows of its path, in one JSON document with a sidecar whose sum
// is the file's; it never overwrites, and an id that is not an operation
// is refused.
func TestBundle(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	in, err := j.Intent(ctx, writeCall())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeUncertain, Error: "answer lost"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Observe(ctx, Observation{Principal: alice(), PathTemplate: "/nodes/{node}/qemu/{vmid}/config", Path: "/nodes/pve1/qemu/100/config",
		Digest: "9d", Config: map[string]any{"memory": 4096}}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Resolve(ctx, Resolution{CallID: in.CallID, State: StateApplied, By: alice(), Reason: "seen applied",
		Evidence: []Evidence{{Kind: "config", Says: "memory is 4096", Digest: "9d"}}}); err != nil {
		t.Fatal(err)
	}
	read, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK})
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "op.json")
	art, err := j.Bundle(ctx, in.CallID, dest)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	var b Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	kinds := func(evs []Event) (out []string) {
		for _, e := range evs {
			out = append(out, string(e.Kind))
		}
		return out
	}
	if b.Format != BundleFormat || b.Operation != in.CallID || b.HeadID != 5 || strings.Join(kinds(b.Rows), ",") != "intent,receipt,resolution" ||
		strings.Join(kinds(b.History), ",") != "observation" {
		t.Fatalf("bundle %s: rows %v, history %v", b.Operation, kinds(b.Rows), kinds(b.History))
	}
	if b.Rows[0].Hash == "" || strings.Contains(string(data), "hunter2") {
		t.Error("rows without hashes, or a secret in the bundle")
	}
	sum := sha256.Sum256(data)
	side, _ := os.ReadFile(dest + SidecarSuffix)
	if art.SHA256 != hex.EncodeToString(sum[:]) || string(side) != art.SHA256+"  op.json\n" || art.Bytes != int64(len(data)) {
		t.Errorf("sidecar %q, artifact %+v", side, art)
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if _, err := j.Bundle(ctx, in.CallID, dest); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("overwrote: %v", err)
	}
	if _, err := j.Bundle(ctx, read.CallID, filepath.Join(t.TempDir(), "read.json")); !errors.Is(err, ErrNoIntent) {
		t.Errorf("a read bundled: %v", err)
	}
	if _, err := j.Bundle(ctx, "a b", filepath.Join(t.TempDir(), "x.json")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad id: %v", err)
	}
}
