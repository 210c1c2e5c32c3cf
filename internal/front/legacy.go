package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/handoff"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/shallow"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// sink is where the answers of one legacy request go: the request's own
// reply (streamable HTTP) or the session's stream (HTTP+SSE).
type sink interface {
	send(msg []byte) bool
	finish(status int, msg []byte)
}

// serveLegacy answers a POST of the handshake era on streamable HTTP.
func (h *MCP) serveLegacy(req *request) {
	w, r, msg := req.w, req.r, req.msg
	scope := req.urlScope
	if msg.Method == mcp.MethodInitialize && msg.Kind() == jsonrpc.KindRequest {
		h.initialize(req, scope, func(id string) { w.Header().Set(mcp.HeaderSessionID, id) }, newReply(w, r))
		return
	}
	sid := r.Header.Get(mcp.HeaderSessionID)
	if sid == "" {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Bad Request: Mcp-Session-Id header is required (initialize first, or send MCP-Protocol-Version: %s with _meta)", mcp.Latest))
		return
	}
	sess, err := h.sessions.open(r.Context(), sid, req.caller.Binding(), scope, &sessionView{caller: req.caller, scope: req.scope})
	if err != nil {
		writeRPCError(w, http.StatusNotFound, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Session not found"))
		return
	}
	if v := strings.TrimSpace(r.Header.Get(mcp.HeaderProtocolVersion)); v != "" && v != sess.claims.Version {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"MCP-Protocol-Version %q does not match the session's %q", clip(v), sess.claims.Version))
		return
	}
	if msg.Kind() != jsonrpc.KindRequest {
		h.legacyNotification(sess, msg)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h.dispatchLegacy(r.Context(), req, sess, newReply(w, r))
}

// initialize negotiates a legacy revision and opens a session: the caller's
// revision when advertised, else the newest advertised legacy one.
func (h *MCP) initialize(req *request, scope string, setID func(string), out sink) {
	msg := req.msg
	legacy := h.advertisedIn(mcp.EraLegacy)
	if len(legacy) == 0 {
		data, _ := json.Marshal(mcp.UnsupportedVersionData{Supported: h.cfg.Advertised, Requested: ""})
		out.finish(http.StatusBadRequest, jsonrpc.EncodeError(msg.ID, &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion,
			Message: "this gateway serves only " + strings.Join(h.cfg.Advertised, ", ") + "; send requests with per-request _meta instead of initialize", Data: data}))
		return
	}
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			out.finish(http.StatusOK, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid initialize params")))
			return
		}
	}
	version := legacy[0]
	if slices.Contains(legacy, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	if len(p.Capabilities) == 0 || p.Capabilities[0] != '{' {
		p.Capabilities = json.RawMessage(`{}`)
	}
	id, err := h.sessions.mint(claims{Binding: req.caller.Binding(), Scope: scope, Version: version, Caps: p.Capabilities})
	if err != nil {
		out.finish(http.StatusInternalServerError, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "cannot open a session")))
		return
	}
	intro := h.cfg.Gateway.Introduce(req.r.Context(), h.operation(req, fault.Legacy, version))
	res, _ := json.Marshal(struct {
		ProtocolVersion string             `json:"protocolVersion"`
		Capabilities    json.RawMessage    `json:"capabilities"`
		ServerInfo      mcp.Implementation `json:"serverInfo"`
		Instructions    string             `json:"instructions,omitempty"`
	}{version, intro.LegacyCapabilities, h.cfg.Info, intro.Instructions})
	setID(id)
	out.finish(http.StatusOK, jsonrpc.EncodeResult(msg.ID, res))
}

// legacyNotification handles a notification or a response from a legacy
// caller. DELETE waits for these to finish.
func (h *MCP) legacyNotification(sess *live, msg *jsonrpc.Message) {
	sess.notifs.Add(1)
	defer sess.notifs.Done()
	if msg.IsResponse() {
		if !sess.deliver(msg) && !h.relayResponse(sess, msg) {
			h.cfg.Logger.Debug("response from the caller matches no pending request")
		}
		return
	}
	if msg.Method == mcp.NotifCancelled {
		if id := jsonrpc.Member(msg.Params, "requestId"); id != nil {
			sess.inflight.cancel(id)
		}
	}
}

// dispatchLegacy answers one request of a legacy session: the session's
// own methods here, the others through the gateway.
func (h *MCP) dispatchLegacy(ctx context.Context, req *request, sess *live, out sink) {
	if h.answerSessionMethod(ctx, req, sess, out) {
		return
	}
	h.forwardLegacy(ctx, req, sess, out)
}

// answerSessionMethod answers the methods that act on the session itself
// (ping, logging/setLevel, a second initialize, resources/subscribe and
// unsubscribe) and reports whether req was one.
func (h *MCP) answerSessionMethod(ctx context.Context, req *request, sess *live, out sink) bool {
	msg := req.msg
	switch msg.Method {
	case mcp.MethodPing:
		out.finish(http.StatusOK, jsonrpc.EncodeResult(msg.ID, json.RawMessage(`{}`)))
		return true
	case mcp.MethodLoggingSetLevel:
		level, _ := stringMember(msg.Params, "level")
		if !mcp.ValidLogLevel(level) {
			out.finish(http.StatusOK, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid log level %q", clip(level))))
			return true
		}
		sess.logLevel.Store(&level)
		sess.ownState.Store(true) // the level goes to the caller's own upstream sessions
		res := h.cfg.Gateway.Do(ctx, h.legacyOperation(req, sess, out))
		if res.Result == nil {
			res.Result = json.RawMessage(`{}`)
		}
		out.finish(http.StatusOK, jsonrpc.EncodeResult(msg.ID, res.Result))
		return true
	case mcp.MethodInitialize:
		out.finish(http.StatusOK, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "session already initialized")))
		return true
	case mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe:
		uri, ok := stringMember(msg.Params, "uri")
		if !ok || uri == "" {
			out.finish(http.StatusOK, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.uri is required")))
			return true
		}
		if msg.Method == mcp.MethodResourcesSubscribe {
			watch := h.watchAuth(req.r.Clone(context.WithoutCancel(req.r.Context())), req.caller) // outlives this request
			if ok, why := h.subscribe(sess, h.legacyOperation(req, sess, nopSink{}), watch, uri); !ok {
				out.finish(http.StatusOK, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "cannot subscribe to %s: %s", clip(uri), why)))
				return true
			}
		} else {
			h.unsubscribe(sess, uri)
		}
		out.finish(http.StatusOK, jsonrpc.EncodeResult(msg.ID, json.RawMessage(`{}`)))
		return true
	}
	return false
}

// forwardLegacy answers a legacy session's request through the gateway:
// cancellable by the caller (notifications/cancelled), with its progress
// on out, and answered on the surface out is.
func (h *MCP) forwardLegacy(ctx context.Context, req *request, sess *live, out sink) {
	msg := req.msg
	if !mcp.MethodInEra(msg.Method, mcp.EraLegacy) {
		out.finish(http.StatusOK, jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s", msg.Method)))
		return
	}
	ctx, usage := limits.WithUsage(ctx) // before WithCancel: written into the request's own scope
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess.inflight.add(msg.ID, cancel)
	defer sess.inflight.remove(msg.ID)
	op := h.legacyOperation(req, sess, out)
	if tok := progressTokenOf(msg.Params); tok != nil {
		op.Progress = func(params json.RawMessage) {
			out.send(jsonrpc.EncodeNotification(mcp.NotifProgress, params))
		}
	}
	res := h.cfg.Gateway.Do(ctx, op)
	noteOutcome(req.obs, res)
	if ctx.Err() != nil {
		// Cancelled by the caller (notifications/cancelled) or gone: a
		// cancelled request gets no response.
		abandon(out)
		return
	}
	surface := fault.LegacySSE // the answer rides the session's stream
	rw, onPOST := out.(*reply)
	if onPOST {
		surface = fault.Legacy
	}
	a := answerOf(surface, msg.Method, res)
	if a.err != nil {
		if onPOST {
			setFaultHeaders(rw.w, a)
		}
		out.finish(a.status, jsonrpc.EncodeError(msg.ID, a.err))
		return
	}
	if onPOST {
		setUsageHeaders(rw.w, usage)
	}
	out.finish(http.StatusOK, jsonrpc.EncodeResult(msg.ID, a.result))
}

// abandon ends a request's answer without a response: a POST answered as
// JSON gets 202 and no body, an SSE answer ends with no message, and
// nothing is written to a session's stream.
func abandon(out sink) {
	rp, ok := out.(*reply)
	if !ok {
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.done {
		return
	}
	rp.done = true
	if rp.stream == nil {
		rp.w.WriteHeader(http.StatusAccepted)
	}
}

// legacyOperation builds the core's view of a legacy session's request: the
// caller's declared capabilities, and the session's stream to ask on and to
// relay logs to.
func (h *MCP) legacyOperation(req *request, sess *live, out sink) gateway.Operation {
	op := h.operation(req, fault.Legacy, sess.claims.Version)
	op.ClientCaps = sess.claims.Caps
	op.Interactions = legacyInteractions(sess, out)
	op.Log = func(params json.RawMessage) { out.send(jsonrpc.EncodeNotification(mcp.NotifMessage, params)) }
	return op
}

// upstreamOwner names the session as the owner of its upstream sessions
// (gateway.Interactions.Owner) once per-session state is involved: it
// declared roots, elicitation or sampling at initialize (the upstream asks
// it and may cache the answer), or it set a log level. Until then, "": its
// calls share the upstream session of their credentials, so a stdio
// upstream needs no process per caller.
func (l *live) upstreamOwner() string {
	if l.ownState.Load() {
		return l.id
	}
	return ""
}

// asksCaller reports whether a caller with these capabilities can be asked
// for input (roots, elicitation, sampling): the upstream may cache what it
// answers, so its calls get upstream sessions of their own.
func asksCaller(caps json.RawMessage) bool {
	for _, c := range [...]string{"roots", "elicitation", "sampling"} {
		if gateway.CapabilityDeclared(caps, c) {
			return true
		}
	}
	return false
}

// legacyInteractions lets the core ask a legacy caller for input on its
// session: only what the caller declared at initialize.
func legacyInteractions(sess *live, out sink) *gateway.Interactions {
	in := &gateway.Interactions{Owner: sess.upstreamOwner()}
	ask := func(method string) gateway.Asker {
		return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return sess.ask(ctx, out, method, params)
		}
	}
	if gateway.CapabilityDeclared(sess.claims.Caps, "elicitation") {
		elicit := ask(mcp.MethodElicitationCreate)
		in.Elicit = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			params, err := gateway.PrepareElicitation(sess.claims.Caps, params, true)
			if err != nil {
				return nil, err
			}
			return elicit(ctx, params)
		}
	}
	if gateway.CapabilityDeclared(sess.claims.Caps, "roots") {
		in.Roots = ask(mcp.MethodRootsList)
	}
	if gateway.CapabilityDeclared(sess.claims.Caps, "sampling") {
		in.Sample = ask(mcp.MethodSamplingCreateMessage)
	}
	return in
}

func progressTokenOf(params json.RawMessage) json.RawMessage {
	meta := metaOf(params)
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	return jsonrpc.Member(meta, mcp.MetaProgressToken)
}

// serveLegacySession answers GET (the standalone stream) and DELETE (end
// of session) on a legacy session, for the caller serve established.
func (h *MCP) serveLegacySession(w http.ResponseWriter, r *http.Request, caller *identity.Caller, nar narrowing) {
	sid := r.Header.Get(mcp.HeaderSessionID)
	sess, err := h.sessions.open(r.Context(), sid, caller.Binding(), nar.url, &sessionView{caller: caller, scope: nar.scope})
	if err != nil {
		status := http.StatusNotFound
		if errors.Is(err, errSessionForeign) {
			status = http.StatusNotFound // a foreign id is as unknown as a forged one
		}
		http.Error(w, "session not found", status)
		return
	}
	if r.Method == http.MethodDelete {
		sess.notifs.Wait() // accepted notifications finish dispatching first
		h.sessions.remove(r.Context(), sid)
		w.WriteHeader(http.StatusOK)
		return
	}
	if !acceptsSSE(r) {
		http.Error(w, "GET needs Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	h.serveLegacyStream(w, r, caller, nar, sess)
}

// serveLegacyStream serves a legacy session's GET stream. While it is open,
// list changes of the caller's upstreams follow it (the gateway advertised
// listChanged at initialize); it opens once every upstream listener that
// takes is established (503 with Retry-After when they cannot be), and
// ends when its follow does (a deaf stream ends: the client opens another).
//
// The follow runs for this goroutine (gateway.Listener; its work between
// waits on goroutines the core starts and waits for, internal/shallow):
// the core's delivery calls emit for each event, which re-checks the caller and writes it
// straight to the stream, and between events tend, which writes what
// others queued for the stream (the session's subscriptions), the
// keepalives and the periodic re-checks (one timer for both).
func (h *MCP) serveLegacyStream(w http.ResponseWriter, r *http.Request, caller *identity.Caller, nar narrowing, sess *live) {
	st := &streamSink{ready: make(chan struct{}, 1)}
	if !sess.attach(st) {
		http.Error(w, "a stream is already open for this session", http.StatusConflict)
		return
	}
	ls := &legacyStream{ctx: r.Context(), st: st, watch: h.watchAuth(r, caller), duties: newWakingDuties(h.cfg.Sessions.RecheckInterval, st.ready)}
	end := func() {
		ls.duties.stop()
		sess.detach(st)
	}
	held := false
	defer func() {
		if !held { // ended here (a panic in set-up too), not by the stream
			end()
		}
	}()
	var open *gateway.OpenedListen
	if !sess.ended() {
		_, keyInAuth := identity.Credential(r)
		op := h.operation(&request{w: w, r: r, caller: caller, keyInAuth: keyInAuth, msg: &jsonrpc.Message{}, scope: nar.scope, urlScope: nar.url}, fault.Legacy, sess.claims.Version)
		op.ClientCaps = sess.claims.Caps
		// The stream ends by its follow's own context: when the client
		// leaves (the request's), when a write or the caller's authority
		// ends it (false from Ack, Emit or Tend), and with the session
		// (Done; the legacy state's end ends every session). No context of
		// the front's is held for it.
		open, _ = h.cfg.Gateway.OpenListen(r.Context(), op, sessionFilter(sess), gateway.Listener{
			Ack: func(json.RawMessage) bool {
				admit.KeepOpen(w, r)
				if h.cfg.Detach != nil {
					h.cfg.Detach(r) // a stream, not a request in flight: it may outlive this front
				}
				st.open(w)
				ls.duties.open()
				return st.w.WriteComment("stream open") == nil
			},
			Emit: ls.emit,
			Wake: st.ready, // the stream's queue and its duties wake the follow on it
			Tend: ls.tend,
			Done: sess.done,
		})
	}
	if open == nil {
		if st.w == nil && r.Context().Err() == nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "cannot follow this caller's upstreams now; retry later", http.StatusServiceUnavailable)
		}
		return
	}
	// Open: the rest is handed to the server (internal/handoff), which
	// holds it on a goroutine started for it once this handler chain has
	// unwound.
	held = true
	handoff.Run(w, func() {
		defer end()
		open.Hold()
	})
}

// legacyStream is a legacy session's GET stream while its follow runs
// (serveLegacyStream), written only by the stream's goroutine.
type legacyStream struct {
	ctx    context.Context // the request's
	st     *streamSink
	watch  *authWatch
	duties *duties
}

// emit writes one event of the follow after re-checking the caller for
// it; false (the stream ends) when the caller is refused or the write
// failed.
func (s *legacyStream) emit(method string, params json.RawMessage, arrived time.Time) bool {
	return s.watch.ok(s.ctx, arrived) && s.st.w.WriteEvent(sse.Event{Type: "message", Data: jsonrpc.EncodeNotification(method, params)}) == nil
}

// tend writes what others queued for the stream, then the duties due: a
// re-check and a keepalive; false ends the stream.
func (s *legacyStream) tend() bool {
	for _, msg := range s.st.take() {
		if s.st.w.WriteEvent(sse.Event{Type: "message", Data: msg}) != nil {
			return false
		}
	}
	recheck, keepalive := s.duties.due()
	if recheck && !s.watch.ok(s.ctx, time.Now()) {
		return false
	}
	return !keepalive || s.st.w.WriteComment("keepalive") == nil
}

// sessionFilter is what a legacy session's stream follows: list changes
// (the gateway advertised listChanged at initialize), the log lines its
// upstream sessions send outside any request, at the session's level, and,
// for a caller that declared URL-mode elicitation,
// notifications/elicitation/complete.
func sessionFilter(sess *live) gateway.Filter {
	_, url := gateway.ElicitModes(sess.claims.Caps)
	return gateway.Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, Log: sess.minLogLevel,
		ElicitationComplete: url, Owner: sess.upstreamOwner, Persist: true}
}

// nopSink is where a background listen's per-request messages would go: it
// has no request of its own to answer.
type nopSink struct{}

func (nopSink) send([]byte) bool   { return false }
func (nopSink) finish(int, []byte) {}

// streamSink is a long-lived SSE stream: a session's standalone GET stream
// or its HTTP+SSE transport stream. Messages are written by one goroutine;
// others queue them.
type streamSink struct {
	w *sse.Writer
	// queue holds at most streamQueue messages waiting to be written; its
	// storage grows with what is queued and is let go once written, so an
	// idle held stream holds none.
	mu    sync.Mutex
	queue [][]byte
	ready chan struct{} // holds a value while messages may be queued
}

// streamQueue bounds the messages waiting on one stream.
const streamQueue = 64

func newStreamSink(w http.ResponseWriter) *streamSink {
	s := &streamSink{ready: make(chan struct{}, 1)}
	s.open(w)
	return s
}

// open starts the SSE response.
func (s *streamSink) open(w http.ResponseWriter) {
	sse.SetHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	s.w = sse.NewWriter(w)
	s.w.Lean() // a held stream keeps no buffer between its rare writes
}

// send queues a message; false when the queue is full (a stuck client).
func (s *streamSink) send(msg []byte) bool {
	s.mu.Lock()
	full := len(s.queue) >= streamQueue
	if !full {
		s.queue = append(s.queue, msg)
	}
	s.mu.Unlock()
	if full {
		return false
	}
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return true
}

// take returns the queued messages, oldest first, and empties the queue.
func (s *streamSink) take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

func (s *streamSink) finish(_ int, msg []byte) { s.send(msg) }

// run writes queued messages, and a keepalive comment when idle, until the
// client leaves or done closes; the same goroutine re-checks the caller
// every recheckEvery (one timer for both) and, when refused, cancels and
// returns. It only waits: its writes and re-checks run on a goroutine of
// their own (internal/shallow), so a held stream's stack stays at 2 KB.
func (s *streamSink) run(ctx context.Context, done <-chan struct{}, watch *authWatch, recheckEvery time.Duration, cancel context.CancelFunc) {
	du := newWakingDuties(recheckEvery, s.ready) // one channel for the queue and the duties
	defer du.stop()
	shallow.Do(func() {
		_ = s.w.WriteComment("stream open")
		du.open()
	})
	for ok := true; ok; {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-s.ready:
		}
		shallow.Do(func() { ok = s.tend(ctx, du, watch, cancel) })
	}
}

// tend writes what is queued, then does the duties due (run); false when
// the stream ends.
func (s *streamSink) tend(ctx context.Context, du *duties, watch *authWatch, cancel context.CancelFunc) bool {
	for _, msg := range s.take() {
		if s.w.WriteEvent(sse.Event{Type: "message", Data: msg}) != nil {
			return false
		}
	}
	recheck, keepalive := du.due()
	if recheck && !watch.ok(ctx, time.Now()) {
		cancel()
		return false
	}
	return !keepalive || s.w.WriteComment("keepalive") == nil
}

func (l *live) attach(s *streamSink) bool {
	l.inflight.mu.Lock()
	defer l.inflight.mu.Unlock()
	if l.stream != nil {
		return false
	}
	l.stream = s
	return true
}

// detach closes the stream s; the session's idle time starts again.
func (l *live) detach(s *streamSink) {
	l.inflight.mu.Lock()
	defer l.inflight.mu.Unlock()
	if l.stream == s {
		l.stream = nil
		l.used.Store(time.Now().UnixNano())
	}
}
