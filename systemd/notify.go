package systemd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
)

// Notifier speaks systemd's notify protocol to the manager that started
// the process (NOTIFY_SOCKET). Outside systemd, or under a unit whose
// Type= is not notify, there is no socket and every call does nothing.
// Send failures are logged, never fatal: the daemon serves either way.
type Notifier struct {
	log *slog.Logger
	// send delivers one state message; go-systemd's SdNotify in production.
	send func(state string) (bool, error)
	// watchdog is the watchdog interval systemd asks for, or 0.
	watchdog func() (time.Duration, error)

	mu sync.Mutex
	// status is the last status line given, restored after a failed
	// health check passes again.
	status string
}

// NewNotifier returns the notifier of this process.
func NewNotifier(log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{
		log:      log,
		send:     func(state string) (bool, error) { return sddaemon.SdNotify(false, state) },
		watchdog: func() (time.Duration, error) { return sddaemon.SdWatchdogEnabled(false) },
	}
}

// statusLine makes one STATUS= value: a single line, bounded.
func statusLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return "STATUS=" + s
}

func (n *Notifier) notify(lines ...string) {
	if _, err := n.send(strings.Join(lines, "\n")); err != nil {
		n.log.Warn("systemd: notify failed", "state", lines[0], "error", err)
	}
}

func (n *Notifier) remember(status string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.status = status
	return statusLine(status)
}

func (n *Notifier) last() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status
}

// Ready says the daemon serves (READY=1), with a status line.
func (n *Notifier) Ready(status string) { n.notify(sddaemon.SdNotifyReady, n.remember(status)) }

// Reloading says a reload started (RELOADING=1 with the monotonic time
// systemd 253 and later require); Ready ends it.
func (n *Notifier) Reloading(status string) {
	n.notify(sddaemon.SdNotifyReloading, monotonicUsec(), statusLine(status))
}

// Stopping says the daemon is shutting down (STOPPING=1).
func (n *Notifier) Stopping(status string) { n.notify(sddaemon.SdNotifyStopping, statusLine(status)) }

// Status replaces the status line systemctl status shows.
func (n *Notifier) Status(status string) { n.notify(n.remember(status)) }

// monotonicUsec is CLOCK_MONOTONIC in microseconds, as MONOTONIC_USEC=.
func monotonicUsec() string { return strings.TrimSuffix(sddaemon.SdNotifyMonotonicUsec(), "\n") }

// Watchdog pings systemd's watchdog (WATCHDOG=1) at half the interval
// the unit's WatchdogSec= asks for, each time healthy passes within a
// quarter of the interval. When it fails, it sends no ping and says why in
// the status line, so a daemon that is alive but not working is restarted
// by systemd instead of being kept alive by a timer. It returns when ctx
// ends, at once when the unit has no watchdog.
func (n *Notifier) Watchdog(ctx context.Context, healthy func(context.Context) error) error {
	interval, err := n.watchdog()
	if err != nil {
		return fmt.Errorf("systemd: watchdog: %w", err)
	}
	if interval <= 0 {
		return nil
	}
	n.log.Info("systemd: watchdog enabled", "interval", interval)
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	failing := false
	for {
		check, cancel := context.WithTimeout(ctx, interval/4)
		err := healthy(check)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			n.log.Error("systemd: health check failed; the watchdog is not fed and systemd will restart the daemon if this lasts", "error", err)
			n.notify(statusLine("unhealthy: " + err.Error()))
			failing = true
		default:
			n.notify(sddaemon.SdNotifyWatchdog)
			if failing {
				n.log.Info("systemd: health check passes again")
				n.notify(statusLine(n.last()))
				failing = false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
