package sim

import (
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// The node task index filters as pve-manager's Tasks.pm node_tasks does:
// the archive by default (finished tasks, most recently finished first),
// active or all on request, the user filter on the user part only and
// case-insensitively, since/until on the start time (a given 0 counts),
// the status types of normalize_status_type (a running task is unknown),
// errors as "not ok", start and limit (0 lists none) with the total of
// every match.
func TestNodeTaskIndexFilters(t *testing.T) {
	e := newEnv(t)
	op := e.client("mcp@pve!operator")
	admin := e.client("mcp@pve!admin")
	ro := e.client("mcp@pve!read-only")
	e.sim.InjectTaskFault(TaskFault{Type: "qmreboot", Fail: "simulated reboot failure"})
	e.sim.InjectTaskFault(TaskFault{Type: "srvrestart", Warnings: 2})

	t0 := e.clock.Now().Unix()
	start := post(t, op, "/nodes/pve1/qemu/101/status/start", nil) // ends OK
	e.clock.Advance(time.Minute)
	restart := post(t, admin, "/nodes/pve1/services/cron/restart", nil) // ends with warnings
	e.clock.Advance(time.Minute)
	reboot := post(t, op, "/nodes/pve1/qemu/101/status/reboot", nil) // fails
	e.clock.Advance(time.Minute)
	t3 := e.clock.Now().Unix()
	shutdown := post(t, op, "/nodes/pve1/qemu/101/status/shutdown", nil) // still running

	upids := func(q url.Values) ([]string, int) {
		t.Helper()
		resp, err := ro.Do(ctx, "GET", "/nodes/pve1/tasks", q)
		if err != nil {
			t.Fatalf("GET tasks %v: %v", q, err)
		}
		var list []map[string]any
		if err := resp.Decode(&list); err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range list {
			out = append(out, e["upid"].(string))
		}
		total := -1
		if resp.Total != nil {
			total = int(*resp.Total)
		}
		return out, total
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, tc := range []struct {
		name  string
		q     url.Values
		want  []string
		total int
	}{
		{"the archive by default, newest end first", nil, []string{reboot, restart, start}, 3},
		{"active: running only", v("source", "active"), []string{shutdown}, 1},
		{"all: running, then the archive", v("source", "all"), []string{shutdown, reboot, restart, start}, 4},
		{"userfilter: the user part, any case", v("userfilter", "MCP@pve"), []string{reboot, restart, start}, 3},
		{"userfilter: a token id is not a user", v("userfilter", "mcp@pve!operator"), []string{}, 0},
		{"typefilter", v("typefilter", "qmstart"), []string{start}, 1},
		{"vmid", v("vmid", "101", "source", "all"), []string{shutdown, reboot, start}, 3},
		{"since", v("since", itoa(t0+1)), []string{reboot, restart}, 2},
		{"until", v("until", itoa(t0+60)), []string{restart, start}, 2},
		{"since and until around one start", v("since", itoa(t3), "until", itoa(t3), "source", "all"), []string{shutdown}, 1},
		{"until 0 is given", v("until", "0"), []string{}, 0},
		{"statusfilter ok", v("statusfilter", "ok"), []string{start}, 1},
		{"statusfilter warning,error", v("statusfilter", "warning,error"), []string{reboot, restart}, 2},
		{"statusfilter unknown: running", v("statusfilter", "unknown", "source", "all"), []string{shutdown}, 1},
		{"errors: everything not ok", v("errors", "1", "source", "all"), []string{shutdown, reboot, restart}, 3},
		{"errors wins over statusfilter", v("errors", "1", "statusfilter", "ok"), []string{reboot, restart}, 2},
		{"start and limit, total of all", v("start", "1", "limit", "1"), []string{restart}, 3},
		{"limit 0 lists none", v("limit", "0"), []string{}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, total := upids(tc.q)
			if !slices.Equal(got, tc.want) || total != tc.total {
				t.Errorf("tasks %v (total %d), want %v (total %d)", got, total, tc.want, tc.total)
			}
		})
	}

	// A running task says RUNNING in the list, its user is the user part
	// and the token name is apart.
	var list []map[string]any
	if err := ro.Get(ctx, "/nodes/pve1/tasks", v("source", "active"), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0]["status"] != "RUNNING" || list[0]["user"] != "mcp@pve" || list[0]["tokenid"] != "operator" {
		t.Errorf("running task entry %v", list)
	}
	u, _ := pve.ParseUPID(shutdown)
	if list[0]["starttime"] != float64(u.StartTime) {
		t.Errorf("starttime %v, UPID says %d", list[0]["starttime"], u.StartTime)
	}

	// A token without Sys.Audit on the node sees only its own tasks.
	tok, err := e.sim.AddToken("bob@pve!t", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"bob@pve", "bob@pve!t"} {
		if err := e.sim.Grant("/vms", who, "PVEVMAdmin", true); err != nil {
			t.Fatal(err)
		}
	}
	bob := e.clientFor(tok)
	own := post(t, bob, "/nodes/pve1/qemu/100/status/suspend", nil)
	e.clock.Advance(time.Minute)
	var mine []map[string]any
	if err := bob.Get(ctx, "/nodes/pve1/tasks", v("source", "all"), &mine); err != nil {
		t.Fatal(err)
	}
	if len(mine) != 1 || mine[0]["upid"] != own {
		t.Errorf("a token without Sys.Audit sees %v, want only its own %s", mine, own)
	}
}
