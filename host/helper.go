package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"golang.org/x/sys/unix"
)

// HelperDir is the helper's own state (its journal) for a state
// directory: beside it, "-helper" appended (/var/lib/proxmox-mcp-helper,
// the unit's StateDirectory=, root:root 0700).
func HelperDir(stateDir string) string { return filepath.Clean(stateDir) + "-helper" }

// BreakglassDir is the break-glass service's directory for a state
// directory, inside the helper's (docs/breakglass.md): the signing key,
// the requests, the queue the runner's path unit watches, the results.
func BreakglassDir(stateDir string) string { return filepath.Join(HelperDir(stateDir), "breakglass") }

// HelperOptions say where the helper's configuration is.
type HelperOptions struct {
	Config *config.Config
	// ConfigDir is the configuration's directory (refused to every file
	// operation: it holds the configuration, the tokens and the CA key).
	ConfigDir string
	Logger    *slog.Logger
}

// OpenHelper builds the helper's server from what root owns: the
// configured roots, root's copy of the keys and policies, its own
// journal. The daemon's user (the state directory's owner) and root may
// connect. It returns the server and what closes it.
func OpenHelper(ctx context.Context, o HelperOptions) (*Server, func() error, error) {
	cfg := o.Config
	if os.Geteuid() != 0 {
		return nil, nil, errors.New("host: the helper runs as root")
	}
	var st unix.Stat_t
	if err := unix.Stat(cfg.StateDir, &st); err != nil {
		return nil, nil, fmt.Errorf("host: the state directory %s: %w", cfg.StateDir, err)
	}
	auth := authority.New(cfg.StateDir, o.Logger, nil)
	exists, err := auth.Exists()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !exists && cfg.Cluster.Enabled:
		return nil, nil, fmt.Errorf("host: there is no root's copy of the keys yet (%s): in cluster mode the cluster sync writes it from pmxcfs (systemctl status proxmox-mcp-cluster)", auth.Dir())
	case !exists:
		return nil, nil, fmt.Errorf("host: there is no root's copy of the keys yet (%s): make or change a key as root (proxmox-mcp key create), which makes it", auth.Dir())
	}
	ks, err := keys.Open(auth.Dir(), keys.Options{Logger: o.Logger})
	if err != nil {
		return nil, nil, err
	}
	h, err := openHelper(ctx, helperSetup{cfg: cfg, configDir: o.ConfigDir, keys: ks, policyDir: auth.Dir(),
		refused: []string{auth.Dir()}, owner: 0, peers: []int{int(st.Uid), 0}, services: &Services{}, logger: o.Logger})
	if err != nil {
		return nil, nil, err
	}
	return h.Server, h.Close, nil
}

// DemoHelperOptions configure the demo's helper (proxmox-mcp demo): an
// unprivileged one in the demo's own process, over the simulated host's
// directories.
type DemoHelperOptions struct {
	// Config is the demo's configuration: its host roots, protected
	// paths, helper socket and state directory.
	Config *config.Config
	// Keys is the demo's own key store (the demo has no root's copy).
	Keys   *keys.Store
	Logger *slog.Logger
	// Now is the break-glass service's clock (time.Now when nil).
	Now func() time.Time
}

// Helper is a helper's parts: its server, its own journal (where the
// demo's runner journals too) and its break-glass service (nil when
// nothing is protected).
type Helper struct {
	Server     *Server
	Journal    *journal.Journal
	Breakglass *breakglass.Service
	close      func() error
}

// Close closes the helper's journal, tree and break-glass service.
func (h *Helper) Close() error { return h.close() }

// OpenDemoHelper builds the demo's helper as OpenHelper builds root's,
// with what the demo has instead of what root owns: the demo's own key
// store and policies verify and decide, only this process's user may
// connect, the helper's and the break-glass directories are this user's
// alone, there is no systemd (service operations and commands are
// refused), and the break-glass signing key is made when missing. The
// roots, the refused paths, the protected paths and the switches are the
// configuration's, as for root's helper. It is for the demo only: root's
// helper never trusts the daemon's key store.
func OpenDemoHelper(ctx context.Context, o DemoHelperOptions) (*Helper, error) {
	if o.Config == nil || o.Keys == nil {
		return nil, errors.New("host: the demo's helper needs its configuration and key store")
	}
	uid := os.Geteuid()
	h, err := openHelper(ctx, helperSetup{cfg: o.Config, keys: o.Keys, policyDir: o.Config.StateDir,
		owner: uid, peers: []int{uid}, now: o.Now, logger: o.Logger})
	if err != nil {
		return nil, err
	}
	if h.Breakglass != nil {
		if _, err := pki.CreateSigningKey(filepath.Join(h.Breakglass.Dir(), breakglass.KeyFile)); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// helperSetup is what a helper is built from: who verifies and decides,
// whose its directories are, who may connect.
type helperSetup struct {
	cfg       *config.Config
	configDir string
	// keys verifies the callers' keys; policyDir holds the policies.
	keys      *keys.Store
	policyDir string
	// refused are refused paths beyond the configuration's own.
	refused []string
	// owner is the uid whose alone the helper's directory must be.
	owner    int
	peers    []int
	services *Services
	now      func() time.Time
	logger   *slog.Logger
}

// openHelper builds a helper's server, journal and break-glass service.
func openHelper(ctx context.Context, s helperSetup) (*Helper, error) {
	cfg := s.cfg
	helperDir := HelperDir(cfg.StateDir)
	var roots []Root
	for _, r := range cfg.Host.HostRoots() {
		roots = append(roots, Root{Path: r.Path, Write: r.Write, CrossMounts: r.CrossMounts})
	}
	tree, err := OpenTree(roots, DefaultRefused(SecretPaths{ConfigDir: s.configDir, StateDir: cfg.StateDir,
		Extra: append(slices.Clone(s.refused), helperDir, cfg.PKI.Dir)}))
	if err != nil {
		return nil, err
	}
	v, err := keys.NewVerifier(s.keys, keys.VerifierOptions{})
	if err != nil {
		tree.Close()
		return nil, err
	}
	ps, err := policy.NewStore(s.policyDir, nil)
	if err != nil {
		tree.Close()
		return nil, err
	}
	eng, err := policy.NewEngine(ctx, ps, policy.EngineOptions{Logger: s.logger})
	if err != nil {
		tree.Close()
		return nil, err
	}
	if err := ownDir(helperDir, s.owner); err != nil {
		tree.Close()
		return nil, err
	}
	j, err := journal.Open(ctx, HelperJournal(cfg.StateDir), journal.Options{Logger: s.logger})
	if err != nil {
		tree.Close()
		return nil, err
	}
	refuse := plan.Switches{ReadOnly: cfg.ReadOnly, AllowMutations: cfg.AllowMutations}.Refusal("POST")
	if refuse == "" && cfg.Changes.PreviewWrites {
		refuse = "the preview_writes switch is on, and host writes have no preview yet"
	}
	devices := append(slices.Clone(cfg.Protected.Devices), ProtectedLVs(cfg.Protected)...)
	bg, err := openBreakglass(cfg, s.now, s.owner)
	if err != nil {
		j.Close()
		tree.Close()
		return nil, err
	}
	closeAll := func() error {
		errs := []error{j.Close(), tree.Close()}
		if bg != nil {
			errs = append(errs, bg.Close())
		}
		return errors.Join(errs...)
	}
	srv, err := NewServer(ServerOptions{Tree: tree, Keys: v, Policies: eng, Journal: j, Services: s.services,
		PeerUIDs: s.peers, Protected: cfg.Protected.Paths, ProtectedDevices: devices,
		Breakglass: bg, Lineage: Lineage(s.keys),
		Socket: cfg.Host.HelperSocket(), RefuseWrites: refuse, Logger: s.logger})
	if err != nil {
		closeAll()
		return nil, err
	}
	return &Helper{Server: srv, Journal: j, Breakglass: bg, close: closeAll}, nil
}

// ownDir makes dir when missing and refuses it unless it is a directory
// of uid's alone (owned by it, no group or other bits): the helper's
// journal is root's alone (root:root 0700), the demo's helper's its
// user's.
func ownDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("host: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("host: %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != uid || st.Mode&0o077 != 0 {
		if uid == 0 {
			return fmt.Errorf("host: %s must be a directory of root's alone (root:root 0700); it is uid %d mode %04o: check it, then fix it", dir, st.Uid, st.Mode&0o7777)
		}
		return fmt.Errorf("host: %s must be a directory of uid %d alone (0700); it is uid %d mode %04o: check it, then fix it", dir, uid, st.Uid, st.Mode&0o7777)
	}
	return nil
}

// ProtectedLVs are the protected volumes that are logical volumes (vg/lv;
// an entry with a colon is a PVE storage volume id, the API guard's).
func ProtectedLVs(p config.Protected) []string {
	var out []string
	for _, v := range p.Volumes {
		if !strings.Contains(v, ":") {
			out = append(out, v)
		}
	}
	return out
}

// OpenBreakglass opens the break-glass service of a configuration, or
// nil when nothing is protected. now is the clock (time.Now when nil).
func OpenBreakglass(cfg *config.Config, now func() time.Time) (*breakglass.Service, error) {
	return openBreakglass(cfg, now, 0)
}

// openBreakglass opens it with the helper's directory uid's alone.
func openBreakglass(cfg *config.Config, now func() time.Time, uid int) (*breakglass.Service, error) {
	lvs := ProtectedLVs(cfg.Protected)
	if len(cfg.Protected.Paths) == 0 && len(lvs) == 0 {
		return nil, nil
	}
	if err := ownDir(HelperDir(cfg.StateDir), uid); err != nil {
		return nil, err
	}
	return breakglass.OpenService(breakglass.ServiceOptions{Dir: BreakglassDir(cfg.StateDir), Now: now, HostApprovalOnly: cfg.Protected.HostApprovalOnly(),
		Repository: breakglass.Repository{Paths: cfg.Protected.Paths, Volumes: lvs, LVM: breakglass.LVMTools{}}})
}

// Lineage is the lineage of a key in a store: the first key of its
// rotations (RotatedFrom followed back), or the key itself.
func Lineage(ks *keys.Store) func(string) string {
	return func(id string) string {
		recs, err := ks.List()
		if err != nil {
			return id
		}
		from := map[string]string{}
		for _, r := range recs {
			from[r.ID] = r.RotatedFrom
		}
		for range len(recs) + 1 {
			prev := from[id]
			if prev == "" {
				break
			}
			id = prev
		}
		return id
	}
}
