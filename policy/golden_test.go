package policy

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

// sampleCall makes a concrete call of ep: path variables get sample values,
// and when is the parameter that raises the risk (or "").
func sampleCall(ep *schema.Endpoint, when string) (string, map[string]string, map[string]any) {
	samples := map[string]string{"node": "pve1", "vmid": "100", "storage": "local", "snapname": "before-upgrade",
		"volume": "local:100/vm-100-disk-0.qcow2", "service": "pveproxy", "userid": "alice@pve", "tokenid": "ci", "poolid": "lab"}
	vars := map[string]string{}
	segs := strings.Split(ep.Path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			name := strings.Trim(s, "{}")
			v, ok := samples[name]
			if !ok {
				v = "x"
			}
			vars[name] = v
			segs[i] = v
		}
	}
	args := map[string]any{}
	if when != "" {
		args[when] = true
	}
	return strings.Join(segs, "/"), vars, args
}

type goldenRow struct {
	ep      *schema.Endpoint
	when    string
	risk    schema.Risk
	effects map[string]Decision
}

func goldenRows(t *testing.T, reg *schema.Registry, compiled map[string]*Compiled) []goldenRow {
	ctx := context.Background()
	now := time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC)
	var rows []goldenRow
	for _, ep := range reg.Endpoints() {
		whens := []string{""}
		for _, c := range ep.RiskConditions() {
			whens = append(whens, c.Param)
		}
		for _, when := range whens {
			concrete, vars, args := sampleCall(ep, when)
			row := goldenRow{ep: ep, when: when, risk: ep.CallRisk(args), effects: map[string]Decision{}}
			for _, prof := range Profiles() {
				p := Principal{KeyID: "golden0000000000", Name: "golden", Profile: prof, Transport: "loopback", Source: "127.0.0.1"}
				in := BuildInput(ep, concrete, vars, args, p, Guard{Evaluated: true}, now)
				row.effects[prof] = compiled[prof].Decide(ctx, &in, time.Second)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func compileBuiltins(t testing.TB) map[string]*Compiled {
	t.Helper()
	out := map[string]*Compiled{}
	for _, prof := range Profiles() {
		c, err := CompileBuiltin(context.Background(), prof)
		if err != nil {
			t.Fatalf("CompileBuiltin(%s): %v", prof, err)
		}
		out[prof] = c
	}
	return out
}

// The decision of every built-in profile for every endpoint of PVE 9.1 (and
// for each parameter that raises an endpoint's risk) is recorded in
// testdata/decisions-pve-9.1.golden, with the tool's visibility. A change
// of a profile shows up as a diff: review it, then go test ./policy -update.
func TestGoldenDecisions(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	compiled := compileBuiltins(t)
	rows := goldenRows(t, reg, compiled)
	visible := map[string]map[string]bool{}
	for _, prof := range Profiles() {
		visible[prof] = map[string]bool{}
		for _, ep := range reg.Endpoints() {
			ok, err := compiled[prof].Visible(context.Background(), ep, Principal{Profile: prof})
			if err != nil {
				t.Fatal(err)
			}
			visible[prof][ep.Key()] = ok
		}
	}
	var b strings.Builder
	b.WriteString("# The decision of each built-in profile for each endpoint of PVE 9.1 (policy/golden_test.go).\n")
	b.WriteString("# A call with sample path values and no parameters, and with each parameter that raises the\n")
	b.WriteString("# endpoint's risk (\"when PARAM\"). A trailing \"!\" marks a tool hidden from the profile.\n")
	fmt.Fprintf(&b, "# %-6s %-62s %-11s  %-11s %-11s %-11s %s\n", "method", "path", "risk", "read-only", "operator", "admin", "root")
	counts := map[string]map[Effect]int{}
	for _, row := range rows {
		path := row.ep.Path
		if row.when != "" {
			path += " when " + row.when
		}
		fmt.Fprintf(&b, "%-8s %-62s %-11s", row.ep.Method, path, row.risk)
		for _, prof := range Profiles() {
			d := row.effects[prof]
			cell := string(d.Effect)
			if !visible[prof][row.ep.Key()] {
				cell += "!"
			}
			fmt.Fprintf(&b, "  %-10s", cell)
			if counts[prof] == nil {
				counts[prof] = map[Effect]int{}
			}
			if row.when == "" {
				counts[prof][d.Effect]++
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("# per profile, calls without parameters:")
	for _, prof := range Profiles() {
		fmt.Fprintf(&b, " %s %v;", prof, counts[prof])
	}
	b.WriteString("\n")
	b.WriteString(hostReachGolden(t, reg, compiled))
	got := strings.ReplaceAll(b.String(), " \n", "\n")
	for strings.Contains(got, " \n") {
		got = strings.ReplaceAll(got, " \n", "\n")
	}
	golden := filepath.Join("testdata", "decisions-pve-9.1.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./policy -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("decisions differ from %s; review the diff, then go test ./policy -update", golden)
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
				break
			}
		}
	}
	if n := len(reg.Endpoints()); n != 646 {
		t.Errorf("%d endpoints, want the 646 of PVE 9.1", n)
	}
}

// Visibility agrees with decisions: a tool whose every recorded call is
// denied is hidden, and any tool with a call that is not denied is visible.
// For the built-in profiles visibility is exact.
func TestVisibilityAgreesWithDecisions(t *testing.T) {
	reg := fixtureRegistry(t, pve91)
	compiled := compileBuiltins(t)
	rows := goldenRows(t, reg, compiled)
	for _, prof := range Profiles() {
		anyAllowed := map[string]bool{}
		for _, row := range rows {
			if row.effects[prof].Effect != Deny {
				anyAllowed[row.ep.Key()] = true
			}
		}
		for _, ep := range reg.Endpoints() {
			vis, err := compiled[prof].Visible(context.Background(), ep, Principal{Profile: prof})
			if err != nil {
				t.Fatal(err)
			}
			if vis != anyAllowed[ep.Key()] {
				t.Errorf("%s: %s visible=%v but a sample call is allowed=%v", prof, ep.Key(), vis, anyAllowed[ep.Key()])
			}
		}
	}
}
