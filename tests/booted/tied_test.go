package booted

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A child started with a death signal survives the end of the goroutine
// (and so of the OS thread) that asked for it: systemd-nspawn was sent
// SIGTERM, and the container powered off mid-test, when the thread that
// had forked it ran a dial into the container's namespace and ended.
func TestStartTiedSurvivesTheCallersThread(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep(1): %v", err)
	}
	cmd := exec.Command(sleep, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	exited := make(chan struct{})

	// The caller runs on a thread of its own that ends when it returns,
	// as a locked goroutine's does.
	type call struct {
		tid int
		err error
	}
	// (Not the main thread: the runtime parks that one instead of ending
	// it, so the caller is moved off it first.)
	done := make(chan call, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends here
		if unix.Gettid() == os.Getpid() {
			go func() {
				runtime.LockOSThread()
				done <- call{unix.Gettid(), startTied(cmd, exited)}
			}()
			return
		}
		done <- call{unix.Gettid(), startTied(cmd, exited)}
	}()
	c := <-done
	if c.err != nil {
		t.Fatalf("startTied: %v", c.err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) //nolint:errcheck // it may be gone

	// Once the caller's thread is gone from /proc, the kernel has sent
	// whatever death signal that thread owed its children.
	task := "/proc/self/task/" + strconv.Itoa(c.tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the caller's thread %d did not end", c.tid)
		}
		time.Sleep(5 * time.Millisecond)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill the child: %v", err)
	}
	<-exited
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("the child ended with %v, not by a signal", cmd.ProcessState)
	}
	if got := ws.Signal(); got != syscall.SIGKILL {
		t.Errorf("the child was ended by %v, before the test killed it: its death signal followed the caller's thread", got)
	}
}
