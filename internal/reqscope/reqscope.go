// Package reqscope carries the values the layers of a request's handling
// attach to its context (its place in the in-flight bound, the generation
// serving it, the public base URL, deferred work, the observed record, the
// limits' usage) in one context value: a request-scoped struct with a slot
// per value, found under a single key.
//
// Each layer used to add its own context.WithValue and copy the request
// with Request.WithContext: seven values and six request copies per call
// before the gateway did any work, and every lookup walked that chain. Now
// the first value a request gets makes its scope (one WithValue); every
// later one is written into the scope's empty slot and With returns the
// same context, so the layer keeps its *http.Request (see Request). The
// gateway's own server (internal/h1serve) makes every request's context
// with an empty scope (New), so even the first value needs no copy.
//
// Design decisions:
//   - A slot is written in place only by the holder of the scope's own
//     context (the one With returned when it made the scope) and only while
//     the slot is empty. Anything else (a slot already set, a context
//     derived from the request's (WithCancel, a tracing span, a stream's
//     context a later request clones), Without) gets a copy of the scope
//     under a new context, as context.WithValue would: whoever holds the
//     earlier context keeps the earlier values.
//   - The rule that makes writing in place safe, which nothing enforces:
//     every With on a request's own context comes before that context is
//     derived from, stored, or handed to another goroutine. A context
//     derived earlier shares the scope and sees a later in-place write,
//     unlike context.WithValue, and a goroutine reading it then races
//     with the write (TestDerivedBeforeAWriteSeesIt pins this). The
//     layers keep the rule: admit, app, the public base, observe, later
//     and limits all write on the request's goroutine before the gateway
//     fans out, starts a listen or derives a cancellable context. One
//     place writes a second request's values into a scope: the UI's
//     POST /ui/mcp re-dispatches a clone of its request (same context)
//     into the /mcp handler, on the same goroutine, and reads nothing
//     after it.
//   - Writing in place is seen by the layers outside the one writing: they
//     hold the same context. The slots are set by the layers that serve a
//     request on its own goroutine, each before it calls the next, and none
//     reads a slot an inner layer owns, so this is what context.WithValue
//     gave them. Per-upstream values set during a fan-out are not slots.
//   - Rejected: one typed field per value. The owners of the values
//     (admit, app, later, observe, limits, gateway) import each other in
//     ways that would make this package import them; a slot holds any and
//     its owner asserts its own type.
package reqscope

import (
	"context"
	"net/http"
)

// Slot names one value of a request's scope; each belongs to one package.
type Slot uint8

// The slots, one per package that keeps a value per request.
const (
	Admission  Slot = iota // admit: the request's place in the in-flight bound
	Served                 // app: the configuration generation serving the request
	PublicBase             // gateway: the public base URL the request reached
	Later                  // later: work deferred until the answer is written
	Observed               // observe: the request's record
	Usage                  // limits: the limits the call took, for its answer's headers
	nSlots
)

// scope is one request's values.
type scope struct {
	v     [nSlots]any
	set   [nSlots]bool    // a slot cleared by Without is set (to nil)
	owner context.Context // the context made with the scope: only its holder writes in place
}

type key struct{}

func of(ctx context.Context) *scope {
	s, _ := ctx.Value(key{}).(*scope)
	return s
}

// New returns ctx with an empty scope of its own. A server that makes each
// request's context with it spares the request a copy: the first layer
// that sets a slot writes it in place (With) instead of deriving a context
// and copying the request for it (Request).
func New(ctx context.Context) context.Context {
	n := &scope{}
	n.owner = context.WithValue(ctx, key{}, n)
	return n.owner
}

// With returns ctx with slot set to v: ctx itself when ctx is its scope's
// own context and the slot was empty (v is written into it), else a new
// context with a copy of the scope (see the package doc).
func With(ctx context.Context, slot Slot, v any) context.Context {
	s := of(ctx)
	if s != nil && s.owner == ctx && !s.set[slot] {
		s.v[slot], s.set[slot] = v, true
		return ctx
	}
	n := &scope{}
	if s != nil {
		*n = *s
	}
	n.v[slot], n.set[slot] = v, true
	n.owner = context.WithValue(ctx, key{}, n)
	return n.owner
}

// Without returns ctx with slot holding nothing (ctx itself when it holds
// nothing already).
func Without(ctx context.Context, slot Slot) context.Context {
	s := of(ctx)
	if s == nil || s.v[slot] == nil {
		return ctx
	}
	return With(ctx, slot, nil)
}

// Value is what slot holds in ctx, nil when nothing.
func Value(ctx context.Context, slot Slot) any {
	if s := of(ctx); s != nil {
		return s.v[slot]
	}
	return nil
}

// Request returns r with ctx as its context: r itself when ctx is r's
// (With wrote into its scope), else a shallow copy (Request.WithContext).
func Request(ctx context.Context, r *http.Request) *http.Request {
	if ctx == r.Context() {
		return r
	}
	return r.WithContext(ctx)
}
