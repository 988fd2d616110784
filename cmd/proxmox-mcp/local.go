package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/daemon"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// sessionFlags are the flags that choose who calls and on which daemon
// state: the configuration, the state directory and the key. Every local
// invocation that acts through the daemon's tools (stdio, tools list,
// tools call, call) has them.
type sessionFlags struct {
	config, stateDir, keyFile *string
	localRoot                 *bool
	// rootByDefault: uid 0 without a key is local-root without asking
	// (tools, call: one call a person types); stdio, which an MCP client
	// keeps open for an agent, needs --local-root said.
	rootByDefault bool
}

func addSessionFlags(fs *flag.FlagSet, rootByDefault bool) sessionFlags {
	keyHelp := "file holding the key to call with (else $PMCP_KEY)"
	rootHelp := "act as root on this host, without a key (uid 0 only; audited as local-root)"
	if rootByDefault {
		keyHelp = "file holding the key to call with (else $PMCP_KEY; as root without either: local-root)"
		rootHelp = "call as local-root (uid 0 only; the default for root without a key)"
	}
	return sessionFlags{
		config:        fs.String("config", "", "configuration file (default "+config.DefaultFile+")"),
		stateDir:      fs.String("state-dir", "", "state directory (overrides the configuration's)"),
		keyFile:       fs.String("key-file", "", keyHelp),
		localRoot:     fs.Bool("local-root", false, rootHelp),
		rootByDefault: rootByDefault,
	}
}

// key is the key a local invocation acts with: the one in --key-file,
// else $PMCP_KEY; "" is local-root, which only uid 0 may be. It is read
// before the command gives up root (asStateOwner): the file is the
// operator's, named on the command line, not the service user's.
func (f sessionFlags) key() (string, error) {
	env := strings.TrimSpace(os.Getenv("PMCP_KEY"))
	root := os.Geteuid() == 0
	switch {
	case *f.localRoot && (*f.keyFile != "" || env != ""):
		return "", usagef("--local-root takes no key")
	case *f.localRoot && !root:
		return "", usagef("--local-root is only for uid 0 on the host; give a key with --key-file or $PMCP_KEY")
	case *f.localRoot:
		return "", nil
	case *f.keyFile != "":
		b, err := os.ReadFile(*f.keyFile)
		if err != nil {
			return "", fmt.Errorf("--key-file: %w", err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			// Never local-root by accident: an empty file is no key.
			return "", fmt.Errorf("--key-file %s: the file is empty, not a key", *f.keyFile)
		}
		return key, nil
	case env != "":
		return env, nil
	case root && f.rootByDefault:
		return "", nil
	case root:
		return "", usagef("give the key in $PMCP_KEY or --key-file, or use --local-root as root")
	}
	return "", usagef("give a key with --key-file or $PMCP_KEY (local-root is for uid 0 only)")
}

// openLocal starts the daemon's system in this process for the caller
// the flags name, as the state directory's owner: the configuration is
// read, the key chosen, root given up (asStateOwner), and only then is
// anything in the state directory opened. logLevel "" is the
// configuration's.
func (c *cli) openLocal(f sessionFlags, logLevel string) (*daemon.Daemon, tools.Caller, error) {
	cfg, err := config.Resolve(*f.config, *f.stateDir)
	if err != nil {
		return nil, tools.Caller{}, err
	}
	key, err := f.key()
	if err != nil {
		return nil, tools.Caller{}, err
	}
	if err := asStateOwner(cfg); err != nil {
		return nil, tools.Caller{}, err
	}
	if logLevel == "" {
		logLevel = cfg.Log.Level
	}
	d, err := daemon.New(c.ctx, daemon.Options{Config: cfg, ConfigPath: *f.config, Version: version, Logger: c.logger(logLevel)})
	if err != nil {
		return nil, tools.Caller{}, err
	}
	if key == "" {
		return d, daemon.LocalRoot(), nil
	}
	caller, err := d.StdioCaller(c.ctx, key)
	if err != nil {
		return nil, tools.Caller{}, errors.Join(err, d.Close())
	}
	return d, caller, nil
}

// asStateOwner gives up root for the owner of the state directory (the
// daemon's user) before anything in it is opened, and stays root only
// when the directory is root's alone. Root never opens, creates or
// follows a file in a directory another user can write: a link planted
// there as the journal, as SQLite's -wal or -shm beside it, or as keys
// or policies, would send root's read or write wherever that user
// chose. As the owner, the command can do what the daemon's user could,
// and needs nothing of root's afterwards.
//
// Ownership that does not say whose the state is is refused, naming the
// path and the rule: a state directory that is root's but writable by
// others, one whose group is root's while its owner is not (root would
// hand its group over), a journal that is not the directory owner's, and
// a root's directory under one that another user can write (they could
// put a directory of theirs in its place). A state directory not there
// yet is made by root, as the daemon would, only where nobody else can
// write.
func asStateOwner(cfg *config.Config) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid, err := stateOwner(cfg)
	if err != nil || uid == 0 {
		return err
	}
	return becomeUser(uid, gid)
}

// stateOwner is the user and group a root command acts as in the state
// directory, with the checks asStateOwner describes. Nothing in the
// directory is opened but the directory itself; the journal is only
// looked at (lstat).
func stateOwner(cfg *config.Config) (uid, gid int, err error) {
	dir, journalName := cfg.StateDir, filepath.Base(cfg.JournalPath())
	abs, err := filepath.Abs(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("state directory %s: %w", dir, err)
	}
	// Walked to as atomicfile does: a link on the way is followed only
	// where nobody but root could have put it.
	d, err := atomicfile.OpenDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, rootMakes(dir, abs)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("state directory %s: %w", dir, err)
	}
	defer d.Close()
	uid, gid, perm, err := dirOwner(d)
	if err != nil {
		return 0, 0, fmt.Errorf("state directory %s: %w", dir, err)
	}
	switch {
	case uid == 0 && perm&0o022 != 0:
		return 0, 0, fmt.Errorf("state directory %s is root's but others can write it (mode %s): root works only in a directory nobody else can write; chmod go-w it, or give it to the daemon's user", dir, perm)
	case uid != 0 && gid == 0:
		return 0, 0, fmt.Errorf("state directory %s is uid %d's with root's group (gid 0): root does not hand its group to the state's owner; give the directory the daemon's group (chown USER:GROUP)", dir, uid)
	case uid == 0:
		// Root stays root only if nobody else can put another directory
		// in this one's place either.
		if err := rootAbove(d.Path()); err != nil {
			return 0, 0, fmt.Errorf("state directory %s is root's, but %w", dir, err)
		}
	}
	jfi, err := d.Lstat(journalName)
	if errors.Is(err, fs.ErrNotExist) {
		return uid, gid, nil
	}
	jpath := cfg.JournalPath()
	if err != nil {
		return 0, 0, fmt.Errorf("journal %s: %w", jpath, err)
	}
	if !jfi.Mode().IsRegular() {
		return 0, 0, fmt.Errorf("journal %s: not a regular file (%s)", jpath, jfi.Mode().Type())
	}
	jst, ok := jfi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("journal %s: cannot tell its owner", jpath)
	}
	switch ju := int(jst.Uid); {
	case ju == 0 && uid != 0:
		return 0, 0, fmt.Errorf("journal %s is root's, in a directory another user can write (owner uid %d, mode %s): give the journal to the daemon's user, or the directory to root", jpath, uid, perm)
	case ju != uid:
		return 0, 0, fmt.Errorf("journal %s is uid %d's but its state directory is uid %d's: the state is one user's (the daemon's), so root cannot tell whose it is; give both to the daemon's user (chown -R)", jpath, ju, uid)
	}
	return uid, gid, nil
}

// rootMakes checks that root may make the missing state directory (the
// daemon makes it, and any missing parent, following links): its nearest
// existing ancestor is root's and nobody else can write it, nor put
// another directory in its place.
func rootMakes(dir, abs string) error {
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		d, err := atomicfile.OpenDir(p)
		if errors.Is(err, fs.ErrNotExist) && p != "/" {
			continue
		}
		if err != nil {
			return fmt.Errorf("state directory %s: %w", dir, err)
		}
		uid, _, perm, err := dirOwner(d)
		d.Close()
		switch {
		case err != nil:
			return fmt.Errorf("state directory %s: %w", dir, err)
		case uid != 0 || perm&0o022 != 0:
			return fmt.Errorf("state directory %s does not exist and root would make it in %s, which another user can write (owner uid %d, mode %s): root makes nothing where another user can write; make the directory as the daemon's user first", dir, d.Path(), uid, perm)
		}
		if err := rootAbove(d.Path()); err != nil {
			return fmt.Errorf("state directory %s does not exist, and %w", dir, err)
		}
		return nil
	}
}

// rootAbove fails unless every directory above path (a path without
// links, as atomicfile opened it) is root's and nobody else can write
// it, or is sticky (as /tmp): nobody else can then rename or remove
// root's entry in it.
func rootAbove(path string) error {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: cannot tell its owner", p)
		}
		if st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%s, above it, has owner uid %d and mode %s: another user could put a directory of theirs in its place; root works only under directories that nobody else can write", p, st.Uid, fi.Mode().Perm())
		}
		if p == "/" {
			return nil
		}
	}
}

// dirOwner is an open directory's owner, group and permission bits.
func dirOwner(d *atomicfile.Dir) (uid, gid int, perm fs.FileMode, err error) {
	fi, err := d.File().Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, errors.New("cannot tell its owner")
	}
	return int(st.Uid), int(st.Gid), fi.Mode().Perm(), nil
}
