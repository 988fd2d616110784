package plan

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var (
	demoOnce sync.Once
	demoReg  *schema.Registry
	demoErr  error
)

// demoRegistry is the simulator's built-in schema: real PVE shapes, always
// here (no fixtures needed).
func demoRegistry(tb testing.TB) *schema.Registry {
	tb.Helper()
	demoOnce.Do(func() { demoReg, demoErr = schema.Parse(sim.DemoSchema()) })
	if demoErr != nil {
		tb.Fatal(demoErr)
	}
	return demoReg
}

// recordingGuard remembers what it was shown and finds nothing.
type recordingGuard struct {
	mu     sync.Mutex
	vars   map[string]string
	values map[string]any
}

func (g *recordingGuard) Check(_ context.Context, _ *schema.Endpoint, vars map[string]string, values map[string]any) policy.Guard {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.vars, g.values = vars, values
	return policy.Guard{Evaluated: true}
}

// inputOf decides by handing back the input it was given, as the reason.
type inputOf struct{ last *policy.Input }

func (d *inputOf) Decide(_ context.Context, _ policy.Binding, in *policy.Input) policy.Decision {
	d.last = in
	return policy.Decision{Effect: policy.Allow, Reasons: []string{in.ConcretePath}}
}

func newBuilder(t testing.TB, sw *Switches) (*Builder, *recordingGuard, *inputOf) {
	t.Helper()
	reg := demoRegistry(t)
	g, d := &recordingGuard{}, &inputOf{}
	o := Options{Registry: func() *schema.Registry { return reg }, Guard: g, Policy: d,
		Now: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }}
	if sw != nil {
		o.Switches = func() Switches { return *sw }
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return b, g, d
}

var operator = Caller{Principal: policy.Principal{KeyID: "k", Profile: policy.Operator}, Binding: policy.Binding{Profile: policy.Operator}, Tier: "operator"}

// Every spelling of one call is one plan: the canonical path, the typed
// values, the targets, and what the guard and the policy see.
func TestSpellingsOfOneCallAreOnePlan(t *testing.T) {
	b, g, d := newBuilder(t, nil)
	want := "/nodes/pve1/qemu/100/status/stop"
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"plain", Request{Method: "POST", Path: want, Args: map[string]any{"timeout": 30.0}}},
		{"escaped and slashed", Request{Method: "post", Path: "/nodes/pve1/qemu/%31%30%30/status/stop/", Args: map[string]any{"timeout": "+030"}}},
		{"vars repeated in params", Request{Method: "POST", Path: want, Args: map[string]any{"vmid": 100.0, "node": "pve1", "timeout": "30"}}},
		{"expanded tool", Request{Endpoint: demoRegistry(t).Lookup("POST", "/nodes/{node}/qemu/{vmid}/status/stop"), Args: map[string]any{"vmid": "100", "node": "pve1", "timeout": 30.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := b.Build(context.Background(), operator, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if p.Path != want || d.last.ConcretePath != want {
				t.Errorf("path %q, policy saw %q; want %q", p.Path, d.last.ConcretePath, want)
			}
			if got := d.last.Params["timeout"]; got != int64(30) {
				t.Errorf("policy saw timeout %#v, want int64(30)", got)
			}
			if got := d.last.Params["vmid"]; got != int64(100) {
				t.Errorf("policy saw vmid %#v, want int64(100)", got)
			}
			if !reflect.DeepEqual(d.last.Targets.VMIDs, []int{100}) || !reflect.DeepEqual(d.last.Targets.Nodes, []string{"pve1"}) {
				t.Errorf("targets %+v", d.last.Targets)
			}
			if g.vars["vmid"] != "100" || g.values["timeout"] != int64(30) {
				t.Errorf("the guard saw vars %v, values %v", g.vars, g.values)
			}
			if p.Checked.Wire.Get("timeout") != "30" {
				t.Errorf("wire timeout %q", p.Checked.Wire.Get("timeout"))
			}
		})
	}
}

// Each step that refuses says which, with the outcome the journal records,
// and keeps what was known for the journal row.
func TestRefusalsNameTheirStage(t *testing.T) {
	off := Switches{}
	b, _, d := newBuilder(t, &off)
	for _, tc := range []struct {
		name    string
		req     Request
		stage   Stage
		outcome journal.Outcome
		field   string
		text    string
	}{
		{"no endpoint", Request{Method: "GET", Path: "/nodes/pve1/nonsense"}, StageMatch, journal.OutcomeInvalid, "path", "no such endpoint"},
		{"path and params disagree", Request{Method: "POST", Path: "/nodes/pve1/qemu/100/status/stop", Args: map[string]any{"vmid": 101.0}},
			StageArgs, journal.OutcomeInvalid, "vmid", "is 101 in params but \"100\" in the path"},
		{"expanded tool without its path variable", Request{Endpoint: demoRegistry(t).Lookup("POST", "/nodes/{node}/qemu/{vmid}/status/stop"), Args: map[string]any{"node": "pve1"}},
			StageArgs, journal.OutcomeInvalid, "vmid", "argument vmid is required: it is part of the path"},
		{"validation", Request{Method: "POST", Path: "/nodes/pve1/qemu/100/status/stop", Args: map[string]any{"timeout": "soon"}},
			StageValidate, journal.OutcomeInvalid, "", "type check ('integer') failed"},
		{"switch", Request{Method: "POST", Path: "/nodes/pve1/qemu/100/status/stop"}, StageSwitch, journal.OutcomeDenied, "", "allow_mutations switch is off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.last = nil
			_, err := b.Build(context.Background(), operator, tc.req)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Build: %v, want a *Refusal", err)
			}
			if r.Stage != tc.stage || r.Outcome != tc.outcome || r.Field != tc.field || !strings.Contains(r.Error(), tc.text) {
				t.Errorf("refusal %s/%s field %q: %v; want %s/%s %q containing %q", r.Stage, r.Outcome, r.Field, r.Err, tc.stage, tc.outcome, tc.field, tc.text)
			}
			if r.Plan == nil || (tc.stage != StageMatch && r.Plan.Endpoint == nil) {
				t.Errorf("the refusal keeps no plan for the journal: %+v", r.Plan)
			}
			if d.last != nil {
				t.Error("the policy was asked about a refused request")
			}
		})
	}
	// A read passes the switches.
	if _, err := b.Build(context.Background(), operator, Request{Method: "GET", Path: "/nodes/pve1/qemu/100/status/current"}); err != nil {
		t.Errorf("a read with writes off: %v", err)
	}
}

// The wire form a caller gets is a copy: adding the digest of a config
// edit does not change the plan.
func TestWireIsACopy(t *testing.T) {
	b, _, _ := newBuilder(t, nil)
	p, err := b.Build(context.Background(), operator, Request{Method: "PUT", Path: "/nodes/pve1/qemu/100/config", Args: map[string]any{"memory": "2048"}})
	if err != nil {
		t.Fatal(err)
	}
	w := p.Wire()
	w.Set("digest", "abc")
	if p.Checked.Wire.Get("digest") != "" {
		t.Error("Wire() shares its values with the plan")
	}
}

// FuzzPlanCanonical: whatever a caller sends, a plan that is built has a
// canonical path that plans again to the same endpoint, variables, values
// and path: the policy decides on one spelling of every call.
func FuzzPlanCanonical(f *testing.F) {
	for _, seed := range []struct{ method, path, arg string }{
		{"POST", "/nodes/pve1/qemu/100/status/stop", "30"},
		{"GET", "/nodes/pve1/qemu/%31%30%30/status/current/", ""},
		{"DELETE", "/nodes/pve1/storage/local/content/local%3A100%2Fvm-100-disk-0.qcow2", ""},
		{"PUT", "/nodes/pve%2F1/qemu/100/config", "+007"},
		{"GET", "/cluster/resources", "vm"},
	} {
		f.Add(seed.method, seed.path, seed.arg)
	}
	b, _, _ := newBuilder(f, nil)
	f.Fuzz(func(t *testing.T, method, path, arg string) {
		args := map[string]any{}
		if arg != "" {
			args["timeout"] = arg
		}
		p, err := b.Build(context.Background(), operator, Request{Method: method, Path: path, Args: args})
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || r.Plan == nil {
				t.Fatalf("Build(%q %q): %v is not a refusal with a plan", method, path, err)
			}
			return
		}
		again, err := b.Build(context.Background(), operator, Request{Method: p.Endpoint.Method, Path: p.Path, Args: args})
		if err != nil {
			t.Fatalf("the canonical path %q of %q does not plan: %v", p.Path, path, err)
		}
		if again.Endpoint != p.Endpoint || again.Path != p.Path || !reflect.DeepEqual(again.Vars, p.Vars) ||
			!reflect.DeepEqual(again.Checked.Values, p.Checked.Values) || !reflect.DeepEqual(url.Values(again.Checked.Wire), url.Values(p.Checked.Wire)) {
			t.Fatalf("%q and its canonical %q plan differently:\n%+v\n%+v", path, p.Path, p, again)
		}
	})
}
