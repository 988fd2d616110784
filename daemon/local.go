package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// Local is one caller's MCP session with the daemon's own MCP server, in
// process: what `proxmox-mcp tools` and `proxmox-mcp call` speak, so an
// operator's call takes the agent's path (tool filter, plan, policy,
// switches, guard, journal) and no other.
type Local struct {
	d      *Daemon
	c      *client.Client
	caller tools.Caller
}

// Local opens an in-process MCP session for caller. Close ends it and
// closes the journal and the PVE clients: the daemon serves nothing else
// afterwards.
func (d *Daemon) Local(ctx context.Context, caller tools.Caller) (*Local, error) {
	c, err := client.NewInProcessClient(d.tools.MCP())
	if err != nil {
		return nil, err
	}
	l := &Local{d: d, c: c, caller: caller}
	ctx = l.ctx(ctx)
	if err := c.Start(ctx); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "proxmox-mcp-cli", Version: d.opts.Version}
	if _, err := c.Initialize(ctx, req); err != nil {
		return nil, errors.Join(fmt.Errorf("initialize: %w", err), l.Close())
	}
	return l, nil
}

func (l *Local) ctx(ctx context.Context) context.Context { return tools.WithCaller(ctx, l.caller) }

// ListTools lists the tools the caller sees, every page.
func (l *Local) ListTools(ctx context.Context) ([]mcp.Tool, error) {
	ctx = l.ctx(ctx)
	var all []mcp.Tool
	var req mcp.ListToolsRequest
	for {
		res, err := l.c.ListTools(ctx, req)
		if err != nil {
			return nil, err
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		req.Params.Cursor = res.NextCursor
	}
}

// CallTool calls one tool as the caller. A refusal, a denial or a failed
// call is a result with IsError set, as an agent sees it; the error is for
// a call that was not answered.
func (l *Local) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return l.c.CallTool(l.ctx(ctx), req)
}

// Close ends the session and closes the journal and the PVE clients.
func (l *Local) Close() error {
	return errors.Join(l.c.Close(), l.d.Close())
}

// Close closes what New opened, for a daemon that will not Run or serve:
// the PVE clients and the journal.
func (d *Daemon) Close() error {
	d.warm.stop()
	d.pve.close()
	return d.jrnl.Close()
}
