package transport

import (
	"context"
	"sync"
	"time"
)

// readyCache runs the readiness checks for every /readyz of a listener:
// a caller is answered from the newest run started less than ttl before
// it asked, waiting for one in progress, or starts a run itself. So
// however many ask at once, the checks run at most about once per ttl,
// and no answer reflects checks started more than ttl before its request.
type readyCache struct {
	check   Readiness
	ttl     time.Duration
	timeout time.Duration

	mu sync.Mutex
	// last is the newest finished run; running the newest unfinished one.
	last, running *readyRun
}

type readyRun struct {
	started time.Time
	done    chan struct{}
	checks  map[string]string
}

func newReadyCache(check Readiness, ttl, timeout time.Duration) *readyCache {
	return &readyCache{check: check, ttl: ttl, timeout: timeout}
}

// get answers the checks; its error is ctx's, when the caller stops
// waiting for a run another request started.
func (c *readyCache) get(ctx context.Context) (map[string]string, error) {
	now := time.Now()
	c.mu.Lock()
	if c.last != nil && now.Sub(c.last.started) < c.ttl {
		checks := c.last.checks
		c.mu.Unlock()
		return checks, nil
	}
	if run := c.running; run != nil && now.Sub(run.started) < c.ttl {
		c.mu.Unlock()
		select {
		case <-run.done:
			return run.checks, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	run := &readyRun{started: now, done: make(chan struct{})}
	c.running = run
	c.mu.Unlock()
	// The run serves whoever waits for it: the caller that started it
	// going away does not cut it short.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	defer c.finish(run) // even if the checks panic, no waiter is left hanging
	run.checks = c.check(rctx)
	return run.checks, nil
}

// finish publishes a run and wakes its waiters.
func (c *readyCache) finish(run *readyRun) {
	c.mu.Lock()
	if run.checks == nil {
		// The checks panicked: not ready, and the next caller tries again.
		run.checks = map[string]string{"readiness": "the checks did not complete"}
	} else if c.last == nil || run.started.After(c.last.started) {
		c.last = run
	}
	if c.running == run {
		c.running = nil
	}
	c.mu.Unlock()
	close(run.done)
}
