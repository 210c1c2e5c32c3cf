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

// standalone is a legacy session's GET stream: the channel on which a
// 2025-era upstream sends what belongs to no POST, such as list_changed
// notifications and server→client requests it did not tie to a request.
type standalone struct {
	mu     sync.Mutex
	active map[*exchange]context.Context // calls in flight on the session
	cancel context.CancelFunc
	done   chan struct{}
}

// track registers a call in flight, so that a request arriving on the GET
// stream can reach the caller that can answer it, and opens that stream
// when the call may receive something on it.
func (t *httpTransport) track(ctx context.Context, ex *exchange) func() {
	if in := ex.in; in != nil && (in.Elicit != nil || in.Sample != nil || in.Roots != nil || in.Log != nil) {
		t.follow(ctx, false)
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
	}
}

// follow opens the session's GET stream (see transport), once; it stays
// open until the session ends. Unless always is set, only a legacy session
// (one with a session id) opens it.
func (t *httpTransport) follow(ctx context.Context, always bool) {
	if sid, _ := t.state(); always || sid != "" {
		t.openStandalone(ctx)
	}
}

// openStandalone opens the session's GET stream, once, and returns when the
// upstream has answered it (so a request the upstream sends there for the
// session's first call finds it open), or after a short bound. An upstream
// that does not offer one (405) is fine: it has nothing to send there.
func (t *httpTransport) openStandalone(ctx context.Context) {
	t.side.mu.Lock()
	if t.side.done != nil {
		t.side.mu.Unlock()
		return
	}
	life, cancel := context.WithCancel(context.Background())
	t.side.cancel, t.side.done = cancel, make(chan struct{})
	t.side.mu.Unlock()
	opened := make(chan struct{})
	go func() {
		defer close(t.side.done)
		defer t.env.recoverPanic("upstream GET stream", nil)
		t.readStandalone(life, opened)
	}()
	wait := time.NewTimer(min(t.env.requestTimeout, 5*time.Second))
	defer wait.Stop()
	select {
	case <-opened:
	case <-wait.C:
	case <-ctx.Done():
	}
}

// stopStandalone ends the GET stream and waits for its reader.
func (t *httpTransport) stopStandalone() {
	t.side.mu.Lock()
	cancel, done := t.side.cancel, t.side.done
	t.side.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// readStandalone reads the GET stream until ctx ends; opened is closed once
// the upstream has answered the GET, whatever it answered.
func (t *httpTransport) readStandalone(ctx context.Context, opened chan<- struct{}) {
	var once sync.Once
	answered := func() { once.Do(func() { close(opened) }) }
	defer answered()
	req, _, err := t.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return
	}
	resp, err := t.do(req)
	answered()
	if err != nil {
		t.env.log.Debug("upstream GET stream not opened", "err", causeText(err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
		t.env.log.Debug("upstream offers no GET stream", "status", resp.StatusCode)
		return
	}
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
		if ex.canServe(m.Method) {
			n++
			target, tctx = ex, c
		}
	}
	switch {
	case n > 1:
		return nil, nil, jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s cannot be attributed to one request on this session", m.Method))
	case n == 0:
		return nil, nil, jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "the client does not support %s", m.Method))
	case !target.startHandler(): // the call waits for this answer before it returns
		return nil, nil, busyReply(m)
	}
	return target, tctx, nil
}
