package tests

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeManager is the systemd side of the notify protocol: a datagram
// socket that `serve` finds in NOTIFY_SOCKET.
type fakeManager struct {
	path string
	msgs chan string
}

func newFakeManager(tb testing.TB) *fakeManager {
	tb.Helper()
	dir, err := os.MkdirTemp("", "pmcp-notify")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	m := &fakeManager{path: filepath.Join(dir, "notify"), msgs: make(chan string, 256)}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: m.path, Net: "unixgram"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 8192)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(m.msgs)
				return
			}
			m.msgs <- string(buf[:n])
		}
	}()
	return m
}

// await returns the first message matching re, failing after timeout.
func (m *fakeManager) await(tb testing.TB, re *regexp.Regexp, timeout time.Duration, stderr func() string) string {
	tb.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case msg := <-m.msgs:
			if re.MatchString(msg) {
				return msg
			}
		case <-deadline:
			tb.Fatalf("no notify message matching %s within %s\nstderr:\n%s", re, timeout, stderr())
			return ""
		}
	}
}

// startNotified runs `serve` with NOTIFY_SOCKET and WATCHDOG_USEC as
// systemd sets them for a Type=notify unit with WatchdogSec=.
func startNotified(tb testing.TB, h stdioHost, m *fakeManager, watchdog time.Duration) (*process, string) {
	tb.Helper()
	env := []string{"NOTIFY_SOCKET=" + m.path}
	if watchdog > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(watchdog.Microseconds(), 10))
	}
	s := launchServe(tb, h, env)
	return s.proc, strings.TrimPrefix(s.url, "http://")
}

// Under systemd (a Type=notify unit with a watchdog), serve says READY=1
// with a status once it listens, feeds the watchdog, brackets a SIGHUP
// reload with RELOADING=1 and READY=1, and says STOPPING=1 on SIGTERM.
func TestServeSpeaksSystemdNotify(t *testing.T) {
	h := startStdioHost(t)
	m := newFakeManager(t)
	// A 2 s watchdog: a ping each second, each health check given 0.5 s,
	// which a loaded CI machine running -race still meets.
	p, addr := startNotified(t, h, m, 2*time.Second)
	stderr := p.stderr.String

	ready := m.await(t, regexp.MustCompile(`^READY=1\n`), 30*time.Second, stderr)
	want := regexp.MustCompile(`^READY=1\nSTATUS=serving 117 PVE API endpoints; listeners: loopback ` + regexp.QuoteMeta(addr) + `, metrics 127\.0\.0\.1:\d+$`)
	if !want.MatchString(ready) {
		t.Errorf("ready message %q, want %s", ready, want)
	}
	m.await(t, regexp.MustCompile(`^WATCHDOG=1$`), 10*time.Second, stderr)
	m.await(t, regexp.MustCompile(`^WATCHDOG=1$`), 10*time.Second, stderr)

	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	m.await(t, regexp.MustCompile(`^RELOADING=1\nMONOTONIC_USEC=\d+\nSTATUS=reloading apidoc.js and the configuration$`), 10*time.Second, stderr)
	m.await(t, regexp.MustCompile(`^READY=1\nSTATUS=serving 117 PVE API endpoints`), 10*time.Second, stderr)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	m.await(t, regexp.MustCompile(`^STOPPING=1\nSTATUS=stopping: draining calls in flight`), 10*time.Second, stderr)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve exited with %v\nstderr:\n%s", err, stderr())
	}
	if strings.Contains(stderr(), "notify failed") {
		t.Errorf("notify errors:\n%s", stderr())
	}
}

// A failed reload keeps serving and says why in the status line.
func TestServeReportsAFailedReload(t *testing.T) {
	h := startStdioHost(t)
	m := newFakeManager(t)
	p, _ := startNotified(t, h, m, 0)
	m.await(t, regexp.MustCompile(`^READY=1\n`), 30*time.Second, p.stderr.String)
	raw, _ := os.ReadFile(h.config)
	if err := os.WriteFile(h.config, append([]byte(`{"bogus": 1,`), raw[1:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	msg := m.await(t, regexp.MustCompile(`^READY=1\n.*last error`), 10*time.Second, p.stderr.String)
	if !strings.Contains(msg, `last error: reload: the configuration was not applied: config `) || !strings.Contains(msg, `field "bogus" is not known`) ||
		!strings.HasSuffix(msg, "(the running configuration stays)") {
		t.Errorf("status after a failed reload: %q", msg)
	}
}

// BenchmarkStartToReady measures what `systemctl start` waits for: from
// exec to READY=1, with the real PVE 9.1 schema, and the daemon's resident
// memory once ready (reported as rss-MiB).
func BenchmarkStartToReady(b *testing.B) {
	apidoc := fixture(b, "pve-9.1/apidoc.js")
	schema, err := os.ReadFile(apidoc)
	if err != nil {
		b.Fatal(err)
	}
	h := startStdioHostWith(b, schema)
	var rss float64
	for b.Loop() {
		m := newFakeManager(b)
		p, _ := startNotified(b, h, m, 0)
		m.await(b, regexp.MustCompile(`^READY=1\n`), 60*time.Second, p.stderr.String)
		b.StopTimer()
		_, r := procMemory(b, p.cmd.Process.Pid)
		rss += r
		p.stop(b)
		b.StartTimer()
	}
	b.ReportMetric(rss/float64(b.N), "rss-MiB")
}
