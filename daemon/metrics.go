package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/metrics"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport"
)

// The daemon's metrics (docs/metrics.md): built before anything that
// reports into them, read by Prometheus on a listener of their own
// (metrics.address, loopback by default), which Run opens beside the MCP
// listeners and drains with them.

// newMetrics builds the registry; what it reads at each scrape it reads
// from the daemon's parts as they are then.
func (d *Daemon) newMetrics() (*metrics.Metrics, error) {
	return metrics.New(metrics.Options{
		Version: d.opts.Version,
		KnownTool: func(name string) bool {
			return d.tools != nil && d.tools.MCP().GetTool(name) != nil
		},
		Sessions: func() int {
			if d.sessions == nil {
				return 0
			}
			return d.sessions.Open()
		},
		Schema: func() metrics.Schema {
			st := d.schema.Status()
			return metrics.Schema{Origin: string(st.Origin), SHA256: st.SHA256, Endpoints: st.Methods, Healthy: st.Healthy()}
		},
		Listeners: d.Addresses,
		Pending: func(ctx context.Context) (journal.Pending, error) {
			return d.jrnl.Pending(ctx)
		},
		Journal: func() journal.Stats { return d.jrnl.Stats() },
		Status:  func(ctx context.Context) any { return d.Status(ctx) },
		StatusPage: func(ctx context.Context, w io.Writer) error {
			return RenderStatusPage(w, d.Status(ctx), time.Now())
		},
		Logger: d.log,
	})
}

// Metrics are the daemon's series (the tests scrape them).
func (d *Daemon) Metrics() *metrics.Metrics { return d.metrics }

// listenMetrics opens the metrics listener, unless metrics.disabled.
func (d *Daemon) listenMetrics() error {
	addr := d.cfg.MetricsAddress()
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener (metrics.address %s): %w", addr, err)
	}
	bound := ln.Addr().String()
	hosts := []string{bound}
	if ap, err := netip.ParseAddrPort(bound); err == nil && ap.Addr().Unmap().IsLoopback() {
		if hosts, err = transport.LoopbackHosts(bound); err != nil {
			ln.Close()
			return err
		}
	}
	g := d.cfg.HTTP.Guards()
	srv := transport.NewServer(d.metrics.Handler(hosts), transport.Timeouts{ReadHeader: g.ReadHeaderTimeout.Std(), Read: g.ReadTimeout.Std(), Idle: g.IdleTimeout.Std()})
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		ln.Close()
		return fmt.Errorf("metrics listener: %w", errStopping)
	}
	l := &listener{name: "metrics", addr: bound, ln: ln, srv: srv}
	d.listeners = append(d.listeners, l)
	if d.running {
		d.serveLocked(l)
	}
	return nil
}

// meteredAuditor counts every call the tools journal, after the journal
// took it: by tool, outcome and decision, and its duration.
type meteredAuditor struct {
	next tools.Auditor
	m    *metrics.Metrics
}

func (a meteredAuditor) Intent(ctx context.Context, c tools.AuditCall) (string, error) {
	id, err := a.next.Intent(ctx, c)
	if err == nil {
		a.m.Intent(id, c.Tool, c.Decision.Effect, c.Method, c.Time)
	}
	return id, err
}

func (a meteredAuditor) Receipt(ctx context.Context, id string, o tools.AuditOutcome) error {
	err := a.next.Receipt(ctx, id, o)
	a.m.Receipt(id, o.Outcome)
	return err
}

func (a meteredAuditor) Record(ctx context.Context, c tools.AuditCall, o tools.AuditOutcome) error {
	err := a.next.Record(ctx, c, o)
	d := o.Duration
	if d <= 0 && !c.Time.IsZero() {
		d = time.Since(c.Time)
	}
	a.m.Call(c.Tool, o.Outcome, c.Decision.Effect, c.Method, d)
	return err
}

// observeSchemaMetrics counts a read of apidoc.js.
func (d *Daemon) observeSchemaMetrics(ev schema.Event) {
	if d.metrics != nil {
		d.metrics.SchemaEvent(ev.Kind)
	}
}
