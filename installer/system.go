package installer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// Cmd is one command the installer runs: a program name looked up in the
// system directories under the root, and its arguments. There is never a
// shell in between.
type Cmd struct {
	// Name is the program (pveum, systemctl, ...).
	Name string
	Args []string
	// Stdin is written to the command's standard input.
	Stdin []byte
	// Timeout bounds the command; DefaultTimeout when zero.
	Timeout time.Duration
	// SecretOutput marks a command whose output holds a secret (a token's
	// value): it is never logged.
	SecretOutput bool
}

// DefaultTimeout bounds a command without a timeout of its own.
const DefaultTimeout = time.Minute

// String is the command line as an operator would type it, quoting
// arguments that need it (never a secret: secrets travel in files and
// output, not in arguments).
func (c Cmd) String() string {
	parts := []string{c.Name}
	for _, a := range c.Args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes an argument for display.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Runner runs commands. Run returns the command's standard output and
// error; a command that ran and failed returns a *CommandError.
type Runner interface {
	Run(ctx context.Context, c Cmd) (stdout, stderr []byte, err error)
}

// CommandError is a command that could not run or exited non-zero.
type CommandError struct {
	Cmd string
	// Code is the exit status; -1 when the command did not run (not found,
	// killed by the timeout).
	Code   int
	Stderr string
	Err    error
}

func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	switch {
	case e.Code < 0:
		return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	case msg == "":
		return fmt.Sprintf("%s: exit status %d", e.Cmd, e.Code)
	default:
		return fmt.Sprintf("%s: exit status %d: %s", e.Cmd, e.Code, msg)
	}
}

func (e *CommandError) Unwrap() error { return e.Err }

// ErrNotFound is wrapped by a CommandError for a program that is not
// installed.
var ErrNotFound = errors.New("not installed")

// systemDirs are where programs are looked up, under the root.
var systemDirs = []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// ExecRunner runs programs from the system directories under Root with a
// fixed environment (PATH, the C locale, no pager or colours).
type ExecRunner struct {
	Root string
}

// Run runs c.
func (x ExecRunner) Run(ctx context.Context, c Cmd) ([]byte, []byte, error) {
	if c.Name == "" || strings.ContainsRune(c.Name, '/') {
		return nil, nil, &CommandError{Cmd: c.String(), Code: -1, Err: fmt.Errorf("%q is not a program name", c.Name)}
	}
	path := ""
	for _, d := range systemDirs {
		p := filepath.Join(x.Root, d, c.Name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			path = p
			break
		}
	}
	if path == "" {
		return nil, nil, &CommandError{Cmd: c.String(), Code: -1, Err: fmt.Errorf("%w (looked in %s)", ErrNotFound, strings.Join(systemDirs, ", "))}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, c.Args...)
	cmd.Env = []string{
		"PATH=" + strings.Join(systemDirs, ":"), "LC_ALL=C.UTF-8", "LANG=C.UTF-8",
		"SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", "PAGER=cat",
	}
	cmd.Stdin = bytes.NewReader(c.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The command runs in its own process group, killed whole on timeout:
	// a pveum or systemctl that started children leaves none behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), stderr.Bytes(), nil
	}
	ce := &CommandError{Cmd: c.String(), Code: -1, Stderr: stderr.String(), Err: err}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		ce.Err = fmt.Errorf("no answer within %s: %w", timeout, ctx.Err())
	case errors.As(err, &exit):
		ce.Code = exit.ExitCode()
	}
	return stdout.Bytes(), stderr.Bytes(), ce
}

// Owners gives files to users and groups and says whose they are. Files
// are given away through their open descriptor, never by path: a path in
// a directory another user can write could name any file by the time it
// is used.
type Owners interface {
	// Chown gives an open file or directory to uid:gid.
	Chown(f *os.File, uid, gid int) error
	// Owner says whose a file is, from its (l)stat.
	Owner(fi fs.FileInfo) (uid, gid int, err error)
}

// HostOwners changes and reads the real ownership. Chown is applied only
// when the process runs as root: nobody else may give files away.
type HostOwners struct{}

// Chown gives f to uid:gid (fchown) when running as root.
func (HostOwners) Chown(f *os.File, uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", f.Name(), err)
	}
	return nil
}

// Owner reads the owner from the stat.
func (HostOwners) Owner(fi fs.FileInfo) (int, int, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("%s: no owner information", fi.Name())
	}
	return int(st.Uid), int(st.Gid), nil
}

// System is the host the installer works on. Every path the installer
// reads or writes is resolved under Root, and every command goes through
// Run.
type System struct {
	// Root is "/" on a host.
	Root string
	Run  Runner
	// Owners changes and reads file ownership.
	Owners Owners
	// Euid is the effective user id (install needs root).
	Euid int
	// FreeBytes is the space left for an unprivileged writer on the file
	// system of a host path.
	FreeBytes func(path string) (uint64, error)
	// PortFree says whether a TCP address can be bound.
	PortFree func(ctx context.Context, addr string) error
	// Hostname is the host's name (the PVE node name).
	Hostname func() (string, error)
	// Now is the clock.
	Now func() time.Time
	// Rand is the source of key ids and secrets; crypto/rand when nil.
	Rand io.Reader
	// KeyParams are the scrypt parameters of the initial key's hash;
	// keys.DefaultParams when zero.
	KeyParams keys.Params
	// LoginWait is how long install waits for the Tailnet login URL.
	LoginWait time.Duration
	// Log receives the commands run and the files written (never a
	// secret), at debug level.
	Log *slog.Logger
}

// Host is the real host: root "/", real commands, real ownership.
func Host(log *slog.Logger) *System {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &System{
		Root:   "/",
		Run:    ExecRunner{Root: "/"},
		Owners: HostOwners{},
		Euid:   os.Geteuid(),
		FreeBytes: func(path string) (uint64, error) {
			var st syscall.Statfs_t
			if err := syscall.Statfs(path, &st); err != nil {
				return 0, fmt.Errorf("statfs %s: %w", path, err)
			}
			return st.Bavail * uint64(st.Bsize), nil
		},
		PortFree: func(ctx context.Context, addr string) error {
			l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			return l.Close()
		},
		Hostname:  os.Hostname,
		Now:       time.Now,
		LoginWait: 20 * time.Second,
		Log:       log,
	}
}

// check refuses a System that would resolve paths outside what it names.
func (s *System) check() error {
	if s == nil || s.Run == nil || s.Owners == nil || s.FreeBytes == nil || s.PortFree == nil || s.Hostname == nil || s.Now == nil {
		return errors.New("installer: the system is missing a seam (Run, Owners, FreeBytes, PortFree, Hostname, Now)")
	}
	if !filepath.IsAbs(s.Root) || filepath.Clean(s.Root) != s.Root {
		return fmt.Errorf("installer: root %q must be an absolute, clean path", s.Root)
	}
	return nil
}

// path resolves a host path under the root. Paths are absolute and clean:
// the installer builds them itself, so anything else is a bug.
func (s *System) path(p string) string {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		panic(fmt.Sprintf("installer: path %q is not absolute and clean", p))
	}
	return filepath.Join(s.Root, p)
}

// run runs a command, logging it (never its output when it is secret).
func (s *System) run(ctx context.Context, c Cmd) ([]byte, error) {
	s.logger().Debug("installer: run", "cmd", c.String())
	stdout, stderr, err := s.Run.Run(ctx, c)
	if err != nil {
		var ce *CommandError
		if !errors.As(err, &ce) {
			err = &CommandError{Cmd: c.String(), Code: -1, Stderr: string(stderr), Err: err}
		}
		return stdout, err
	}
	return stdout, nil
}

func (s *System) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
