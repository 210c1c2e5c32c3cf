package h1serve

// A handler may hand the rest of its response to the server
// (internal/handoff): once the handler chain and serveOne have returned,
// the connection moves on to a goroutine started for it (serveHeld, in
// conn.go), which runs the continuation (runHandoff, then endHeld) and
// then goes on serving the connection; the handler's goroutine, whose
// stack the handler grew, ends. A held stream so waits on a stack that
// only ever held its own frames (2 KB while it does its work elsewhere:
// internal/shallow).
// Everything else about the request stays as while its handler runs: the
// disconnect watch and the request's context, the response's writing
// methods, its place among Shutdown's active connections; the response
// ends (finish) when the continuation returned and the after-work that
// wrappers registered (AfterContinuation) has run, innermost first.

// heldResponse is a response's continuation and the wrappers' after-work.
// Only the connection's goroutine touches it.
type heldResponse struct {
	cont    func()
	after   []func()
	running bool // the continuation runs: no other may be set
}

// ContinueAfterHandler implements handoff.Server: f runs after the
// handler returned, before the response ends.
func (w *response) ContinueAfterHandler(f func()) bool {
	if f == nil || w.handlerDone.Load() || w.ho != nil {
		return false
	}
	w.ho = &heldResponse{cont: f}
	w.c.held = w // from now on the continuation runs, even if the handler panics (abandonHeld)
	return true
}

// AfterContinuation implements handoff.Server: f runs once the
// continuation returned; false when the response has none, or it runs
// already (the caller is then inside it: its work ends with it).
func (w *response) AfterContinuation(f func()) bool {
	if w.ho == nil || w.ho.running || w.handlerDone.Load() {
		return false
	}
	w.ho.after = append(w.ho.after, f)
	return true
}

// endHeld ends the response serveOne left handed off, once its
// continuation ran (runHandoff), as serveOne would have; it reports
// whether the connection may read another request.
func (c *conn) endHeld() bool {
	ex, cancel := c.held, c.heldCancel
	c.held, c.heldCancel = nil, nil
	c.endWatch()
	return c.endResponse(ex, cancel)
}

// runHandoff runs the response's continuation, then the after-work
// registered for it, in the order it was registered (innermost wrapper
// first). A panic in the continuation still runs the after-work, then
// goes on to the connection's recover (logged; the connection closes).
func (c *conn) runHandoff(ho *heldResponse) {
	ho.running = true
	defer func() {
		for _, f := range ho.after {
			f()
		}
	}()
	ho.cont()
}

// abandonHeld runs, on a connection closed by a panic, the continuation
// its handler handed over before panicking, and the after-work registered
// for it: the continuation owns what the stream holds (a listen's
// registration and upstream listeners) and releases it as it returns,
// which it does at once, its request's context being cancelled. A panic
// there is logged, not let out of the connection's deferred cleanup.
func (c *conn) abandonHeld() {
	ex := c.held
	c.held, c.heldCancel = nil, nil
	if ex == nil || ex.ho == nil || ex.ho.running {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			c.s.logf("h1serve: panic in the continuation of %s's abandoned response: %v", c.remote, v)
		}
	}()
	c.runHandoff(ex.ho)
}
