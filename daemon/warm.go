package daemon

import (
	"context"
	"log/slog"
	"sync"
)

// warmer works out in the background, once a session can begin and again
// after every schema swap, what a caller's first tools/list would
// otherwise compute while the caller waits: the visible tools of the
// policies about to be asked for over the registry now served. A kick
// while a pass runs makes one more pass after it (swaps in a row warm the
// last schema, once); a pass is bounded by the policy engine's visibility
// bound. Nothing depends on it having run: a listing that comes first
// computes what it needs, and a computation already under way is joined,
// not repeated.
type warmer struct {
	log *slog.Logger

	mu      sync.Mutex
	ctx     context.Context // nil: not started, or stopped
	do      func(context.Context) error
	running bool
	again   bool
	wg      sync.WaitGroup
}

// start begins warming with do until ctx ends or stop is called, with a
// first pass now.
func (w *warmer) start(ctx context.Context, do func(context.Context) error) {
	w.mu.Lock()
	w.ctx, w.do = ctx, do
	w.mu.Unlock()
	w.kick()
}

// kick asks for a pass; it does nothing before start or after stop.
func (w *warmer) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil || w.ctx.Err() != nil {
		return
	}
	if w.running {
		w.again = true
		return
	}
	w.running = true
	w.wg.Go(w.loop)
}

func (w *warmer) loop() {
	for {
		w.mu.Lock()
		ctx, do := w.ctx, w.do
		w.again = false
		w.mu.Unlock()
		if ctx != nil && ctx.Err() == nil {
			if err := do(ctx); err != nil && ctx.Err() == nil {
				// The listing that needs it will compute it again, and
				// journal a failure.
				w.log.Warn("daemon: first listings not worked out in advance", "error", err)
			}
		}
		w.mu.Lock()
		if !w.again || w.ctx == nil || w.ctx.Err() != nil {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// stop ends warming and waits for a pass under way, which ends at its
// context (the caller cancels it) or at its bound.
func (w *warmer) stop() {
	w.mu.Lock()
	w.ctx = nil
	w.mu.Unlock()
	w.wg.Wait()
}
