package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/later"
	"github.com/mcpgw/mcpgw/internal/panics"
)

// errPanic is a fetch that panicked; the panic was logged.
var errPanic = errors.New("internal error while listing")

// fetchJob is one server's fetch within an aggregate, and the context the
// fetch runs on: a walk the fetch leads on its goroutine (walkHere) finds
// it there and has its waiter counted out when the fetch is abandoned,
// without a callback of its own on the context.
type fetchJob struct {
	context.Context
	cancel context.CancelFunc
	stop   func() bool // disarms the caller's cancellation
	mu     sync.Mutex
	ended  bool
	bg     bool // holds a background slot
	// led is the walk led on this fetch's goroutine, nil when none: its
	// waiter is counted out (flights.leave) when the fetch is abandoned.
	led   *flight
	ledAt string // led's flightKey
	fs    *flights
	// detached is the caller's context without its cancellation and
	// deferred work, the parent of this fetch's (and of every fetch of the
	// same fan-out): a walk the fetch leads is made under it too
	// (detachedFrom).
	detached context.Context
}

// detachedFrom is ctx without its cancellation and without deferred work
// (a listing is cached, not answered: its bytes are not held until the
// request's answer is written, internal/later). A fan-out's fetch has it
// made already: the same values, and no two more contexts per upstream.
func detachedFrom(ctx context.Context) context.Context {
	if j, ok := ctx.(*fetchJob); ok {
		return j.detached
	}
	return later.Without(context.WithoutCancel(ctx))
}

// abandon cancels the fetch and counts it out of the walk it leads.
func (j *fetchJob) abandon() {
	j.cancel()
	j.mu.Lock()
	f := j.led
	j.led = nil
	j.mu.Unlock()
	if f != nil {
		j.fs.leave(j.ledAt, f)
	}
}

// lead records f as the walk led on this fetch's goroutine; false when the
// fetch was abandoned already (its context ended) or leads another walk
// (a fetch that fans out further), which then runs on a goroutine of its
// own.
func (j *fetchJob) lead(fs *flights, key string, f *flight) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.led != nil || j.Err() != nil {
		return false
	}
	j.led, j.ledAt, j.fs = f, key, fs
	return true
}

// unlead forgets the walk led on this fetch's goroutine; false when the
// fetch was abandoned meanwhile, which counted it out already.
func (j *fetchJob) unlead() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	led := j.led != nil
	j.led = nil
	return led
}

// gather lists method on every server of q concurrently, with the
// catalog's patience (see Patiently).
func (c *Catalog) gather(ctx context.Context, q Query, method string) []fetched {
	out := make([]fetched, len(q.Servers))
	lists, errs := Patiently(ctx, c, q.Servers, func(ctx context.Context, i int) (Pages, error) {
		s := c.servers[q.Servers[i]]
		if s == nil {
			return Pages{}, fmt.Errorf("unknown server %q", q.Servers[i])
		}
		return c.fetchPages(ctx, q, s, method) // ctx is the fetchJob: a walk it leads runs on its goroutine
	})
	for i := range out {
		out[i] = fetched{items: lists[i].Items, cuts: lists[i].Cuts, err: errs[i]}
	}
	return out
}

// Patiently runs fn(ctx, i) for every server i concurrently (on the
// catalog's Workers) and, when there are several, waits for each at most
// the catalog's patience, except for a
// server that has never answered (it may be starting) or is known to be slow
// but alive, which is waited for. A call still running then has
// errImpatient as its error (OutcomeOf reports it as a timeout) and, when a
// background slot is free, runs on without its caller (bounded by the
// upstream's own timeouts) so that what it learns fills caches and
// breakers, and a success marks the server slow but alive; otherwise it is
// cancelled. A panic in fn is recovered, logged and reported as an error.
// When ctx ends, the calls still running have context.Canceled as their
// error and are not waited for.
func Patiently[T any](ctx context.Context, c *Catalog, servers []string, fn func(ctx context.Context, i int) (T, error)) ([]T, []error) {
	type result struct {
		i   int
		v   T
		err error
	}
	n := len(servers)
	vals, errs := make([]T, n), make([]error, n)
	results := make(chan result, n) // never blocks a call
	jobs := make([]*fetchJob, n)    // nil once answered or given up on
	detached := detachedFrom(ctx)   // one for every call
	for i := range n {
		fctx, cancel := context.WithCancel(detached)
		j := &fetchJob{Context: fctx, cancel: cancel, detached: detached}
		j.stop = context.AfterFunc(ctx, j.abandon)
		jobs[i] = j
		c.workers.Go(func() {
			r := result{i: i}
			defer func() {
				if p := recover(); p != nil {
					c.log.Error("recovered from a panic in an upstream fan-out; the gateway keeps serving", panics.Attrs(p)...)
					r.err = errPanic
				}
				if j.finish(c) && r.err == nil {
					c.breakers.markSlow(servers[i])
				}
				results <- r
			}()
			r.v, r.err = fn(j, i)
		})
	}
	var patience <-chan time.Time
	if c.patience > 0 {
		t := time.NewTimer(c.patience)
		defer t.Stop()
		patience = t.C
	}
	for pending := n; pending > 0; {
		select {
		case r := <-results:
			if jobs[r.i] != nil {
				vals[r.i], errs[r.i] = r.v, r.err
				jobs[r.i] = nil
				pending--
			}
		case <-ctx.Done():
			// Nobody is left to wait for: what runs on is ended by its
			// context (the caller's end cancels it), or runs on for the
			// other callers of a walk it leads (see walkHere).
			for i, j := range jobs {
				if j != nil {
					errs[i] = context.Canceled // what a call cancelled by ctx's end returned
					jobs[i] = nil
				}
			}
			pending = 0
		case <-patience:
			patience = nil
			for i, j := range jobs {
				if j != nil && n > 1 && c.breakers.impatient(servers[i]) {
					errs[i] = errImpatient
					j.detach(c)
					jobs[i] = nil
					pending--
				}
			}
		}
	}
	return vals, errs
}

// finish ends a fetch: its context is released and its background slot, if
// it held one, is returned. It reports whether the fetch ran in the
// background.
func (j *fetchJob) finish(c *Catalog) bool {
	j.stop() // the caller's context may live on (a listen): it holds no callback of ours
	j.cancel()
	j.mu.Lock()
	j.ended = true
	bg := j.bg
	j.mu.Unlock()
	if bg {
		<-c.background
	}
	return bg
}

// detach lets an unfinished fetch run on without its caller when a
// background slot is free; otherwise it is cancelled.
func (j *fetchJob) detach(c *Catalog) {
	select {
	case c.background <- struct{}{}:
	default:
		j.abandon()
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ended || !j.stop() {
		<-c.background // it ended, or the caller already cancelled it
		return
	}
	j.bg = true
}
