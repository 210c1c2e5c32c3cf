package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// limited reports whether a server's rpm counts method: the calls callers
// make. List pages, subscriptions and the client's own requests are never
// refused by it, so a listing never fails or waits on a limited server; a
// discovery is counted once per server by rpmDiscovery, before it asks the
// server anything.
func limited(method string) bool {
	switch method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead, mcp.MethodCompletionComplete:
		return true
	}
	return false
}

// rpms holds each configured server's rpm, read on every call, so applying
// a config that changes only a server's rpm changes its limit at once without
// a new upstream client (and without ending its sessions). It holds one
// entry per server of the running config: set drops the others.
// It holds each server's max_concurrent_requests the same way (maxOf).
type rpms struct {
	mu  sync.Mutex
	m   map[string]*atomic.Int64
	max map[string]*atomic.Int64
}

// of returns server's rpm cell, made (at 0, unlimited) on first use.
func (r *rpms) of(server string) *atomic.Int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cell(&r.m, server)
}

// maxOf returns server's max_concurrent_requests cell, made (at 0,
// unlimited) on first use.
func (r *rpms) maxOf(server string) *atomic.Int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cell(&r.max, server)
}

// cell is m's cell for server, made on first use.
func cell(m *map[string]*atomic.Int64, server string) *atomic.Int64 {
	if *m == nil {
		*m = make(map[string]*atomic.Int64)
	}
	c := (*m)[server]
	if c == nil {
		c = new(atomic.Int64)
		(*m)[server] = c
	}
	return c
}

// set makes servers' rpms current and forgets servers no longer configured
// (a client still holding a forgotten cell is being closed).
func (r *rpms) set(servers []config.Server) {
	keep := make(map[string]bool, len(servers))
	for _, s := range servers {
		r.of(s.Name).Store(int64(s.RPM))
		r.maxOf(s.Name).Store(int64(s.MaxConcurrentRequests))
		keep[s.Name] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.m {
		if !keep[name] {
			delete(r.m, name)
		}
	}
	for name := range r.max {
		if !keep[name] {
			delete(r.max, name)
		}
	}
}

// rpmLimit is the client middleware that holds a server to rpm calls per
// minute (none while rpm holds 0; a retry of an operation already counted,
// after an input round or on a resumed continuation, is not counted again,
// so an answer the caller gave is never thrown away), counted by counter
// under the server's name: one count for all callers of this replica (of all replicas once the
// counter is shared). A call over the limit is not sent; it fails with a
// limit_exceeded fault saying when to retry. When the counter cannot decide,
// the call goes ahead.
func rpmLimit(counter limits.Counter, server string, rpm *atomic.Int64, log *slog.Logger) upstream.Middleware {
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			if opts.Retry || !limited(method) {
				return next(ctx, method, params, opts)
			}
			if f := takeRPM(ctx, counter, server, rpm, log); f != nil {
				return upstream.Result{}, f
			}
			return next(ctx, method, params, opts)
		}
	}
}

// concurrencyLimit is the client middleware that holds a server to max
// requests in flight at once (none while max holds 0), counting the calls rpm
// counts: one over it is refused at once with a limit_exceeded fault, never
// queued. It wraps rpmLimit, so a refused call is not counted against rpm. A
// retry of an operation already admitted is never refused (the caller's
// answer is not thrown away) but is counted in flight.
func concurrencyLimit(slots limits.Slots, server string, max *atomic.Int64) upstream.Middleware {
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			n := int(max.Load())
			if n <= 0 || !limited(method) {
				return next(ctx, method, params, opts)
			}
			release, ok := slots.Acquire(serverSlot(server), n, opts.Retry)
			if !ok {
				return upstream.Result{}, concurrencyFault(server, n)
			}
			defer release()
			return next(ctx, method, params, opts)
		}
	}
}

// serverSlot names a server's in-flight count among the Slots.
func serverSlot(server string) string { return "server\x00" + server }

func concurrencyFault(server string, n int) *fault.Fault {
	return &fault.Fault{Class: fault.LimitExceeded, RetryAfter: parallelRetry,
		Limit:   &fault.Limit{Kind: fault.KindParallel, Limit: n},
		Message: "upstream " + server + ": too many requests in flight (max_concurrent_requests " + strconv.Itoa(n) + ")"}
}

// rpmDiscovery is the gateway's Limit: a discovery counts as one request
// against each server it asks (its catalog reads and its probe together), so
// a server whose rpm is spent is left out of discovery, not asked; so is a
// server with max_concurrent_requests calls in flight (a discovery does not
// hold a place, it only looks).
func rpmDiscovery(counter limits.Counter, rpms *rpms, slots limits.Slots, log *slog.Logger) func(ctx context.Context, server string) error {
	return func(ctx context.Context, server string) error {
		if n := int(rpms.maxOf(server).Load()); n > 0 {
			release, ok := slots.Acquire(serverSlot(server), n, false)
			if !ok {
				return concurrencyFault(server, n)
			}
			release()
		}
		if f := takeRPM(ctx, counter, server, rpms.of(server), log); f != nil {
			return f
		}
		return nil
	}
}

// takeRPM counts one request to server against its rpm (none while rpm
// holds 0) and returns the limit_exceeded fault when the limit is spent.
// When the counter cannot decide, the request goes ahead.
func takeRPM(ctx context.Context, counter limits.Counter, server string, rpm *atomic.Int64, log *slog.Logger) *fault.Fault {
	limit := int(rpm.Load())
	if limit <= 0 {
		return nil
	}
	d, err := counter.Take(ctx, server, limit, time.Minute, time.Now())
	switch {
	case err != nil:
		log.Warn("request limit not checked; the request goes ahead", "server", server, "error", err.Error())
	case !d.Allowed:
		return &fault.Fault{Class: fault.LimitExceeded, RetryAfter: d.RetryAfter,
			Limit:   &fault.Limit{Kind: fault.KindRequests, Limit: limit},
			Message: "upstream " + server + ": request limit reached (" + strconv.Itoa(limit) + " per minute)"}
	}
	return nil
}
