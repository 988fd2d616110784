package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"golang.org/x/sys/unix"
)

// DirFor is the authority of a state directory: beside it, with
// "-authority" appended (/var/lib/proxmox-mcp-authority).
func DirFor(stateDir string) string { return filepath.Clean(stateDir) + "-authority" }

// The authority's own files.
const (
	lockName   = "authority.lock"
	recordName = "authority.json"
)

// Record is what the authority says of itself.
type Record struct {
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// AdoptedFrom is the state directory whose keys and policies were
	// taken on trust when the authority was made, with how many.
	AdoptedFrom     string `json:"adopted_from"`
	AdoptedKeys     int    `json:"adopted_keys"`
	AdoptedPolicies int    `json:"adopted_policies"`
}

// Local is the authority of a node in local mode.
type Local struct {
	dir, stateDir string
	log           *slog.Logger
	now           func() time.Time
}

// New is the authority of stateDir, at DirFor(stateDir).
func New(stateDir string, log *slog.Logger, now func() time.Time) *Local {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Local{dir: DirFor(stateDir), stateDir: stateDir, log: log, now: now}
}

// Dir is the authority's directory.
func (a *Local) Dir() string { return a.dir }

// ErrNeedRoot is a change refused because only root may make it.
var ErrNeedRoot = errors.New("keys and policies are kept by root")

// Exists says whether the authority has been made. Anyone may ask: the
// directory's own entry is visible to all.
func (a *Local) Exists() (bool, error) {
	var st unix.Stat_t
	err := unix.Lstat(a.dir, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false, nil
	case err != nil:
		return false, &fs.PathError{Op: "lstat", Path: a.dir, Err: err}
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return false, fmt.Errorf("authority: %s is not a directory: move it away", a.dir)
	}
	return true, nil
}

// Change is keys.Shared and policy.Shared: fn runs on the authority (a
// directory laid out as a state directory), under its lock; then the
// state directory is made a mirror of it. The first change adopts the
// state directory's keys and policies. Without root the change is refused
// when an authority exists, and made in the state directory alone when
// none does (a node that never had one, such as a developer's).
func (a *Local) Change(ctx context.Context, fn func(stateDir string) error) error {
	if os.Geteuid() != 0 {
		exists, err := a.Exists()
		if err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("%w in %s, which the root helper trusts; run this as root", ErrNeedRoot, a.dir)
		}
		return fn(a.stateDir)
	}
	return a.locked(ctx, true, func(ad, sd *atomicfile.Dir) error {
		if err := a.adoptOnce(ctx, ad, sd); err != nil {
			return err
		}
		if err := fn(a.dir); err != nil {
			return err
		}
		return a.mirror(ctx, ad, sd)
	})
}

// locked runs fn with the authority open and locked and the state
// directory open (made when create is set).
func (a *Local) locked(ctx context.Context, create bool, fn func(ad, sd *atomicfile.Dir) error) error {
	return a.lockedAlone(ctx, func(ad *atomicfile.Dir) error {
		open := atomicfile.OpenDir
		if create {
			open = func(p string) (*atomicfile.Dir, error) { return atomicfile.MkdirAll(p, 0o750) }
		}
		sd, err := open(a.stateDir)
		if err != nil {
			return fmt.Errorf("authority: the state directory: %w", err)
		}
		defer sd.Close()
		return fn(ad, sd)
	})
}

// lockedAlone runs fn with the authority open (made when missing) and
// locked.
func (a *Local) lockedAlone(ctx context.Context, fn func(ad *atomicfile.Dir) error) error {
	ad, err := a.open()
	if err != nil {
		return err
	}
	defer ad.Close()
	unlock, err := ad.Lock(ctx, lockName)
	if err != nil {
		return fmt.Errorf("authority: %w", err)
	}
	defer unlock()
	return fn(ad)
}

// Mirror makes the state directory a copy of the authority again (as
// after a change), undoing any edit made there; it does nothing when no
// authority exists.
func (a *Local) Mirror(ctx context.Context) error {
	if err := requireRoot(); err != nil {
		return err
	}
	exists, err := a.Exists()
	if err != nil || !exists {
		return err
	}
	return a.locked(ctx, false, func(ad, sd *atomicfile.Dir) error { return a.mirror(ctx, ad, sd) })
}

func requireRoot() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("authority: %w; run this as root", ErrNeedRoot)
	}
	return nil
}

// open opens (making it when missing) the authority's directory, refusing
// one that anyone but root could write.
func (a *Local) open() (*atomicfile.Dir, error) {
	ad, err := atomicfile.MkdirAll(a.dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(ad.File().Fd()), &st); err != nil {
		ad.Close()
		return nil, fmt.Errorf("authority: fstat %s: %w", a.dir, err)
	}
	if st.Uid != 0 || st.Mode&0o077 != 0 {
		ad.Close()
		return nil, fmt.Errorf("authority: %s is owned by uid %d with mode %04o; it must be root's alone (root:root 0700): fix it with chown root:root and chmod 0700 after checking its content", a.dir, st.Uid, st.Mode&0o7777)
	}
	return ad, nil
}

// adoptOnce takes the state directory's keys and policies into a new
// authority, on trust, and records it.
func (a *Local) adoptOnce(ctx context.Context, ad, sd *atomicfile.Dir) error {
	if _, err := ad.Lstat(recordName); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("authority: %w", err)
	}
	t, err := ReadTree(sd)
	if err != nil {
		return fmt.Errorf("%w; so the state directory's keys and policies cannot be adopted into %s, and nothing was changed", err, a.dir)
	}
	rec := Record{Version: 1, Created: a.now().UTC(), AdoptedFrom: a.stateDir}
	if t.Keys != nil {
		recs, _ := keys.DecodeFile(t.Keys)
		rec.AdoptedKeys = len(recs)
		if err := MirrorKeys(ctx, ad, t.Keys); err != nil {
			return fmt.Errorf("authority: adopt: %w", err)
		}
	}
	if len(t.Policies) > 0 {
		if err := MirrorPolicies(ctx, ad, t.Policies); err != nil {
			return fmt.Errorf("authority: adopt: %w", err)
		}
		rec.AdoptedPolicies = countPolicies(t.Policies)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("authority: %w", err)
	}
	if err := ad.WriteFile(recordName, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("authority: %w", err)
	}
	if rec.AdoptedKeys == 0 && rec.AdoptedPolicies == 0 {
		a.log.Info("authority: made", "authority", a.dir, "state_dir", a.stateDir)
		return nil
	}
	a.log.Warn("authority: adopted the state directory's keys and policies on trust; review them with `proxmox-mcp key list` and `proxmox-mcp policy list`",
		"authority", a.dir, "state_dir", a.stateDir, "keys", rec.AdoptedKeys, "policies", rec.AdoptedPolicies)
	return nil
}

// Replace makes the authority a copy of the given keys file and policy
// store files: in cluster mode the sync, as root, writes here the state
// it checked and mirrors (pmxcfs's last good state), so that the root
// helper trusts what the sync trusts and never the service user's state
// directory. The record says where the copy came from; a change made
// later (cluster mode turned off) adopts nothing from the state directory.
func (a *Local) Replace(ctx context.Context, policies map[string][]byte, keyData []byte, from string) error {
	if err := requireRoot(); err != nil {
		return err
	}
	return a.lockedAlone(ctx, func(ad *atomicfile.Dir) error {
		if err := MirrorPolicies(ctx, ad, policies); err != nil {
			return fmt.Errorf("authority: %w", err)
		}
		if err := MirrorKeys(ctx, ad, keyData); err != nil {
			return fmt.Errorf("authority: %w", err)
		}
		if _, err := ad.Lstat(recordName); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("authority: %w", err)
		}
		data, err := json.MarshalIndent(Record{Version: 1, Created: a.now().UTC(), AdoptedFrom: from}, "", "  ")
		if err != nil {
			return fmt.Errorf("authority: %w", err)
		}
		if err := ad.WriteFile(recordName, append(data, '\n'), 0o600); err != nil {
			return fmt.Errorf("authority: %w", err)
		}
		return nil
	})
}

// countPolicies is the number of policy texts (versions and drafts) in a
// checked tree, their tests aside.
func countPolicies(files map[string][]byte) int {
	n := 0
	for p := range files {
		if strings.HasSuffix(p, ".rego") && !strings.HasSuffix(p, "_test.rego") {
			n++
		}
	}
	return n
}

// mirror writes the authority's keys and policies into the state
// directory: the policies first, so a key bound to a new policy never
// appears before it.
func (a *Local) mirror(ctx context.Context, ad, sd *atomicfile.Dir) error {
	t, err := ReadTree(ad)
	if err != nil {
		return err
	}
	if err := MirrorPolicies(ctx, sd, t.Policies); err != nil {
		return fmt.Errorf("authority: %w", err)
	}
	data := t.Keys
	if data == nil {
		if data, err = keys.EncodeFile(nil); err != nil {
			return err
		}
	}
	if err := MirrorKeys(ctx, sd, data); err != nil {
		return fmt.Errorf("authority: %w", err)
	}
	return nil
}

// Remove removes the authority (cluster mode supersedes it: pmxcfs is the
// copy root keeps there). A missing authority is no error.
func (a *Local) Remove() error {
	if err := requireRoot(); err != nil {
		return err
	}
	parent, name, err := atomicfile.OpenParent(a.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("authority: %w", err)
	}
	defer parent.Close()
	if _, err := parent.RemoveAll(name); err != nil {
		return fmt.Errorf("authority: remove %s: %w", a.dir, err)
	}
	return nil
}
