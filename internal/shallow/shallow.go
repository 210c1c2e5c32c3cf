// Package shallow keeps a held goroutine's stack at the runtime's 2 KB
// minimum: Do runs a step of its work on a goroutine of its own and waits
// for it, so the held goroutine itself only ever waits.
//
// Why: the runtime halves a waiting goroutine's stack at a collection only
// while less than a quarter of it, counting an 800-byte guard, is in use,
// so a stack that grew past 2 KB is never shrunk below 4 KB (a goroutine
// parked even in a bare channel receive uses more than the 224 bytes 2 KB
// would need), while a goroutine whose stack never grew keeps the 2 KB it
// started with. A held stream (internal/h1serve runs it on a goroutine
// started for it) that does its writes, re-checks and view fetches
// through Do waits on 2 KB instead of 4 KB. A step then costs a goroutine
// start, paid once per wake of a held stream (an event, a keepalive, a
// re-check): about 2.6 µs for a trivial step (BenchmarkDo), about 3 µs for
// one that needs 12 KB of stack, since the fresh goroutine grows its stack
// again on every wake (0.3 µs in place).
//
// Rejected: GODEBUG=adaptivestackstart=0 is not needed for this (the
// adaptive starting size follows the average stack in use, which held
// goroutines waiting shallow keep small), and cannot be set by a
// //go:debug line.
package shallow

import (
	"runtime"

	"github.com/mcpgw/mcpgw/internal/panics"
)

// Do runs f on a goroutine of its own and returns once f has returned; a
// panic in f is raised again on the caller's goroutine as a *panics.Raised
// (its value, and f's goroutine's frames, which the caller's stack no
// longer shows; http.ErrAbortHandler is raised as it is), and a
// runtime.Goexit in f ends the caller's goroutine too. What f writes is
// visible to the caller after Do returns.
func Do(f func()) {
	var p any
	returned := false
	done := make(chan struct{})
	go func() {
		defer func() {
			if !returned {
				p = panics.Capture(recover())
			}
			close(done)
		}()
		f()
		returned = true
	}()
	<-done
	switch {
	case returned:
	case p == nil: // no panic: f called runtime.Goexit
		runtime.Goexit()
	default:
		panic(p)
	}
}
