package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/daemon"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

func serveCommands() map[string]command {
	return map[string]command{
		"serve":           {"run the daemon (loopback HTTP and the configured listeners)", (*cli).serve},
		"stdio":           {"serve MCP over stdin/stdout for one key (PMCP_KEY or --key-file), or --local-root", (*cli).stdio},
		"config validate": {"check a configuration file without starting anything", (*cli).configValidate},
		"demo":            {"run the daemon against the built-in PVE simulator, with a key, until interrupted", (*cli).demo},
	}
}

// logger writes structured logs to stderr, or to the journal as records
// with PMCP_* fields when stderr is the journal (under systemd).
func (c *cli) logger(level string) *slog.Logger {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	text := slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: l})
	if c.stderr == os.Stderr && systemd.UnderJournal() {
		return slog.New(systemd.NewJournalHandler(l, nil, text))
	}
	return slog.New(text)
}

func (c *cli) serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "configuration file (default "+config.DefaultFile+")")
	stateDir := fs.String("state-dir", "", "state directory (overrides the configuration's)")
	if _, err := parse(fs, args, 0, "proxmox-mcp serve [--config FILE] [--state-dir DIR]"); err != nil {
		return err
	}
	cfg, err := config.Resolve(*cfgPath, *stateDir)
	if err != nil {
		return err
	}
	log := c.logger(cfg.Log.Level)
	softMemoryLimit()
	tailscaleLogUpload(cfg)
	// SIGHUP re-reads the file serve read: the one named, else the default.
	path := *cfgPath
	if path == "" {
		path = config.DefaultFile
	}
	notifier := systemd.NewNotifier(log)
	opts := daemon.Options{Config: cfg, ConfigPath: path, Version: version, Logger: log, Lifecycle: notifier}
	if *stateDir != "" {
		opts.StateDirOverride = cfg.StateDir
	}
	d, err := daemon.New(c.ctx, opts)
	if err != nil {
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if err := d.Reload(c.ctx); err != nil {
				log.Error("reload failed; the running configuration stays", "error", err)
			}
		}
	}()
	go func() {
		select {
		case <-d.Ready():
		case <-c.ctx.Done():
			return
		}
		if err := notifier.Watchdog(c.ctx, d.Health); err != nil {
			log.Error("systemd watchdog", "error", err)
		}
	}()
	return d.Run(c.ctx)
}

// tailscaleLogUpload keeps the embedded Tailscale node from uploading its
// logs to Tailscale unless listen.tailnet.log_upload says so. tsnet reads
// this from the environment only (tailscale.com v1.102 has no per-node
// switch that also stops the uploads of earlier runs' buffered logs), so
// main sets it, before the node starts, for the whole process.
func tailscaleLogUpload(cfg *config.Config) {
	if t := cfg.Listen.Tailnet; t != nil && !t.LogUpload {
		os.Setenv("TS_NO_LOGS_NO_SUPPORT", "true") //nolint:errcheck // cannot fail for this name and value
	}
}

func (c *cli) stdio(args []string) error {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	sf := addSessionFlags(fs, false)
	if _, err := parse(fs, args, 0, "proxmox-mcp stdio [--config FILE] [--state-dir DIR] [--key-file FILE | --local-root]"); err != nil {
		return err
	}
	softMemoryLimit()
	d, caller, err := c.openLocal(sf, "")
	if err != nil {
		return err
	}
	return d.ServeStdio(c.ctx, os.Stdin, os.Stdout, caller)
}

func (c *cli) configValidate(args []string) error {
	fs := flag.NewFlagSet("config validate", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the configuration as read, with defaults")
	files, err := parse(fs, args, 1, "proxmox-mcp config validate FILE [--json]")
	if err != nil {
		return err
	}
	cfg, err := config.Load(files[0])
	if err != nil {
		return err
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	var errs []error
	for _, err := range cfg.CheckFiles(exists, readable) {
		// A missing apidoc.js is no problem while the state directory holds
		// a last-known-good copy: the daemon starts from it.
		if fe := (*config.FileError)(nil); errors.As(err, &fe) && fe.Field == "schema.path" && lkgSchema(cfg) != "" {
			fmt.Fprintf(c.stderr, "%s: note: %s; the daemon will start from the last-known-good copy (%s)\n", files[0], oneLine(err.Error()), lkgSchema(cfg))
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(c.stderr, "%s: %s\n", files[0], oneLine(err.Error()))
		}
		what := fmt.Sprintf("%d problems", len(errs))
		if len(errs) == 1 {
			what = "1 problem"
		}
		return fmt.Errorf("config %s: %s with the files it names (listed above)", files[0], what)
	}
	if *asJSON {
		return writeJSON(c, cfg.Effective())
	}
	tiers := make([]string, 0, len(cfg.PVE.Tokens))
	for _, t := range config.Tiers() {
		if _, ok := cfg.PVE.Tokens[t]; ok {
			tiers = append(tiers, t)
		}
	}
	eff := cfg.Effective()
	fmt.Fprintf(c.stdout, "%s: valid (version %d)\n  state_dir        %s\n  schema           %s\n  pve              %s (tokens: %s)\n  loopback         %s\n  tools            %s\n  read_only        %v\n  allow_mutations  %v\n",
		files[0], cfg.Version, cfg.StateDir, cfg.SchemaPath(), cfg.PVEURL(), orNone(strings.Join(tiers, ", ")), cfg.LoopbackAddress(),
		eff.Tools.Mode, cfg.ReadOnly, cfg.AllowMutations)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (c *cli) demo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8765", "loopback address of the MCP endpoint")
	profile := fs.String("profile", "operator", "profile of the demo key: read-only, operator, admin or root")
	mode := fs.String("mode", "compact", "tool mode: compact, expanded (one tool per endpoint) or search")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout for the demo key instead of HTTP (what a client's server command runs)")
	apidoc := fs.String("apidoc", "", "serve this real apidoc.js instead of the built-in schema")
	asJSON := fs.Bool("json", false, "print one JSON line {\"url\", \"key\"} once ready")
	stateDir := fs.String("state-dir", "", "keep the demo's state here, created if need be (default: a temporary directory)")
	if _, err := parse(fs, args, 0, "proxmox-mcp demo [--listen ADDR | --stdio] [--profile P] [--mode M] [--apidoc FILE] [--state-dir DIR] [--json]"); err != nil {
		return err
	}
	opts := daemon.DemoOptions{Listen: *listen, Profile: *profile, Mode: *mode, APIDoc: *apidoc, StateDir: *stateDir, Version: version, Logger: c.logger("warn")}
	// Over stdio, stdout is the protocol's: what a person reads goes to
	// stderr.
	out := c.stdout
	if *stdio {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "listen" })
		if given {
			return usagef("--stdio serves no HTTP endpoint: drop --listen")
		}
		opts.Stdio = &daemon.DemoStdio{In: os.Stdin, Out: os.Stdout}
		out = c.stderr
	}
	return daemon.RunDemo(c.ctx, opts, func(info daemon.DemoInfo) {
		if *asJSON {
			fields := map[string]string{"url": info.URL, "key": info.Key, "profile": info.Profile, "mode": *mode, "status_url": demoStatusURL(info)}
			for k, v := range map[string]string{"approver_key": info.ApproverKey, "host_dir": info.HostDir, "repository": info.Repository} {
				if v != "" {
					fields[k] = v
				}
			}
			line, _ := json.Marshal(fields)
			fmt.Fprintln(out, string(line))
			return
		}
		if *stdio {
			fmt.Fprintf(out, "proxmox-mcp demo: MCP over stdio in front of a simulated Proxmox VE cluster (nothing here touches a real host);\n"+
				"key %s (profile %s, tools %s), schema %s. Serving until stdin closes.\n", info.Key, info.Profile, *mode, info.Schema)
			return
		}
		c.printDemo(info, *mode)
	})
}

func (c *cli) printDemo(info daemon.DemoInfo, mode string) {
	cfg, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"proxmox": map[string]any{
		"url": info.URL, "headers": map[string]string{"Authorization": "Bearer " + info.Key},
	}}}, "  ", "  ")
	fmt.Fprintf(c.stdout, `proxmox-mcp demo: the MCP daemon in front of a simulated Proxmox VE cluster
(3 nodes, one of them down; 4 VMs, 2 containers, 3 storages). Nothing here touches a real host.

  MCP endpoint  %s
  API key       %s
                (profile %s; shown once; the demo forgets it when it stops)
  API schema    %s
  Tool mode     %s (--mode compact, expanded or search)
  Status page   %s (the daemon's own, in a browser)
%s
Client configuration (Cursor's ~/.cursor/mcp.json; README.md shows Claude Desktop, VS Code and Codex):
  %s

MCP Inspector:
  npx @modelcontextprotocol/inspector --cli %s --transport http \
    --header "Authorization: Bearer %s" --method tools/list

Serving until interrupted (Ctrl-C).
`, info.URL, info.Key, info.Profile, info.Schema, mode, demoStatusURL(info), demoHostLines(info), cfg, info.URL, info.Key)
}

// demoHostLines say where the demo's simulated host is and what the
// approver's key is for, or which profiles have a host.
func demoHostLines(info daemon.DemoInfo) string {
	if info.HostDir == "" {
		if info.Profile == "admin" || info.Profile == "root" {
			return "" // its helper could not listen, which the log said
		}
		return "  Demo host     none for this profile (--profile admin or root has one, with a protected repository)\n"
	}
	s := fmt.Sprintf(`  Demo host     %s
                (var/log to read, srv and mnt to write: the proxmox_host_file_* tools, through the demo's own helper)
  Repository    %s (protected: only break-glass changes it)
`, info.HostDir, info.Repository)
	if info.ApproverKey != "" {
		s += fmt.Sprintf(`  Approver key  %s
                (profile root, for a second person: with --profile root the demo key requests a change of the
                repository and confirms it with its phrase, this key approves its digest, the demo's runner does it)
`, info.ApproverKey)
	}
	return s
}

// demoStatusURL is the status page of the demo's metrics listener.
func demoStatusURL(info daemon.DemoInfo) string {
	return strings.TrimSuffix(info.MetricsURL, "/metrics") + "/status"
}

// readable opens a file for reading, as the daemon will.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// lkgSchema describes the state directory's last-known-good apidoc.js, or
// is empty when there is none that loads.
func lkgSchema(cfg *config.Config) string {
	reg, meta, err := schema.NewCache(cfg.SchemaCacheDir()).LoadRegistry()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s, %d endpoints, validated %s", meta.Source, reg.Methods(), meta.ValidatedAt.Format("2006-01-02"))
}

// defaultMemoryLimit is the daemon's soft memory limit when GOMEMLIMIT is
// not set: the collector works harder as the heap nears it (never above
// half the CPU), so the resident size stays near the live heap (about 20
// MiB with PVE 9.1's schema) plus one scrypt verification's 32 MiB,
// instead of growing to twice the peak heap.
const defaultMemoryLimit = 48 << 20

func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
