package changes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// PVEReader reads what undo needs of PVE with one client (its token's
// privileges: reading every task of a node needs Sys.Audit on it, which
// every tier's token has).
type PVEReader struct {
	client *pve.Client
}

// NewPVEReader reads PVE with a client.
func NewPVEReader(c *pve.Client) *PVEReader { return &PVEReader{client: c} }

// taskPage is how many tasks are read at a time.
const taskPage = 500

// maxTasks bounds the tasks read for one guest.
const maxTasks = 20000

// Config reads a configuration.
func (r *PVEReader) Config(ctx context.Context, path string) (map[string]any, error) {
	var conf map[string]any
	if err := r.client.Get(ctx, path, nil, &conf); err != nil {
		return nil, err
	}
	if conf == nil {
		return nil, fmt.Errorf("GET %s: no configuration", path)
	}
	return conf, nil
}

// GuestTasks reads a node's task index for one guest: archived and active
// tasks (PVE lists only archived ones unless asked), from since.
func (r *PVEReader) GuestTasks(ctx context.Context, node string, vmid int, since time.Time) ([]GuestTask, error) {
	var out []GuestTask
	for start := 0; ; start += taskPage {
		q := url.Values{"vmid": {strconv.Itoa(vmid)}, "source": {"all"}, "since": {strconv.FormatInt(since.Unix(), 10)},
			"limit": {strconv.Itoa(taskPage)}, "start": {strconv.Itoa(start)}}
		var page []struct {
			UPID    string          `json:"upid"`
			EndTime json.RawMessage `json:"endtime"`
			Status  string          `json:"status"`
		}
		if err := r.client.Get(ctx, pve.Path("nodes", node, "tasks"), q, &page); err != nil {
			return nil, err
		}
		for _, e := range page {
			u, err := pve.ParseUPID(e.UPID)
			if err != nil {
				return nil, fmt.Errorf("task index of %s: %w", node, err)
			}
			t := GuestTask{UPID: u, Status: e.Status}
			if end, err := strconv.ParseInt(string(e.EndTime), 10, 64); err == nil && end > 0 {
				t.Ended, t.End = true, time.Unix(end, 0)
			}
			if t.Status == "" {
				t.Status = "running"
			}
			out = append(out, t)
		}
		if len(page) < taskPage {
			return out, nil
		}
		if len(out) >= maxTasks {
			return nil, fmt.Errorf("task index of %s: more than %d tasks of guest %d since %s", node, maxTasks, vmid, when(since))
		}
	}
}

// Snapshots lists a guest's snapshots (not "current", the state now).
func (r *PVEReader) Snapshots(ctx context.Context, base string) ([]Snapshot, error) {
	var list []struct {
		Name     string          `json:"name"`
		SnapTime json.RawMessage `json:"snaptime"`
	}
	if err := r.client.Get(ctx, base+"/snapshot", nil, &list); err != nil {
		return nil, err
	}
	var out []Snapshot
	for _, s := range list {
		if s.Name == "current" {
			continue
		}
		sn := Snapshot{Name: s.Name}
		if t, err := strconv.ParseInt(string(s.SnapTime), 10, 64); err == nil {
			sn.Time = time.Unix(t, 0)
		}
		out = append(out, sn)
	}
	return out, nil
}
