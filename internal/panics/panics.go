// Package panics describes a recovered panic for the log without its value.
// Every goroutine the gateway starts recovers a panic and logs it; the value
// may quote a caller's arguments or credentials, and a full stack dump
// (runtime/debug.Stack) prints raw argument words, so the log gets only the
// panic's type and the function:line frames of the panicking goroutine.
package panics

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
)

// Attrs returns the slog key-value pairs that describe the recovered panic v
// (panic_type and stack), for a deferred function that called recover.
func Attrs(v any) []any {
	here := framesOf(callers(1)) // from Attrs's caller
	if r, ok := v.(*Raised); ok {
		return []any{"panic_type", fmt.Sprintf("%T", r.Value), "stack", r.Origin() + " | raised again at " + here}
	}
	return []any{"panic_type", fmt.Sprintf("%T", v), "stack", here}
}

// Raised is a panic recovered on one goroutine to be raised again on another
// that waits for it (shallow.Do): its value, and where it was first raised,
// which the stack of the goroutine it is raised again on no longer shows.
type Raised struct {
	Value any
	pcs   []uintptr
}

// Capture returns v, just recovered by a deferred call of this goroutine,
// as a *Raised holding this goroutine's frames (the panic's site among
// them). nil and http.ErrAbortHandler come back as they are: nil is no
// panic, and an abort is looked for by identity (net/http, h1serve).
func Capture(v any) any {
	if v == nil || v == http.ErrAbortHandler {
		return v
	}
	if r, ok := v.(*Raised); ok {
		return r
	}
	return &Raised{Value: v, pcs: callers(1)} // from Capture's caller: the deferred call, then the panic's site
}

// String is the value as %v prints it, then where it was first raised (for
// a server that logs a handler's panic with %v, as net/http and h1serve do).
func (r *Raised) String() string {
	return fmt.Sprintf("%v (first raised at %s)", r.Value, r.Origin())
}

// Origin names the functions and lines of the goroutine the panic was first
// raised on, from its site outwards, without argument values.
func (r *Raised) Origin() string { return framesOf(r.pcs) }

// callers returns the program counters of the calling goroutine's stack, at
// most 32 deep, from skip frames above callers' caller (0: that caller).
func callers(skip int) []uintptr {
	pcs := make([]uintptr, 32)
	return pcs[:runtime.Callers(skip+2, pcs)]
}

// framesOf names the functions and lines of pcs, without argument values.
func framesOf(pcs []uintptr) string {
	fs := runtime.CallersFrames(pcs)
	var b strings.Builder
	for {
		f, more := fs.Next()
		if b.Len() > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(f.Function + ":" + strconv.Itoa(f.Line))
		if !more {
			break
		}
	}
	return b.String()
}

// Go runs f in a goroutine whose panic is logged at ERROR (its type and
// frames only, never its value, which may hold arguments or tokens) instead
// of ending the process; onPanic, when set, runs after the log.
func Go(log *slog.Logger, what string, f func(), onPanic func()) {
	go Run(log, what, f, onPanic)
}

// Run calls f in the calling goroutine, logging a panic in it as Go does
// instead of passing it on, for a goroutine that runs one call after
// another; onPanic, when set, runs after the log.
func Run(log *slog.Logger, what string, f func(), onPanic func()) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("recovered from a panic", append([]any{"in", what}, Attrs(v)...)...)
			if onPanic != nil {
				onPanic()
			}
		}
	}()
	f()
}
