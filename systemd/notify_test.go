package systemd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// notifySocket is a fake systemd manager: a datagram socket collecting the
// messages sent to NOTIFY_SOCKET.
type notifySocket struct {
	conn *net.UnixConn
	msgs chan string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	s := &notifySocket{conn: conn, msgs: make(chan string, 64)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.msgs <- string(buf[:n])
		}
	}()
	return s
}

func (s *notifySocket) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-s.msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no notify message")
		return ""
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The messages reach a real NOTIFY_SOCKET in the protocol's shape.
func TestNotifierMessages(t *testing.T) {
	sock := newNotifySocket(t)
	n := NewNotifier(quiet())
	n.Ready("serving: schema 9.1\n(646 endpoints)")
	if got := sock.next(t); got != "READY=1\nSTATUS=serving: schema 9.1 (646 endpoints)" {
		t.Errorf("ready: %q", got)
	}
	n.Reloading("reloading")
	got := sock.next(t)
	if !regexp.MustCompile(`^RELOADING=1\nMONOTONIC_USEC=[0-9]+\nSTATUS=reloading$`).MatchString(got) {
		t.Errorf("reloading: %q", got)
	}
	n.Status("serving; last error: x")
	if got := sock.next(t); got != "STATUS=serving; last error: x" {
		t.Errorf("status: %q", got)
	}
	n.Stopping("stopping: draining 2 calls")
	if got := sock.next(t); got != "STOPPING=1\nSTATUS=stopping: draining 2 calls" {
		t.Errorf("stopping: %q", got)
	}
	long := strings.Repeat("x", 1000)
	n.Status(long)
	if got := sock.next(t); len(got) > 420 || !strings.HasSuffix(got, "…") {
		t.Errorf("a long status is not cut: %d bytes", len(got))
	}
}

// Without NOTIFY_SOCKET nothing is sent and nothing fails.
func TestNotifierOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := NewNotifier(quiet())
	n.Ready("x")
	n.Stopping("x")
	if err := n.Watchdog(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Errorf("watchdog without WATCHDOG_USEC: %v", err)
	}
}

// The watchdog is fed only while the health check passes; a failure says
// why in the status and the status comes back when it passes again.
func TestWatchdogFollowsHealth(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	n := NewNotifier(quiet())
	n.send = func(s string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, s)
		return true, nil
	}
	n.watchdog = func() (time.Duration, error) { return 40 * time.Millisecond, nil }
	n.Ready("serving: 646 endpoints")

	answers := []error{nil, errors.New("journal: database is locked"), errors.New("journal: database is locked"), nil}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := n.Watchdog(ctx, func(context.Context) error {
		if len(answers) == 0 {
			cancel() // the run ends here, with nothing more sent
			return nil
		}
		a := answers[0]
		answers = answers[1:]
		return a
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"READY=1\nSTATUS=serving: 646 endpoints",
		"WATCHDOG=1",
		"STATUS=unhealthy: journal: database is locked",
		"STATUS=unhealthy: journal: database is locked",
		"WATCHDOG=1",
		"STATUS=serving: 646 endpoints",
	}
	if strings.Join(sent, "|") != strings.Join(want, "|") {
		t.Errorf("sent:\n%s\nwant:\n%s", strings.Join(sent, "\n--\n"), strings.Join(want, "\n--\n"))
	}
}

// A hung health check is bounded by a quarter of the interval and counts as
// a failure.
func TestWatchdogHealthCheckTimeout(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	n := NewNotifier(quiet())
	n.send = func(s string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, s)
		return true, nil
	}
	n.watchdog = func() (time.Duration, error) { return 80 * time.Millisecond, nil }
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	var once sync.Once
	go func() {
		<-first
		cancel()
	}()
	err := n.Watchdog(ctx, func(c context.Context) error {
		<-c.Done() // hangs until the check's deadline
		once.Do(func() { close(first) })
		return c.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sent {
		if s == "WATCHDOG=1" {
			t.Errorf("a hung health check fed the watchdog: %q", sent)
		}
	}
}
