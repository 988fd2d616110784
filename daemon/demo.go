package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// DemoOptions configure the demo.
type DemoOptions struct {
	// Listen is the daemon's loopback address; 127.0.0.1:8765 when empty.
	Listen string
	// Profile of the demo key; operator when empty.
	Profile string
	// APIDoc is a real apidoc.js to serve instead of the built-in schema.
	APIDoc string
	// StateDir keeps the demo's state; a temporary directory, removed at the
	// end, when empty.
	StateDir string
	// Mode is the tool mode: compact (when empty), expanded or search.
	Mode string
	// Stdio, when set, serves MCP over these files for the demo key
	// instead of HTTP on Listen (the endpoint is then not listened on).
	Stdio *DemoStdio
	// TaskDuration scales the simulator's task times (0.5 when zero).
	TaskDuration float64
	Version      string
	Logger       *slog.Logger
}

// DemoStdio are the files a stdio demo speaks MCP over: a client that
// starts `proxmox-mcp demo --stdio` as its server command.
type DemoStdio struct{ In, Out *os.File }

// DemoInfo is what a newcomer needs to connect.
type DemoInfo struct {
	URL     string `json:"url"`
	Key     string `json:"key"`
	Profile string `json:"profile"`
	// Schema says which API schema is served.
	Schema string `json:"schema"`
	// SimulatorURL is the simulated PVE API behind the daemon.
	SimulatorURL string `json:"simulator_url"`
	// MetricsURL is the daemon's Prometheus endpoint (a free loopback port).
	MetricsURL string `json:"metrics_url"`
	StateDir   string `json:"state_dir"`
	// ApproverKey is a second key, of the root profile, for a second
	// person: it approves the break-glass requests the demo key (with
	// --profile root) asks for, which no key of the requester's may do.
	// Empty without a host, and over stdio, where nobody else can
	// connect.
	ApproverKey string `json:"approver_key,omitempty"`
	// HostDir is the simulated host the host tools reach (through the
	// demo's own helper): var/log to read, srv and mnt to write, and
	// Repository in mnt. Empty for read-only and operator keys, whose
	// policies reach none of its files.
	HostDir string `json:"host_dir,omitempty"`
	// Repository is the protected demo repository beneath HostDir, which
	// only break-glass changes.
	Repository string `json:"repository,omitempty"`
}

// RunDemo starts the PVE simulator and the daemon in front of it on
// loopback, creates a key, calls ready with how to connect, and serves
// until ctx ends. Nothing it does touches a real host: with an admin or
// root key the host tools reach a simulated host in the state directory,
// through a helper and a break-glass runner of the demo's own
// (demohost.go), and a second key approves the break-glass requests of
// the first.
func RunDemo(ctx context.Context, o DemoOptions, ready func(DemoInfo)) error {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8765"
	}
	if o.Profile == "" {
		o.Profile = policy.Operator
	}
	if !policy.IsProfile(o.Profile) {
		return fmt.Errorf("--profile %q is not read-only, operator, admin or root", o.Profile)
	}
	mode, err := tools.ParseMode(o.Mode)
	if err != nil {
		return fmt.Errorf("--mode: %w", err)
	}
	if o.TaskDuration <= 0 {
		o.TaskDuration = 0.5
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	dir := o.StateDir
	if dir != "" {
		// A directory named for the demo's state need not exist yet.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
	} else {
		tmp, err := os.MkdirTemp("", "proxmox-mcp-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	// The host's roots are real paths, without a symbolic link on the way.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	apidoc, schemaName := sim.DemoSchema(), "built-in demo schema (what the simulator serves)"
	if o.APIDoc != "" {
		data, err := schema.ReadFile(o.APIDoc)
		if err != nil {
			return fmt.Errorf("--apidoc: %w", err)
		}
		apidoc, schemaName = data, o.APIDoc
	}
	reg, err := schema.Parse(apidoc)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	schemaPath := filepath.Join(dir, "apidoc.js")
	if err := os.WriteFile(schemaPath, apidoc, 0o644); err != nil {
		return err
	}
	s, err := sim.New(sim.Options{Registry: reg, Seed: 1, TaskDuration: o.TaskDuration})
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

	cfg := &config.Config{
		Version:        config.Version,
		StateDir:       filepath.Join(dir, "state"),
		Schema:         config.Schema{Path: schemaPath},
		AllowMutations: true,
		PVE:            config.PVE{URL: simSrv.URL, Fingerprint: simSrv.Fingerprint},
		Listen:         config.Listen{Loopback: &config.Loopback{Address: o.Listen}},
		Tools:          config.Tools{Mode: string(mode)},
		// A free port: the demo must not take a real daemon's 9765.
		Metrics: config.Metrics{Address: "127.0.0.1:0"},
	}
	if cfg.PVE.Tokens, err = writeSimTokens(s, filepath.Join(dir, "tokens")); err != nil {
		return err
	}
	// The host, for the keys whose policies reach its files: a read-only
	// or operator key would see only the service and command tools, which
	// the demo's helper (no systemd) always refuses.
	var helperCfg *config.Config
	var helperLn *net.UnixListener
	hostDir := ""
	if demoHasHost(o.Profile) {
		if hostDir, err = demoHost(dir); err != nil {
			return fmt.Errorf("the demo's host: %w", err)
		}
		helperCfg = demoHostConfig(cfg, dir, hostDir)
		// The helper's socket is there before the daemon is built, which
		// serves the host tools only then; without it the demo still runs.
		if helperLn, err = listenDemoHelper(cfg.Host.HelperSocket()); err != nil {
			o.Logger.Warn("demo: no host tools, the demo's helper cannot listen", "err", err)
		} else {
			defer helperLn.Close()
		}
	}
	d, err := New(ctx, Options{Config: cfg, Version: o.Version, Logger: o.Logger})
	if err != nil {
		return err
	}
	created, err := demoKey(ctx, d.Keys(), "demo-"+o.Profile, o.Profile)
	if err != nil {
		return fmt.Errorf("demo key: %w", err)
	}
	// The key lives as long as the demo, also in a kept state directory.
	defer d.Keys().Revoke(context.WithoutCancel(ctx), created.Record.ID) //nolint:errcheck // the demo is ending
	info := DemoInfo{Key: created.Key.Reveal(), Profile: o.Profile, Schema: schemaName, SimulatorURL: simSrv.URL, StateDir: dir}
	if helperLn != nil {
		dh, err := startDemoHelper(ctx, helperCfg, d.Keys(), helperLn, o.Logger)
		if err != nil {
			return fmt.Errorf("the demo's helper: %w", err)
		}
		defer dh.close() //nolint:errcheck // the demo is ending
		info.HostDir, info.Repository = hostDir, helperCfg.Protected.Paths[0]
	}
	if o.Stdio != nil {
		caller, err := d.StdioCaller(ctx, created.Key.Reveal())
		if err != nil {
			return err
		}
		ready(info)
		err = d.ServeStdio(ctx, o.Stdio.In, o.Stdio.Out, caller)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case err := <-runErr:
		return err
	}
	if info.HostDir != "" {
		// A second person's key, over HTTP only: the approver of
		// break-glass.
		approver, err := demoKey(ctx, d.Keys(), demoApprover, policy.Root)
		if err != nil {
			return fmt.Errorf("the approver's key: %w", err)
		}
		defer d.Keys().Revoke(context.WithoutCancel(ctx), approver.Record.ID) //nolint:errcheck // the demo is ending
		info.ApproverKey = approver.Key.Reveal()
	}
	info.URL, info.MetricsURL = "http://"+d.Addresses()["loopback"]+"/mcp", "http://"+d.Addresses()["metrics"]+"/metrics"
	ready(info)
	err = <-runErr
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// demoHasHost says whether a demo key of the profile has the demo's
// host: admin and root keys, whose policies read and write its files.
func demoHasHost(profile string) bool { return profile == policy.Admin || profile == policy.Root }

// demoApprover is the name of the demo's second key, of the root
// profile: another principal than the demo key, which approves its
// break-glass requests.
const demoApprover = "demo-approver"

// demoKey creates a demo's key: the demo key, demo-PROFILE, or the
// approver's. A kept state directory may still hold the key of a demo
// that did not stop cleanly: that one is revoked first, since its secret
// was shown only to the earlier run.
func demoKey(ctx context.Context, store *keys.Store, name, profile string) (keys.Created, error) {
	req := keys.CreateRequest{Name: name, Binding: keys.Binding{Profile: profile}}
	created, err := store.Create(ctx, req)
	if !errors.Is(err, keys.ErrConflict) {
		return created, err
	}
	if _, err := store.Revoke(ctx, req.Name); err != nil {
		return keys.Created{}, fmt.Errorf("revoke the earlier demo's key: %w", err)
	}
	return store.Create(ctx, req)
}

// writeSimTokens writes the secret of each tier's simulator token to a file
// of its own (0600) and returns the configuration's pve.tokens.
func writeSimTokens(s *sim.Sim, dir string) (map[string]config.Token, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	out := map[string]config.Token{}
	for _, tier := range config.Tiers() {
		tok, ok := s.Token("mcp@pve!" + tier)
		if !ok {
			return nil, fmt.Errorf("the simulator has no %s token", tier)
		}
		path := filepath.Join(dir, tier)
		if err := os.WriteFile(path, []byte(tok.Secret+"\n"), 0o600); err != nil {
			return nil, err
		}
		out[tier] = config.Token{ID: tok.ID, SecretFile: path}
	}
	return out, nil
}
