// Command server is the test rig that the MCP conformance suite
// (@modelcontextprotocol/conformance) runs against; tests/conformance_test.go
// builds and starts it. Only the tests build it.
//
// It mounts the daemon's own MCP stack: tools.New with the real policy
// engine, the live schema source and the PVE simulator behind tier tokens,
// served by transport.NewStreamable behind transport.NewHandler's guards
// (Host and Origin allow-lists, body limit, bearer authentication) on
// 127.0.0.1. Two things differ from the daemon, because the suite can send
// neither a key nor call the daemon's own tools:
//
//   - The suite's requests carry no Authorization header. The rig adds its
//     own one-time bearer token to each request before the guards, and its
//     authenticator turns that token, and nothing else, into one fixed
//     operator caller (tools.WithCaller). The product binary has no such
//     path: every HTTP request to the daemon needs a key.
//   - The scenarios call fixture tools, resources and prompts (test_*). The
//     rig registers them: tools through tools.Options.Extra, so that they
//     pass the same per-caller tool filter as the daemon's tools; resources,
//     prompts, completions and sampling directly on the MCP server, since the
//     daemon offers none of those.
//
// The loopback listener's allowed origins are its own (http://127.0.0.1:PORT
// and http://localhost:PORT), as an operator who lets a browser client on the
// same machine in would configure listen.loopback.allowed_origins; the
// daemon's default allows no browser origin at all.
//
// It prints one JSON line {"url": ...} once it serves and stops on SIGTERM
// or SIGINT.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to serve MCP on (at /mcp)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *listen, log); err != nil {
		fmt.Fprintln(os.Stderr, "conformance server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, log *slog.Logger) error {
	dir, err := os.MkdirTemp("", "pmcp-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The schema, as the daemon loads it: a file, read by the live source.
	apidoc := filepath.Join(dir, "apidoc.js")
	if err := os.WriteFile(apidoc, sim.DemoSchema(), 0o644); err != nil {
		return err
	}
	src := schema.NewSource(schema.SourceOptions{Path: apidoc, Cache: schema.NewCache(filepath.Join(dir, "cache")), Logger: log})
	if err := src.Load(ctx); err != nil {
		return err
	}

	// The simulated PVE host and one client per token tier.
	s, err := sim.New(sim.Options{Registry: src.Current(), Seed: 1, TaskDuration: 0.05})
	if err != nil {
		return err
	}
	simSrv, err := sim.Listen(s, "127.0.0.1:0")
	if err != nil {
		return err
	}
	simCtx, stopSim := context.WithCancel(context.Background())
	simDone := make(chan error, 1)
	go func() { simDone <- simSrv.Serve(simCtx) }()
	defer func() { stopSim(); <-simDone }()
	tiers, err := newTiers(s, simSrv, log)
	if err != nil {
		return err
	}

	store, err := policy.NewStore(filepath.Join(dir, "state"), time.Now)
	if err != nil {
		return err
	}
	engine, err := policy.NewEngine(ctx, store, policy.EngineOptions{Logger: log})
	if err != nil {
		return err
	}
	confirmKey := make([]byte, 32)
	if _, err := rand.Read(confirmKey); err != nil {
		return err
	}
	guard, err := breakglass.NewGuard(breakglass.Protected{}, breakglass.Options{Logger: log})
	if err != nil {
		return err
	}
	srv, err := tools.New(tools.Options{
		Name: "proxmox-mcp", Version: "conformance-rig", Mode: tools.ModeCompact,
		Registry: src, Policy: engine, PVE: tiers, Audit: &logAuditor{log: log},
		Guard:      guard,
		Switches:   tools.Switches{AllowMutations: true},
		ConfirmKey: confirmKey, Logger: log,
		Extra: fixtureTools(),
	})
	if err != nil {
		return err
	}
	addFixtures(srv.MCP())

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hosts, err := transport.LoopbackHosts(ln.Addr().String())
	if err != nil {
		ln.Close()
		return err
	}
	origins := make([]string, 0, len(hosts))
	for _, h := range hosts {
		origins = append(origins, "http://"+h)
	}
	token, err := randomToken()
	if err != nil {
		ln.Close()
		return err
	}
	caller := tools.Caller{
		Principal: policy.Principal{KeyID: "conformance", Name: "conformance-suite", Profile: policy.Operator, Transport: "loopback"},
		Binding:   policy.Binding{Profile: policy.Operator},
		Tier:      tools.TierOperator,
	}
	h, err := transport.NewHandler(transport.HTTPOptions{
		Listener: "loopback",
		MCP:      transport.NewStreamable(srv.MCP(), transport.StreamableOptions{Logger: log}),
		Authenticate: func(ctx context.Context, key, listener, source string, _ *http.Request) (context.Context, error) {
			if key != token {
				return nil, errors.New("not the rig's token")
			}
			c := caller
			c.Principal.Source = source
			return tools.WithCaller(ctx, c), nil
		},
		AllowedHosts:   hosts,
		AllowedOrigins: origins,
		Logger:         log,
	})
	if err != nil {
		ln.Close()
		return err
	}
	httpSrv := transport.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(w, r)
	}), transport.Timeouts{})
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()

	line, err := json.Marshal(map[string]string{"url": "http://" + ln.Addr().String() + "/mcp"})
	if err != nil {
		return err
	}
	fmt.Println(string(line))

	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return httpSrv.Shutdown(drain)
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// tiers gives each token tier a client of the simulator with that tier's
// token, as the daemon's tier clients do.
type tiers map[tools.Tier]*pve.Client

func newTiers(s *sim.Sim, srv *sim.Server, log *slog.Logger) (tiers, error) {
	t := tiers{}
	for _, tier := range []tools.Tier{tools.TierReadOnly, tools.TierOperator, tools.TierAdmin, tools.TierRoot} {
		tok, ok := s.Token("mcp@pve!" + string(tier))
		if !ok {
			return nil, fmt.Errorf("the simulator has no %s token", tier)
		}
		c, err := pve.New(pve.Config{
			BaseURL: srv.URL, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)},
			TLS: pve.TLSTrust{Fingerprints: []string{srv.Fingerprint}}, UserAgent: "proxmox-mcp-conformance", Logger: log,
		})
		if err != nil {
			return nil, err
		}
		t[tier] = c
	}
	return t, nil
}

func (t tiers) Client(tier tools.Tier) (*pve.Client, error) {
	if c := t[tier]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no client for tier %s", tier)
}

// logAuditor writes the audit records to the log; the rig keeps no journal.
type logAuditor struct {
	log *slog.Logger
	mu  sync.Mutex
	n   int
}

func (a *logAuditor) Intent(_ context.Context, c tools.AuditCall) (string, error) {
	a.mu.Lock()
	a.n++
	id := fmt.Sprintf("call-%d", a.n)
	a.mu.Unlock()
	a.log.Info("audit: intent", "id", id, "tool", c.Tool, "method", c.Method, "path", c.ConcretePath, "decision", c.Decision.Effect)
	return id, nil
}

func (a *logAuditor) Receipt(_ context.Context, id string, o tools.AuditOutcome) error {
	a.log.Info("audit: receipt", "id", id, "outcome", o.Outcome, "upid", o.UPID, "error", o.Error)
	return nil
}

func (a *logAuditor) Record(_ context.Context, c tools.AuditCall, o tools.AuditOutcome) error {
	a.log.Info("audit: record", "tool", c.Tool, "method", c.Method, "path", c.ConcretePath, "decision", c.Decision.Effect, "outcome", o.Outcome)
	return nil
}
