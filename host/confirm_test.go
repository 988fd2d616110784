package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

const confirmWrites = `package proxmox_mcp.policy

import rego.v1

default decision := {"effect": "deny", "reasons": ["no API"], "obligations": []}

default host_decision := {"effect": "deny", "reasons": ["only writes, confirmed"], "obligations": []}

host_decision := {"effect": "confirm", "reasons": ["writing a host file needs confirmation"], "obligations": [{"type": "confirm", "approver": "self"}]} if {
	input.host.op == "file.write"
}
`

// A policy that asks the caller to confirm a host write: the helper
// answers with a token of its own and writes only when the same call
// comes back with it, once; a token of another call, a made-up one or a
// used one is refused, and nothing is written.
func TestHelperConfirmations(t *testing.T) {
	h := newHelperBed(t)
	ctx := context.Background()
	auth := authority.New(h.stateDir, nil, nil)
	ps, err := policy.NewStore(auth.Dir(), nil)
	must(t, err)
	tests := []byte(`package proxmox_mcp.policy_test

import rego.v1

import data.proxmox_mcp.policy

test_writes_confirm if {
	policy.host_decision.effect == "confirm" with input as {"host": {"op": "file.write", "path": "/srv/x"}}
}

test_reads_are_denied if {
	policy.host_decision.effect == "deny" with input as {"host": {"op": "file.read", "path": "/srv/x"}}
}
`)
	dr, err := ps.Draft(ctx, "confirm-writes", []byte(confirmWrites), tests)
	must(t, err)
	_, err = ps.Activate(ctx, "confirm-writes", dr.Digest)
	must(t, err)
	ks, err := keys.Open(h.stateDir, keys.Options{Params: fastParams, Shared: auth})
	must(t, err)
	k, err := ks.Create(ctx, keys.CreateRequest{Name: "carol", Binding: keys.Binding{Policy: "confirm-writes"}})
	must(t, err)
	carol := k.Key.Reveal()
	target := filepath.Join(h.root, "confirmed.conf")
	write := func(content, token string) Response {
		a, _ := json.Marshal(map[string]any{"path": target, "content": content, "sha256": sum([]byte(content))})
		body, _ := json.Marshal(Request{V: WireVersion, ID: "c-1", Key: carol, Op: "file.write", Args: a, Confirm: token})
		return h.srv.Handle(ctx, daemon, body)
	}
	first := write("a = 1\n", "")
	if first.OK || first.Error == nil || first.Error.Code != "confirm" || !strings.HasPrefix(first.Error.Token, "pmhc_") || !strings.Contains(first.Error.Message, "needs confirmation") || strings.Contains(first.Error.Message, first.Error.Token) {
		t.Fatalf("the first call: %+v; want a confirmation token", first.Error)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("the file was written before the confirmation")
	}
	other := write("a = 2\n", "")
	for _, tc := range []struct{ name, content, token, says string }{
		{"another call's token", "a = 1\n", other.Error.Token, "another key or operation"},
		{"this token for other content", "a = 3\n", first.Error.Token, "another key or operation"},
		{"a made-up token", "a = 1\n", "pmhc_99999999999_00000000000000000000000000000000", "another key or operation"},
		{"not a token", "a = 1\n", "yes", "not a token"},
	} {
		resp := write(tc.content, tc.token)
		if resp.OK || resp.Error == nil || resp.Error.Code != "denied" || !strings.Contains(resp.Error.Message, tc.says) {
			t.Errorf("%s: %+v; want denied saying %q", tc.name, resp.Error, tc.says)
		}
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("a refused confirmation wrote the file")
	}
	if resp := write("a = 1\n", first.Error.Token); !resp.OK {
		t.Fatalf("the confirmed call: %+v", resp.Error)
	}
	if got, _ := os.ReadFile(target); string(got) != "a = 1\n" {
		t.Errorf("the file holds %q", got)
	}
	if resp := write("a = 1\n", first.Error.Token); resp.OK || !strings.Contains(resp.Error.Message, "used already") {
		t.Errorf("the token used again: %+v", resp.Error)
	}
	rows, err := h.j.Tail(ctx, 100)
	must(t, err)
	var confirms, oks int
	for _, r := range rows {
		switch r.Outcome {
		case journal.OutcomeConfirm:
			confirms++
		case journal.OutcomeOK:
			oks++
		}
	}
	if confirms != 2 || oks != 1 {
		t.Errorf("the helper journaled %d confirmations asked and %d done; want 2 and 1", confirms, oks)
	}
	if !h.srv.confirms.waiting() {
		t.Error("the helper would exit for idleness while its tokens are valid")
	}
}
