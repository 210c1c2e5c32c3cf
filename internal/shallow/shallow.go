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
// start (about a microsecond), paid once per wake of a held stream: an
// event, a keepalive, a re-check.
//
// Rejected: GODEBUG=adaptivestackstart=0 is not needed for this (the
// adaptive starting size follows the average stack in use, which held
// goroutines waiting shallow keep small), and cannot be set by a
// //go:debug line.
package shallow

// Do runs f on a goroutine of its own and returns once f has returned; a
// panic in f is raised again on the caller's goroutine (with f's value;
// the stack printed is then the caller's). What f writes is visible to
// the caller after Do returns.
func Do(f func()) {
	var p any
	panicked := true
	done := make(chan struct{})
	go func() {
		defer func() {
			if panicked {
				p = recover()
			}
			close(done)
		}()
		f()
		panicked = false
	}()
	<-done
	if panicked {
		panic(p)
	}
}
