package app

import (
	"context"
	"encoding/json"
	"errors"
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

// serverLimits is the client middleware that holds a server to its rpm
// (calls per minute) and max_concurrent_requests (calls in flight), both
// read on every call (0: none), for the methods limited counts, in one
// admission through gate (one round trip to a shared store): a call over
// either is not sent and fails with a limit_exceeded fault (a refusal by
// max_concurrent_requests counts nothing against rpm, and the reverse). A
// retry of an operation already counted (after an input round, or a
// resumed continuation) is not counted against rpm again and is never
// refused for being in flight, though it is counted in flight. A tools/call
// that the caller's admission (callerLimits) admitted with the server's
// limits is not admitted again. When the gate cannot decide, the call goes
// ahead (logged) unless the gate fails closed (limits_unavailable).
func serverLimits(gate limits.Gate, server string, rpm, maxInFlight *atomic.Int64, log *slog.Logger) upstream.Middleware {
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			if !limited(method) || admittedFor(ctx) == server {
				return next(ctx, method, params, opts)
			}
			checks, kinds := serverChecks(server, int(rpm.Load()), int(maxInFlight.Load()), opts.Retry)
			if len(checks) == 0 {
				return next(ctx, method, params, opts)
			}
			a, f := decide(ctx, gate, checks, kinds, time.Now(), true, log)
			if f != nil {
				return upstream.Result{}, f
			}
			defer a.Release()
			return next(ctx, method, params, opts)
		}
	}
}

// serverChecks are a server's checks for one call (none for a limit of 0)
// and what each refusal says. retry: the call was counted already (in
// flight is forced, rpm not taken).
func serverChecks(server string, rpm, maxInFlight int, retry bool) ([]limits.Check, []refusal) {
	var checks []limits.Check
	var kinds []refusal
	if maxInFlight > 0 {
		checks = append(checks, limits.Check{Key: serverKey(server), Limit: maxInFlight, Force: retry})
		kinds = append(kinds, refusal{inFlight: true, limit: maxInFlight,
			message: "upstream " + server + ": too many requests in flight (max_concurrent_requests " + strconv.Itoa(maxInFlight) + ")"})
	}
	if rpm > 0 && !retry {
		checks = append(checks, limits.Check{Key: serverKey(server), Limit: rpm, Window: time.Minute})
		kinds = append(kinds, refusal{limit: rpm,
			message: "upstream " + server + ": request limit reached (" + strconv.Itoa(rpm) + " per minute)"})
	}
	return checks, kinds
}

// serverKey names a server's counters (its rpm window and its slots).
func serverKey(server string) string { return limits.ServerPrefix + server }

// refusal is what one check's refusal tells the caller.
type refusal struct {
	inFlight bool
	limit    int
	message  string
}

// fault is the limit_exceeded fault of r, retryable after retry (for an
// in-flight limit, parallelRetry: when a call ends is not known).
func (r refusal) fault(retry time.Duration) *fault.Fault {
	kind := fault.KindRequests
	if r.inFlight {
		kind, retry = fault.KindParallel, parallelRetry
	}
	return &fault.Fault{Class: fault.LimitExceeded, RetryAfter: retry,
		Limit: &fault.Limit{Kind: kind, Limit: r.limit}, Message: r.message}
}

// decide admits one call against checks through gate: the admission to
// release when the call is done, or the fault that refuses it. What the
// limits have left is noted on the request's limits.Usage when note is set.
// When the gate cannot decide, the call goes ahead, unless the gate fails
// closed.
func decide(ctx context.Context, gate limits.Gate, checks []limits.Check, kinds []refusal, now time.Time, note bool, log *slog.Logger) (*limits.Admission, *fault.Fault) {
	a, err := gate.Admit(ctx, checks, now)
	switch {
	case errors.Is(err, errLimitsUnavailable):
		return nil, &fault.Fault{Class: fault.LimitsUnavailable, RetryAfter: time.Second,
			Message: "request limits cannot be checked right now (shared counters unreachable); try again later"}
	case err != nil && ctx.Err() != nil:
		return &limits.Admission{Refused: -1}, nil // the caller left; the call ends with its context
	case err != nil:
		log.Warn("request limits not checked; the call goes ahead", "error", err.Error())
		return &limits.Admission{Refused: -1}, nil
	case !a.Allowed():
		return nil, kinds[a.Refused].fault(a.RetryAfter)
	}
	u := limits.UsageFrom(ctx)
	if !note {
		u = nil
	}
	for i, c := range checks {
		u.Note(c.InFlight(), c.Limit, a.Remaining[i], a.Reset[i])
	}
	return a, nil
}

// admittedKey marks a context whose tools/call was admitted, with its
// server's limits, by the caller's admission.
type admittedKey struct{}

// admittedFor is the server whose limits ctx's call was admitted with, or "".
func admittedFor(ctx context.Context) string {
	s, _ := ctx.Value(admittedKey{}).(string)
	return s
}

// rpmDiscovery is the gateway's Limit: a discovery counts as one request
// against each server's rpm (its catalog reads and its probe together), so
// a server whose rpm is spent is left out of discovery, not asked; so is a
// server with max_concurrent_requests calls in flight (a discovery does not
// hold a place, it only looks: its slot is given back at once).
func rpmDiscovery(gate limits.Gate, rpms *rpms, log *slog.Logger) func(ctx context.Context, server string) error {
	return func(ctx context.Context, server string) error {
		checks, kinds := serverChecks(server, int(rpms.of(server).Load()), int(rpms.maxOf(server).Load()), false)
		if len(checks) == 0 {
			return nil
		}
		a, f := decide(ctx, gate, checks, kinds, time.Now(), false, log)
		if f != nil {
			return f
		}
		a.Release()
		return nil
	}
}
