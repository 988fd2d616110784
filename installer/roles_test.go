package installer

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// The simulator every daemon test runs against grants its tier tokens
// what install grants: the same roles per tier, and PMCPOperator with
// OperatorPrivileges (checked through PVE's own /access/permissions: the
// operator tier may do what read-only may, plus exactly those).
func TestTierRolesMatchSimulator(t *testing.T) {
	reg, err := schema.Parse(sim.DemoSchema())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range TierRoles() {
		tok, ok := s.Token("mcp@pve!" + tr.Tier)
		if !ok {
			t.Fatalf("the simulator has no %s token", tr.Tier)
		}
		got := strings.Split(tok.Role, ",")
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tr.Roles))
		if !slices.Equal(got, want) {
			t.Errorf("tier %s: the simulator grants %v, install grants %v", tr.Tier, got, want)
		}
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	privs := func(tier string) map[string]bool {
		tok, _ := s.Token("mcp@pve!" + tier)
		req, _ := http.NewRequest("GET", srv.URL+"/api2/json/access/permissions?path=/", nil)
		req.Header.Set("Authorization", tok.Header())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Data map[string]map[string]int `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: status %d, %v", tier, resp.StatusCode, err)
		}
		out := map[string]bool{}
		for p := range body.Data["/"] {
			out[p] = true
		}
		return out
	}
	ro, op := privs("read-only"), privs("operator")
	for p := range ro {
		if !op[p] {
			t.Errorf("the operator tier cannot %s, which read-only can", p)
		}
	}
	extra := slices.Sorted(maps.Keys(op))
	extra = slices.DeleteFunc(extra, func(p string) bool { return ro[p] })
	if !slices.Equal(extra, OperatorPrivileges()) {
		t.Errorf("the operator tier adds %v to read-only, want %v", extra, OperatorPrivileges())
	}
	for p := range ro {
		if !strings.HasSuffix(p, ".Audit") {
			t.Errorf("read-only holds %s, which is not an audit privilege", p)
		}
	}
}
