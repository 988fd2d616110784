package booted

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/tests/internal/gobuild"
)

// The daemon's lifecycle under the real systemd 257, each test in a
// container of its own with the package installed and `proxmox-mcp install
// --mode local` done: Type=notify at start, the watchdog, the drain at
// stop, and an upgrade of the package with the daemon running.

const (
	journalDB  = "/var/lib/proxmox-mcp/journal.db"
	configFile = "/etc/proxmox-mcp/config.hujson"
	wedgePath  = "/usr/local/bin/pmcp-wedge"
)

// installed boots a node, installs the package and runs `proxmox-mcp
// install --mode local --yes`: the service runs, and the initial root key
// is returned.
func installed(t *testing.T) (*Container, built, InitialKeyFile) {
	t.Helper()
	c, b := node(t)
	deb := "/root/" + filepath.Base(b.Deb)
	if res := c.Run(context.Background(), "apt-get", "install", "-y", "--no-install-recommends", deb); !res.OK() {
		t.Fatalf("apt-get install %s: %s", deb, res)
	}
	if res := c.Run(context.Background(), "proxmox-mcp", "install", "--mode", "local", "--yes"); !res.OK() {
		t.Fatalf("proxmox-mcp install --mode local --yes: %s", res)
	}
	var key InitialKeyFile
	data, err := c.ReadFile("/root/proxmox-mcp-initial-key.json")
	if err == nil {
		err = json.Unmarshal(data, &key)
	}
	if err != nil || key.Key == "" || key.Endpoints.Loopback == "" {
		t.Fatalf("the initial key file: %v: %s", err, data)
	}
	if p := c.show(t, unit, "ActiveState"); p["ActiveState"] != "active" {
		t.Fatalf("after install, %s is %v", unit, p)
	}
	return c, b, key
}

// poll calls cond every 100 ms until it is true, or fails t after
// timeout saying what was awaited.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still not: %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wedge is tests/booted/wedge, built once.
var wedge = &program{pkg: "./tests/booted/wedge"}

// installWedge builds tests/booted/wedge (once) and copies it into the
// container.
func (c *Container) installWedge(t *testing.T) {
	t.Helper()
	c.CopyFile(wedge.path(t), wedgePath, 0o755)
}

// program is a command of tests/booted built (without the race detector,
// static) once for the test binary, beside the daemon's build.
type program struct {
	pkg  string
	once sync.Once
	bin  string
	err  error
}

// path builds the program on its first call and returns its path.
func (p *program) path(t *testing.T) string {
	t.Helper()
	build(t) // buildDir
	p.once.Do(func() {
		p.bin = filepath.Join(buildDir, filepath.Base(p.pkg))
		cmd := exec.Command("go", "build", "-trimpath", "-o", p.bin, p.pkg)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := gobuild.CombinedOutput(cmd); err != nil {
			p.err = &buildError{"go build " + p.pkg, err, out}
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.bin
}

// holdJournal runs the wedge inside as a transient unit (another process
// on the node, as an operator's sqlite3 or a backup tool would be) and
// returns once it holds the journal's locks; release stops it. args are
// the wedge's flags before the database; user, when set, runs it as that
// user.
func (c *Container) holdJournal(t *testing.T, name, user string, args ...string) (release func()) {
	t.Helper()
	run := []string{"systemd-run", "--unit=" + name, "--collect", "--quiet"}
	if user != "" {
		run = append(run, "--uid="+user, "--gid="+user)
	}
	run = append(run, wedgePath)
	run = append(run, args...)
	run = append(run, journalDB)
	c.MustIn(t, run...)
	var once sync.Once
	release = func() {
		once.Do(func() {
			if res := c.Run(context.Background(), "systemctl", "stop", name); !res.OK() {
				t.Errorf("systemctl stop %s: %s", name, res)
			}
		})
	}
	t.Cleanup(release)
	poll(t, 30*time.Second, name+" holds the journal", func() bool {
		out := c.Journal("-u", name, "-o", "cat")
		if strings.Contains(out, "wedge:") {
			t.Fatalf("%s failed:\n%s", name, out)
		}
		return strings.Contains(out, "wedged")
	})
	return release
}

// started is `systemctl start` running in the background.
type started struct {
	done chan Result
	at   time.Time
}

func (c *Container) startAsync(argv ...string) *started {
	s := &started{done: make(chan Result, 1), at: time.Now()}
	go func() { s.done <- c.Run(context.Background(), argv...) }()
	return s
}

// monotonic is a *TimestampMonotonic property of systemctl show.
func monotonic(t *testing.T, p map[string]string, name string) time.Duration {
	t.Helper()
	us, err := strconv.ParseInt(p[name], 10, 64)
	if err != nil || us == 0 {
		t.Fatalf("systemctl show: %s=%q", name, p[name])
	}
	return time.Duration(us) * time.Microsecond
}

// TestBootedNotifyStart: Type=notify for real at start. Another process
// holds the journal's write lock (a SQLite client in a write transaction)
// while the service starts: the daemon waits for it (its busy timeout, 5
// s) before READY=1, and meanwhile systemd reports the unit activating and
// `systemctl start` does not return. Once the lock is released the daemon
// sends READY=1, the unit is active and `systemctl start` returns.
func TestBootedNotifyStart(t *testing.T) {
	t.Parallel()
	c, _, _ := installed(t)
	c.installWedge(t)
	if res := c.Run(context.Background(), "systemctl", "stop", unit); !res.OK() {
		t.Fatalf("systemctl stop: %s", res)
	}
	// As the service's user: SQLite may create the -wal and -shm files,
	// which must stay the daemon's.
	release := c.holdJournal(t, "pmcp-hold-journal", "proxmox-mcp", "-write")

	start := c.startAsync("systemctl", "start", unit)
	var pid string
	poll(t, 10*time.Second, "the daemon started (a MainPID) and is activating", func() bool {
		p := c.show(t, unit, "ActiveState", "SubState", "MainPID")
		pid = p["MainPID"]
		return p["ActiveState"] == "activating" && pid != "0"
	})
	// The lock is held for 2 s (within the daemon's 5 s busy timeout):
	// throughout, the unit is activating and systemctl start waits.
	hold := time.Now()
	samples := 0
	var status string
	for time.Since(hold) < 2*time.Second {
		p := c.show(t, unit, "ActiveState", "SubState", "StatusText", "MainPID")
		if p["ActiveState"] != "activating" || p["SubState"] != "start" || p["MainPID"] != pid {
			t.Fatalf("the journal is locked and the daemon has sent no READY=1, yet %s is %v", unit, p)
		}
		status = p["StatusText"]
		select {
		case res := <-start.done:
			t.Fatalf("systemctl start returned before READY=1: %s", res)
		default:
		}
		samples++
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("while the journal was locked: %d samples of systemctl show, every one ActiveState=activating SubState=start (MainPID %s); StatusText=%q", samples, pid, status)
	// What systemctl status shows meanwhile: the step the start waits in.
	if want := "starting: opening the audit journal " + journalDB; status != want {
		t.Errorf("StatusText while the start waits for the journal: %q, want %q", status, want)
	}
	released := time.Now()
	release()
	var res Result
	select {
	case res = <-start.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("systemctl start did not return within 30 s of the journal's release")
	}
	if !res.OK() {
		t.Fatalf("systemctl start: %s\n%s", res, c.Journal("-u", unit, "-n", "30"))
	}
	t.Logf("systemctl start returned %s after the journal's release (%s in all)", time.Since(released).Round(time.Millisecond), res.Took.Round(time.Millisecond))
	p := c.show(t, unit, "ActiveState", "SubState", "StatusText", "NRestarts", "MainPID",
		"ExecMainStartTimestampMonotonic", "ActiveEnterTimestampMonotonic")
	if p["ActiveState"] != "active" || p["SubState"] != "running" || p["NRestarts"] != "0" || p["MainPID"] != pid ||
		!strings.HasPrefix(p["StatusText"], "serving ") {
		t.Errorf("after READY=1: %v; want active, running, the same process, NRestarts=0, serving", p)
	}
	activating := monotonic(t, p, "ActiveEnterTimestampMonotonic") - monotonic(t, p, "ExecMainStartTimestampMonotonic")
	t.Logf("systemd: the process started, then active %s later (READY=1)", activating.Round(time.Millisecond))
	if activating < 2*time.Second {
		t.Errorf("systemd has the unit active %s after its start, less than the 2 s the journal was held", activating)
	}
}

// TestBootedWatchdog: the watchdog for real, with the unit's production
// WatchdogSec=30s. Another process wedges the journal (it holds the WAL
// read locks, so the daemon cannot begin a read): the daemon's health
// check fails, it stops sending WATCHDOG=1 and says why in its log and
// status line, and systemd kills it at the watchdog's timeout and restarts
// it (Restart=on-failure). The restarted daemon serves the same keys and
// its journal's chain is intact.
func TestBootedWatchdog(t *testing.T) {
	t.Parallel()
	c, _, key := installed(t)
	c.installWedge(t)
	p := c.show(t, unit, "WatchdogUSec", "MainPID", "NRestarts")
	if p["WatchdogUSec"] != "30s" || p["NRestarts"] != "0" {
		t.Fatalf("before: %v; want the unit's WatchdogSec=30s and NRestarts=0", p)
	}
	oldPID := p["MainPID"]
	wedged := time.Now()
	release := c.holdJournal(t, "pmcp-wedge-journal", "")

	var unhealthy string
	poll(t, 90*time.Second, "systemd restarted the daemon (NRestarts=1)", func() bool {
		p := c.show(t, unit, "NRestarts", "StatusText")
		if strings.HasPrefix(p["StatusText"], "unhealthy:") {
			unhealthy = p["StatusText"]
		}
		return p["NRestarts"] != "0"
	})
	killed := time.Since(wedged)
	// The restarted daemon opens the journal: let it.
	release()
	poll(t, 60*time.Second, "the restarted daemon is active", func() bool {
		p := c.show(t, unit, "ActiveState", "SubState")
		return p["ActiveState"] == "active" && p["SubState"] == "running"
	})
	t.Logf("the journal wedged; systemd restarted the daemon %s later, active again %s after the wedge", killed.Round(100*time.Millisecond), time.Since(wedged).Round(100*time.Millisecond))
	if killed < 15*time.Second {
		t.Errorf("restarted %s after the wedge: sooner than half WatchdogSec, not the watchdog", killed)
	}
	if unhealthy != "" {
		t.Logf("StatusText while wedged: %q", unhealthy)
		if !strings.Contains(unhealthy, "journal") {
			t.Errorf("the status line does not name the journal: %q", unhealthy)
		}
	} else {
		t.Errorf("systemctl show never had StatusText=unhealthy: … while the journal was wedged")
	}
	p = c.show(t, unit, "NRestarts", "MainPID", "StatusText")
	if p["NRestarts"] != "1" || p["MainPID"] == oldPID || !strings.HasPrefix(p["StatusText"], "serving ") {
		t.Errorf("after the restart: %v; want NRestarts=1, a new MainPID (was %s), serving", p, oldPID)
	}

	log := c.Journal("-u", unit, "-o", "cat")
	for _, want := range []string{"Watchdog timeout", "Failed with result 'watchdog'"} {
		if !strings.Contains(log, want) {
			t.Errorf("systemd's journal of %s does not say %q", unit, want)
		}
	}
	// The daemon's own record of why: the health check's failure, with
	// the part that failed.
	why := c.Journal("-u", unit, "-o", "cat", "--grep", "health check failed")
	if !strings.Contains(why, "journal") {
		t.Errorf("the daemon's log does not say that the health check failed on the journal:\n%s", why)
	} else {
		t.Logf("the daemon said: %s", strings.SplitN(strings.TrimSpace(why), "\n", 2)[0])
	}

	// systemd's watchdog signal is SIGABRT: the Go runtime writes the
	// stacks of the killed daemon to stderr, the journal, where an
	// operator sees what it was stuck in.
	if dump := c.Journal("-u", unit, "-o", "cat", "--grep", "^(SIGABRT|goroutine [0-9]+ )"); strings.Contains(dump, "SIGABRT") {
		t.Logf("the killed daemon's stacks are in the journal: %d goroutines", strings.Count(dump, "goroutine "))
	} else {
		t.Errorf("no stack dump of the killed daemon (SIGABRT) in the journal")
	}

	mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
	if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr {
		t.Errorf("the restarted daemon refused the initial root key: %s", text)
	}
	if out := c.MustIn(t, "proxmox-mcp", "audit", "verify"); !strings.Contains(out, "chain intact") {
		t.Errorf("proxmox-mcp audit verify after the watchdog's kill: %s", out)
	}
}

// callResult is a tool call's answer, from the background.
type callResult struct {
	res  *mcp.CallToolResult
	err  error
	took time.Duration
	at   time.Time
}

// TestBootedStopDrains: `systemctl stop` while a call is in flight (a VM
// start that waits for its task, which the node's PVE takes 5 s to run):
// systemd sends SIGTERM, the daemon says STOPPING=1 and drains, the call
// is answered with its task's result, and only then does the daemon exit 0
// (Result=success), within TimeoutStopSec.
func TestBootedStopDrains(t *testing.T) {
	t.Parallel()
	c, _, key := installed(t)
	// The node's PVE runs tasks at 2.5 times their usual length (a start
	// takes 5 s), through a drop-in on the stand-in pveproxy.
	c.WriteFile("/etc/systemd/system/"+PVEProxyUnit+".d/slow.conf", []byte("[Service]\nExecStart=\nExecStart="+
		simInside+" sim --listen "+PVEAddr+" --node-dir "+EtcPVE+" --apidoc "+APIDocPath+" --task-duration 2.5\n"), 0o644)
	c.MustIn(t, "systemctl", "daemon-reload")
	c.MustIn(t, "systemctl", "restart", PVEProxyUnit)
	if err := c.WaitPVE(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Writes allowed, as an operator turns them on.
	data, err := c.ReadFile(configFile)
	if err != nil || !strings.Contains(string(data), `"allow_mutations": false`) {
		t.Fatalf("%s has no \"allow_mutations\": false (%v)", configFile, err)
	}
	st, _ := c.root.Lstat(configFile)
	c.WriteFile(configFile, []byte(strings.Replace(string(data), `"allow_mutations": false`, `"allow_mutations": true`, 1)), st.Mode().Perm())
	c.MustIn(t, "systemctl", "reload", unit)

	mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
	const vm = "/nodes/pve1/qemu/101/status/start"
	done := make(chan callResult, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "proxmox_api_call"
		req.Params.Arguments = map[string]any{"method": "POST", "path": vm, "wait": 60}
		start := time.Now()
		res, err := mc.CallTool(ctx, req)
		done <- callResult{res: res, err: err, took: time.Since(start), at: time.Now()}
	}()
	// In flight: the daemon has journaled the write and sent it.
	poll(t, 20*time.Second, "the daemon logged the VM start as sent", func() bool {
		return strings.Contains(c.Journal("-u", unit, "-o", "cat", "PMCP_PATH="+vm), "sending")
	})
	pid := c.show(t, unit, "MainPID")["MainPID"]
	stop := c.startAsync("systemctl", "stop", unit)
	// systemd is deactivating the unit from the moment it sends SIGTERM;
	// the daemon's STOPPING=1 and its status line reach it a moment later.
	var stopping map[string]string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		stopping = c.show(t, unit, "ActiveState", "StatusText")
		if st := stopping["ActiveState"]; st != "active" && (st != "deactivating" || strings.HasPrefix(stopping["StatusText"], "stopping: draining")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after systemctl stop: %v, want the unit deactivating with the daemon's STOPPING=1 status (stopping: draining ...)", stopping)
		}
	}
	t.Logf("while stopping: %v", stopping)

	var call callResult
	select {
	case call = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the call in flight was not answered within 60 s of the stop")
	}
	res := <-stop.done
	if !res.OK() {
		t.Fatalf("systemctl stop: %s", res)
	}
	if call.err != nil {
		t.Fatalf("the call in flight was cut by the stop: %v", call.err)
	}
	var text strings.Builder
	for _, ct := range call.res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if call.res.IsError || !strings.Contains(text.String(), "OK") {
		t.Errorf("the VM start in flight during the stop answered: error=%v %s", call.res.IsError, text.String())
	}
	t.Logf("the call took %s, answered %s after systemctl stop began; systemctl stop took %s",
		call.took.Round(time.Millisecond), call.at.Sub(stop.at).Round(time.Millisecond), res.Took.Round(time.Millisecond))
	if !call.at.After(stop.at) {
		t.Fatalf("the call was answered before systemctl stop began: it was not in flight")
	}
	if stopEnd := stop.at.Add(res.Took); stopEnd.Before(call.at.Add(-time.Second)) {
		t.Errorf("systemctl stop returned %s before the call in flight was answered", call.at.Sub(stopEnd))
	}
	p := c.show(t, unit, "ActiveState", "Result", "ExecMainStatus", "ExecMainCode", "ExecMainPID")
	if p["ActiveState"] != "inactive" || p["Result"] != "success" || p["ExecMainStatus"] != "0" || p["ExecMainCode"] != "1" || p["ExecMainPID"] != pid {
		t.Errorf("after the stop: %v; want inactive, Result=success, process %s exited 0 by itself", p, pid)
	}
	if res.Took > 45*time.Second {
		t.Errorf("systemctl stop took %s, over TimeoutStopSec=45s", res.Took)
	}
	// The write has its receipt: nothing was left open for reconciliation.
	if out := c.MustIn(t, "proxmox-mcp", "audit", "intents"); strings.Contains(out, vm) {
		t.Errorf("the drained write is an open intent:\n%s", out)
	}
	if t.Failed() {
		return
	}

	t.Run("a task longer than the drain", func(t *testing.T) {
		// A call waiting for a task longer than the drain: the node's PVE
		// now takes 40 s for the VM start (its state begins again, VM 101
		// stopped). 5 s before the drain's 30 s are up, the daemon ends
		// the wait: the call answers with the task still running and its
		// UPID, its receipt is journaled, and the daemon exits 0 by
		// itself, inside TimeoutStopSec=45s. After the restart the caller
		// follows the task to its end with that UPID.
		c.WriteFile("/etc/systemd/system/"+PVEProxyUnit+".d/slow.conf", []byte("[Service]\nExecStart=\nExecStart="+
			simInside+" sim --listen "+PVEAddr+" --node-dir "+EtcPVE+" --apidoc "+APIDocPath+" --task-duration 20\n"), 0o644)
		c.MustIn(t, "systemctl", "daemon-reload")
		c.MustIn(t, "systemctl", "restart", PVEProxyUnit)
		if err := c.WaitPVE(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.MustIn(t, "systemctl", "start", unit)
		sent := func() int { return strings.Count(c.Journal("-u", unit, "-o", "cat", "PMCP_PATH="+vm), "sending") }
		before := sent()
		mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
		done := make(chan callResult, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "proxmox_api_call"
			req.Params.Arguments = map[string]any{"method": "POST", "path": vm, "wait": 90}
			start := time.Now()
			res, err := mc.CallTool(ctx, req)
			done <- callResult{res: res, err: err, took: time.Since(start), at: time.Now()}
		}()
		poll(t, 20*time.Second, "the daemon logged the second VM start as sent", func() bool { return sent() > before })
		pid := c.show(t, unit, "MainPID")["MainPID"]
		res := c.Run(context.Background(), "systemctl", "stop", unit)
		if !res.OK() {
			t.Fatalf("systemctl stop: %s", res)
		}
		t.Logf("systemctl stop with a 40 s task in flight took %s", res.Took.Round(time.Millisecond))
		p := c.show(t, unit, "ActiveState", "Result", "ExecMainStatus", "ExecMainCode", "ExecMainPID")
		if p["ActiveState"] != "inactive" || p["Result"] != "success" || p["ExecMainStatus"] != "0" || p["ExecMainCode"] != "1" || p["ExecMainPID"] != pid {
			t.Errorf("after the stop: %v; want inactive, Result=success, process %s exited 0 by itself", p, pid)
		}
		if res.Took < 24*time.Second || res.Took >= 30*time.Second {
			t.Errorf("systemctl stop took %s: want the waits ended 25 s into the drain, before its 30 s", res.Took)
		}
		if log := c.Journal("-u", unit, "-o", "cat"); strings.Contains(log, "did not drain") {
			t.Errorf("a listener did not drain:\n%s", log)
		}
		var call callResult
		select {
		case call = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the client has no answer 10 s after the daemon exited")
		}
		if call.err != nil {
			t.Fatalf("the call was cut by the stop after %s: %v", call.took.Round(time.Millisecond), call.err)
		}
		var content struct {
			UPID string `json:"upid"`
			Task struct {
				Status string `json:"status"`
			} `json:"task"`
		}
		b, _ := json.Marshal(call.res.StructuredContent)
		json.Unmarshal(b, &content) //nolint:errcheck // checked below
		var text strings.Builder
		for _, ct := range call.res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		t.Logf("the call answered after %s: %s", call.took.Round(time.Millisecond), strings.SplitN(text.String(), "\n", 2)[0])
		if call.res.IsError || content.Task.Status != "running" || !strings.HasPrefix(content.UPID, "UPID:pve1:") || !strings.Contains(text.String(), "the daemon is stopping") {
			t.Fatalf("the call in flight at the drain's end: error=%v upid=%q task=%q %s; want the task running, its UPID, and why the wait ended",
				call.res.IsError, content.UPID, content.Task.Status, text.String())
		}
		// Its receipt is journaled: nothing is left for reconciliation.
		if out := c.MustIn(t, "proxmox-mcp", "audit", "intents"); strings.Contains(out, vm) {
			t.Errorf("the write answered at the drain's end is an open intent:\n%s", out)
		}

		c.MustIn(t, "systemctl", "start", unit)
		if st := c.show(t, unit, "StatusText")["StatusText"]; strings.Contains(st, "reconcil") {
			t.Errorf("after the restart the daemon reconciles a write: %s", st)
		}
		mc, ctx = mcpClient(t, c, key.Endpoints.Loopback, key.Key)
		isErr, out := callText(t, mc, ctx, "proxmox_task_wait", map[string]any{"upid": content.UPID, "timeout_seconds": 60})
		if isErr || !strings.Contains(out, "OK") {
			t.Errorf("following the task by its UPID after the restart: error=%v %s", isErr, out)
		}
	})
}

var (
	upgradeOnce sync.Once
	upgradeDeb  string
	upgradeVer  string
	upgradeErr  error
)

// newerDeb builds the package again, from a binary whose version is the
// first package's plus "+upgrade" (a higher Debian version).
func newerDeb(t *testing.T, b built) (deb, version string) {
	t.Helper()
	upgradeOnce.Do(func() {
		out, err := exec.Command("dpkg-deb", "--field", b.Deb, "Version").Output()
		if err != nil {
			upgradeErr = fmt.Errorf("dpkg-deb --field %s Version: %w", b.Deb, err)
			return
		}
		old := strings.TrimSpace(string(out))
		upstream := old
		if i := strings.LastIndexByte(old, '-'); i > 0 {
			upstream = old[:i]
		}
		upgradeVer = upstream + "+upgrade"
		bin := filepath.Join(buildDir, "proxmox-mcp-upgrade")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version="+upgradeVer, "-o", bin, "./cmd/proxmox-mcp")
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := gobuild.CombinedOutput(cmd); err != nil {
			upgradeErr = &buildError{"go build (upgrade)", err, out}
			return
		}
		dist := filepath.Join(buildDir, "dist-upgrade")
		cmd = exec.Command("make", "--no-print-directory", "deb", "DIST="+dist, "VERSION="+upgradeVer)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "DEB_BINARY="+bin, "DEB_COMPRESS=gzip")
		if out, err := cmd.CombinedOutput(); err != nil {
			upgradeErr = &buildError{"make deb VERSION=" + upgradeVer, err, out}
			return
		}
		debs, _ := filepath.Glob(filepath.Join(dist, "proxmox-mcp_*.deb"))
		if len(debs) != 1 {
			upgradeErr = fmt.Errorf("no single proxmox-mcp_*.deb in %s: %v", dist, debs)
			return
		}
		upgradeDeb = debs[0]
	})
	if upgradeErr != nil {
		t.Fatal(upgradeErr)
	}
	return upgradeDeb, upgradeVer
}

// auditRows is the journal's row count, from `proxmox-mcp audit verify`
// (which also checks the hash chain).
func (c *Container) auditRows(t *testing.T) int {
	t.Helper()
	out := c.MustIn(t, "proxmox-mcp", "audit", "verify", "--json")
	var rep struct {
		Rows int `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Rows == 0 {
		t.Fatalf("proxmox-mcp audit verify --json: %v: %s", err, out)
	}
	return rep.Rows
}

// daemonVersion is the running daemon's version, as `proxmox-mcp status`
// has it from the daemon.
func (c *Container) daemonVersion(t *testing.T) string {
	t.Helper()
	out := c.MustIn(t, "proxmox-mcp", "status", "--json", "-n", "0")
	var st struct {
		Running bool `json:"running"`
		Daemon  struct {
			Version string `json:"version"`
			PID     int    `json:"pid"`
		} `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.Running {
		t.Fatalf("proxmox-mcp status --json: %v: %s", err, out)
	}
	return st.Daemon.Version
}

// TestBootedUpgrade: `apt-get install` of a newer package while the
// daemon runs restarts it on the new binary (postinst's try-restart): a
// new process, the new version, the same keys and the journal's rows
// kept. Then `apt-get remove` stops the unit and keeps what `proxmox-mcp
// install` wrote (configuration, keys, journal, the installer's unit), as
// docs/packaging.md says; no unit of ours is left loaded and active, and
// the installer's unit, its binary gone, is skipped rather than failed.
func TestBootedUpgrade(t *testing.T) {
	t.Parallel()
	c, b, key := installed(t)
	newDeb, newVer := newerDeb(t, b)
	c.CopyFile(newDeb, "/root/"+filepath.Base(newDeb), 0o644)

	mc, ctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
	if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr {
		t.Fatalf("GET /version before the upgrade: %s", text)
	}
	mc.Close()
	before := c.auditRows(t)
	oldVer := c.daemonVersion(t)
	old := c.show(t, unit, "MainPID", "NRestarts")

	res := c.Run(context.Background(), "apt-get", "install", "-y", "--no-install-recommends", "/root/"+filepath.Base(newDeb))
	if !res.OK() {
		t.Fatalf("apt-get install of the newer package: %s", res)
	}
	t.Logf("apt-get install of %s with the daemon running took %s", newVer, res.Took.Round(time.Millisecond))
	if v := strings.TrimSpace(c.MustIn(t, "dpkg-query", "-W", "-f=${Version}", "proxmox-mcp")); !strings.HasPrefix(v, newVer+"-") {
		t.Errorf("dpkg-query: the installed version is %q, want %s-…", v, newVer)
	}
	p := c.show(t, unit, "ActiveState", "SubState", "MainPID", "NRestarts", "StatusText", "InactiveEnterTimestampMonotonic", "ActiveEnterTimestampMonotonic")
	if p["ActiveState"] != "active" || p["SubState"] != "running" || p["MainPID"] == old["MainPID"] || !strings.HasPrefix(p["StatusText"], "serving ") {
		t.Errorf("after the upgrade: %v; want active, running, a new MainPID (was %s)", p, old["MainPID"])
	}
	// From the old daemon's exit to the new one's READY=1.
	t.Logf("try-restart: the old daemon exited and the new one was active %s later",
		(monotonic(t, p, "ActiveEnterTimestampMonotonic") - monotonic(t, p, "InactiveEnterTimestampMonotonic")).Round(time.Millisecond))
	if exe := strings.TrimSpace(c.MustIn(t, "readlink", "/proc/"+p["MainPID"]+"/exe")); exe != "/usr/bin/proxmox-mcp" {
		t.Errorf("the running daemon's binary is %q, want /usr/bin/proxmox-mcp (not a deleted old one)", exe)
	}
	if v := c.MustIn(t, "proxmox-mcp", "--version"); !strings.Contains(v, newVer) {
		t.Errorf("proxmox-mcp --version: %q, want %s", v, newVer)
	}
	if v := c.daemonVersion(t); v != newVer || v == oldVer {
		t.Errorf("the running daemon says version %q (before: %q), want %s", v, oldVer, newVer)
	}
	t.Logf("daemon %s (pid %s) → %s (pid %s)", oldVer, old["MainPID"], newVer, p["MainPID"])

	mc, ctx = mcpClient(t, c, key.Endpoints.Loopback, key.Key)
	if isErr, text := callText(t, mc, ctx, "proxmox_api_call", map[string]any{"method": "GET", "path": "/version"}); isErr {
		t.Errorf("the initial root key after the upgrade: %s", text)
	}
	mc.Close()
	if after := c.auditRows(t); after < before+1 {
		t.Errorf("the journal has %d rows after the upgrade and a call, %d before: rows were lost", after, before)
	} else {
		t.Logf("journal rows: %d before the upgrade, %d after it and one more call (chain intact)", before, after)
	}

	t.Run("apt remove", func(t *testing.T) {
		res := c.Run(context.Background(), "apt-get", "remove", "-y", "proxmox-mcp")
		if !res.OK() {
			t.Fatalf("apt-get remove: %s", res)
		}
		p := c.show(t, unit, "ActiveState", "Result")
		if p["ActiveState"] != "inactive" || p["Result"] != "success" {
			t.Errorf("after apt remove: %v; want the unit stopped cleanly", p)
		}
		if c.Exists("/usr/bin/proxmox-mcp") {
			t.Errorf("/usr/bin/proxmox-mcp is left after apt remove")
		}
		// What proxmox-mcp install wrote stays (docs/packaging.md).
		for _, f := range []string{configFile, journalDB, "/var/lib/proxmox-mcp/keys.json", "/etc/systemd/system/" + unit} {
			if !c.Exists(f) {
				t.Errorf("%s is gone after apt remove; it should be kept", f)
			}
		}
		if !strings.Contains(res.Stdout+res.Stderr, "stay in /etc/systemd/system") {
			t.Errorf("postrm did not say that the installer's unit is left:\n%s%s", res.Stdout, res.Stderr)
		}
		if out := c.MustIn(t, "systemctl", "list-units", "--no-legend", "proxmox-mcp*"); strings.TrimSpace(out) != "" {
			t.Errorf("systemctl list-units 'proxmox-mcp*' after apt remove:\n%s", out)
		}
		// The installer's unit without its binary: a start is skipped by
		// its condition, not a failure or a restart loop.
		if res := c.Run(context.Background(), "systemctl", "start", unit); !res.OK() {
			t.Errorf("systemctl start without the binary: %s", res)
		}
		p = c.show(t, unit, "ActiveState", "ConditionResult", "NRestarts")
		if p["ActiveState"] != "inactive" || p["ConditionResult"] != "no" {
			t.Errorf("systemctl start without the binary: %v; want inactive, ConditionResult=no", p)
		}
	})
}
