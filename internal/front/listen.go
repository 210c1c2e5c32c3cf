package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/handoff"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// serveListen answers a modern subscriptions/listen: an SSE stream that
// opens with the acknowledgement, once every upstream listener is
// established, and carries every event tagged with the listen's id, until
// the client leaves; at shutdown it ends with the graceful final response.
// A listen that cannot be set up is answered with its error, unacknowledged.
//
// The listen is held by one goroutine (gateway.Listener; h1serve's serveHeld
// once handed off): the core's delivery calls emit for each event, which
// re-checks the caller and writes it, and tend between events, for the
// re-checks and keepalives (one timer for both), each through shallow.Do.
func (h *MCP) serveListen(req *request, op gateway.Operation) {
	w, r, msg := req.w, req.r, req.msg
	filter, rpcErr := gateway.ParseFilter(jsonrpc.Member(msg.Params, "notifications"))
	if rpcErr != nil {
		writeRPCError(w, http.StatusBadRequest, msg.ID, rpcErr)
		return
	}
	if !acceptsSSE(r) {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "subscriptions/listen needs Accept: text/event-stream"))
		return
	}
	h.holdListen(req, &op, &filter)
}

// holdListen serves a valid listen (see serveListen), in a frame of its
// own: the frames that checked it are not held while the listen lasts.
// The listen is set up and acknowledged here, on the handler's goroutine
// (so it counts among the requests in flight until it is open); what it
// holds then is handed to the server (internal/handoff), which runs it
// once the handler chain has unwound, on a goroutine started for it.
func (h *MCP) holdListen(req *request, op *gateway.Operation, filter *gateway.Filter) {
	w, r, msg := req.w, req.r, req.msg
	wake := make(chan struct{}, 1) // the listen's one channel for its work and the duties' (gateway.Listener.Wake)
	s := &listenStream{ctx: r.Context(), id: msg.ID.Raw(), watch: h.watchAuth(r, req.caller),
		duties: newWakingDuties(h.cfg.Sessions.RecheckInterval, wake)}
	// The body is not held for the listen's life: its filter is parsed, the
	// core needs none of its params, and the capabilities are copied.
	lop := *op
	lop.Params, lop.ClientCaps = nil, bytes.Clone(op.ClientCaps)
	if req.obs != nil {
		req.obs.Meta = bytes.Clone(req.obs.Meta)
	}
	// The listen ends by its core's own context: when the client leaves
	// (the request's), when a write or the caller's authority ends it
	// (false from Ack, Emit or Tend) and at this front's Close (Done). No
	// context of the front's is held for it.
	open, res := h.cfg.Gateway.OpenListen(r.Context(), lop, *filter, gateway.Listener{
		Ack: func(honoured json.RawMessage) bool {
			admit.KeepOpen(w, r)
			sse.SetHeaders(w.Header())
			w.WriteHeader(http.StatusOK)
			s.open(w)
			params := []byte(`{"notifications":`)
			params = append(append(params, honoured...), '}')
			if h.cfg.Detach != nil {
				h.cfg.Detach(r)
			}
			return s.write(jsonrpc.EncodeNotification(mcp.NotifSubscriptionsAcknowledged, s.tagged(params)))
		},
		Emit: s.emit,
		Wake: wake,
		Tend: s.tend,
		Done: h.listenCtx.Done(), // gateway shutdown ends the listen
	})
	if open == nil {
		h.finishListen(req, res, s)
		return
	}
	// What the held part keeps of the request: its writer and its id.
	id := msg.ID
	hold := func() {
		open.Hold()
		h.endListen(id, s)
	}
	if req.handedOff = handoff.Continue(w, hold); !req.handedOff {
		hold()
	}
}

// finishListen ends a listen whose core part returned, and its duties'
// timer: a listen never
// acknowledged is answered with its error; an acknowledged one, when the
// gateway ends it rather than the client, ends with the graceful final
// response (what the core delivered before it ended is written already).
func (h *MCP) finishListen(req *request, res gateway.Outcome, s *listenStream) {
	if s.out != nil {
		h.endListen(req.msg.ID, s)
		return
	}
	s.duties.stop()
	w, r, msg := req.w, req.r, req.msg
	if res.Fault == nil {
		res = gateway.Failed(fault.New(fault.UpstreamInternal, "the listen ended before it was set up"))
	}
	if r.Context().Err() == nil {
		h.answerModern(w, newReply(w, r), msg, res)
	}
}

// endListen ends an acknowledged listen whose id is id (see
// finishListen): its outcome is its stream.
func (h *MCP) endListen(id jsonrpc.ID, s *listenStream) {
	s.duties.stop()
	if s.ctx.Err() == nil && !s.failed { // we end it, not the client: say so
		_ = s.send(h.encodeModern(id, s.tagged(json.RawMessage(`{}`)), false))
	}
}

// streamWriteTimeout bounds one write on a listen's stream: a client that
// stops reading for this long ends it.
const streamWriteTimeout = 30 * time.Second

// listenStream is one subscriptions/listen's stream, written only by the
// listen's goroutine (see serveListen): nothing of the request it came
// with is held beyond what its writes and re-checks need.
type listenStream struct {
	ctx    context.Context // the request's
	id     json.RawMessage // the listen's id, tagging every event
	out    *sse.Writer     // nil until the stream is open
	rc     *http.ResponseController
	watch  *authWatch
	duties *duties
	failed bool // a write failed: the client stopped reading, or left
}

// open starts writing on the stream, and its keepalives.
func (s *listenStream) open(w http.ResponseWriter) {
	s.rc = http.NewResponseController(w)
	s.out = sse.NewWriter(w)
	s.out.Lean() // a held stream keeps no buffer between its rare writes
	s.duties.open()
}

// tagged sets params' subscription id to the listen's.
func (s *listenStream) tagged(params json.RawMessage) json.RawMessage {
	return tagSubscription(params, s.id)
}

// send writes one message within streamWriteTimeout.
func (s *listenStream) send(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return s.out.WriteEvent(sse.Event{Type: "message", Data: b})
}

// write writes one message; false when it failed (the client stopped
// reading, or left), which ends the listen.
func (s *listenStream) write(b []byte) bool {
	if s.send(b) != nil {
		s.failed = true
	}
	return !s.failed
}

// emit writes one event after re-checking the caller for it; false (the
// listen ends) when the caller is refused or the write failed.
func (s *listenStream) emit(method string, params json.RawMessage, arrived time.Time) bool {
	return s.watch.ok(s.ctx, arrived) && s.write(jsonrpc.EncodeNotification(method, s.tagged(params)))
}

// tend re-checks the caller and writes the keepalive when due; false ends
// the listen.
func (s *listenStream) tend() bool {
	recheck, keepalive := s.duties.due()
	if recheck && !s.watch.ok(s.ctx, time.Now()) {
		return false
	}
	if keepalive {
		_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if s.out.WriteComment("keepalive") != nil {
			s.failed = true
			return false
		}
	}
	return true
}

// tagSubscription sets params._meta's subscription id to id.
func tagSubscription(params json.RawMessage, id json.RawMessage) json.RawMessage {
	if len(params) == 0 || params[0] != '{' {
		params = json.RawMessage(`{}`)
	}
	meta := jsonrpc.Member(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		meta = []byte(`{}`)
	}
	meta, err := jsonrpc.SetMember(meta, mcp.MetaSubscriptionID, id)
	if err != nil {
		return params
	}
	if p, err := jsonrpc.SetMember(params, "_meta", meta); err == nil {
		return p
	}
	return params
}

// followSpec is what a legacy session's follow listens for, and whose.
type followSpec struct {
	op     gateway.Operation
	filter gateway.Filter
	// watch re-checks the caller before each event and periodically.
	watch *authWatch
	// revoked, when set, is called when the caller may no longer follow
	// (the follow itself ends then in any case).
	revoked func()
}

// followResult says how a follow's set-up went.
type followResult struct {
	established bool // every upstream listener it needs is open
	resources   bool // the acknowledgement kept a resource subscription
}

// follow runs a listen for a legacy session in the background, sending its
// events (untagged: legacy notifications carry no subscription id) on the
// session's GET stream when one is open, each after the caller is
// re-checked; the caller is also re-checked every RecheckInterval. ready
// receives one result once the listen is set up or has failed. It ends
// with stop, the session, or the caller's authority. It runs on one
// goroutine (gateway.Listener). A session's own GET stream does not use it:
// it runs its follow itself (serveLegacyStream).
func (h *MCP) follow(sess *live, spec followSpec) (ready <-chan followResult, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(h.ctx)
	out := make(chan followResult, 1)
	spec.op.Credentials = spec.op.Credentials.Clone() // the follow outlives the request it came with
	if !sess.startWork() {
		out <- followResult{}
		return out, cancel
	}
	var once sync.Once // out receives once
	report := func(r followResult) { once.Do(func() { out <- r }) }
	go func() {
		defer sess.work.Done()
		defer cancel()
		defer recoverPanic(h.cfg.Logger, "legacy session follow", func() { report(followResult{}) })
		revoke := func() {
			if spec.revoked != nil {
				spec.revoked()
			}
			cancel()
		}
		wake := make(chan struct{}, 1) // the listen's one channel, the duties' too (gateway.Listener.Wake)
		du := newWakingDuties(h.cfg.Sessions.RecheckInterval, wake)
		defer du.stop()
		h.cfg.Gateway.ListenFilter(ctx, spec.op, spec.filter, gateway.Listener{
			Ack: func(got json.RawMessage) bool {
				var f gateway.Filter
				_ = json.Unmarshal(got, &f)
				report(followResult{established: true, resources: len(f.ResourceSubscriptions) > 0})
				return true
			},
			Emit: func(method string, params json.RawMessage, arrived time.Time) bool {
				if !spec.watch.ok(ctx, arrived) {
					revoke()
					return false
				}
				if st := sess.currentStream(); st != nil {
					st.send(jsonrpc.EncodeNotification(method, params))
				}
				return true
			},
			Wake: wake,
			Tend: func() bool {
				if recheck, _ := du.due(); recheck && !spec.watch.ok(ctx, time.Now()) {
					revoke()
					return false
				}
				return true
			},
			Done: sess.done,
		})
		report(followResult{})
	}()
	return out, cancel
}

// maxSubscriptions bounds one legacy session's resources/subscribe.
const maxSubscriptions = 64

// subscribe serves a legacy resources/subscribe: updates for uri follow the
// session to its GET stream until resources/unsubscribe or the session ends.
// It reports false when no upstream the caller may use can honour it.
func (h *MCP) subscribe(sess *live, op gateway.Operation, watch *authWatch, uri string) (bool, string) {
	sess.subMu.Lock()
	if _, ok := sess.subs[uri]; ok {
		sess.subMu.Unlock()
		return true, ""
	}
	if len(sess.subs) >= maxSubscriptions {
		sess.subMu.Unlock()
		return false, "too many subscriptions on this session"
	}
	if sess.subs == nil {
		sess.subs = map[string]*subscription{}
	}
	mine := &subscription{}
	sess.subs[uri] = mine // hold the place while the upstreams answer
	sess.subMu.Unlock()

	ready, stop := h.follow(sess, followSpec{op: op, filter: gateway.Filter{ResourceSubscriptions: []string{uri}, Persist: true}, watch: watch})
	res := <-ready
	ok := res.established && res.resources
	sess.subMu.Lock()
	defer sess.subMu.Unlock()
	if sess.subs[uri] != mine {
		stop() // unsubscribed while it was being set up
		return true, ""
	}
	if !ok {
		delete(sess.subs, uri)
		stop()
		return false, "no upstream available to this caller supports subscribing to this resource"
	}
	mine.stop = stop
	return true, ""
}

// unsubscribe ends a legacy resources/subscribe.
func (h *MCP) unsubscribe(sess *live, uri string) {
	sess.subMu.Lock()
	sub := sess.subs[uri]
	delete(sess.subs, uri)
	sess.subMu.Unlock()
	if sub != nil && sub.stop != nil {
		sub.stop()
	}
}

// authWatch re-authenticates the caller of one long-lived stream. A webhook
// that cannot answer (503: busy, down, restarting) does not end the stream
// until it has been unavailable for the grace period in a row; a refusal
// (401, 403) or a change of identity or visible servers ends it at once.
type authWatch struct {
	h      *MCP
	r      *http.Request
	caller *identity.Caller

	mu        sync.Mutex
	downSince time.Time // first of an unbroken run of unavailable answers; zero when answering
	began     time.Time // when the check behind verdict began; zero before the first
	verdict   bool
}

// watchAuth returns the re-authentication of the stream r opened for caller.
func (h *MCP) watchAuth(r *http.Request, caller *identity.Caller) *authWatch {
	return &authWatch{h: h, r: r, caller: caller}
}

// ok reports whether the caller may still be served what arrived at
// arrived: false when the stream must end (the caller is refused, has
// become someone else or sees other servers, the webhook has been
// unavailable beyond the grace period, or ctx has ended). A verdict from a
// check that began after arrived answers (events queued in a burst cost the
// webhook one call); anything newer asks again, so nothing that arrived
// after a revocation is served.
func (a *authWatch) ok(ctx context.Context, arrived time.Time) bool {
	a.mu.Lock()
	if !a.began.IsZero() && arrived.Before(a.began) {
		v := a.verdict
		a.mu.Unlock()
		return v && ctx.Err() == nil
	}
	a.mu.Unlock()
	began := time.Now()
	v := a.check(ctx)
	if ctx.Err() == nil {
		a.mu.Lock()
		if began.After(a.began) {
			a.began, a.verdict = began, v
		}
		a.mu.Unlock()
	}
	return v
}

// check re-authenticates the caller now (see ok).
func (a *authWatch) check(ctx context.Context) bool {
	h := a.h.latest() // a stream kept across a new config answers to it
	now, err := h.cfg.Auth.Authenticate(ctx, a.r, "subscriptions/listen")
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		var ae *identity.Error
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
			h.cfg.Logger.Info("long-lived stream ended: the caller was refused")
			return false
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.downSince.IsZero() {
			a.downSince = time.Now()
		}
		if time.Since(a.downSince) >= h.cfg.Sessions.AuthUnavailableGrace {
			h.cfg.Logger.Warn("long-lived stream ended: authentication unavailable for too long")
			return false
		}
		return true
	}
	a.mu.Lock()
	a.downSince = time.Time{}
	a.mu.Unlock()
	if now.Binding() != a.caller.Binding() || !slices.Equal(h.cfg.Gateway.Visible(gateway.Operation{Caller: now}), h.cfg.Gateway.Visible(gateway.Operation{Caller: a.caller})) {
		h.cfg.Logger.Info("long-lived stream ended: the caller's authority changed")
		return false
	}
	return true
}
