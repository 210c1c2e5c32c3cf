package catalog

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// errPanic is a fetch that panicked; the panic was logged.
var errPanic = errors.New("internal error while listing")

// fetchJob is one server's fetch within an aggregate.
type fetchJob struct {
	cancel context.CancelFunc
	stop   func() bool // disarms the caller's cancellation
	mu     sync.Mutex
	ended  bool
	bg     bool // holds a background slot
}

// gather lists method on every server of q concurrently. It waits for each
// server at most the catalog's patience: a server still listing then is
// reported as errImpatient and, when a background slot is free, its fetch
// goes on (bounded by the upstream's listing timeout) to fill the cache and
// inform the breaker; otherwise it is cancelled.
func (c *Catalog) gather(ctx context.Context, q Query, method string) []fetched {
	out := make([]fetched, len(q.Servers))
	type result struct {
		i int
		f fetched
	}
	results := make(chan result, len(q.Servers)) // never blocks a fetch
	jobs := make([]*fetchJob, len(q.Servers))
	pending := 0
	for i, name := range q.Servers {
		s := c.servers[name]
		if s == nil {
			out[i].err = fmt.Errorf("unknown server %q", name)
			continue
		}
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		j := &fetchJob{cancel: cancel, stop: context.AfterFunc(ctx, cancel)}
		jobs[i] = j
		pending++
		go func() {
			var f fetched
			defer func() {
				if r := recover(); r != nil {
					c.log.Error("recovered from a panic while listing; the gateway keeps serving", "server", name, "method", method, "stack", string(debug.Stack()))
					f = fetched{err: errPanic}
				}
				j.finish(c)
				results <- result{i, f}
			}()
			f.items, f.err = c.fetch(fctx, q, s, method)
		}()
	}
	var patience <-chan time.Time
	if c.patience > 0 {
		t := time.NewTimer(c.patience)
		defer t.Stop()
		patience = t.C
	}
	for pending > 0 {
		select {
		case r := <-results:
			out[r.i] = r.f
			jobs[r.i] = nil
			pending--
		case <-patience:
			for i, j := range jobs {
				if j != nil {
					out[i].err = errImpatient
					j.detach(c)
				}
			}
			return out
		}
	}
	return out
}

// finish ends a fetch: its context is released and its background slot, if
// it held one, is returned.
func (j *fetchJob) finish(c *Catalog) {
	j.cancel()
	j.mu.Lock()
	j.ended = true
	bg := j.bg
	j.mu.Unlock()
	if bg {
		<-c.background
	}
}

// detach lets an unfinished fetch run on without its caller when a
// background slot is free; otherwise it is cancelled.
func (j *fetchJob) detach(c *Catalog) {
	select {
	case c.background <- struct{}{}:
	default:
		j.cancel()
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
