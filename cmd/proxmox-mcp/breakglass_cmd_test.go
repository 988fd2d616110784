package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// TestBreakglassHostCLI: a request a key made and confirmed is read and
// approved by root at the host (only with the digest it was shown), the
// runner executes it once, and the journal holds both steps linked by the
// request's id and digest.
func TestBreakglassHostCLI(t *testing.T) {
	work := rootWork(t, "break-glass is root's", 0o755)
	repo := filepath.Join(work, "model-repo")
	if err := os.MkdirAll(filepath.Join(repo, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "old", "w.bin"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(work, "config.hujson")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, `{"version": 1, "state_dir": %q, "protected": {"paths": [%q]}}`, state, repo), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := commandLink(t)
	cli := func(wantErr bool, args ...string) string {
		t.Helper()
		out, err := runCLI(bin, append(args, "--config", cfgPath)...)
		if (err != nil) != wantErr {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	cli(false, "breakglass", "rotate-key") // the installer's key, made here
	cfg, err := config.Resolve(cfgPath, "")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := host.OpenBreakglass(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := breakglass.Principal{KeyID: "k1", Name: "alice", Lineage: "k1", Profile: "root"}
	rec, err := svc.Request(context.Background(), alice, breakglass.Operation{Kind: breakglass.OpDeleteDirectory, Path: filepath.Join(repo, "old")})
	if err != nil {
		t.Fatal(err)
	}
	id := rec.Preview.ID
	if _, err := svc.Confirm(context.Background(), alice, id, rec.Phrase()); err != nil {
		t.Fatal(err)
	}
	svc.Close()

	if out := cli(false, "breakglass", "list"); !strings.Contains(out, id) || !strings.Contains(out, "awaiting_approval") {
		t.Fatalf("list:\n%s", out)
	}
	show := cli(false, "breakglass", "show", id)
	for _, want := range []string{rec.Digest, "delete the directory", "1 files and 0 directories", "key alice (k1)"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	// Without the digest nothing is approved; the preview is printed.
	if out := cli(true, "breakglass", "approve", id); !strings.Contains(out, "--digest "+rec.Digest) {
		t.Fatalf("approve without a digest:\n%s", out)
	}
	if out := cli(true, "breakglass", "approve", id, "--digest", strings.Repeat("0", 64)); !strings.Contains(out, "not the digest") {
		t.Fatalf("approve with another digest:\n%s", out)
	}
	cli(false, "breakglass", "approve", id, "--digest", rec.Digest)
	if out := cli(false, "breakglass", "run"); !strings.Contains(out, id+" done") {
		t.Fatalf("run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(repo, "old")); !os.IsNotExist(err) {
		t.Fatal("the directory is still there")
	}
	if out := cli(false, "breakglass", "show", id); !strings.Contains(out, "result     done") {
		t.Fatalf("show after the run:\n%s", out)
	}
	j, err := journal.Open(context.Background(), filepath.Join(host.HelperDir(state), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	evs, err := j.Tail(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		if e.JobID == id && e.Outcome == journal.OutcomeOK {
			seen[e.Tool] = true
		}
	}
	if !seen["breakglass approve"] || !seen["breakglass run"] {
		t.Fatalf("journal rows of %s: %v (and the denied approvals are rows too)", id, seen)
	}
}
