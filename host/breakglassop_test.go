package host

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// bgBed is the helper with break-glass over its protected path: a second
// root key (another person), a rotation of the first (the same person),
// an operator key.
type bgBed struct {
	*helperBed
	svc                       *breakglass.Service
	root2, rootRotated, opKey string
}

func newBGBed(t *testing.T) *bgBed {
	h := newHelperBed(t)
	ctx := context.Background()
	b := &bgBed{helperBed: h}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	auth := authority.New(h.stateDir, log, nil)
	ks, err := keys.Open(h.stateDir, keys.Options{Params: fastParams, Shared: auth})
	must(t, err)
	c, err := ks.Create(ctx, keys.CreateRequest{Name: "carol", Binding: keys.Binding{Profile: "root"}})
	must(t, err)
	b.root2 = c.Key.Reveal()
	c, err = ks.Create(ctx, keys.CreateRequest{Name: "operator", Binding: keys.Binding{Profile: "operator"}})
	must(t, err)
	b.opKey = c.Key.Reveal()
	c, err = ks.Rotate(ctx, "root", keys.RotateRequest{Grace: time.Hour})
	must(t, err)
	b.rootRotated = c.Key.Reveal()
	must(t, os.WriteFile(filepath.Join(h.protected, "model.bin"), []byte("old"), 0o644))
	dir := filepath.Join(b.dir, "helper", "breakglass")
	must(t, os.MkdirAll(filepath.Dir(dir), 0o700))
	b.svc, err = breakglass.OpenService(breakglass.ServiceOptions{Dir: dir, Repository: breakglass.Repository{Paths: []string{h.protected}}})
	must(t, err)
	t.Cleanup(func() { b.svc.Close() })
	_, err = pki.CreateSigningKey(filepath.Join(dir, breakglass.KeyFile))
	must(t, err)
	rootKeys, err := keys.Open(auth.Dir(), keys.Options{Params: fastParams})
	must(t, err)
	opts := h.srv.opts
	opts.Breakglass, opts.Lineage = b.svc, Lineage(rootKeys)
	h.srv, err = NewServer(opts)
	must(t, err)
	return b
}

func (b *bgBed) step(t *testing.T, key, op string, args any) (Response, AnswerView) {
	t.Helper()
	resp := b.srv.Handle(context.Background(), daemon, request(t, key, op, args))
	var a AnswerView
	if resp.OK {
		must(t, json.Unmarshal(resp.Result, &a))
	}
	return resp, a
}

// AnswerView is a step's answer as a client reads it.
type AnswerView struct {
	breakglass.Record
	State  string `json:"state"`
	Phrase string `json:"phrase"`
	Next   string `json:"next"`
}

func TestHelperBreakglassProtocol(t *testing.T) {
	b := newBGBed(t)
	content := "new model"
	sum := sha256.Sum256([]byte(content))
	sha := hex.EncodeToString(sum[:])
	target := filepath.Join(b.protected, "model.bin")

	// An admin key can neither stage nor request.
	resp, _ := b.step(t, b.admin, OpBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": target}})
	if resp.OK || resp.Error.Code != "denied" || !strings.Contains(resp.Error.Message, "admin") {
		t.Fatalf("an admin's request: %+v", resp.Error)
	}
	resp, _ = b.step(t, b.admin, OpBreakglassStage, map[string]any{"sha256": sha, "size": len(content), "offset": 0, "content": base64.StdEncoding.EncodeToString([]byte(content))})
	if resp.OK {
		t.Fatal("an admin staged content")
	}
	resp, _ = b.step(t, b.rootKey, OpBreakglassStage, map[string]any{"sha256": sha, "size": len(content), "offset": 0, "content": base64.StdEncoding.EncodeToString([]byte(content))})
	if !resp.OK {
		t.Fatalf("stage: %+v", resp.Error)
	}
	// A target outside the repository, a sibling by prefix.
	resp, _ = b.step(t, b.rootKey, OpBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": b.protected + "-notes/x"}})
	if resp.OK || resp.Error.Code != "bad_request" || resp.Error.Field != "operation.path" {
		t.Fatalf("a sibling: %+v", resp.Error)
	}
	resp, a := b.step(t, b.rootKey, OpBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "put_file", "path": target, "sha256": sha, "size": len(content)}})
	if !resp.OK || a.State != breakglass.StateAwaitingConfirmation || a.Phrase == "" || a.Digest == "" {
		t.Fatalf("request: %+v %+v", resp.Error, a)
	}
	id := a.Preview.ID
	// Only the requester confirms first; nobody approves before it.
	if resp, _ := b.step(t, b.root2, "breakglass.confirm", map[string]any{"id": id, "phrase": a.Phrase}); resp.OK {
		t.Fatal("another key gave the requester's confirmation")
	}
	if resp, _ := b.step(t, b.rootKey, "breakglass.confirm", map[string]any{"id": id, "phrase": a.Phrase}); !resp.OK {
		t.Fatalf("confirm: %+v", resp.Error)
	}
	// The requester, under its own key or its rotation, never approves.
	for _, k := range []string{b.rootKey, b.rootRotated} {
		resp, _ := b.step(t, k, OpBreakglassApprove, map[string]any{"id": id, "digest": a.Digest})
		if resp.OK || resp.Error.Code != "denied" || !strings.Contains(resp.Error.Message, "own approver") {
			t.Fatalf("self-approval: %+v", resp.Error)
		}
	}
	// An operator's policy does not allow approvals.
	if resp, _ := b.step(t, b.opKey, OpBreakglassApprove, map[string]any{"id": id, "digest": a.Digest}); resp.OK || resp.Error.Code != "denied" {
		t.Fatalf("an operator approves: %+v", resp.Error)
	}
	resp, a = b.step(t, b.root2, OpBreakglassApprove, map[string]any{"id": id, "digest": a.Digest})
	if !resp.OK || a.State != breakglass.StateQueued || a.Approver.Name != "carol" {
		t.Fatalf("approve: %+v %+v", resp.Error, a)
	}
	if err := b.svc.RunQueue(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("the file holds %q", got)
	}
	resp, a = b.step(t, b.root2, OpBreakglassStatus, map[string]any{"id": id})
	if !resp.OK || a.State != breakglass.OutcomeDone {
		t.Fatalf("status: %+v %+v", resp.Error, a)
	}
	// The journal links the steps by the request and its digest.
	evs, err := b.j.Tail(context.Background(), 100)
	must(t, err)
	linked := map[string]bool{}
	for _, e := range evs {
		if e.Kind == journal.KindReceipt && e.JobID == id {
			linked[e.Tool] = true
		}
	}
	for _, tool := range []string{"proxmox_breakglass_request", "proxmox_breakglass_confirm", "proxmox_breakglass_approve"} {
		if !linked[tool] {
			t.Errorf("no receipt of %s names %s: %v", tool, id, linked)
		}
	}
}

// TestHostGuardMatchesWholePathElements: the guard in the host's view
// flags a write at, beneath or above a protected path, and never one of a
// sibling whose name merely starts the same (the reference server matched
// protected names as substrings).
func TestHostGuardMatchesWholePathElements(t *testing.T) {
	protected := []string{"/mnt/model-repo"}
	for _, c := range []struct {
		path string
		hit  bool
	}{
		{"/mnt/model-repo", true},
		{"/mnt/model-repo/llama/w.bin", true},
		{"/mnt", true},
		{"/mnt/model-repo-notes/x", false},
		{"/mnt/model-repository", false},
		{"/mnt/model", false},
	} {
		in := PolicyInput(policy.Principal{KeyID: "k"}, policy.HostOp{Op: "file.write", Path: c.path}, protected)
		if got := len(in.Guard.Hits) > 0; got != c.hit {
			t.Errorf("a write to %s: guard hit %v, want %v (%+v)", c.path, got, c.hit, in.Guard.Hits)
		}
	}
	// A command's writable path is judged the same way.
	in := PolicyInput(policy.Principal{KeyID: "k"}, policy.HostOp{Op: "command.exec", Command: &policy.Command{Path: "/usr/bin/true", Writable: []string{"/mnt/model-repo-notes", "/mnt/model-repo/x"}}}, protected)
	if len(in.Guard.Hits) != 1 || in.Guard.Hits[0].Param != "writable[1]" {
		t.Errorf("a command's writable paths: %+v", in.Guard.Hits)
	}
}

// personsPolicy approves break-glass requests, but knows that the keys
// root and pat-approver are one person's (pat): it refuses an approval
// between them, reading the requester in input.host.breakglass.
const personsPolicy = `package proxmox_mcp.policy

import rego.v1

persons := {"root": "pat", "pat-approver": "pat", "dave": "dee"}

default decision := {"effect": "deny", "reasons": ["no API"], "obligations": []}

default host_decision := {"effect": "deny", "reasons": ["only another person's break-glass approvals"], "obligations": []}

host_decision := {"effect": "allow", "reasons": ["another person approves"], "obligations": []} if {
	input.host.op in {"breakglass.approve", "breakglass.status"}
	not same_person
}

same_person if {
	persons[input.principal.name] == persons[input.host.breakglass.requester.name]
}
`

// TestHelperBreakglassPolicyKnowsPersons: two keys of one person are two
// principals to the helper, and a policy that knows they are one refuses
// the approval; another person's key approves.
func TestHelperBreakglassPolicyKnowsPersons(t *testing.T) {
	b := newBGBed(t)
	ctx := context.Background()
	auth := authority.New(b.stateDir, nil, nil)
	ps, err := policy.NewStore(auth.Dir(), nil)
	must(t, err)
	tests := []byte(`package proxmox_mcp.policy_test

import rego.v1

import data.proxmox_mcp.policy

test_one_person_does_not_approve_itself if {
	policy.host_decision.effect == "deny" with input as {"principal": {"name": "pat-approver"}, "host": {"op": "breakglass.approve", "breakglass": {"requester": {"name": "root"}}}}
}

test_another_person_approves if {
	policy.host_decision.effect == "allow" with input as {"principal": {"name": "dave"}, "host": {"op": "breakglass.approve", "breakglass": {"requester": {"name": "root"}}}}
}
`)
	dr, err := ps.Draft(ctx, "persons", []byte(personsPolicy), tests)
	must(t, err)
	_, err = ps.Activate(ctx, "persons", dr.Digest)
	must(t, err)
	ks, err := keys.Open(b.stateDir, keys.Options{Params: fastParams, Shared: auth})
	must(t, err)
	mk := func(name string) string {
		c, err := ks.Create(ctx, keys.CreateRequest{Name: name, Binding: keys.Binding{Policy: "persons"}})
		must(t, err)
		return c.Key.Reveal()
	}
	pat, dee := mk("pat-approver"), mk("dave")
	target := filepath.Join(b.protected, "model.bin")
	resp, a := b.step(t, b.rootKey, OpBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": target}})
	if !resp.OK {
		t.Fatalf("request: %+v", resp.Error)
	}
	id := a.Preview.ID
	if resp, _ := b.step(t, b.rootKey, "breakglass.confirm", map[string]any{"id": id, "phrase": a.Phrase}); !resp.OK {
		t.Fatalf("confirm: %+v", resp.Error)
	}
	resp, _ = b.step(t, pat, OpBreakglassApprove, map[string]any{"id": id, "digest": a.Digest})
	if resp.OK || resp.Error.Code != "denied" || !strings.Contains(resp.Error.Message, "another person") {
		t.Fatalf("pat's other key approves: %+v", resp.Error)
	}
	resp, got := b.step(t, dee, OpBreakglassApprove, map[string]any{"id": id, "digest": a.Digest})
	if !resp.OK || got.State != breakglass.StateQueued {
		t.Fatalf("dee approves: %+v", resp.Error)
	}
}
