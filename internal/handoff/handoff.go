// Package handoff lets a handler that holds a long-lived response (an SSE
// stream) give its deep stack back while the stream lasts: after writing
// what opens the stream, the handler hands the rest of it, a
// continuation, to the server and returns; a server that supports it
// (internal/h1serve) runs the continuation once the whole handler chain
// has unwound, on a goroutine started for it, so the stream waits on a
// stack that never held the handler's frames (which the runtime would
// shrink to 4 KB at best; a goroutine that never grew keeps 2 KB). The
// response stays open until the continuation returns.
//
// Wrappers see the stream's real end through After: a wrapper whose
// after-work (an access log line, a duration, a count) must wait for the
// response to end calls After once its next handler returned, and the work
// runs when the continuation has returned, innermost wrapper first, as an
// unwinding chain would. With a server that cannot continue (net/http,
// MCPGW_HTTP_SERVER=stdlib), Run runs the continuation at once, inside the
// handler, and After reports false: the behaviour is the same, the stack
// is just not given back.
//
// Design decisions: the capability is found by an interface assertion on
// the ResponseWriter, following Unwrap as http.ResponseController does,
// so wrappers need nothing more than an Unwrap method. Rejected: a stream
// with no goroutine at all while it waits (its writer driven by the
// upstream delivery callbacks and one timer): the listen's delivery does
// blocking work between events (the re-check of the caller against the
// auth webhook, the catalog's view fetches, a settle delay), which could
// not run on the upstream's reader goroutines, so it would need a
// goroutine started per burst of events and the whole delivery loop
// rewritten as callbacks; the continuation gives the stack back with the
// loop unchanged. The continuation's goroutine is a new one rather than
// the connection's: the connection's goroutine grew its stack running the
// handler, and the runtime halves a waiting stack only while less than a
// quarter of it (counting an 800-byte guard) is in use, so it never gets
// below 4 KB; a new goroutine that only waits, doing its work through
// internal/shallow, keeps 2 KB.
package handoff

import "net/http"

// Server is what a ResponseWriter whose server runs continuations
// implements. Both methods are called on the handler's goroutine.
type Server interface {
	// ContinueAfterHandler has f run after the handler returned, before
	// the response ends; false when it cannot (a continuation is already
	// set, or the handler has returned).
	ContinueAfterHandler(f func()) bool
	// AfterContinuation has f run when the response's continuation
	// returned; false when there is none (the response ends as its
	// handler returns).
	AfterContinuation(f func()) bool
}

// server returns the Server behind w, unwrapping wrappers that have an
// Unwrap method; nil when there is none.
func server(w http.ResponseWriter) Server {
	for {
		switch v := w.(type) {
		case Server:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// Continue hands f, the rest of the handler's response, to w's server:
// f runs once the handler chain has returned, and the response ends when
// f returns. False when the server cannot: the caller must run f itself.
func Continue(w http.ResponseWriter, f func()) bool {
	s := server(w)
	return s != nil && s.ContinueAfterHandler(f)
}

// Run continues the response with f through Continue, or runs f now.
func Run(w http.ResponseWriter, f func()) {
	if !Continue(w, f) {
		f()
	}
}

// After, called by a wrapper once its next handler returned, has f run
// when the response really ends: after its continuation (true), or, when
// the response was not handed off, not at all (false: the response ends
// now, and the wrapper runs f itself).
func After(w http.ResponseWriter, f func()) bool {
	s := server(w)
	return s != nil && s.AfterContinuation(f)
}

// Finally runs f when the response really ends: after its continuation,
// or now (After, else f).
func Finally(w http.ResponseWriter, f func()) {
	if !After(w, f) {
		f()
	}
}
