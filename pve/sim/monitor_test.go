package sim

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

func TestNodeRRDRows(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!read-only")
	for _, tc := range []struct {
		timeframe string
		rows      int
		step      int64
	}{{"hour", 60, 60}, {"week", 336, 1800}} {
		var rows []map[string]any
		if err := c.Get(context.Background(), "/nodes/pve1/rrddata", url.Values{"timeframe": {tc.timeframe}}, &rows); err != nil {
			t.Fatal(err)
		}
		// One row per step of the timeframe, up to the current step.
		if len(rows) != tc.rows {
			t.Fatalf("%s: %d rows, want %d", tc.timeframe, len(rows), tc.rows)
		}
		first, _ := rows[0]["time"].(float64)
		second, _ := rows[1]["time"].(float64)
		if int64(second-first) != tc.step {
			t.Errorf("%s: step %v, want %d", tc.timeframe, second-first, tc.step)
		}
		last := rows[len(rows)-1]
		for _, k := range []string{"cpu", "loadavg", "memused", "memtotal", "netin", "iowait"} {
			if _, ok := last[k]; !ok {
				t.Errorf("%s: the last row has no %s: %v", tc.timeframe, k, last)
			}
		}
	}
	err := c.Get(context.Background(), "/nodes/pve1/rrddata", url.Values{"timeframe": {"minute"}}, nil)
	var apiErr *pve.APIError
	if !errors.As(err, &apiErr) || apiErr.Errors["timeframe"] == "" {
		t.Fatalf("timeframe minute: %v, want a parameter error naming timeframe", err)
	}
}

func TestDiskSmart(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!read-only")
	get := func(disk string, healthOnly bool) (map[string]any, error) {
		q := url.Values{"disk": {disk}}
		if healthOnly {
			q.Set("healthonly", "1")
		}
		var out map[string]any
		err := c.Get(context.Background(), "/nodes/pve1/disks/smart", q, &out)
		return out, err
	}
	ata, err := get("/dev/sda", false)
	if err != nil {
		t.Fatal(err)
	}
	if ata["type"] != "ata" || ata["health"] != "PASSED" || len(ata["attributes"].([]any)) == 0 {
		t.Errorf("sda: %v, want ATA attributes and PASSED", ata)
	}
	nvme, err := get("/dev/nvme0n1", false)
	if err != nil {
		t.Fatal(err)
	}
	if nvme["type"] != "text" || nvme["text"] == "" {
		t.Errorf("nvme0n1: %v, want smartctl's text", nvme)
	}
	only, err := get("/dev/sda", true)
	if err != nil || len(only) != 1 || only["health"] != "PASSED" {
		t.Errorf("healthonly: %v %v, want only the health", only, err)
	}
	if _, err := get("/dev/sdz", false); err == nil || !strings.Contains(err.Error(), "no such block device") {
		t.Errorf("sdz: %v, want 'no such block device'", err)
	}
}

func TestHAStatusWithoutResources(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!read-only")
	var rows []map[string]any
	if err := c.Get(context.Background(), "/cluster/ha/status/current", nil, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["type"] != "quorum" || rows[0]["quorate"] != float64(1) || rows[1]["type"] != "fencing" {
		t.Fatalf("HA status: %v, want the quorum (quorate) and fencing entries", rows)
	}
}
