package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// streamLinger is how long a legacy session's GET stream stays open after
// its last holder let go, so back-to-back calls that may receive something
// on it do not reopen it each time.
const streamLinger = time.Second

// standalone is a legacy session's GET stream: the channel on which a
// 2025-era upstream sends what belongs to no POST, such as list_changed
// notifications and server→client requests it did not tie to a request.
// It is open only while something holds it (followers, and calls that may
// receive something on it), and closed streamLinger after the last holder
// let go.
type standalone struct {
	mu      sync.Mutex
	active  map[*exchange]context.Context // calls in flight on the session
	holders int
	cur     *getStream  // the stream open or being opened; nil when none
	linger  *time.Timer // closes cur once nobody holds it
	refused bool        // the upstream answered the GET without a stream: not asked again
	kept    bool        // a call's hold was kept (httpTransport.keepStream)
	stopped bool        // the transport was closed
	readers sync.WaitGroup
}

// getStream is one GET request's stream.
type getStream struct {
	cancel context.CancelFunc
	opened chan struct{} // closed once the upstream answered the GET
	// lost ends when the GET failed (before opened closes: its cause is
	// the failure), or when the stream, once open, ended by the upstream's
	// doing (not by linger or close). It never ends for an upstream that
	// answered without a stream (405): it offers none to lose.
	lost context.Context
	lose context.CancelCauseFunc

	answerOnce sync.Once
}

// answered closes opened, once.
func (gs *getStream) answered() { gs.answerOnce.Do(func() { close(gs.opened) }) }

// track registers a call in flight, so that a request arriving on the GET
// stream can reach the caller that can answer it, and holds that stream
// while the call may receive something on it (on one caller's own session,
// until the session ends).
func (t *httpTransport) track(ctx context.Context, ex *exchange) func() {
	unhold := func() {}
	if in := ex.in; in != nil && (in.Elicit != nil || in.Sample != nil || in.Roots != nil || in.Log != nil) {
		if t.keepStream {
			t.keepHold(ctx)
		} else {
			_, unhold = t.follow(ctx)
		}
	}
	t.side.mu.Lock()
	if t.side.active == nil {
		t.side.active = map[*exchange]context.Context{}
	}
	t.side.active[ex] = ctx
	t.side.mu.Unlock()
	return func() {
		t.side.mu.Lock()
		delete(t.side.active, ex)
		t.side.mu.Unlock()
		unhold()
	}
}

// follow holds the GET stream of a legacy session (see transport), opening
// it when none is open. A modern session, or one not yet negotiated, has
// none.
func (t *httpTransport) follow(ctx context.Context) (context.Context, func()) {
	if _, ver := t.state(); ver == "" || mcp.IsModern(ver) {
		return nil, func() {}
	}
	t.side.mu.Lock()
	if t.side.stopped || t.side.refused {
		t.side.mu.Unlock()
		return nil, func() {}
	}
	t.side.holders++
	if t.side.linger != nil {
		t.side.linger.Stop()
		t.side.linger = nil
	}
	gs := t.side.cur
	if gs == nil || gs.lost.Err() != nil {
		gs = t.startStreamLocked() // none, or one that just failed: try again
	}
	t.side.mu.Unlock()
	// Return once the upstream has answered the GET, so a request it sends
	// there for the session's first call finds it open, or after a short
	// bound.
	select {
	case <-gs.opened: // the common case, without a timer
	default:
		wait := time.NewTimer(min(t.env.requestTimeout, 5*time.Second))
		select {
		case <-gs.opened:
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
	}
	var once sync.Once
	return gs.lost, func() { once.Do(t.unhold) }
}

// keepHold holds the GET stream of a legacy session until the session ends,
// once.
func (t *httpTransport) keepHold(ctx context.Context) {
	if _, ver := t.state(); ver == "" || mcp.IsModern(ver) {
		return
	}
	t.side.mu.Lock()
	kept := t.side.kept
	t.side.kept = true
	t.side.mu.Unlock()
	if !kept {
		t.follow(ctx) // never released: stopStandalone ends it
	}
}

// startStreamLocked starts reading a new GET stream; t.side.mu is held.
func (t *httpTransport) startStreamLocked() *getStream {
	life, cancel := context.WithCancel(context.Background())
	lost, lose := context.WithCancelCause(context.Background())
	gs := &getStream{cancel: cancel, opened: make(chan struct{}), lost: lost, lose: lose}
	t.side.cur = gs
	t.side.readers.Add(1)
	go func() {
		defer t.side.readers.Done()
		var refused bool
		defer func() {
			t.side.mu.Lock()
			if t.side.cur == gs {
				t.side.cur = nil
				if t.side.linger != nil {
					t.side.linger.Stop()
					t.side.linger = nil
				}
			}
			t.side.refused = t.side.refused || refused
			t.side.mu.Unlock()
			if !refused && life.Err() == nil {
				lose(ErrFollowEnded) // ended by the upstream, not by us
			}
			gs.answered() // also after a panic
			cancel()
		}()
		defer t.env.recoverPanic("upstream GET stream", nil)
		refused = t.readStandalone(life, gs)
	}()
	return gs
}

// unhold lets go of the GET stream; the last holder arms its closing.
func (t *httpTransport) unhold() {
	t.side.mu.Lock()
	defer t.side.mu.Unlock()
	t.side.holders--
	gs := t.side.cur
	if t.side.holders > 0 || gs == nil || t.side.stopped {
		return
	}
	t.side.linger = time.AfterFunc(streamLinger, func() {
		t.side.mu.Lock()
		defer t.side.mu.Unlock()
		if t.side.holders > 0 || t.side.cur != gs {
			return // held again, or already gone
		}
		t.side.cur, t.side.linger = nil, nil
		gs.cancel()
	})
}

// stopStandalone ends the GET stream for good and waits for its readers.
func (t *httpTransport) stopStandalone() {
	t.side.mu.Lock()
	t.side.stopped = true
	if t.side.linger != nil {
		t.side.linger.Stop()
		t.side.linger = nil
	}
	gs := t.side.cur
	t.side.cur = nil
	t.side.mu.Unlock()
	if gs != nil {
		gs.cancel()
	}
	t.side.readers.Wait()
}

// readStandalone opens the GET stream and reads it until ctx ends or the
// upstream ends it; gs.opened is closed once the upstream has answered the
// GET, whatever it answered, and after gs.lose when the GET failed. It
// reports whether the upstream answered without a stream (it offers none).
func (t *httpTransport) readStandalone(ctx context.Context, gs *getStream) (refused bool) {
	resp, refused, err := t.openStandalone(ctx)
	if err != nil && ctx.Err() == nil {
		t.env.log.Debug("upstream GET stream not opened", "err", causeText(err))
		gs.lose(err)
	}
	gs.answered()
	if resp == nil {
		return refused
	}
	defer resp.Body.Close()
	t.env.log.Debug("upstream GET stream open")
	var serving sync.WaitGroup
	defer serving.Wait()
	br := t.env.budgetReader(ctx, resp.Body)
	defer br.releaseHeld()
	rd := sse.NewReader(br, int(t.env.maxMessage))
	for ; ; br.releaseHeld() {
		ev, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				t.env.log.Debug("upstream GET stream ended", "err", causeText(err))
			}
			return
		}
		if (ev.Type != "" && ev.Type != "message") || len(ev.Data) == 0 {
			continue
		}
		m, err := jsonrpc.Decode(ev.Data)
		if err != nil {
			t.env.msgWarn("upstream sent an event that is not a JSON-RPC message", "bytes", len(ev.Data))
			continue
		}
		switch m.Kind() {
		case jsonrpc.KindNotification:
			if m.Method == mcp.NotifMessage {
				// Servers send session logs here once the stream is open;
				// they go to the caller of the one call in flight that
				// takes logs.
				if ex := t.soleActive(func(ex *exchange) bool { return ex.in != nil && ex.in.Log != nil }); ex != nil {
					ex.notify(m)
					continue
				}
			}
			t.env.deliver(m, t.cred)
		case jsonrpc.KindRequest:
			target, tctx, reply := t.routeStandalone(m)
			if reply != nil {
				// Refused (or a ping) at once, without a goroutine.
				t.env.sendAnswer(ctx, t.send, m.Method, reply)
				continue
			}
			serving.Add(1)
			target.serveAsync(tctx, ctx, m, t.send, serving.Done)
		}
	}
}

// openStandalone sends the GET that opens the stream. It returns the
// stream's response; or refused when the upstream answered without one
// (405, or a 2xx that is not an event stream: it offers none); or why the
// GET failed. A minted token refused with 401 is refreshed and the GET
// retried once, as for every request.
func (t *httpTransport) openStandalone(ctx context.Context) (resp *http.Response, refused bool, err error) {
	for retried := false; ; retried = true {
		req, minted, err := t.newRequest(ctx, http.MethodGet, nil)
		if err != nil {
			return nil, false, err
		}
		resp, err := t.do(req)
		if err != nil {
			return nil, false, err
		}
		if resp.StatusCode == http.StatusOK && mediaType(resp) == "text/event-stream" {
			return resp, false, nil
		}
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode/100 == 2 {
			resp.Body.Close()
			t.env.log.Debug("upstream offers no GET stream", "status", resp.StatusCode)
			return nil, true, nil
		}
		br := t.env.answerReader(ctx, resp.Body) // an error body is buffered
		resp.Body = budgetBody{br, resp.Body}
		err = t.checkStatus(resp, outgoing{}, minted)
		resp.Body.Close()
		br.releaseHeld()
		var se *StatusError
		if !retried && errors.As(err, &se) && se.Status == http.StatusUnauthorized && se.minted != "" {
			t.d.creds.refused(se.minted)
			continue
		}
		return nil, false, err
	}
}

// soleActive returns the one call in flight that matches, or nil when none
// or several do.
func (t *httpTransport) soleActive(match func(*exchange) bool) *exchange {
	t.side.mu.Lock()
	defer t.side.mu.Unlock()
	var found *exchange
	for ex := range t.side.active {
		if match(ex) {
			if found != nil {
				return nil
			}
			found = ex
		}
	}
	return found
}

// routeStandalone decides who answers a server→client request from the GET
// stream: the one call in flight whose caller can answer it, within that
// call's and the client's limits (startHandler, released by the caller of
// routeStandalone). Otherwise it returns the reply to send at once: ping is
// answered, and a request that no caller or more than one could answer is
// refused, because the wrong caller must never see it.
func (t *httpTransport) routeStandalone(m *jsonrpc.Message) (*exchange, context.Context, []byte) {
	if m.Method == mcp.MethodPing {
		return nil, nil, jsonrpc.EncodeResult(m.ID, []byte(`{}`))
	}
	var target *exchange
	var tctx context.Context
	n := 0
	t.side.mu.Lock()
	defer t.side.mu.Unlock()
	for ex, c := range t.side.active {
		if ex.canServeStray(m.Method) {
			n++
			target, tctx = ex, c
		}
	}
	switch {
	case n > 1:
		return nil, nil, jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s cannot be attributed to one request on this session", m.Method))
	case n == 0:
		return nil, nil, strayRefusal(m)
	case !target.startHandler(): // the call waits for this answer before it returns
		return nil, nil, busyReply(m)
	}
	return target, tctx, nil
}
