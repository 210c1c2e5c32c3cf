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
// make. List pages, discovery, subscriptions and the client's own requests
// are never refused by it, so a listing never fails or waits on a limited
// server.
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
type rpms struct {
	mu sync.Mutex
	m  map[string]*atomic.Int64
}

// of returns server's rpm cell, made (at 0, unlimited) on first use.
func (r *rpms) of(server string) *atomic.Int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]*atomic.Int64)
	}
	c := r.m[server]
	if c == nil {
		c = new(atomic.Int64)
		r.m[server] = c
	}
	return c
}

// set makes servers' rpms current and forgets servers no longer configured
// (a client still holding a forgotten cell is being closed).
func (r *rpms) set(servers []config.Server) {
	keep := make(map[string]bool, len(servers))
	for _, s := range servers {
		r.of(s.Name).Store(int64(s.RPM))
		keep[s.Name] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.m {
		if !keep[name] {
			delete(r.m, name)
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
			limit := int(rpm.Load())
			if limit <= 0 || opts.Retry || !limited(method) {
				return next(ctx, method, params, opts)
			}
			d, err := counter.Take(ctx, server, limit, time.Minute, time.Now())
			switch {
			case err != nil:
				log.Warn("request limit not checked; the call goes ahead", "server", server, "error", err.Error())
			case !d.Allowed:
				return upstream.Result{}, &fault.Fault{Class: fault.LimitExceeded, RetryAfter: d.RetryAfter,
					Message: "upstream " + server + ": request limit reached (" + strconv.Itoa(limit) + " per minute)"}
			}
			return next(ctx, method, params, opts)
		}
	}
}
