package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// execOp is command.exec: a command on the host, argv only, in a
// transient unit's sandbox.
type execOp struct {
	Argv          []string `json:"argv"`
	Cwd           string   `json:"cwd,omitempty"`
	Stdin         string   `json:"stdin,omitempty"`
	StdinEncoding string   `json:"stdin_encoding,omitempty"` // utf-8 (default) or base64
	TimeoutSec    int      `json:"timeout_sec,omitempty"`
	MaxOutput     int      `json:"max_output,omitempty"`
	Writable      []string `json:"writable,omitempty"`

	t      policy.HostOp
	stdin  []byte
	stream Stream
}

func (o *execOp) tool() string          { return Ops["command.exec"] }
func (o *execOp) path() string          { return "" }
func (o *execOp) writes() bool          { return true }
func (o *execOp) target() policy.HostOp { return o.t }

// journalArgs records the command without its stdin (its size is kept).
func (o *execOp) journalArgs() any {
	a := map[string]any{"argv": o.Argv, "cwd": o.Cwd, "timeout_sec": o.TimeoutSec, "writable": o.Writable, "stdin_bytes": len(o.stdin)}
	if o.t.Command != nil {
		a["path"], a["class"] = o.t.Command.Path, o.t.Command.Class
	}
	return a
}

// prepare checks the arguments and makes the command canonical: the
// executable resolved as root sees it, the working directory and the
// writable paths beneath the allowed roots without a link.
func (o *execOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	if s.opts.Services == nil {
		return policy.HostOp{}, &WireError{Code: "refused", Message: errNoServices.Error()}
	}
	if err := CheckArgv("argv", o.Argv); err != nil {
		return policy.HostOp{}, err
	}
	if err := o.checkLimits(); err != nil {
		return policy.HostOp{}, err
	}
	stdin, err := decodeStdin(o.Stdin, o.StdinEncoding)
	if err != nil {
		return policy.HostOp{}, err
	}
	o.stdin = stdin
	exe, err := ResolveExecutable("argv[0]", o.Argv[0], true)
	if err != nil {
		return policy.HostOp{}, err
	}
	cwd, err := s.opts.Tree.cleanCwd("cwd", o.Cwd)
	if err != nil {
		return policy.HostOp{}, err
	}
	var writable []string
	for i, w := range o.Writable {
		p, err := s.opts.Tree.cleanWritable(fmt.Sprintf("writable[%d]", i), w)
		if err != nil {
			return policy.HostOp{}, err
		}
		writable = append(writable, p)
	}
	slices.Sort(writable)
	writable = slices.Compact(writable)
	o.t = policy.HostOp{Op: "command.exec", Command: &policy.Command{
		Path: exe, Argv: o.Argv, Cwd: cwd, Class: Classify(exe, o.Argv), Writable: writable, TimeoutSec: o.TimeoutSec,
	}}
	return o.t, nil
}

func (o *execOp) do(ctx context.Context, s *Server) (any, error) {
	c := o.t.Command
	if o.stream.Gone != nil {
		ctx = o.stream.Gone
	}
	spec := ExecSpec{
		Path: c.Path, Argv: c.Argv, Cwd: c.Cwd, Stdin: o.stdin,
		Timeout: time.Duration(c.TimeoutSec) * time.Second, MaxOutput: o.MaxOutput,
		Sandbox: s.sandbox(c.Writable),
	}
	return s.opts.Services.Exec(ctx, spec, o.stream.Progress)
}

// sandbox is a command's view of the host beyond the fixed hardening:
// the paths it may write; the protected repository read-only; the refused
// paths, the helper's socket, the system bus, systemd's own sockets and
// the protected devices inaccessible. A path that does not exist is
// skipped ("-").
func (s *Server) sandbox(writable []string) Sandbox {
	sb := Sandbox{Writable: writable}
	for _, p := range ProtectedPaths(s.opts.Protected) {
		sb.ReadOnly = append(sb.ReadOnly, "-"+p)
	}
	sb.Inaccessible = s.opts.Tree.InaccessiblePaths()
	for _, p := range []string{"/run/dbus", "/run/systemd/private", "/run/systemd/io.systemd.Manager", "/run/systemd/io.systemd.ManagedOOM"} {
		sb.Inaccessible = append(sb.Inaccessible, "-"+p)
	}
	if s.opts.Socket != "" {
		sb.Inaccessible = append(sb.Inaccessible, "-"+filepath.Dir(s.opts.Socket))
	}
	for _, d := range ProtectedDeviceNodes(s.opts.ProtectedDevices) {
		sb.Inaccessible = append(sb.Inaccessible, "-"+d)
	}
	return sb
}

// ProtectedDeviceNodes are the device nodes of the protected devices and
// LVs (vg/lv as /dev/vg/lv) in the host's view now: each resolved to its
// node (/dev/dm-3 for /dev/mapper/vg-lv and every /dev/disk/by-* link to
// it), with every device it is built on (its slaves in sysfs: the
// partitions and disks beneath an LV), so that no alias or lower layer
// reaches the same blocks. A name that does not resolve is kept as given.
func ProtectedDeviceNodes(devices []string) []string {
	var out []string
	seen := map[string]bool{}
	var add func(node string, depth int)
	add = func(node string, depth int) {
		if seen[node] || depth > 8 {
			return
		}
		seen[node] = true
		out = append(out, node)
		name := filepath.Base(node)
		slaves, _ := os.ReadDir(filepath.Join("/sys/class/block", name, "slaves"))
		for _, sl := range slaves {
			add("/dev/"+sl.Name(), depth+1)
		}
	}
	for _, d := range devices {
		if !filepath.IsAbs(d) {
			d = "/dev/" + d // vg/lv
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			add(real, 0)
			continue
		}
		add(filepath.Clean(d), 0)
	}
	slices.Sort(out)
	return out
}
