package host

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// ContainerConfigDir is where PVE keeps this node's container
// configurations (pmxcfs; /etc/pve/lxc links to this node's directory).
const ContainerConfigDir = "/etc/pve/lxc"

// guestExecOp is guest.exec in a container: pct exec VMID -- argv, run
// by the helper in a transient unit with the command limits. The policy
// sees the guest and the command as given (argv[0] is resolved inside
// the container, by its own PATH).
type guestExecOp struct {
	VMID          int      `json:"vmid"`
	Argv          []string `json:"argv"`
	Stdin         string   `json:"stdin,omitempty"`
	StdinEncoding string   `json:"stdin_encoding,omitempty"`
	TimeoutSec    int      `json:"timeout_sec,omitempty"`
	MaxOutput     int      `json:"max_output,omitempty"`

	t      policy.HostOp
	pct    string
	stdin  []byte
	stream Stream
}

func (o *guestExecOp) tool() string          { return Ops["guest.exec"] }
func (o *guestExecOp) path() string          { return "" }
func (o *guestExecOp) writes() bool          { return true }
func (o *guestExecOp) target() policy.HostOp { return o.t }

func (o *guestExecOp) journalArgs() any {
	return map[string]any{"vmid": o.VMID, "argv": o.Argv, "timeout_sec": o.TimeoutSec, "stdin_bytes": len(o.stdin)}
}

// prepare checks the arguments, that the guest is a container of this
// node, and finds pct as root sees it.
func (o *guestExecOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	if s.opts.Services == nil {
		return policy.HostOp{}, &WireError{Code: "refused", Message: errNoServices.Error()}
	}
	if o.VMID < 100 || o.VMID > 999999999 {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "vmid", Message: fmt.Sprintf("vmid %d: must be 100 to 999999999", o.VMID)}
	}
	if err := CheckGuestArgv("argv", o.Argv); err != nil {
		return policy.HostOp{}, err
	}
	limits := execOp{TimeoutSec: o.TimeoutSec, MaxOutput: o.MaxOutput}
	if err := limits.checkLimits(); err != nil {
		return policy.HostOp{}, err
	}
	o.TimeoutSec, o.MaxOutput = limits.TimeoutSec, limits.MaxOutput
	stdin, err := decodeStdin(o.Stdin, o.StdinEncoding)
	if err != nil {
		return policy.HostOp{}, err
	}
	o.stdin = stdin
	conf := ContainerConfigDir + "/" + strconv.Itoa(o.VMID) + ".conf"
	if _, err := os.Stat(conf); errors.Is(err, fs.ErrNotExist) {
		return policy.HostOp{}, &WireError{Code: "not_found", Field: "vmid", Message: fmt.Sprintf("vmid %d: is not a container of this node (no %s)", o.VMID, conf)}
	} else if err != nil {
		return policy.HostOp{}, fmt.Errorf("host: %s: %w", conf, err)
	}
	if o.pct, err = ResolveExecutable("pct", "pct", true); err != nil {
		return policy.HostOp{}, &WireError{Code: "failed", Message: "pct, which runs commands in containers, is not usable here: " + err.Error()}
	}
	node, _ := os.Hostname()
	node, _, _ = strings.Cut(node, ".")
	o.t = policy.HostOp{Op: "guest.exec",
		Guest:   &policy.GuestRef{VMID: o.VMID, Type: "lxc", Node: node},
		Command: &policy.Command{Path: o.Argv[0], Argv: o.Argv, Cwd: "/", Class: Classify(o.Argv[0], o.Argv), TimeoutSec: o.TimeoutSec},
	}
	return o.t, nil
}

func (o *guestExecOp) do(ctx context.Context, s *Server) (any, error) {
	if o.stream.Gone != nil {
		ctx = o.stream.Gone
	}
	argv := append([]string{"pct", "exec", strconv.Itoa(o.VMID), "--"}, o.Argv...)
	spec := ExecSpec{Path: o.pct, Argv: argv, Cwd: "/", Stdin: o.stdin, Guest: true,
		Timeout: time.Duration(o.TimeoutSec) * time.Second, MaxOutput: o.MaxOutput}
	res, err := s.opts.Services.Exec(ctx, spec, o.stream.Progress)
	// The answer names the command as the guest ran it.
	res.Path, res.Argv = o.Argv[0], o.Argv
	return res, err
}

// CheckGuestArgv holds a command inside a guest to the argv rules, and
// refuses a shell, interpreter or launcher named without a path: the
// engine lets one run only where a reason names its path, and a bare name
// (at, sh) is found inside many a reason's words, an absolute path only
// where a policy wrote it. The tool and the helper both apply it.
func CheckGuestArgv(field string, argv []string) error {
	if err := CheckArgv(field, argv); err != nil {
		return err
	}
	if class := Classify(argv[0], argv); class != "" && !strings.HasPrefix(argv[0], "/") {
		return &PathError{Field: field + "[0]", Path: argv[0], Rule: fmt.Sprintf("is a %s (it runs other programs): inside a guest, name it by its absolute path (such as /usr/bin/%s), which a policy must name to let it run", class, argv[0])}
	}
	return nil
}

// checkLimits applies the defaults and bounds of timeout_sec and
// max_output.
func (o *execOp) checkLimits() error {
	if o.TimeoutSec == 0 {
		o.TimeoutSec = DefaultTimeout
	}
	if o.TimeoutSec < 1 || o.TimeoutSec > MaxTimeout {
		return &WireError{Code: "bad_request", Field: "timeout_sec", Message: fmt.Sprintf("timeout_sec %d: must be 1 to %d seconds", o.TimeoutSec, MaxTimeout)}
	}
	if o.MaxOutput == 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxOutput < 1 || o.MaxOutput > MaxOutput {
		return &WireError{Code: "bad_request", Field: "max_output", Message: fmt.Sprintf("max_output %d: must be 1 to %d bytes", o.MaxOutput, MaxOutput)}
	}
	return nil
}

// decodeStdin is stdin as given: utf-8 text (the default) or base64, at
// most MaxStdin bytes; nil when empty.
func decodeStdin(in, encoding string) ([]byte, error) {
	var b []byte
	switch encoding {
	case "", "utf-8":
		if in != "" {
			b = []byte(in)
		}
	case "base64":
		var err error
		if b, err = base64.StdEncoding.DecodeString(in); err != nil {
			return nil, &WireError{Code: "bad_request", Field: "stdin", Message: "stdin: not valid base64: " + err.Error()}
		}
	default:
		return nil, &WireError{Code: "bad_request", Field: "stdin_encoding", Message: fmt.Sprintf("stdin_encoding %q: must be utf-8 or base64", encoding)}
	}
	if len(b) > MaxStdin {
		return nil, &WireError{Code: "bad_request", Field: "stdin", Message: fmt.Sprintf("stdin is %d bytes; at most %d", len(b), MaxStdin)}
	}
	return b, nil
}
