package transport

import (
	"context"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves MCP over a pair of streams (the process's stdin and
// stdout) until ctx ends or in closes; at the end of in, the requests read
// are answered first (see drain). caller puts the authenticated caller
// into every request's context; stdio has one caller for its whole life.
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, caller func(context.Context) context.Context, logger *slog.Logger) error {
	srv := server.NewStdioServer(s)
	srv.SetContextFunc(caller)
	if logger != nil {
		srv.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
	} else {
		srv.SetErrorLogger(log.New(io.Discard, "", 0))
	}
	d := newDrain(ctx)
	return srv.Listen(ctx, drainReader{d: d, in: in}, drainWriter{d: d, out: out, mu: &sync.Mutex{}})
}

// StreamableOptions configure a listener's Streamable HTTP server.
type StreamableOptions struct {
	// Sessions, when set, makes the session ids, binds them to their
	// callers and counts them over every listener. NewHandler's Sessions
	// must be the same: a request that did not pass its guards with that
	// manager is given no valid session.
	Sessions *Sessions
	// IdleTTL ends a session unused this long (30 min).
	IdleTTL time.Duration
	Logger  *slog.Logger
}

// NewStreamable wraps an MCP server as a Streamable HTTP handler with the
// settings every listener shares: sessions for legacy clients (so progress
// and list_changed notifications reach them), swept when idle, and
// heartbeats on open streams. The guards of NewHandler stand in front.
func NewStreamable(s *server.MCPServer, o StreamableOptions) *server.StreamableHTTPServer {
	if o.IdleTTL <= 0 {
		o.IdleTTL = 30 * time.Minute
	}
	opts := []server.StreamableHTTPOption{
		server.WithStateful(true),
		server.WithSessionIdleTTL(o.IdleTTL),
		server.WithHeartbeatInterval(25 * time.Second),
		// Host checks are ours (NewHandler), per listener, for every
		// address family; mcp-go's own loopback check would refuse the
		// listeners' legitimate names.
		server.WithDisableLocalhostProtection(true),
	}
	if o.Sessions != nil {
		opts = append(opts, server.WithSessionIdManagerResolver(resolver{o.Sessions}))
	}
	if o.Logger != nil {
		opts = append(opts, server.WithStreamableHTTPLogger(o.Logger))
	}
	return server.NewStreamableHTTPServer(s, opts...)
}
