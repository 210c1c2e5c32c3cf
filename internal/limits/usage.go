package limits

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// Usage collects, for one request, what the limits that admitted it have
// left, so the answer can carry LiteLLM's x-ratelimit-* headers on success
// too. The front puts one in the request's context (WithUsage); whoever
// admits the request notes each limit it checked (Note). It keeps the
// tightest per-window limit and the tightest in-flight limit.
type Usage struct {
	mu                 sync.Mutex
	requests, parallel *left
}

// left is one limit's state after an admission.
type left struct {
	limit, remaining int
	reset            time.Duration
}

// WithUsage returns ctx carrying a new, empty Usage.
func WithUsage(ctx context.Context) (context.Context, *Usage) {
	u := &Usage{}
	return reqscope.With(ctx, reqscope.Usage, u), u
}

// UsageFrom is the Usage ctx carries, or nil.
func UsageFrom(ctx context.Context) *Usage {
	u, _ := reqscope.Value(ctx, reqscope.Usage).(*Usage)
	return u
}

// Note records that a limit admitted the request with remaining left (and,
// for a per-window limit, reset until its oldest request leaves the
// window); the one with the fewest remaining is kept per kind. A nil Usage
// notes nothing.
func (u *Usage) Note(inFlight bool, limit, remaining int, reset time.Duration) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	slot := &u.requests
	if inFlight {
		slot = &u.parallel
	}
	if *slot == nil || remaining < (*slot).remaining {
		*slot = &left{limit: limit, remaining: max(remaining, 0), reset: reset}
	}
}

// Headers are LiteLLM's x-ratelimit-* headers for what was noted:
// x-ratelimit-{limit,remaining,reset}-requests for the tightest per-window
// limit (reset in whole seconds, rounded up) and
// x-ratelimit-{limit,remaining}-max_parallel_requests for the tightest
// in-flight one. None when nothing was noted.
func (u *Usage) Headers() [][2]string {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var out [][2]string
	if r := u.requests; r != nil {
		secs := int((r.reset + time.Second - 1) / time.Second)
		out = append(out,
			[2]string{"x-ratelimit-limit-requests", strconv.Itoa(r.limit)},
			[2]string{"x-ratelimit-remaining-requests", strconv.Itoa(r.remaining)},
			[2]string{"x-ratelimit-reset-requests", strconv.Itoa(secs)})
	}
	if p := u.parallel; p != nil {
		out = append(out,
			[2]string{"x-ratelimit-limit-max_parallel_requests", strconv.Itoa(p.limit)},
			[2]string{"x-ratelimit-remaining-max_parallel_requests", strconv.Itoa(p.remaining)})
	}
	return out
}
