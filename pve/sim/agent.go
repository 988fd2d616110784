package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The QEMU guest agent's exec: POST …/agent/exec starts a command in the
// guest and answers its PID, GET …/agent/exec-status answers whether it has
// exited and, once it has, its exit code and output, after which the agent
// forgets it (qemu-ga removes a finished process when it reports it).
// input-data and the output pass as PVE passes them, one character per
// byte (latin1Bytes, latin1Text). The checks are PVE's
// (PVE::API2::Qemu::Agent, PVE::QemuServer::Agent): the schema's
// VM.GuestAgent.Unrestricted on /vms/{vmid}, then assert_agent_available —
// an agent in the configuration, the VM running, the agent answering a
// ping (not when it is disabled or the VM paused) — and the agent's own
// errors as "Agent error: …".
//
// The guest is the simulator's, not a real one: it runs a small,
// deterministic set of programs (guestPrograms), found by name or under
// /bin, /usr/bin, /sbin or /usr/sbin; any other program fails to start, as
// GLib's spawn fails in qemu-ga, and the exec call itself is refused.

// agentProc is a command the guest agent started.
type agentProc struct {
	boot     time.Time // the guest's start it ran in
	ends     time.Time
	exitcode int
	out, err []byte
}

// guestAgent is a guest's agent: the processes it started and not yet
// reported finished.
type guestAgent struct {
	nextPID int
	procs   map[int]*agentProc
}

// agentMaxOutput is qemu-ga's bound on each captured stream
// (GUEST_EXEC_MAX_OUTPUT); more is cut and flagged as truncated.
const agentMaxOutput = 16 << 20

func (s *Sim) agentRoutes(add func(string, handler)) {
	add("POST /nodes/{node}/qemu/{vmid}/agent/exec", s.agentExec)
	add("GET /nodes/{node}/qemu/{vmid}/agent/exec-status", s.agentExecStatus)
}

// agentAvailable is assert_agent_available.
func agentAvailable(g *guest) error {
	agent, ok := g.conf["agent"]
	if !ok {
		return fail("No QEMU guest agent configured")
	}
	if g.status != "running" {
		return fail("VM %d is not running", g.vmid)
	}
	if propertyString(agent, "enabled", nil)["enabled"] == "0" || g.paused {
		return fail("QEMU guest agent is not running")
	}
	return nil
}

// agentExec is POST /nodes/{node}/qemu/{vmid}/agent/exec (qemu_exec).
func (s *Sim) agentExec(r *request) (any, error) {
	g, err := r.guest("qemu")
	if err != nil {
		return nil, err
	}
	argv := r.args["command"]
	input, hasInput := r.args["input-data"]
	if len(argv) == 0 && !hasInput {
		return nil, fail("command or input-data (or both) required")
	}
	if err := agentAvailable(g); err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, fail("Agent error: Parameter 'path' is missing")
	}
	stdin := ""
	if hasInput {
		// qemu_exec base64-encodes the parameter as Perl holds it, a
		// string of characters: each one up to U+00FF becomes that byte,
		// and a wider one is refused by MIME::Base64.
		b, ok := latin1Bytes(input[len(input)-1])
		if !ok {
			return nil, fail("Wide character in subroutine entry at /usr/share/perl5/PVE/QemuServer/Agent.pm line 135.")
		}
		stdin = string(b)
	}
	run, ok := guestPrograms[programName(argv[0])]
	if !ok {
		return nil, fail("Agent error: Guest agent command failed, error was 'Failed to execute child process \u201c%s\u201d (No such file or directory)'", argv[0])
	}
	res := run(g, argv[1:], stdin)
	a := &g.agent
	if a.procs == nil {
		a.procs = map[int]*agentProc{}
		a.nextPID = 1200
	}
	a.nextPID++
	pid := a.nextPID
	a.procs[pid] = &agentProc{boot: g.startedAt, ends: r.now.Add(res.took), exitcode: res.code, out: res.out, err: res.err}
	return map[string]any{"pid": pid}, nil
}

// agentExecStatus is GET /nodes/{node}/qemu/{vmid}/agent/exec-status
// (qemu_exec_status): PVE answers the agent's booleans as 1 and 0.
func (s *Sim) agentExecStatus(r *request) (any, error) {
	g, err := r.guest("qemu")
	if err != nil {
		return nil, err
	}
	if err := agentAvailable(g); err != nil {
		return nil, err
	}
	pid := r.num("pid", -1)
	p := g.agent.procs[pid]
	if p == nil || !p.boot.Equal(g.startedAt) {
		return nil, fail("Agent error: Invalid parameter 'pid'")
	}
	if r.now.Before(p.ends) {
		return map[string]any{"exited": 0}, nil
	}
	delete(g.agent.procs, pid)
	res := map[string]any{"exited": 1, "exitcode": p.exitcode}
	for _, st := range []struct {
		name string
		data []byte
	}{{"out", p.out}, {"err", p.err}} {
		if len(st.data) == 0 {
			continue
		}
		if len(st.data) > agentMaxOutput {
			st.data = st.data[:agentMaxOutput]
			res[st.name+"-truncated"] = 1
		}
		res[st.name+"-data"] = latin1Text(st.data)
	}
	return res, nil
}

// latin1Text is output as PVE answers it: qemu_exec_status decodes the
// agent's base64 into bytes, and the JSON encoder writes each byte as the
// character of that number (U+0000 to U+00FF), so UTF-8 output arrives
// encoded twice.
func latin1Text(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// latin1Bytes is a string of characters up to U+00FF as those bytes.
func latin1Bytes(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, false
		}
		out = append(out, byte(r))
	}
	return out, true
}

// programName is the program argv[0] names in the simulated guest: a
// bare name, or one under the guest's system directories ("" for any
// other path).
func programName(argv0 string) string {
	if !strings.Contains(argv0, "/") {
		return argv0
	}
	for _, dir := range []string{"/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/"} {
		if name, ok := strings.CutPrefix(argv0, dir); ok && !strings.Contains(name, "/") {
			return name
		}
	}
	return ""
}

// guestRun is how a command of the simulated guest ended.
type guestRun struct {
	took     time.Duration
	code     int
	out, err []byte
}

func exited(code int, out, err string) guestRun {
	return guestRun{code: code, out: []byte(out), err: []byte(err)}
}

// guestKernel is what the simulated guest's uname says.
const (
	guestKernel  = "6.1.0-28-amd64"
	guestVersion = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)"
)

// maxSeq bounds seq's output (about 6.9 MB).
const maxSeq = 1_000_000

// guestPrograms are the programs of the simulated guest, each
// deterministic: echo, cat (stdin, or /etc/hostname and /etc/os-release),
// hostname, uname, true, false, sleep N (exits N seconds later on the
// simulator's clock) and seq.
var guestPrograms = map[string]func(g *guest, args []string, stdin string) guestRun{
	"echo": func(_ *guest, args []string, _ string) guestRun {
		end := "\n"
		if len(args) > 0 && args[0] == "-n" {
			args, end = args[1:], ""
		}
		return exited(0, strings.Join(args, " ")+end, "")
	},
	"cat": func(g *guest, args []string, stdin string) guestRun {
		if len(args) == 0 {
			args = []string{"-"}
		}
		var out, errs strings.Builder
		code := 0
		for _, f := range args {
			switch f {
			case "-":
				out.WriteString(stdin)
			case "/etc/hostname":
				out.WriteString(guestHostname(g) + "\n")
			case "/etc/os-release":
				out.WriteString("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n")
			default:
				fmt.Fprintf(&errs, "cat: %s: No such file or directory\n", f)
				code = 1
			}
		}
		return exited(code, out.String(), errs.String())
	},
	"hostname": func(g *guest, args []string, _ string) guestRun {
		if len(args) > 0 {
			return exited(1, "", "hostname: you must be root to change the host name\n")
		}
		return exited(0, guestHostname(g)+"\n", "")
	},
	"uname": func(g *guest, args []string, _ string) guestRun {
		if len(args) == 0 {
			return exited(0, "Linux\n", "")
		}
		parts := map[string]string{"-s": "Linux", "-n": guestHostname(g), "-r": guestKernel, "-v": guestVersion, "-m": "x86_64", "-o": "GNU/Linux"}
		var out []string
		for _, a := range args {
			if a == "-a" {
				out = append(out, "Linux", guestHostname(g), guestKernel, guestVersion, "x86_64", "GNU/Linux")
				continue
			}
			p, ok := parts[a]
			if !ok {
				return exited(1, "", fmt.Sprintf("uname: invalid option -- '%s'\nTry 'uname --help' for more information.\n", strings.TrimLeft(a, "-")))
			}
			out = append(out, p)
		}
		return exited(0, strings.Join(out, " ")+"\n", "")
	},
	"true":  func(*guest, []string, string) guestRun { return exited(0, "", "") },
	"false": func(*guest, []string, string) guestRun { return exited(1, "", "") },
	"sleep": func(_ *guest, args []string, _ string) guestRun {
		if len(args) == 0 {
			return exited(1, "", "sleep: missing operand\nTry 'sleep --help' for more information.\n")
		}
		var total time.Duration
		for _, a := range args {
			secs, err := strconv.ParseFloat(a, 64)
			if err != nil || secs < 0 || secs > 1e9 {
				return exited(1, "", fmt.Sprintf("sleep: invalid time interval \u2018%s\u2019\nTry 'sleep --help' for more information.\n", a))
			}
			total += time.Duration(secs * float64(time.Second))
		}
		return guestRun{took: total}
	},
	"seq": func(_ *guest, args []string, _ string) guestRun {
		first, last := 1, 0
		var err error
		switch len(args) {
		case 1:
			last, err = strconv.Atoi(args[0])
		case 2:
			if first, err = strconv.Atoi(args[0]); err == nil {
				last, err = strconv.Atoi(args[1])
			}
		default:
			return exited(1, "", "seq: missing operand\nTry 'seq --help' for more information.\n")
		}
		if err != nil {
			return exited(1, "", "seq: invalid argument\nTry 'seq --help' for more information.\n")
		}
		if last-first >= maxSeq {
			last = first + maxSeq - 1
		}
		var b strings.Builder
		for i := first; i <= last; i++ {
			b.WriteString(strconv.Itoa(i))
			b.WriteByte('\n')
		}
		return exited(0, b.String(), "")
	},
}

// guestHostname is the guest's host name: its configured name.
func guestHostname(g *guest) string {
	if n := g.name(); n != "" {
		return n
	}
	return "vm" + strconv.Itoa(g.vmid)
}
