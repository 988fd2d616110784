package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDashboardSeries: every series the Grafana dashboard queries is one
// this package registers, and docs/metrics.md describes it.
func TestDashboardSeries(t *testing.T) {
	dash, err := os.ReadFile("../docs/grafana/proxmox-mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`proxmox_mcp_[a-z_]+`).FindAllString(string(dash), -1)
	if len(names) < 10 {
		t.Fatalf("the dashboard queries %d series", len(names))
	}
	for _, n := range names {
		short := strings.TrimSuffix(strings.TrimPrefix(n, namespace+"_"), "_bucket")
		if strings.HasPrefix(short, "process_") {
			continue // the process collector's
		}
		if !strings.Contains(string(src), `"`+short+`"`) && !strings.Contains(string(src), `_`+short+`"`) {
			t.Errorf("the dashboard queries %s, which the package does not register", n)
		}
		if !strings.Contains(string(doc), "`"+short+"`") {
			t.Errorf("docs/metrics.md does not describe %s", short)
		}
	}
}
