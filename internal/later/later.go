// Package later lets code deep in a request's call chain put off work until
// the request's answer has been written: the upstream client gives the byte
// budget of an answer back only once the front has sent that answer on, so
// the budget bounds answers for their whole stay in the gateway, not just
// while they are read.
//
// A request opts in with With (the list is kept in its context's scope,
// reqscope.Later: With returns the same context when that context is its
// scope's own and the scope had no list); code that holds something calls
// Defer and, when the request has no list (or its list already ran), does
// the work at once. A list is used by one request: its work runs once,
// when the function With returned is called.
package later

import (
	"context"
	"sync"

	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// list is one request's deferred work.
type list struct {
	mu   sync.Mutex
	fns  []func()
	done bool
}

// With returns a context carrying a new list, and the function that runs
// the list's work (once; later calls do nothing).
func With(ctx context.Context) (context.Context, func()) {
	l := &list{}
	return reqscope.With(ctx, reqscope.Later, l), l.run
}

// Defer adds fn to ctx's list and reports true, or reports false when ctx
// has no list or its list already ran: the caller must then run fn itself.
func Defer(ctx context.Context, fn func()) bool {
	l, _ := reqscope.Value(ctx, reqscope.Later).(*list)
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return false
	}
	l.fns = append(l.fns, fn)
	return true
}

func (l *list) run() {
	l.mu.Lock()
	fns := l.fns
	l.fns, l.done = nil, true
	l.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Without returns ctx with no list: work deferred under it runs at once.
// Work a request does on the side (listings it checks names against, which
// are cached, not answered) uses it, so that only the answer itself waits
// for the answer to be written.
func Without(ctx context.Context) context.Context {
	return reqscope.Without(ctx, reqscope.Later)
}
