package upstream

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/panics"
)

// recoverPanic, deferred at the top of a goroutine the client starts (or
// around a callback it runs), turns a panic into one ERROR line and lets the
// process keep serving; onPanic, when given, fails what the goroutine was
// serving. The panic value is not logged: it may hold arguments or tokens.
func (e *env) recoverPanic(where string, onPanic func()) {
	r := recover()
	if r == nil {
		return
	}
	e.log.Error("recovered from a panic; the affected operation fails", append([]any{"where", where}, panics.Attrs(r)...)...)
	if onPanic != nil {
		onPanic()
	}
}

// runHandler runs a server→client request handler; a panic in it fails
// that request only.
func (e *env) runHandler(ctx context.Context, h Handler, m *jsonrpc.Message) (res json.RawMessage, err error) {
	defer e.recoverPanic("server request handler", func() {
		res, err = nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s failed", m.Method)
	})
	return h(ctx, m.Params)
}

// startHandler reserves what serving one server→client request of this
// exchange needs: one of the call's MaxServerRequestsPerCall slots and one
// of the client's MaxServerRequests. It returns false, reserving nothing,
// when either is taken; the request is then refused at once (busyReply).
// The caller holds whatever lock keeps the exchange's call from returning.
func (ex *exchange) startHandler() bool {
	if ex.inflight.Add(1) > int32(ex.env.perCall) {
		ex.inflight.Add(-1)
		return false
	}
	select {
	case ex.env.serverReqs <- struct{}{}:
	default:
		ex.inflight.Add(-1)
		return false
	}
	ex.handlers.Add(1)
	return true
}

// endHandler releases what startHandler reserved.
func (ex *exchange) endHandler() {
	<-ex.env.serverReqs
	ex.inflight.Add(-1)
	ex.handlers.Done()
}

// serveAsync answers m, whose handler slot startHandler reserved, on a
// goroutine of its own: ex serves it within ctx, send delivers the answer
// within sendCtx, and the slot is released; done, when set, runs last.
func (ex *exchange) serveAsync(ctx, sendCtx context.Context, m *jsonrpc.Message, send func(context.Context, []byte) error, done func()) {
	go func() {
		if done != nil {
			defer done()
		}
		defer ex.endHandler()
		defer ex.env.recoverPanic("server request", nil)
		ex.env.sendAnswer(sendCtx, send, m.Method, ex.serveRequest(ctx, m))
	}()
}

// sendAnswer sends the answer b to the upstream's request (method) with
// send; a failure is a rate-limited debug line (the upstream's request then
// times out on its side).
func (e *env) sendAnswer(ctx context.Context, send func(context.Context, []byte) error, method string, b []byte) {
	if err := send(ctx, b); err != nil {
		e.msgDebug("could not answer server request", "method", method, "err", causeText(err))
	}
}

// busyReply refuses a server→client request beyond the limits.
func busyReply(m *jsonrpc.Message) []byte {
	return jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError,
		"too many concurrent server requests; %s refused, retry later", m.Method))
}
