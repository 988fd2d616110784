package sim

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// execStatus is an exec-status answer as PVE gives it (booleans as 1/0).
type execStatus struct {
	Exited       int     `json:"exited"`
	ExitCode     *int    `json:"exitcode"`
	Signal       *int    `json:"signal"`
	OutData      *string `json:"out-data"`
	ErrData      *string `json:"err-data"`
	OutTruncated int     `json:"out-truncated"`
}

// agentRun starts a command in VM 100 as root@pam!sim and returns its PID.
func (e *permEnv) agentRun(vmid string, argv []string, stdin *string) (int, answer) {
	e.t.Helper()
	args := url.Values{"command": argv}
	if stdin != nil {
		args.Set("input-data", *stdin)
	}
	node := map[string]string{"100": "pve1", "101": "pve1", "102": "pve2"}[vmid]
	a := e.do("root@pam!sim", "POST", "/nodes/"+node+"/qemu/"+vmid+"/agent/exec", args)
	var res struct {
		PID int `json:"pid"`
	}
	json.Unmarshal(a.data, &res) //nolint:errcheck // an error has no data
	return res.PID, a
}

func (e *permEnv) agentStatus(vmid string, pid int) (execStatus, answer) {
	e.t.Helper()
	a := e.do("root@pam!sim", "GET", "/nodes/pve1/qemu/"+vmid+"/agent/exec-status", v("pid", strconv.Itoa(pid)))
	var st execStatus
	json.Unmarshal(a.data, &st) //nolint:errcheck // an error has no data
	return st, a
}

// The simulated guest runs its programs deterministically: exec answers a
// PID, exec-status the exit code and output once, then forgets the PID as
// qemu-ga does; stdin comes from input-data; sleep ends on the clock.
func TestAgentExec(t *testing.T) {
	e := newPermEnv(t)
	pid, a := e.agentRun("100", []string{"echo", "hello", "world"}, nil)
	if a.String() != "ok" || pid != 1201 {
		t.Fatalf("exec: %s, pid %d", a, pid)
	}
	if string(a.data) != `{"pid":1201}` {
		t.Errorf("exec answer %s", a.data)
	}
	st, a := e.agentStatus("100", pid)
	if a.String() != "ok" || st.Exited != 1 || st.ExitCode == nil || *st.ExitCode != 0 || st.OutData == nil || *st.OutData != "hello world\n" || st.ErrData != nil {
		t.Fatalf("exec-status: %s %s", a, a.data)
	}
	if _, a := e.agentStatus("100", pid); a.String() != "500 Agent error: Invalid parameter 'pid'" {
		t.Errorf("a reported PID again: %s", a)
	}

	in := "line one\nline two\n"
	pid, _ = e.agentRun("100", []string{"/bin/cat"}, &in)
	if st, _ := e.agentStatus("100", pid); st.OutData == nil || *st.OutData != in {
		t.Errorf("cat of input-data: %+v", st)
	}
	for argv, want := range map[string]string{"hostname": "web01\n", "uname -a": "Linux web01 " + guestKernel + " " + guestVersion + " x86_64 GNU/Linux\n", "seq 3": "1\n2\n3\n"} {
		pid, _ = e.agentRun("100", strings.Fields(argv), nil)
		if st, _ := e.agentStatus("100", pid); st.OutData == nil || *st.OutData != want {
			t.Errorf("%s: %+v", argv, st)
		}
	}
	// PVE passes bytes as characters: UTF-8 output arrives encoded twice,
	// input-data reaches the guest one byte per character up to U+00FF
	// and a wider one is refused.
	pid, _ = e.agentRun("100", []string{"echo", "-n", "é●"}, nil)
	if st, _ := e.agentStatus("100", pid); st.OutData == nil || *st.OutData != "\u00c3\u00a9\u00e2\u0097\u008f" {
		t.Errorf("UTF-8 output: %+v", st)
	}
	latin := "é"
	pid, _ = e.agentRun("100", []string{"cat"}, &latin)
	if st, _ := e.agentStatus("100", pid); st.OutData == nil || *st.OutData != "é" {
		t.Errorf("input-data é: %+v", st)
	}
	wide := "€"
	if _, a := e.agentRun("100", []string{"cat"}, &wide); !strings.HasPrefix(a.String(), "500 Wide character in subroutine entry") {
		t.Errorf("input-data €: %s", a)
	}
	pid, _ = e.agentRun("100", []string{"false"}, nil)
	if st, _ := e.agentStatus("100", pid); st.ExitCode == nil || *st.ExitCode != 1 || st.OutData != nil {
		t.Errorf("false: %+v", st)
	}
	pid, _ = e.agentRun("100", []string{"cat", "/etc/shadow"}, nil)
	if st, _ := e.agentStatus("100", pid); st.ExitCode == nil || *st.ExitCode != 1 || st.ErrData == nil || *st.ErrData != "cat: /etc/shadow: No such file or directory\n" {
		t.Errorf("cat of a missing file: %+v", st)
	}

	pid, _ = e.agentRun("100", []string{"sleep", "5"}, nil)
	if st, a := e.agentStatus("100", pid); a.String() != "ok" || string(a.data) != `{"exited":0}` || st.Exited != 0 {
		t.Errorf("sleep, at once: %s %s", a, a.data)
	}
	e.clock.Advance(4 * time.Second)
	if st, _ := e.agentStatus("100", pid); st.Exited != 0 {
		t.Errorf("sleep 5 after 4 s: %+v", st)
	}
	e.clock.Advance(time.Second)
	if st, _ := e.agentStatus("100", pid); st.Exited != 1 || *st.ExitCode != 0 {
		t.Errorf("sleep 5 after 5 s: %+v", st)
	}

	// A program the guest does not have fails to start: the exec call
	// itself fails, as GLib's spawn does in qemu-ga.
	if _, a := e.agentRun("100", []string{"/opt/app/run", "x"}, nil); a.String() != "500 Agent error: Guest agent command failed, error was 'Failed to execute child process \u201c/opt/app/run\u201d (No such file or directory)'" {
		t.Errorf("unknown program: %s", a)
	}
	// exec-status needs its PID; command is required.
	if a := e.do("root@pam!sim", "GET", "/nodes/pve1/qemu/100/agent/exec-status", nil); a.String() != "400 pid: property is missing and it is not optional" {
		t.Errorf("exec-status without pid: %s", a)
	}
	if a := e.do("root@pam!sim", "POST", "/nodes/pve1/qemu/100/agent/exec", nil); a.String() != "400 command: property is missing and it is not optional" {
		t.Errorf("exec without command: %s", a)
	}
}

// The output of a command is cut at qemu-ga's 16 MiB and flagged.
func TestAgentExecTruncates(t *testing.T) {
	e := newPermEnv(t)
	e.s.mu.Lock()
	g := e.s.st.guests[100]
	g.agent.procs = map[int]*agentProc{7: {boot: g.startedAt, ends: epoch, out: []byte(strings.Repeat("x", agentMaxOutput+10))}}
	e.s.mu.Unlock()
	st, a := e.agentStatus("100", 7)
	if a.String() != "ok" || st.OutTruncated != 1 || len(*st.OutData) != agentMaxOutput {
		t.Errorf("truncation: %s, truncated %d", a, st.OutTruncated)
	}
}

// assert_agent_available: an agent in the configuration, then the VM
// running, then the agent answering (not when it is disabled or the VM
// paused); a restart forgets the PIDs of the boot before.
func TestAgentAvailable(t *testing.T) {
	e := newPermEnv(t)
	if _, a := e.agentRun("101", []string{"true"}, nil); a.String() != "500 VM 101 is not running" {
		t.Errorf("stopped VM: %s", a)
	}
	e.root("PUT", "/nodes/pve1/qemu/101/config", v("delete", "agent"))
	if _, a := e.agentRun("101", []string{"true"}, nil); a.String() != "500 No QEMU guest agent configured" {
		t.Errorf("no agent: %s", a)
	}
	e.root("PUT", "/nodes/pve1/qemu/101/config", v("agent", "0"))
	e.finish(e.root("POST", "/nodes/pve1/qemu/101/status/start", nil))
	if _, a := e.agentRun("101", []string{"true"}, nil); a.String() != "500 QEMU guest agent is not running" {
		t.Errorf("agent disabled: %s", a)
	}
	e.finish(e.root("POST", "/nodes/pve1/qemu/100/status/suspend", nil))
	if _, a := e.agentRun("100", []string{"true"}, nil); a.String() != "500 QEMU guest agent is not running" {
		t.Errorf("paused VM: %s", a)
	}
	e.finish(e.root("POST", "/nodes/pve1/qemu/100/status/resume", nil))
	pid, _ := e.agentRun("100", []string{"sleep", "60"}, nil)
	e.finish(e.root("POST", "/nodes/pve1/qemu/100/status/reboot", nil))
	if _, a := e.agentStatus("100", pid); a.String() != "500 Agent error: Invalid parameter 'pid'" {
		t.Errorf("a PID of the boot before: %s", a)
	}
	if a := e.do("root@pam!sim", "POST", "/nodes/pve1/qemu/200/agent/exec", v("command", "true")); a.String() != "500 Configuration file 'nodes/pve1/qemu-server/200.conf' does not exist" {
		t.Errorf("a container's VMID: %s", a)
	}
}
