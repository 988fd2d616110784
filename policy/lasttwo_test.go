package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// lastTwo keeps the two keys stored last; storing a key again makes it
// the last, so a registry swapped back in is not the next to go.
func TestLastTwo(t *testing.T) {
	tests := []struct {
		puts        []string
		wantDropped []string
		wantKept    []string
	}{
		{puts: []string{"a"}, wantKept: []string{"a"}},
		{puts: []string{"a", "b"}, wantKept: []string{"a", "b"}},
		{puts: []string{"a", "b", "c"}, wantDropped: []string{"a"}, wantKept: []string{"b", "c"}},
		{puts: []string{"a", "b", "c", "d"}, wantDropped: []string{"a", "b"}, wantKept: []string{"c", "d"}},
		{puts: []string{"a", "b", "a", "c"}, wantDropped: []string{"b"}, wantKept: []string{"a", "c"}},
		{puts: []string{"a", "a", "b", "c"}, wantDropped: []string{"a"}, wantKept: []string{"b", "c"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.puts), func(t *testing.T) {
			var l lastTwo[int]
			var dropped []string
			for i, k := range tt.puts {
				if d, ok := l.put(k, i); ok {
					dropped = append(dropped, d)
				}
			}
			if !slices.Equal(dropped, tt.wantDropped) {
				t.Errorf("dropped %v, want %v", dropped, tt.wantDropped)
			}
			for _, k := range []string{"a", "b", "c", "d"} {
				v, ok := l.get(k)
				if want := slices.Contains(tt.wantKept, k); ok != want {
					t.Errorf("%s kept: %v, want %v", k, ok, want)
				}
				if ok && tt.puts[v] != k {
					t.Errorf("%s holds the value of %s", k, tt.puts[v])
				}
			}
		})
	}
}

// distinctRegistries parses the PVE 9.1 schema n times, each with other
// bytes (another SHA-256), as a host whose apidoc.js is rewritten sees it.
func distinctRegistries(t *testing.T, n int) []*schema.Registry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedFixtures, pve91))
	if os.IsNotExist(err) {
		t.Skipf("real PVE fixture is not here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	regs := make([]*schema.Registry, n)
	for i := range regs {
		if regs[i], err = schema.Parse(fmt.Appendf(slices.Clip(data), "\n// version %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	return regs
}

// Reproduces: the visibility answers of a registry swapped out stayed in
// the cache until the least recently used went, one per policy and class
// of principal added at every swap (issue 16). The answers of the
// registry before the live one stay (calls in flight finish on it); older
// ones go.
func TestVisibilityForgetsSwappedOutRegistries(t *testing.T) {
	regs := distinctRegistries(t, 3)
	ctx := context.Background()
	e, err := NewEngine(ctx, nil, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	profiles := []string{"read-only", "operator"}
	list := func(reg *schema.Registry) {
		t.Helper()
		for _, p := range profiles {
			if _, err := e.VisibleTools(ctx, Binding{Profile: p}, Principal{KeyID: "k", Profile: p}, reg); err != nil {
				t.Fatal(err)
			}
		}
	}
	list(regs[0])
	list(regs[1])
	if st := e.VisibilityStats(); st.Entries != 4 {
		t.Fatalf("%d answers for two profiles on two registries, want 4", st.Entries)
	}
	list(regs[2])
	st := e.VisibilityStats()
	if st.Entries != 4 {
		t.Errorf("%d answers after a third registry, want 4 (the first registry's dropped)", st.Entries)
	}
	list(regs[1])
	if n := e.VisibilityStats().Computations; n != st.Computations {
		t.Errorf("the answers of the registry before the live one were dropped (%d computations, had %d)", n, st.Computations)
	}
	list(regs[0])
	if n := e.VisibilityStats().Computations; n != st.Computations+2 {
		t.Errorf("the first registry's answers were still cached (%d computations, want %d)", n, st.Computations+2)
	}
}
