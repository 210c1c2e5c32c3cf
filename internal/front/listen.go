package front

import (
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
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.listenCtx, cancel) // gateway shutdown ends the listen
	defer stop()

	out := &listenWriter{rc: http.NewResponseController(w)}
	write := func(b []byte) {
		if out.event(b) != nil {
			cancel() // a client that stopped reading, or left
		}
	}
	tagged := func(params json.RawMessage) json.RawMessage { return tagSubscription(params, msg.ID.Raw()) }
	watch := h.watchAuth(r, req.caller)
	// Events are only queued where they arrive, and dropped when the queue
	// is full; the caller is re-checked and the event written here.
	events := newEventQueue()
	acked := make(chan struct{})
	// One goroutine per listen re-checks the caller, writes the keepalives
	// and delivers the queued events (one stack instead of three per held
	// stream).
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		defer recoverPanic(h.cfg.Logger, "listen delivery", cancel)
		h.tendListen(ctx, tending{cancel: cancel, refuse: cancel, acked: acked, events: events, watch: watch,
			keepalive: func() error { return out.comment("keepalive") },
			write: func(ev listenEvent) {
				write(jsonrpc.EncodeNotification(ev.method, tagged(ev.params)))
			}})
	}()
	defer bg.Wait()
	defer cancel()
	res := h.cfg.Gateway.ListenFilter(ctx, op, filter,
		func(honoured json.RawMessage) {
			admit.KeepOpen(w, r)
			sse.SetHeaders(w.Header())
			w.WriteHeader(http.StatusOK)
			out.open(sse.NewWriter(w))
			params := []byte(`{"notifications":`)
			params = append(append(params, honoured...), '}')
			write(jsonrpc.EncodeNotification(mcp.NotifSubscriptionsAcknowledged, tagged(params)))
			close(acked)
			if h.cfg.Detach != nil {
				h.cfg.Detach(r)
			}
		},
		events.push)
	cancel() // the background writers stop before the final write
	bg.Wait()
	h.finishListen(req, res, acked, events, watch, write, tagged)
}

// finishListen ends a listen whose core part returned: a listen never
// acknowledged is answered with its error; an acknowledged one writes what
// the core delivered before it ended (each event after the caller is
// re-checked) and, when the gateway ends it rather than the client, the
// graceful final response.
func (h *MCP) finishListen(req *request, res gateway.Outcome, acked <-chan struct{}, events *eventQueue, watch *authWatch, write func([]byte), tagged func(json.RawMessage) json.RawMessage) {
	w, r, msg := req.w, req.r, req.msg
	select {
	case <-acked:
	default:
		if res.Fault == nil {
			res = gateway.Failed(fault.New(fault.UpstreamInternal, "the listen ended before it was set up"))
		}
		if r.Context().Err() == nil {
			h.answerModern(w, newReply(w, r), msg, res)
		}
		return
	}
	for _, ev := range events.take() {
		if r.Context().Err() != nil || !watch.ok(r.Context(), ev.at) {
			return
		}
		write(jsonrpc.EncodeNotification(ev.method, tagged(ev.params)))
	}
	if r.Context().Err() == nil { // we end it, not the client: say so
		write(jsonrpc.EncodeResult(msg.ID, h.modernResult(tagged(json.RawMessage(`{}`)))))
	}
}

// errStreamNotOpen is a write on a listen whose stream is not open yet.
var errStreamNotOpen = errors.New("listen stream not open")

// listenQueue bounds the events waiting to be written on one listen.
const listenQueue = 64

// streamWriteTimeout bounds one write on a listen's stream: a client that
// stops reading for this long ends it.
const streamWriteTimeout = 30 * time.Second

// listenEvent is one event waiting to be written on a listen.
type listenEvent struct {
	method string
	params json.RawMessage
	at     time.Time // when it was queued: the caller is re-checked after it
}

// tending is what tendListen serves: the listen's queue and caller, and
// what ends it.
type tending struct {
	cancel    context.CancelFunc // ends the listen
	refuse    context.CancelFunc // ends it because the caller is refused
	done      <-chan struct{}    // when set, its closing ends the listen
	acked     <-chan struct{}    // closed once the listen is acknowledged
	events    *eventQueue
	watch     *authWatch
	keepalive func() error // when set, written every keepaliveInterval once acked
	write     func(listenEvent)
}

// tendListen serves a listen until ctx ends, in one goroutine (one stack
// per held stream instead of one per duty): it re-checks the caller every
// RecheckInterval from the start and, once acked closes, writes each queued
// event after re-checking the caller for it, and the keepalive. A refused
// caller ends the listen with refuse, a failed keepalive with cancel.
func (h *MCP) tendListen(ctx context.Context, t tending) {
	recheck := time.NewTicker(h.cfg.Sessions.RecheckInterval)
	defer recheck.Stop()
	var keep *time.Ticker
	var keepC <-chan time.Time
	var evC <-chan struct{} // nil until the listen is acknowledged
	defer func() {
		if keep != nil {
			keep.Stop()
		}
	}()
	acked := t.acked
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.done:
			t.cancel()
			return
		case <-acked:
			acked = nil
			evC = t.events.ready
			if t.keepalive != nil {
				keep = time.NewTicker(keepaliveInterval)
				keepC = keep.C
			}
		case <-recheck.C:
			if !t.watch.ok(ctx, time.Now()) {
				t.refuse()
				return
			}
		case <-keepC:
			if t.keepalive() != nil {
				t.cancel() // a client that stopped reading, or left
				return
			}
		case <-evC:
			for _, ev := range t.events.take() {
				if ctx.Err() != nil {
					return
				}
				if !t.watch.ok(ctx, ev.at) {
					t.refuse()
					return
				}
				t.write(ev)
			}
		}
	}
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

// listenWriter serializes a listen's writes, each bounded by
// streamWriteTimeout.
type listenWriter struct {
	mu  sync.Mutex
	out *sse.Writer // nil until the stream is open
	rc  *http.ResponseController
}

// open starts writing on the stream.
func (lw *listenWriter) open(out *sse.Writer) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.out = out
}

func (lw *listenWriter) event(b []byte) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.out == nil {
		return errStreamNotOpen
	}
	_ = lw.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return lw.out.WriteEvent(sse.Event{Type: "message", Data: b})
}

func (lw *listenWriter) comment(text string) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.out == nil {
		return errStreamNotOpen
	}
	_ = lw.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return lw.out.WriteComment(text)
}

// keepaliveInterval is how often an idle listen's stream carries a comment.
const keepaliveInterval = 15 * time.Second

// followSpec is what a legacy session's follow listens for, and whose.
type followSpec struct {
	op     gateway.Operation
	filter gateway.Filter
	// watch re-checks the caller before each event and periodically.
	watch *authWatch
	// revoked, when set, is called when the caller may no longer follow
	// (the follow itself ends then in any case).
	revoked func()
	// lost, when set, is called when the follow ends on its own (it could
	// not be set up again), not by stop, the session or revocation.
	lost func()
}

// followResult says how a follow's set-up went.
type followResult struct {
	established bool // every upstream listener it needs is open
	resources   bool // the acknowledgement kept a resource subscription
}

// follow runs a listen for a legacy session in the background, sending its
// events (untagged: legacy notifications carry no subscription id) on the
// session's GET stream when one is open, each after the caller is re-checked.
// ready receives one result once the listen is set up or has failed. It
// ends with stop, the session, or the caller's authority.
func (h *MCP) follow(sess *live, spec followSpec) (ready <-chan followResult, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(h.ctx)
	out := make(chan followResult, 1)
	spec.op.Credentials.Header = http.Header(spec.op.Credentials.Header).Clone() // the follow outlives the request it came with
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
		events := newEventQueue()
		acked := make(chan struct{})
		var bg sync.WaitGroup
		bg.Add(1)
		go func() {
			defer bg.Done()
			defer recoverPanic(h.cfg.Logger, "legacy follow delivery", cancel)
			h.tendListen(ctx, tending{cancel: cancel, refuse: revoke, done: sess.done, acked: acked, events: events, watch: spec.watch,
				write: func(ev listenEvent) {
					if st := sess.currentStream(); st != nil {
						st.send(jsonrpc.EncodeNotification(ev.method, ev.params))
					}
				}})
		}()
		defer bg.Wait()
		defer cancel()
		h.cfg.Gateway.ListenFilter(ctx, spec.op, spec.filter,
			func(got json.RawMessage) {
				var f gateway.Filter
				_ = json.Unmarshal(got, &f)
				report(followResult{established: true, resources: len(f.ResourceSubscriptions) > 0})
				close(acked)
			}, events.push)
		report(followResult{})
		if ctx.Err() == nil && spec.lost != nil {
			spec.lost()
		}
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
