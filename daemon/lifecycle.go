package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Lifecycle receives the daemon's state changes: systemd's notify
// protocol in production (systemd.Notifier), nothing when nil.
type Lifecycle interface {
	// Ready: the daemon serves (at start, and at the end of a reload).
	Ready(status string)
	// Reloading: a reload started.
	Reloading(status string)
	// Stopping: the daemon drains and stops.
	Stopping(status string)
	// Status: what the daemon is doing changed.
	Status(status string)
}

type noLifecycle struct{}

func (noLifecycle) Ready(string)     {}
func (noLifecycle) Reloading(string) {}
func (noLifecycle) Stopping(string)  {}
func (noLifecycle) Status(string)    {}

func (d *Daemon) lifecycle() Lifecycle {
	if d.opts.Lifecycle == nil {
		return noLifecycle{}
	}
	return d.opts.Lifecycle
}

// lastError remembers the latest problem worth showing in the status line
// (a rejected apidoc.js, a failed reload) until the next success of the
// same kind.
type lastError struct {
	mu   sync.Mutex
	what map[string]string // by kind: schema, reload
}

// set records (or, with "", clears) the error of a kind and reports
// whether that changed anything.
func (l *lastError) set(kind, msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.what == nil {
		l.what = map[string]string{}
	}
	if l.what[kind] == msg {
		return false
	}
	if msg == "" {
		delete(l.what, kind)
	} else {
		l.what[kind] = msg
	}
	return true
}

func (l *lastError) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for kind, msg := range l.what {
		parts = append(parts, kind+": "+msg)
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// StatusLine says in one line what the daemon is doing, for `systemctl
// status`: the schema and where it came from, the listeners, and the last
// error while it stands.
func (d *Daemon) StatusLine() string {
	st := d.schema.Status()
	var b strings.Builder
	fmt.Fprintf(&b, "serving %d PVE API endpoints", st.Methods)
	if st.Origin == schema.OriginCache {
		b.WriteString(" from the last-known-good schema")
	}
	addrs := d.Addresses()
	names := make([]string, 0, len(addrs))
	for name := range addrs {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		if i == 0 {
			b.WriteString("; listeners: ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(name + " " + addrs[name])
	}
	if extra := d.statusExtra(); extra != "" {
		b.WriteString("; " + extra)
	}
	if r := d.recon.String(); r != "" {
		b.WriteString("; " + r)
	}
	if e := d.lastErr.String(); e != "" {
		b.WriteString("; last error: " + e)
	}
	return b.String()
}

// statusExtra adds what a listener wants the operator to see (the
// Tailnet's login URL).
func (d *Daemon) statusExtra() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.extraStatus
}

// SetStatusExtra replaces the listener part of the status line and
// publishes the line.
func (d *Daemon) setStatusExtra(s string) {
	d.mu.Lock()
	d.extraStatus = s
	d.mu.Unlock()
	d.lifecycle().Status(d.StatusLine())
}

// observeSchema keeps the status line current with apidoc.js changes. It
// runs inside the schema source's own locks, so the status line, which
// reads the source, is published from another goroutine, and only once
// the daemon is serving (a reload publishes it itself at its end).
func (d *Daemon) observeSchema(ev schema.Event) {
	var changed bool
	switch ev.Kind {
	case schema.EventReloaded, schema.EventLoaded, schema.EventUnchanged:
		changed = d.lastErr.set("schema", "")
	case schema.EventRejected:
		msg := "apidoc.js rejected"
		if ev.Err != nil {
			msg = ev.Err.Error()
		}
		changed = d.lastErr.set("schema", msg)
	}
	if !changed && ev.Kind != schema.EventReloaded {
		return
	}
	select {
	case <-d.ready:
		go func() { d.lifecycle().Status(d.StatusLine()) }()
	default:
	}
}

// Health is the watchdog's check that the daemon works, not merely runs:
// the policy engine decides a read within its timeout, the journal
// answers a query, and every HTTP listener's accept loop answers
// /healthz. Each failure names the part.
func (d *Daemon) Health(ctx context.Context) error {
	who := policy.Principal{KeyID: "health", Name: "health", Profile: policy.ReadOnly, Transport: "stdio"}
	in := policy.Input{Principal: who, Tool: "proxmox_api_call", Method: "GET", Path: "/version", ConcretePath: "/version",
		Risk: schema.RiskRead, Endpoint: policy.EndpointFacts{Risk: schema.RiskRead}, Time: time.Now()}
	if ep := d.schema.Current().Lookup("GET", "/version"); ep != nil {
		// The endpoint as the schema describes it, facts and all.
		in = policy.BuildInput(ep, "/version", nil, nil, who, policy.Guard{Evaluated: true}, in.Time)
	}
	dec := d.engine.Decide(ctx, policy.Binding{Profile: policy.ReadOnly}, &in)
	if dec.Effect != policy.Allow {
		return fmt.Errorf("policy: the read-only profile does not allow GET /version: %s", strings.Join(dec.Reasons, "; "))
	}
	if _, _, err := d.jrnl.Head(ctx); err != nil {
		// The journal's errors name it already ("journal: head: …").
		if !strings.HasPrefix(err.Error(), "journal: ") {
			err = fmt.Errorf("journal: %w", err)
		}
		return err
	}
	d.mu.Lock()
	var loopback []string
	for _, l := range d.listeners {
		if l.name == "loopback" {
			loopback = append(loopback, l.ln.Addr().String())
		}
	}
	d.mu.Unlock()
	for _, addr := range loopback {
		if err := getHealthz(ctx, addr); err != nil {
			return fmt.Errorf("loopback listener %s: %w", addr, err)
		}
	}
	return nil
}

// getHealthz asks a loopback listener for /healthz, as a client would.
func getHealthz(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	// A transport of its own: no connection kept from one check to the
	// next, so a wedged accept loop cannot hide behind a live connection.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10)) //nolint:errcheck // drained for the status only
	if resp.StatusCode != http.StatusOK {
		return errors.New("/healthz answered " + resp.Status)
	}
	return nil
}
