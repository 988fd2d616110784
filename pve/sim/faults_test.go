package sim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

func TestFaultLatency(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!read-only")
	e.sim.InjectFault(Fault{Path: "/version", Latency: 80 * time.Millisecond, Times: 1})
	start := time.Now()
	getMap(t, c, "/version", nil)
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("call took %v despite 80ms of injected latency", d)
	}
}

// A GET that meets 503 is retried and succeeds; a POST is sent once.
func TestFaultServerErrorRetries(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.sim.InjectFault(Fault{Method: "GET", Path: "/version", Status: 503, Message: "Service Unavailable", Times: 2})
	before := e.sim.Requests()
	getMap(t, c, "/version", nil)
	if n := e.sim.Requests() - before; n != 3 {
		t.Errorf("GET took %d requests, want 3 (two 503s, then success)", n)
	}
	e.sim.InjectFault(Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", Status: 503, Message: "Service Unavailable", Times: 5})
	before = e.sim.Requests()
	_, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil)
	if !errors.Is(err, pve.ErrServer) || e.sim.Requests()-before != 1 {
		t.Errorf("POST: %v after %d requests; want one request and ErrServer", err, e.sim.Requests()-before)
	}
}

func TestFaultProxyHTMLPage(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.sim.InjectFault(Fault{Path: "/cluster/resources", HTML: true})
	before := e.sim.Requests()
	_, err := c.Do(ctx, "GET", "/cluster/resources", nil)
	var apiErr *pve.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || !strings.Contains(apiErr.Message, "non-JSON body") || !strings.Contains(apiErr.ContentType, "text/html") {
		t.Fatalf("HTML page: %v", err)
	}
	if n := e.sim.Requests() - before; n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	// A write that meets a proxy's page may or may not have reached PVE.
	e.sim.InjectFault(Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", HTML: true, Times: 1})
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil); !errors.Is(err, pve.ErrOutcomeUnknown) {
		t.Errorf("POST through a failing proxy: %v, want outcome unknown", err)
	}
}

func TestFaultInvalidJSON(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.sim.InjectFault(Fault{Method: "GET", Path: "/nodes/pve1/qemu/101/status/current", InvalidJSON: true, Times: 1})
	if _, err := c.Do(ctx, "GET", "/nodes/pve1/qemu/101/status/current", nil); !errors.Is(err, pve.ErrBadResponse) {
		t.Errorf("GET with a broken body: %v", err)
	}
	e.sim.InjectFault(Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", InvalidJSON: true, Times: 1})
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil); !errors.Is(err, pve.ErrOutcomeUnknown) {
		t.Errorf("POST with a broken body: %v", err)
	}
}

// A connection dropped after the write was applied: the client reports an
// unknown outcome, and the simulator shows the write did happen.
func TestFaultDropAfterApply(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.sim.InjectFault(Fault{Method: "POST", Path: "/nodes/pve1/qemu/101/status/start", DropAfterApply: true, Times: 1})
	_, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil)
	var unknown *pve.OutcomeUnknownError
	if !errors.As(err, &unknown) || !errors.Is(err, pve.ErrOutcomeUnknown) {
		t.Fatalf("dropped connection: %v", err)
	}
	tasks := getList(t, c, "/nodes/pve1/tasks", url.Values{"vmid": {"101"}, "typefilter": {"qmstart"}, "source": {"all"}})
	if len(tasks) != 1 {
		t.Fatalf("the start was not applied: tasks %v", tasks)
	}
	e.clock.Advance(time.Minute)
	if status(t, c, "pve1", "qemu", "101") != "running" {
		t.Error("the applied start did not start the VM")
	}
}

func TestFaultHang(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.sim.InjectFault(Fault{Path: "/nodes/pve1/qemu/101/status/start", Hang: true, Times: 1})
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := c.Do(cctx, "POST", "/nodes/pve1/qemu/101/status/start", nil)
	if !errors.Is(err, pve.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung POST: %v, want outcome unknown from the deadline", err)
	}
	e.sim.InjectFault(Fault{Path: "/version", Hang: true, Times: 1})
	cctx2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	if _, err := c.Do(cctx2, "GET", "/version", nil); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, pve.ErrOutcomeUnknown) {
		t.Errorf("hung GET: %v", err)
	}
}

// Hold applies the write, then holds the answer: a caller that goes away
// meanwhile hears nothing, and the write stands. Reached says when the
// request is there.
func TestFaultHold(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	reached := make(chan string, 1)
	e.sim.InjectFault(Fault{Method: "PUT", Path: "/nodes/pve1/qemu/100/config", Hold: time.Minute, Reached: reached, Times: 1})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(cctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"memory": {"3072"}})
		done <- err
	}()
	if got := <-reached; got != "PUT /nodes/pve1/qemu/100/config" {
		t.Errorf("reached %q", got)
	}
	// The write is applied while the answer is held.
	deadline := time.Now().Add(5 * time.Second)
	for fmt.Sprint(getMap(t, c, "/nodes/pve1/qemu/100/config", nil)["memory"]) != "3072" {
		if time.Now().After(deadline) {
			t.Fatal("the held write was not applied")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, pve.ErrOutcomeUnknown) {
		t.Errorf("the caller that left: %v", err)
	}
	// A short hold answers.
	e.sim.InjectFault(Fault{Method: "PUT", Path: "/nodes/pve1/qemu/100/config", Hold: time.Millisecond, Times: 1})
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"memory": {"2048"}}); err != nil {
		t.Errorf("after a short hold: %v", err)
	}
}

func TestTaskFaults(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.sim.InjectTaskFault(TaskFault{Type: "qmstart", Fail: "start failed: QEMU exited with code 1"})
	upid := post(t, c, "/nodes/pve1/qemu/101/status/start", nil)
	e.clock.Advance(time.Minute)
	res, err := c.WaitTask(ctx, upid, pve.WaitOptions{FollowLog: true})
	var failed *pve.TaskFailedError
	if !errors.As(err, &failed) || failed.ExitStatus != "start failed: QEMU exited with code 1" || res == nil {
		t.Fatalf("failing task: %v", err)
	}
	if status(t, c, "pve1", "qemu", "101") != "stopped" {
		t.Error("a failed start started the VM")
	}
	e.sim.ClearFaults()

	e.sim.InjectTaskFault(TaskFault{Type: "vzdump", Warnings: 2})
	upid = post(t, c, "/nodes/pve1/vzdump", url.Values{"vmid": {"101"}, "storage": {"backup"}})
	e.clock.Advance(time.Minute)
	res, err = c.WaitTask(ctx, upid, pve.WaitOptions{})
	if err != nil || res.ExitStatus != "WARNINGS: 2" || res.Warnings != 2 {
		t.Fatalf("task with warnings: %+v, %v", res, err)
	}
	if n := len(getList(t, c, "/nodes/pve1/storage/backup/content", nil)); n != 1 {
		t.Errorf("a backup with warnings still produces its archive; got %d", n)
	}
	e.sim.ClearFaults()

	e.sim.InjectTaskFault(TaskFault{Type: "qmshutdown", Slow: 10})
	upid = post(t, c, "/nodes/pve1/qemu/100/status/shutdown", nil)
	e.clock.Advance(10 * time.Second)
	if st := getMap(t, c, "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/status", nil); st["status"] != "running" {
		t.Errorf("a slowed shutdown finished within 10s: %v", st)
	}
	e.clock.Advance(time.Minute)
	if st := getMap(t, c, "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/status", nil); st["status"] != "stopped" {
		t.Errorf("slow shutdown never ended: %v", st)
	}
}

// WaitTask polls, follows the log and reports progress on a real clock.
func TestWaitTaskRealClock(t *testing.T) {
	s, err := New(Options{Registry: registry(t), Seed: 7, TaskDuration: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sim: s}
	e.srv = newTLSServer(t, s)
	c := e.client("mcp@pve!operator")
	upid := post(t, c, "/nodes/pve1/qemu/101/status/start", nil)
	var polls int
	res, err := c.WaitTask(ctx, upid, pve.WaitOptions{MinInterval: 20 * time.Millisecond, FollowLog: true, Progress: func(pve.TaskProgress) { polls++ }})
	if err != nil || res.ExitStatus != "OK" || polls < 2 || len(res.Log) == 0 || res.Log[len(res.Log)-1].T != "TASK OK" {
		t.Fatalf("wait: %+v, %v after %d polls", res, err, polls)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	s.InjectTaskFault(TaskFault{Slow: 100})
	slow := post(t, c, "/nodes/pve1/qemu/101/status/stop", nil)
	if _, err := c.WaitTask(cctx, slow, pve.WaitOptions{MinInterval: 5 * time.Millisecond}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait past the deadline: %v", err)
	}
}
