package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/metrics"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Status is what `proxmox-mcp status` shows of a running daemon, as the
// daemon itself sees it: served as JSON at /status.json on the metrics
// listener (loopback by default), beside the status page. It holds
// counts, addresses and states, never a key, a key's name or a secret:
// the same things /metrics and the status page show.
type Status struct {
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// State is starting, serving or stopping.
	State string `json:"state"`
	// Line is the systemd status line (STATUS=).
	Line      string           `json:"status_line"`
	Listeners []StatusListener `json:"listeners"`
	Schema    schema.Status    `json:"schema"`
	// SchemaHealthy: the schema in use is the current apidoc.js.
	SchemaHealthy bool          `json:"schema_healthy"`
	Keys          StatusKeys    `json:"keys"`
	Policies      int           `json:"policies"`
	Cluster       StatusCluster `json:"cluster"`
	Sessions      int           `json:"sessions_open"`
	// Pending are the journal's open intents, unknown outcomes and running
	// jobs; PendingError says why they could not be read.
	Pending      journal.Pending `json:"pending"`
	PendingError string          `json:"pending_error,omitempty"`
	// LastError is the latest problem of the status line, while it stands.
	LastError string `json:"last_error,omitempty"`
	// Reconciliation is how far the start-up reconciliation is.
	Reconciliation string `json:"reconciliation,omitempty"`
	// Counts are the call and refusal counters since the daemon started
	// (the sums of their series on /metrics).
	Counts metrics.Counts `json:"counts"`
}

// StatusListener is one listener and where to reach it.
type StatusListener struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// URL is the MCP endpoint (the metrics listener's: its status page).
	URL string `json:"url,omitempty"`
}

// StatusKeys counts the key records by state.
type StatusKeys struct {
	Total   int            `json:"total"`
	ByState map[string]int `json:"by_state"`
	Error   string         `json:"error,omitempty"`
}

// StatusCluster is the cluster view: off, or what the node's sync last
// reported (quorum, generation, files kept at their last good content).
type StatusCluster struct {
	Enabled bool   `json:"enabled"`
	Check   string `json:"check,omitempty"`
}

// Status gathers the daemon's state now.
func (d *Daemon) Status(ctx context.Context) Status {
	st := Status{Version: d.opts.Version, PID: os.Getpid(), Started: d.started, Line: d.StatusLine(), LastError: d.lastErr.String(), Reconciliation: d.recon.String()}
	select {
	case <-d.ready:
		st.State = "serving"
	default:
		st.State = "starting"
	}
	d.mu.Lock()
	if d.stopping {
		st.State = "stopping"
	}
	d.mu.Unlock()
	addrs := d.Addresses()
	for name, addr := range addrs {
		l := StatusListener{Name: name, Address: addr}
		switch {
		case name == "metrics":
			l.URL = "http://" + addr + "/"
		case name == "loopback":
			l.URL = "http://" + addr + "/mcp"
		case strings.HasPrefix(name, "lan"), name == "tailnet":
			l.URL = "https://" + addr + "/mcp"
		}
		st.Listeners = append(st.Listeners, l)
	}
	sort.Slice(st.Listeners, func(i, j int) bool { return st.Listeners[i].Name < st.Listeners[j].Name })
	st.Schema = d.schema.Status()
	st.SchemaHealthy = st.Schema.Healthy()
	st.Keys.ByState = map[string]int{}
	if recs, err := d.keys.List(); err != nil {
		st.Keys.Error = err.Error()
	} else {
		now := d.keys.Now()
		for i := range recs {
			st.Keys.Total++
			st.Keys.ByState[string(recs[i].StateAt(now))]++
		}
	}
	if pols, err := d.pstore.List(); err == nil {
		st.Policies = len(pols)
	}
	st.Cluster.Check, st.Cluster.Enabled = d.clusterReadiness()
	if d.sessions != nil {
		st.Sessions = d.sessions.Open()
	}
	if d.metrics != nil {
		st.Counts = d.metrics.Counts()
	}
	if p, err := d.jrnl.Pending(ctx); err != nil {
		st.PendingError = err.Error()
	} else {
		st.Pending = p
	}
	return st
}

// ErrNotServing: nothing answers on the metrics listener's address.
var ErrNotServing = errors.New("the daemon is not serving")

// FetchStatus asks a running daemon for its Status at the metrics
// listener's address (host:port), as `proxmox-mcp status` does: over
// loopback HTTP, from the daemon itself, not from files.
func FetchStatus(ctx context.Context, addr string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status.json", nil)
	if err != nil {
		return Status{}, err
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return Status{}, fmt.Errorf("%w: metrics listener %s: %w", ErrNotServing, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("metrics listener %s: /status.json: %s", addr, resp.Status)
	}
	var st Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return Status{}, fmt.Errorf("metrics listener %s: /status.json: %w", addr, err)
	}
	return st, nil
}
