package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/admit"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/handoff"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// sseConn is one legacy HTTP+SSE connection: its stream lives on this
// replica, so its session state does too.
type sseConn struct {
	binding string
	stream  *streamSink
	ctx     context.Context // ends with the stream
	cancel  context.CancelFunc
	work    sync.WaitGroup // requests being answered onto the stream

	mu      sync.Mutex
	sess    *live // set by initialize
	closed  bool  // the stream ended: no more requests or sessions
	pending int   // requests being answered onto the stream
}

// setSession makes sess the connection's session and ends the one it
// replaces; a session set after the stream ended is ended at once.
func (c *sseConn) setSession(sess *live) {
	c.mu.Lock()
	old := c.sess
	if c.closed {
		old = sess
	} else {
		c.sess = sess
	}
	c.mu.Unlock()
	if old != nil {
		old.end()
		old.work.Wait()
	}
}

// Outcomes of sseConn.startWork.
const (
	workStarted = iota
	workClosed  // the stream has ended
	workFull    // max requests are already being answered
)

// startWork counts one request to be answered onto the stream, at most max
// at once; endWork ends it.
func (c *sseConn) startWork(max int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return workClosed
	}
	if c.pending >= max {
		return workFull
	}
	c.pending++
	c.work.Add(1)
	return workStarted
}

// endWork ends a request startWork counted.
func (c *sseConn) endWork() {
	c.mu.Lock()
	c.pending--
	c.mu.Unlock()
	c.work.Done()
}

// shut refuses further requests, waits for those being answered, then ends
// the connection's session.
func (c *sseConn) shut() {
	c.mu.Lock()
	c.closed = true
	sess := c.sess
	c.mu.Unlock()
	c.work.Wait()
	if sess != nil { // the session lives as long as its stream
		sess.end()
		sess.work.Wait()
	}
}

// sseConns holds this replica's HTTP+SSE connections, at most max in all
// and perCaller per caller binding.
type sseConns struct {
	mu        sync.Mutex
	conns     map[string]*sseConn
	perCaller map[string]int
}

// add registers conn under id; false when the caller or the replica is at
// its cap.
func (c *sseConns) add(id string, conn *sseConn, max, perCaller int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns, c.perCaller = map[string]*sseConn{}, map[string]int{}
	}
	if len(c.conns) >= max || c.perCaller[conn.binding] >= perCaller {
		return false
	}
	c.conns[id] = conn
	c.perCaller[conn.binding]++
	return true
}

func (c *sseConns) get(id string) *sseConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[id]
}

func (c *sseConns) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, ok := c.conns[id]
	if !ok {
		return
	}
	delete(c.conns, id)
	if c.perCaller[conn.binding]--; c.perCaller[conn.binding] <= 0 {
		delete(c.perCaller, conn.binding)
	}
}

// serveSSEStream opens a legacy HTTP+SSE connection: the first event names
// the URL to POST messages to.
func (h *MCP) serveSSEStream(w http.ResponseWriter, r *http.Request) {
	if mcp.IsModern(strings.TrimSpace(r.Header.Get(mcp.HeaderProtocolVersion))) {
		http.Error(w, "the HTTP+SSE transport serves legacy revisions only; POST to /mcp for "+mcp.Latest, http.StatusBadRequest)
		return
	}
	if len(h.advertisedIn(mcp.EraLegacy)) == 0 {
		http.Error(w, "this gateway serves no legacy revision", http.StatusBadRequest)
		return
	}
	caller, ok := h.authenticate(w, r, false)
	if !ok {
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	id := hex.EncodeToString(raw)
	ctx, cancel := context.WithCancel(r.Context())
	conn := &sseConn{binding: caller.Binding(), ctx: ctx, cancel: cancel}
	if !h.sseConns.add(id, conn, h.cfg.Sessions.MaxSSEConns, h.cfg.Sessions.MaxSSEConnsPerCaller) { // before the client learns the id
		cancel()
		http.Error(w, "too many open HTTP+SSE connections; retry later", http.StatusServiceUnavailable)
		return
	}
	end := func() {
		h.sseConns.remove(id)
		cancel()
		conn.shut()
	}
	handedOff := false
	defer func() {
		if !handedOff { // ended here (a panic too), not by the stream
			end()
		}
	}()
	admit.KeepOpen(w, r)
	if h.cfg.Detach != nil {
		h.cfg.Detach(r) // a stream, not a request in flight: it may outlive this front
	}
	conn.stream = newStreamSink(w)
	if conn.stream.w.WriteEvent(sse.Event{Type: "endpoint", Data: []byte("/mcp/sse/messages?session_id=" + id)}) != nil {
		return
	}
	// Open: the rest is handed to the server (internal/handoff), which
	// holds it on a goroutine started for it once this handler chain has
	// unwound. The stream's goroutine re-checks the caller (the work through
	// shallow.Do): no second goroutine waits per held connection.
	watch := h.watchAuth(r, caller)
	handedOff = true // from here the stream ends it, held here or by the server
	handoff.Run(w, func() {
		defer end()
		conn.stream.run(ctx, h.ctx.Done(), watch, h.cfg.Sessions.RecheckInterval, cancel)
	})
}

// serveSSEMessage takes one POSTed message of an HTTP+SSE connection; its
// answer goes on the connection's stream.
func (h *MCP) serveSSEMessage(w http.ResponseWriter, r *http.Request) {
	conn := h.sseConns.get(r.URL.Query().Get("session_id"))
	if conn == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	req, ok := h.admit(w, r)
	if !ok {
		return
	}
	msg := req.msg
	if req.caller.Binding() != conn.binding {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	conn.mu.Lock()
	sess := conn.sess
	conn.mu.Unlock()
	switch {
	case msg.Method == mcp.MethodInitialize && msg.Kind() == jsonrpc.KindRequest:
		span := h.observeRequest(req, observe.TransportSSE)
		h.initializeSSE(req, conn)
		span.End()
	case sess == nil:
		conn.stream.send(jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "initialize first")))
	case msg.Kind() != jsonrpc.KindRequest:
		h.legacyNotification(sess, msg)
	default:
		switch conn.startWork(h.cfg.Sessions.MaxSSEPending) {
		case workClosed:
			http.Error(w, "session not found", http.StatusNotFound)
			return
		case workFull:
			w.Header().Set("Retry-After", "1")
			writeRPCError(w, http.StatusServiceUnavailable, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError,
				"too many requests in progress on this connection (at most %d); retry when some are answered", h.cfg.Sessions.MaxSSEPending))
			return
		}
		req.r = r.Clone(conn.ctx)    // the answer outlives this POST
		release := admit.HoldSlot(r) // and keeps its place in the in-flight bound
		span := h.observeRequest(req, observe.TransportSSE)
		held := func() {}
		if h.cfg.Hold != nil {
			held = h.cfg.Hold(r) // and in this front's requests in flight
		}
		go func() {
			defer release()
			defer held()
			defer conn.endWork()
			defer span.End()
			defer recoverPanic(h.cfg.Logger, "/mcp/sse request", func() {
				conn.stream.send(jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error")))
			})
			h.dispatchLegacy(req.r.Context(), req, sess, conn.stream)
		}()
	}
	w.WriteHeader(http.StatusAccepted)
}

// initializeSSE runs the handshake of an HTTP+SSE connection; the session's
// state stays with the connection.
func (h *MCP) initializeSSE(req *request, conn *sseConn) {
	caps := jsonrpc.Member(req.msg.Params, "capabilities")
	if len(caps) == 0 || caps[0] != '{' {
		caps = json.RawMessage(`{}`)
	}
	h.initialize(req, "", func(string) {}, &captureSink{out: conn.stream, done: func(msg []byte) {
		m, err := jsonrpc.Decode(msg)
		if err != nil || m.Result == nil {
			return
		}
		version, _ := stringMember(m.Result, "protocolVersion")
		sess := &live{id: "sse-" + rand.Text(), claims: claims{Binding: conn.binding, Version: version, Caps: caps}, done: make(chan struct{}), stream: conn.stream}
		sess.view.Store(&sessionView{caller: req.caller, scope: req.scope})
		sess.ownState.Store(asksCaller(caps))
		conn.setSession(sess)
		// The connection's stream follows the caller's upstreams as a
		// session's GET stream does, until the session ends or the caller
		// loses its authority (which ends the connection); initialize is
		// answered once the upstream listeners are established.
		op := h.operation(req, fault.LegacySSE, version)
		op.ClientCaps = caps
		ready, _ := h.follow(sess, followSpec{op: op, filter: sessionFilter(sess), watch: h.watchAuth(req.r.Clone(conn.ctx), req.caller), revoked: conn.cancel})
		if res := <-ready; !res.established {
			h.cfg.Logger.Warn("an HTTP+SSE session does not follow its upstreams' changes: their listeners could not be set up")
		}
	}})
}

// captureSink passes messages on and lets the caller see the final one.
type captureSink struct {
	out  sink
	done func(msg []byte)
}

func (c *captureSink) send(msg []byte) bool { return c.out.send(msg) }

func (c *captureSink) finish(status int, msg []byte) {
	c.done(msg)
	c.out.finish(status, msg)
}
