package policy

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
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

// BenchmarkCompile: preparing a policy, once per change (decision and
// visibility queries).
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
}

// BenchmarkVisibleTools: the tool set of one principal over all 646
// endpoints of PVE 9.1, uncached (the engine caches it per policy digest,
// registry and principal).
func BenchmarkVisibleTools(b *testing.B) {
	reg := fixtureRegistry(b, pve91)
	c, err := CompileBuiltin(context.Background(), Operator)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
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
	_ = schema.RiskRead
}
