package policy

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/topdown"
)

// benchInput is a typical call: starting guest 150 on pve1.
func benchInput(b *testing.B, profile string) *Input {
	reg := fixtureRegistry(b, pve91)
	ep, vars, err := reg.Match("POST", "/nodes/pve1/qemu/150/status/start")
	if err != nil {
		b.Fatal(err)
	}
	in := BuildInput(ep, "/nodes/pve1/qemu/150/status/start", vars, map[string]any{"timeout": 60},
		Principal{KeyID: "abcdefghijklmnop", Name: "bench", Profile: profile, Transport: "loopback", Source: "127.0.0.1"},
		Guard{Evaluated: true}, time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC))
	return &in
}

// measure runs decide in b.Loop, timing every operation, and reports the
// median and the 99th percentile.
func measure(b *testing.B, c *Compiled, in *Input) {
	ctx := context.Background()
	if d := c.Decide(ctx, in, time.Second); d.Effect == Deny {
		b.Fatalf("benchmark call is denied: %+v", d)
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		c.Decide(ctx, in, time.Second)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkDecide: one decision per built-in profile and for the custom
// example vm-100-199, including building the Rego input.
func BenchmarkDecide(b *testing.B) {
	for _, prof := range Profiles() {
		if prof == ReadOnly {
			continue // read-only denies the call; its decision is measured on a read below
		}
		b.Run(prof, func(b *testing.B) {
			c, err := CompileBuiltin(context.Background(), prof)
			if err != nil {
				b.Fatal(err)
			}
			measure(b, c, benchInput(b, prof))
		})
	}
	b.Run(ReadOnly, func(b *testing.B) {
		c, err := CompileBuiltin(context.Background(), ReadOnly)
		if err != nil {
			b.Fatal(err)
		}
		reg := fixtureRegistry(b, pve91)
		ep, vars, err := reg.Match("GET", "/nodes/pve1/qemu/150/status/current")
		if err != nil {
			b.Fatal(err)
		}
		in := BuildInput(ep, "/nodes/pve1/qemu/150/status/current", vars, nil,
			Principal{KeyID: "abcdefghijklmnop", Profile: ReadOnly, Transport: "loopback"}, Guard{Evaluated: true}, time.Now())
		measure(b, c, &in)
	})
	b.Run("custom-vm-100-199", func(b *testing.B) {
		src, err := os.ReadFile("examples/vm-100-199.rego")
		if err != nil {
			b.Fatal(err)
		}
		c, err := CompileCustom(context.Background(), "vm-100-199", src)
		if err != nil {
			b.Fatal(err)
		}
		measure(b, c, benchInput(b, ""))
	})
}

// BenchmarkCompile: preparing a policy, once per change (the decision
// query and visibility's evaluation copy).
func BenchmarkCompile(b *testing.B) {
	b.Run("builtin-operator", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CompileBuiltin(context.Background(), Operator); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("custom-vm-100-199", func(b *testing.B) {
		src, err := os.ReadFile("examples/vm-100-199.rego")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CompileCustom(context.Background(), "vm-100-199", src); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The partial evaluation query, prepared when a listing first needs it
	// (custom policies whose decision reads what listing does not know).
	b.Run("custom-vm-100-199-partial", func(b *testing.B) {
		src, err := os.ReadFile("examples/vm-100-199.rego")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			c, err := CompileCustom(context.Background(), "vm-100-199", src)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.visible.get(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVisibleTools: the tool set of one principal over all 646
// endpoints of PVE 9.1.
//
//   - new-policy/POLICY: the first listing of a policy (its classes of
//     cases, then each class decided), the registry's cases built;
//   - seen-policy: the first listing of a new key whose policy was listed
//     for another key (a cache hit: built-in profiles read nothing of the
//     principal);
//   - per-endpoint: Compiled.Visible for each endpoint, no classes.
func BenchmarkVisibleTools(b *testing.B) {
	reg := fixtureRegistry(b, pve91)
	ctx := context.Background()
	e, err := NewEngine(ctx, nil, EngineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	lc, err := e.listingCases(reg)
	if err != nil {
		b.Fatal(err)
	}
	policies := map[string]*Compiled{}
	for _, prof := range Profiles() {
		policies[prof] = mustProfile(b, e, prof)
	}
	for _, ex := range []string{"vm-100-199", "working-hours", "tailnet-grant"} {
		src, err := os.ReadFile("examples/" + ex + ".rego")
		if err != nil {
			b.Fatal(err)
		}
		c, err := CompileCustom(ctx, ex, src)
		if err != nil {
			b.Fatal(err)
		}
		policies["custom-"+ex] = c
	}
	for _, name := range append(Profiles(), "custom-vm-100-199", "custom-working-hours", "custom-tailnet-grant") {
		b.Run("new-policy/"+name, func(b *testing.B) {
			c := policies[name]
			p := Principal{KeyID: "abcdefghijklmnop", Profile: name, Transport: "tailnet", Source: "100.64.0.9",
				Tailnet: &TailnetIdentity{User: "alice@example.com", Node: "laptop"}}
			principal, _, err := c.principalClass(p)
			if err != nil {
				b.Fatal(err)
			}
			var n visibilityCounts
			var tools []string
			b.ReportAllocs()
			for b.Loop() {
				c.groupMu.Lock()
				c.groups.reset()
				c.groupMu.Unlock()
				tools, n, err = c.visibleTools(ctx, topdown.NewCancel(), lc, principal)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tools)), "tools")
			b.ReportMetric(float64(n.classes), "classes")
			b.ReportMetric(float64(n.witnessed), "witnessed")
			b.ReportMetric(float64(n.partial), "partial")
		})
	}
	b.Run("seen-policy", func(b *testing.B) {
		if _, err := e.VisibleTools(ctx, Binding{Profile: Operator}, Principal{KeyID: "first", Profile: Operator}, reg); err != nil {
			b.Fatal(err)
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			p := Principal{KeyID: strconv.Itoa(i), Profile: Operator, Transport: "lan", Source: "10.0.0." + strconv.Itoa(i%250)}
			if _, err := e.VisibleTools(ctx, Binding{Profile: Operator}, p, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("registry-cases", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := newListingCases(reg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("per-endpoint/operator", func(b *testing.B) {
		c := policies[Operator]
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, ep := range reg.Endpoints() {
				ok, err := c.Visible(ctx, ep, Principal{Profile: Operator})
				if err != nil {
					b.Fatal(err)
				}
				if ok {
					n++
				}
			}
			if n == 0 {
				b.Fatal("nothing visible")
			}
		}
	})
}
