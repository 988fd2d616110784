package policy

import (
	"testing"
	"time"
)

// An input built with the parts a policy keeps equals one built anew, the
// first time and when the parts are reused, and a part is never reused for
// an input that differs in what it is built from (another key in the same
// slot, the same key with another profile, another second or zone, another
// endpoint, a guard with hits).
func TestInputPartsEncodeAsBefore(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	at := time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC)
	build := func(method, path string, params map[string]any, p Principal, g Guard, now time.Time) *Input {
		t.Helper()
		ep, vars, err := reg.Match(method, path)
		if err != nil {
			t.Fatal(err)
		}
		in := BuildInput(ep, path, vars, params, p, g, now)
		return &in
	}
	alice := Principal{KeyID: "abcdefghijklmnop", Name: "alice", Profile: "operator", Transport: "loopback", Source: "127.0.0.1"}
	aliceAdmin := alice
	aliceAdmin.Profile = "admin"
	bob := Principal{KeyID: "qrstuvwxyzabcdef", Name: "bob", Profile: "read-only", Transport: "lan", Source: "10.0.0.2"}
	tailnet := alice
	tailnet.Transport, tailnet.Tailnet = "tailnet", &TailnetIdentity{User: "alice@example.com", Node: "laptop", Tags: []string{"tag:ci"}}
	berlin := time.FixedZone("CET", 3600)
	inputs := []*Input{
		build("POST", "/nodes/pve1/qemu/150/status/start", map[string]any{"timeout": 60}, alice, Guard{Evaluated: true}, at),
		build("POST", "/nodes/pve1/qemu/150/status/start", nil, aliceAdmin, Guard{Evaluated: true}, at),
		build("GET", "/nodes/pve1/qemu/150/status/current", nil, bob, Guard{}, at.Add(500*time.Millisecond)),
		build("GET", "/nodes/pve1/qemu/150/status/current", nil, bob, Guard{}, at.Add(time.Second)),
		build("GET", "/nodes/pve1/qemu/150/status/current", nil, bob, Guard{}, at.Add(time.Second).In(berlin)),
		build("DELETE", "/nodes/pve1/qemu/150", nil, tailnet, Guard{Evaluated: true, Hits: []GuardHit{{Kind: "vmid", Value: "150", Param: "vmid"}}}, at),
		build("GET", "/access/users", nil, alice, Guard{Evaluated: true}, at),
	}
	ps := newInputParts()
	for round := range 2 {
		for i, in := range inputs {
			want, err := in.Value()
			if err != nil {
				t.Fatal(err)
			}
			got, err := in.value(ps)
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(want) != 0 {
				t.Errorf("round %d, input %d: with the parts\n%v\nanew\n%v", round, i, got, want)
			}
		}
	}
	// Every key id lands in one of the slots: fill one slot with keys in
	// turn and check each still gets its own principal.
	for i := range 3 * principalSlots {
		p := alice
		p.KeyID = string(rune('a'+i%26)) + string(rune('a'+i/26)) + "cdefghijklmnop"
		in := build("GET", "/version", nil, p, Guard{}, at)
		want, _ := in.Value()
		got, err := in.value(ps)
		if err != nil || got.Compare(want) != 0 {
			t.Fatalf("key %s: with the parts %v (%v), anew %v", p.KeyID, got, err, want)
		}
	}
}
