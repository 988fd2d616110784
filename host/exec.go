package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// A command runs in a transient systemd service, started through
// systemd's D-Bus API with the helper's pipes as its stdin, stdout and
// stderr: the sandbox is systemd's (ProtectSystem=strict, the refused
// paths inaccessible, the protected repository read-only, no new
// privileges, a reduced capability bounding set, private /tmp and PIDs,
// no new namespaces, no D-Bus), its limits systemd's (RuntimeMaxSec,
// MemoryMax, TasksMax).

// Command limits.
const (
	DefaultTimeout   = 60
	MaxTimeout       = 3600
	DefaultMaxOutput = 64 << 10
	MaxOutput        = 1 << 20
	MaxStdin         = 1 << 20
	// MemoryMax and TasksMax bound every command.
	MemoryMax = 1 << 30
	TasksMax  = 256
)

// Env is the whole environment of a command: nothing of the caller's.
var Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root", "TERM=dumb"}

// Sandbox is what a command's unit is given beyond the fixed hardening.
type Sandbox struct {
	// Writable are the canonical paths the command may write.
	Writable []string
	// ReadOnly are the protected repository's paths.
	ReadOnly []string
	// Inaccessible are the refused paths, the helper's socket, the
	// system bus and systemd's private socket, and the protected
	// devices.
	Inaccessible []string
}

// ExecSpec is one command to run.
type ExecSpec struct {
	Path    string
	Argv    []string
	Cwd     string
	Stdin   []byte // nil: /dev/null
	Timeout time.Duration
	// MaxOutput bounds each of stdout and stderr.
	MaxOutput int
	Sandbox   Sandbox
	// Guest marks pct exec: the program enters a container's namespaces
	// (lxc-attach needs CAP_SYS_ADMIN and the host's view), so the unit
	// has the limits, the pipes and the fixed environment but not the
	// host command's sandbox; the command itself runs inside the guest.
	Guest bool
}

// ExecProgress is what a running command has done so far.
type ExecProgress struct {
	Unit        string `json:"unit"`
	ElapsedMS   int64  `json:"elapsed_ms"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
}

// Output is one stream of a command: its first MaxOutput bytes (text as
// utf-8, else base64), how many it wrote in all, and whether the rest was
// cut, with an explicit marker at the end of the text.
type Output struct {
	Data      string `json:"data"`
	Encoding  string `json:"encoding"`
	Bytes     int64  `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ExecResult is how a command ended.
type ExecResult struct {
	Unit string   `json:"unit"`
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
	// Result is systemd's: success, exit-code, signal, core-dump,
	// timeout, oom-kill, resources.
	Result   string `json:"result"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// SystemdStatus names an exit status of systemd's own (203/EXEC,
	// 226/NAMESPACE, ...): the sandbox could not start the command.
	SystemdStatus string `json:"systemd_status,omitempty"`
	DurationMS    int64  `json:"duration_ms"`
	Stdout        Output `json:"stdout"`
	Stderr        Output `json:"stderr"`
}

// capabilities is the bounding set of a command: what diagnostics and
// administration need, without what would undo the sandbox (CAP_SYS_ADMIN
// mounts, CAP_SYS_PTRACE reaches other processes' roots, CAP_SYS_MODULE,
// CAP_MKNOD makes device nodes, CAP_SETUID/SETGID/SETPCAP/SETFCAP, the
// MAC, audit, BPF, boot, time and chroot capabilities).
var capabilities = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER, unix.CAP_FSETID,
	unix.CAP_KILL, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_NET_RAW, unix.CAP_IPC_LOCK,
	unix.CAP_SYS_RAWIO, unix.CAP_SYS_NICE, unix.CAP_SYS_RESOURCE,
}

func capabilityMask() uint64 {
	var m uint64
	for _, c := range capabilities {
		m |= 1 << c
	}
	return m
}

// execStart is systemd's ExecStart= element on D-Bus: (sasb).
type execStart struct {
	Path             string
	Args             []string
	UncleanIsFailure bool
}

// properties are a command's unit.
func (spec ExecSpec) properties(stdin, stdout, stderr int) []sddbus.Property {
	p := func(name string, v any) sddbus.Property {
		return sddbus.Property{Name: name, Value: dbus.MakeVariant(v)}
	}
	props := []sddbus.Property{
		p("Description", "proxmox-mcp command: "+spec.Path),
		// Type=simple, not exec: with PrivatePIDs the main process is
		// the grandchild that systemd's executor forks into the new PID
		// namespace, which systemd 257 supervises as "not our child"
		// and finds dead by looking at it. Type=exec's exec_fd event,
		// handled before the SIGCHLD of a command that exited at once,
		// then saw a zombie, "stopped" the unit (SIGKILL to the zombie)
		// and lost the exit status: `false` came back as success with no
		// exit code, 19 of 1000 runs of `true` under load (docs/host.md).
		p("Type", "simple"),
		p("ExecStart", []execStart{{Path: spec.Path, Args: spec.Argv}}),
		p("WorkingDirectory", spec.Cwd),
		p("Environment", Env),
		p("StandardOutputFileDescriptor", dbus.UnixFD(stdout)),
		p("StandardErrorFileDescriptor", dbus.UnixFD(stderr)),
		p("MemoryMax", uint64(MemoryMax)),
		p("TasksMax", uint64(TasksMax)),
		p("RuntimeMaxUSec", uint64(spec.Timeout/time.Microsecond)),
		p("TimeoutStopUSec", uint64(5*time.Second/time.Microsecond)),
		p("AddRef", true),
		p("CollectMode", "inactive-or-failed"),
	}
	if stdin >= 0 {
		props = append(props, p("StandardInputFileDescriptor", dbus.UnixFD(stdin)))
	}
	if spec.Guest {
		return props
	}
	props = append(props,
		p("ProtectSystem", "strict"),
		p("NoNewPrivileges", true),
		p("CapabilityBoundingSet", capabilityMask()),
		p("AmbientCapabilities", uint64(0)),
		p("PrivateTmp", true),
		p("PrivatePIDs", "yes"), // a string in systemd 257 (yes, no)
		p("ProtectKernelTunables", true),
		p("ProtectKernelModules", true),
		p("ProtectKernelLogs", true),
		p("ProtectControlGroups", true),
		p("ProtectClock", true),
		p("ProtectHostname", true),
		p("RestrictNamespaces", uint64(0)),
		p("RestrictSUIDSGID", true),
		p("RestrictRealtime", true),
		p("LockPersonality", true),
		p("SystemCallArchitectures", []string{"native"}),
	)
	if len(spec.Sandbox.Writable) > 0 {
		props = append(props, p("ReadWritePaths", spec.Sandbox.Writable))
	}
	if len(spec.Sandbox.ReadOnly) > 0 {
		props = append(props, p("ReadOnlyPaths", spec.Sandbox.ReadOnly))
	}
	if len(spec.Sandbox.Inaccessible) > 0 {
		props = append(props, p("InaccessiblePaths", spec.Sandbox.Inaccessible))
	}
	return props
}

// Exec runs spec in a transient unit and waits for it to end, calling
// progress (when not nil) about once a second. When ctx ends first, the
// unit is stopped.
func (s *Services) Exec(ctx context.Context, spec ExecSpec, progress func(ExecProgress)) (ExecResult, error) {
	res := ExecResult{Path: spec.Path, Argv: spec.Argv, Cwd: spec.Cwd}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return res, fmt.Errorf("host: %w", err)
	}
	res.Unit = "proxmox-mcp-exec-" + hex.EncodeToString(id[:]) + ".service"
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return res, fmt.Errorf("host: reach systemd over D-Bus: %w", err)
	}
	defer conn.Close() // drops the unit's reference: systemd collects it
	outR, outW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("host: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return res, fmt.Errorf("host: %w", err)
	}
	defer errR.Close()
	stdin := -1
	var inR, inW *os.File
	if spec.Stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			outW.Close()
			errW.Close()
			return res, fmt.Errorf("host: %w", err)
		}
		stdin = int(inR.Fd())
	}
	start := time.Now()
	_, err = conn.StartTransientUnitContext(ctx, res.Unit, "fail", spec.properties(stdin, int(outW.Fd()), int(errW.Fd())), nil)
	// systemd holds its own copies of the pipes now (or none).
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		if inW != nil {
			inW.Close()
		}
		return res, fmt.Errorf("host: systemd refused the command's unit: %w", err)
	}
	if inW != nil {
		go func() {
			inW.Write(spec.Stdin) //nolint:errcheck // a command need not read its stdin
			inW.Close()
		}()
	}
	stdout, stderr := &capped{max: spec.MaxOutput}, &capped{max: spec.MaxOutput}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(stdout, outR) }() //nolint:errcheck // a read error ends the stream
	go func() { defer wg.Done(); io.Copy(stderr, errR) }() //nolint:errcheck // as above
	streams := make(chan struct{})
	go func() { wg.Wait(); close(streams) }()

	stopped := s.waitStreams(ctx, conn, res.Unit, spec.Timeout, start, streams, func() {
		if progress != nil {
			progress(ExecProgress{Unit: res.Unit, ElapsedMS: time.Since(start).Milliseconds(), StdoutBytes: stdout.total(), StderrBytes: stderr.total()})
		}
	})
	if err := s.waitInactive(conn, res.Unit); err != nil {
		return res, err
	}
	res.DurationMS = time.Since(start).Milliseconds()
	if err := s.exitOf(conn, &res); err != nil {
		return res, err
	}
	// Streams end once the unit's processes are gone.
	select {
	case <-streams:
	case <-time.After(5 * time.Second):
		outR.Close()
		errR.Close()
		<-streams
	}
	res.Stdout, res.Stderr = stdout.output(), stderr.output()
	if stopped != "" {
		return res, fmt.Errorf("host: %s: the command was stopped (%s)", res.Unit, stopped)
	}
	return res, nil
}

// waitStreams waits for the command's streams to end, reporting progress
// each second; it stops the unit when ctx ends or well past the timeout
// systemd enforces, and says why ("" when the streams ended).
func (s *Services) waitStreams(ctx context.Context, conn *sddbus.Conn, unit string, timeout time.Duration, start time.Time, streams <-chan struct{}, tick func()) string {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	backstop := time.NewTimer(timeout + 15*time.Second)
	defer backstop.Stop()
	stop := func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ch := make(chan string, 1)
		if _, err := conn.StopUnitContext(stopCtx, unit, "replace", ch); err == nil {
			select {
			case <-ch:
			case <-stopCtx.Done():
			}
		}
	}
	for {
		select {
		case <-streams:
			return ""
		case <-t.C:
			tick()
		case <-ctx.Done():
			stop()
			return "the call ended: " + context.Cause(ctx).Error()
		case <-backstop.C:
			stop()
			return fmt.Sprintf("it ran %s, past its timeout of %s", time.Since(start).Round(time.Second), timeout)
		}
	}
}

// waitInactive waits until the unit has ended (its streams may end a
// moment before systemd has seen its main process exit).
func (s *Services) waitInactive(conn *sddbus.Conn, unit string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	delay := time.Millisecond
	for {
		p, err := conn.GetUnitPropertyContext(ctx, unit, "ActiveState")
		if err != nil {
			return fmt.Errorf("host: the state of %s: %w", unit, err)
		}
		if st, _ := p.Value.Value().(string); st == "inactive" || st == "failed" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("host: %s did not end within 30 s of its output", unit)
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// exitOf reads how the unit's main process ended.
//
// Whether the program was executed at all is systemd's hand-off
// timestamp (ExecMainHandoffTimestamp, systemd 256 and later), which its
// executor sends just before the execve: an exit status of systemd's own
// without it is the sandbox's setup failing (226/NAMESPACE, 200/CHDIR, ...);
// 203/EXEC is the one that comes after it, when the execve itself fails.
func (s *Services) exitOf(conn *sddbus.Conn, res *ExecResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := conn.GetUnitTypePropertiesContext(ctx, res.Unit, "Service")
	if err != nil {
		return fmt.Errorf("host: how %s ended: %w", res.Unit, err)
	}
	res.Result, _ = p["Result"].(string)
	code, _ := p["ExecMainCode"].(int32)
	status, _ := p["ExecMainStatus"].(int32)
	handoff, _ := p["ExecMainHandoffTimestampMonotonic"].(uint64)
	switch code {
	case 1: // CLD_EXITED
		st := int(status)
		res.ExitCode = &st
		if name, ok := systemdStatus[st]; ok && (handoff == 0 || st == 203) {
			// The status of systemd's own setup before the exec, or
			// of the exec failing: the command did not run.
			res.SystemdStatus = strconv.Itoa(st) + "/" + name
		}
	case 2, 3: // CLD_KILLED, CLD_DUMPED
		res.Signal = unix.SignalName(unix.Signal(status))
	default:
		if res.Result == "success" {
			// systemd saw the unit end well without recording how its
			// main process ended: never answer that as a success.
			return fmt.Errorf("host: %s: systemd recorded no exit status for the command (result %s)", res.Unit, res.Result)
		}
	}
	return nil
}

// systemdStatus names systemd's own exit statuses (systemd.exec(5)), those
// of a command its sandbox could not start.
var systemdStatus = map[int]string{
	200: "CHDIR", 201: "NICE", 202: "FDS", 203: "EXEC", 204: "MEMORY", 205: "LIMITS", 206: "OOM_ADJUST",
	207: "SIGNAL_MASK", 208: "STDIN", 209: "STDOUT", 210: "CHROOT", 211: "IOPRIO", 212: "TIMERSLACK",
	213: "SECUREBITS", 214: "SETSCHEDULER", 215: "CPUAFFINITY", 216: "GROUP", 217: "USER", 218: "CAPABILITIES",
	219: "CGROUP", 220: "SETSID", 221: "CONFIRM", 222: "STDERR", 224: "PAM", 225: "NETWORK", 226: "NAMESPACE",
	227: "NO_NEW_PRIVILEGES", 228: "SECCOMP", 229: "SELINUX_CONTEXT", 230: "PERSONALITY", 231: "APPARMOR_PROFILE",
	232: "ADDRESS_FAMILIES", 233: "RUNTIME_DIRECTORY", 235: "CHOWN", 236: "SMACK_PROCESS_LABEL", 237: "KEYRING",
	238: "STATE_DIRECTORY", 239: "CACHE_DIRECTORY", 240: "LOGS_DIRECTORY", 241: "CONFIGURATION_DIRECTORY",
	242: "NUMA_POLICY", 243: "CREDENTIALS", 245: "BPF",
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
	n   int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// output is the stream as answered (OutputOf).
func (c *capped) output() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	return OutputOf(c.buf.Bytes(), c.n, false)
}

// OutputOf is a stream as answered: kept, its first bytes, of total
// written (cut: more was written than anyone counted, as a guest agent
// says). Text when it is utf-8 (a character cut at the end dropped), else
// base64; a cut stream says so at the end of its text.
func OutputOf(kept []byte, total int64, cut bool) Output {
	o := Output{Bytes: total, Truncated: cut || total > int64(len(kept))}
	shown := kept
	if o.Truncated {
		for i := 0; i < utf8.UTFMax && len(shown) > 0 && !utf8.Valid(shown); i++ {
			shown = shown[:len(shown)-1]
		}
	}
	if utf8.Valid(shown) {
		o.Encoding, o.Data = "utf-8", string(shown)
		if o.Truncated {
			o.Data += fmt.Sprintf("\n[proxmox-mcp: output truncated: %d of %d bytes shown]\n", len(shown), total)
		}
		return o
	}
	o.Encoding, o.Data = "base64", base64.StdEncoding.EncodeToString(kept)
	return o
}
