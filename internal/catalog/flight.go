package catalog

import (
	"context"
	"sync"

	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// flights are the upstream list walks in progress, at most one per server,
// method and credentials key: a caller that misses the cache while the same
// list is being fetched under the same stamp waits for that walk instead of
// starting its own. Sharing is safe because a walk depends only on what the
// upstream is sent (the credentials Query.CredentialKey names); each
// caller's own filter is applied to the result afterwards.
//
// A walk runs on a worker of its own (Workers; or on its first caller's,
// when that is a fan-out's own: see walkHere), on a context that keeps the first
// caller's values but not its cancellation: a waiter whose context ends
// stops waiting without ending the walk for the others. The walk is
// cancelled when its last waiter leaves, and the upstream client bounds it
// by the listing timeout in any case, so it never outlives them by more.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight // by flightKey; a walk is removed when it ends or is abandoned
}

// flight is one shared upstream list walk.
type flight struct {
	stamp   Stamp // the cache's stamp when it began
	shared  bool  // the stamp was read: later callers with the same stamp may join
	cancel  context.CancelFunc
	waiters int           // callers waiting for it (under flights.mu)
	done    chan struct{} // closed once list and err are set
	list    Pages
	err     error
}

func flightKey(k ListKey) string { return k.Server + "\x00" + k.Method + "\x00" + k.Credentials }

// join returns the walk in progress for key begun under stamp, or a new one
// (lead is then true and the caller must start it); either way the caller
// is counted as its waiter until leave. skip, asked only when there is a
// walk to join, says the caller is not to wait for it: f is then nil.
func (fs *flights) join(ctx context.Context, key string, stamp Stamp, shared bool, skip func() bool) (f *flight, fctx context.Context, lead bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[key]; f != nil && shared && f.shared && f.stamp == stamp {
		if skip() {
			return nil, nil, false
		}
		f.waiters++
		return f, nil, false
	}
	fctx, cancel := context.WithCancel(detachedFrom(ctx))
	f = &flight{stamp: stamp, shared: shared, cancel: cancel, waiters: 1, done: make(chan struct{})}
	if fs.m == nil {
		fs.m = map[string]*flight{}
	}
	fs.m[key] = f // a walk under an older stamp runs on for its own waiters
	return f, fctx, true
}

// leave counts a waiter out of f; the last one out cancels the walk if it
// is still running.
func (fs *flights) leave(key string, f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.waiters--
	if f.waiters == 0 {
		f.cancel()
		if fs.m[key] == f {
			delete(fs.m, key)
		}
	}
}

// land records f's result and ends it; later callers start a walk of their
// own.
func (fs *flights) land(key string, f *flight, list Pages, err error) {
	fs.mu.Lock()
	if fs.m[key] == f {
		delete(fs.m, key)
	}
	fs.mu.Unlock()
	f.list, f.err = list, err
	close(f.done)
	f.cancel()
}

// load returns one server's list from the upstream (its breaker admitting),
// sharing a walk already in progress for the same list and credentials
// under the same stamp, and keeps it in the cache under key when the
// upstream allowed it and nothing changed meanwhile.
//
// A fan-out's fetch (ctx is Patiently's fetchJob) runs on a goroutine of
// its own that nobody waits on past its caller's end: a walk it leads runs
// on that goroutine rather than on one more (see walkHere).
func (c *Catalog) load(ctx context.Context, q Query, s *Server, method string, key ListKey) (Pages, error) {
	stamp, stampErr := c.cache.Stamp(ctx, key)
	fk := flightKey(key)
	// While the server's breaker is open, the walk in progress is its
	// probe: the others are skipped, as the breaker would skip them.
	f, fctx, lead := c.flights.join(ctx, fk, stamp, stampErr == nil, func() bool { return c.breakers.open(s.Name) })
	if f == nil {
		return Pages{}, ErrSkipped
	}
	if lead {
		var opts upstream.Options
		if q.Options != nil {
			opts = q.Options(s.Name)
		}
		if j, ok := ctx.(*fetchJob); ok && j.lead(&c.flights, fk, f) {
			return c.walkHere(j, fctx, f, fk, s, method, key, opts)
		}
		c.workers.Go(func() { c.walk(fctx, f, fk, s, method, key, opts) })
	}
	select {
	case <-f.done:
		c.flights.leave(fk, f)
		return f.list, f.err
	case <-ctx.Done():
		c.flights.leave(fk, f)
		return Pages{}, ctx.Err()
	}
}

// walkHere runs the walk f that the caller leads on the caller's goroutine:
// j, a fan-out's fetch (Patiently), leads it (fetchJob.lead). The caller
// stays f's waiter until the fetch is abandoned (its caller's context
// ended), as load's select has it: its leaving then ends the walk when
// nobody else waits for it, and otherwise the walk runs on for the others,
// which keeps this goroutine until it lands (bounded by the listing
// timeout), its result reported as the fetch's end.
func (c *Catalog) walkHere(j *fetchJob, fctx context.Context, f *flight, fk string, s *Server, method string, key ListKey, opts upstream.Options) (Pages, error) {
	c.walk(fctx, f, fk, s, method, key, opts)
	if !j.unlead() {
		return Pages{}, j.Err() // it left when the fetch was abandoned
	}
	c.flights.leave(fk, f)
	return f.list, f.err
}

// walk is one shared upstream list walk: it asks the upstream (its breaker
// admitting), keeps the list when the upstream allowed it and f's stamp is
// still current, and lands the result for f's waiters.
func (c *Catalog) walk(ctx context.Context, f *flight, fk string, s *Server, method string, key ListKey, opts upstream.Options) {
	growStack(len(fk))
	var (
		list Pages
		err  = errPanic
	)
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("recovered from a panic in an upstream list walk; the gateway keeps serving", panics.Attrs(p)...)
		}
		c.flights.land(fk, f, list, err)
	}()
	done, ok := c.Admit(s.Name)
	if !ok {
		err = ErrSkipped
		return
	}
	res, lerr := s.Client.List(ctx, method, opts)
	done(ctx, lerr)
	if lerr != nil {
		err = lerr
		return
	}
	c.vetList(ctx, s.Name, method, res.Items)
	list, err = Pages{Items: res.Items, Cuts: res.Cuts}, nil
	if res.TTL > 0 && f.shared {
		now := c.now()
		_ = c.cache.Put(ctx, key, res.Private, list, now.Add(res.TTL), now, f.stamp) // not kept: the next fetch asks again
	}
}

// walkStack is about the stack an upstream list walk reaches (the HTTP
// exchange and its readers, under the client's middleware).
const walkStack = 24 << 10

// growStack makes the calling goroutine's stack big enough for a walk in
// one step, while it is still shallow. A goroutine starts with a small
// stack that the runtime doubles, copying it, each time a call runs past its
// end: a walk's goroutine grew three or four times, deep in the exchange
// where a copy is dearest, and those copies were a twentieth of a tools/list
// over many upstreams. A frame as large as the walk's stack (the runtime
// grows the stack to fit the frame at once) costs one copy of an almost
// empty stack and the clearing of the frame.
//
//go:noinline
func growStack(i int) byte {
	var frame [walkStack]byte
	frame[i%walkStack] = 1 // an index the compiler cannot know keeps the frame
	return frame[(i+1)%walkStack]
}
