package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mcpgw/mcpgw/internal/panics"
)

// DefaultMaxWorkers bounds the goroutines a Workers keeps between fan-outs
// (NewWorkers with max ≤ 0).
const DefaultMaxWorkers = 256

// Workers runs a fan-out's calls (Patiently's, and the list walks of
// callers that are not a fan-out) on goroutines it keeps between calls, so
// that a call finds a goroutine whose stack already grew to what an upstream
// exchange reaches: a goroutine started for each call begins on the
// runtime's smallest stack, and growing it (growStack), then freeing it,
// was about a tenth of a tools/list over 50 upstreams. The runtime shrinks
// an idle goroutine's stack at a garbage collection when it uses little of
// it; such a worker grows it again in one step (growStack) on its next walk.
//
// A call is never queued: it goes to a worker that is waiting for one, or
// else to a new worker while fewer than the bound are alive, or else to a
// goroutine of its own that ends with it, as before. So a fan-out runs all
// its calls at once whatever the bound, and the bound caps only the
// goroutines kept (and their stacks) while nothing runs. A panic in a call
// is recovered and logged (the worker goes on); Patiently's calls recover
// their own first, to report the server's failure. The zero of *Workers
// (nil) starts a goroutine per call. Close ends the workers.
type Workers struct {
	jobs chan func() // unbuffered: a send succeeds only when a worker waits for a call
	quit chan struct{}
	log  *slog.Logger
	wg   sync.WaitGroup

	mu     sync.Mutex
	alive  int // workers started and not ended
	max    int
	closed bool
}

// NewWorkers returns a Workers keeping at most max goroutines
// (DefaultMaxWorkers when max ≤ 0); a panic in a call is logged to log (nil:
// discarded).
func NewWorkers(max int, log *slog.Logger) *Workers {
	if max <= 0 {
		max = DefaultMaxWorkers
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Workers{jobs: make(chan func()), quit: make(chan struct{}), log: log, max: max}
}

// Go runs f on a worker that waits for a call, on a new worker (fewer than
// the bound alive) or on a goroutine of its own; it never waits for f or
// for a worker. A nil Workers, or one closed, starts a goroutine for f.
func (w *Workers) Go(f func()) {
	if w == nil {
		go f()
		return
	}
	select {
	case w.jobs <- f:
		return
	default:
	}
	w.mu.Lock()
	closed, keep := w.closed, !w.closed && w.alive < w.max
	if !closed {
		w.wg.Add(1) // Close waits for every call handed to Go before it
	}
	if keep {
		w.alive++
	}
	w.mu.Unlock()
	switch {
	case keep:
		go w.loop(f)
	case closed:
		go w.run(f)
	default:
		go w.once(f)
	}
}

// once runs f on a goroutine of its own (past the bound), counted until it returns.
func (w *Workers) once(f func()) {
	defer w.wg.Done()
	w.run(f)
}

// loop is one worker: it runs f, then each call it is handed, until Close
// (or until a call ends its goroutine with runtime.Goexit: its place is then
// free for a new worker).
func (w *Workers) loop(f func()) {
	defer func() {
		w.mu.Lock()
		w.alive--
		w.mu.Unlock()
		w.wg.Done()
	}()
	for {
		w.run(f)
		f = nil // an idle worker holds nothing of its last call
		select {
		case f = <-w.jobs:
		case <-w.quit:
			return
		}
	}
}

// run calls f, recovering a panic (logged at ERROR, type and frames only).
func (w *Workers) run(f func()) { panics.Run(w.log, "a fan-out call", f, nil) }

// Close ends the workers: the idle ones at once, a busy one when its call
// returns (the calls are bounded by their upstream's timeouts; close the
// upstream clients first to end them sooner), and waits, within ctx, for
// them and for every call handed to Go before it, kept worker or not; it
// returns ctx's error if calls were still running when ctx ended. Calls
// handed to Go afterwards run on goroutines of their own. It is safe to
// call more than once, and on nil.
func (w *Workers) Close(ctx context.Context) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.quit)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }() // ends with the last call, bounded as they are
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("catalog: fan-out calls still running at close: %w", context.Cause(ctx))
	}
}
