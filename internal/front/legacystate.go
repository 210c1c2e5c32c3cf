package front

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/seal"
)

// Legacy is the live state of legacy sessions on this replica: the
// sessions opened by initialize on streamable HTTP (with their GET streams,
// follows and resource subscriptions) and the /mcp/sse connections. Every
// front of one process shares one (MCPConfig.Legacy), so that a new config
// (a new front over a new gateway, see HandOver) keeps the sessions whose
// servers did not change: their streams stay open and their next requests
// are served by the new front.
type Legacy struct {
	cfg      SessionConfig
	log      *slog.Logger
	sessions *sessions
	sseConns sseConns
	// ctx ends at close: streams and follows end with it.
	ctx    context.Context
	cancel context.CancelFunc
	// cur is the newest front over this state: long-lived streams
	// re-authenticate their callers through it.
	cur atomic.Pointer[MCP]
	// ending counts the /mcp/sse connections a hand-over is ending once
	// their requests are answered; none is added once closed.
	mu     sync.Mutex
	closed bool
	ending sync.WaitGroup
	// unrelay stops receiving the answers other replicas forward (see Relay).
	unrelay func()
}

// NewLegacy returns the legacy session state for the fronts of one process,
// bounded by cfg (a zero field takes its default); sealer seals the session
// ids and must know SessionPurpose.
func NewLegacy(sealer *seal.Sealer, cfg SessionConfig, log *slog.Logger) *Legacy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	lg := &Legacy{cfg: cfg, log: log, sessions: newSessions(sealer, cfg, log), ctx: ctx, cancel: cancel, unrelay: func() {}}
	if cfg.Relay != nil {
		lg.unrelay = cfg.Relay.Receive(lg.sessions.receiveRelayed)
	}
	return lg
}

// close ends every legacy session's streams and follows (see
// sessions.closeAll for the ids it buries) and waits for them.
func (lg *Legacy) close() {
	lg.mu.Lock()
	lg.closed = true
	lg.mu.Unlock()
	lg.cancel()
	lg.unrelay()
	lg.sessions.closeAll()
	lg.ending.Wait()
}

// sessionView is whom a legacy session serves and over what: the caller and
// the scope of its latest request, against which a new config is checked
// (gateway.Gateway.Keeps).
type sessionView struct {
	caller *identity.Caller
	scope  []string
}

// HandOver makes next, a front built for a newer config over the same
// Legacy, the one that serves legacy sessions from now on, and ends those
// it cannot keep. A session goes on when every server its caller sees is
// served by next's gateway with the same upstream client and the caller
// sees the same servers there (gateway.Gateway.Keeps, the rule a listen
// moves by): its GET stream or /mcp/sse stream stays open, its follows go on
// (moved by the gateway's TakeOver) and its next requests run on next. Any
// other session ends: a streamable HTTP session is buried, so its stream
// closes and its next request gets 404 (its client initializes again); an
// /mcp/sse connection refuses new requests, answers those it is running,
// then closes its stream. h's subscriptions/listen are not touched (the
// gateway moves or ends them). Without a shared Legacy, HandOver ends all
// of h's legacy sessions.
func (h *MCP) HandOver(next *MCP) {
	lg := h.legacy
	if next == nil || next.legacy != lg {
		lg.close()
		return
	}
	lg.cur.Store(next)
	keeps := func(l *live) bool {
		v := l.view.Load()
		return v != nil && h.cfg.Gateway.Keeps(next.cfg.Gateway, gateway.Operation{Caller: v.caller, Scope: v.scope})
	}
	lg.sessions.endUnless(keeps)
	for _, conn := range lg.sseConns.unkept(keeps) {
		lg.endSSE(conn)
	}
}

// endSSE ends an /mcp/sse connection a new config does not keep: it refuses
// new requests at once, and closes its stream (ending its session) once the
// requests it is answering are written.
func (lg *Legacy) endSSE(conn *sseConn) {
	conn.mu.Lock()
	conn.closed = true
	conn.mu.Unlock()
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if lg.closed { // shutting down: every stream ends now anyway
		conn.cancel()
		return
	}
	lg.ending.Add(1)
	go func() {
		defer lg.ending.Done()
		defer recoverPanic(lg.log, "ending an /mcp/sse connection", conn.cancel)
		conn.work.Wait()
		conn.cancel()
	}()
}

// latest is the newest front over h's legacy state (h itself before any
// hand-over).
func (h *MCP) latest() *MCP {
	if c := h.legacy.cur.Load(); c != nil {
		return c
	}
	return h
}

// endUnless ends, and buries for every replica, every live session keep
// refuses.
func (ss *sessions) endUnless(keep func(*live) bool) {
	ss.mu.Lock()
	var ended []burial
	for e := ss.lru.Front(); e != nil; {
		l := e.Value.(*live)
		e = e.Next()
		if !keep(l) {
			ended = append(ended, ss.retireLocked(l, true)) // for every replica: its server moved
		}
	}
	ss.mu.Unlock()
	ss.buryAll(context.Background(), ended)
}

// unkept returns the connections whose session keep refuses; a connection
// not initialized yet holds nothing to refuse.
func (c *sseConns) unkept(keep func(*live) bool) []*sseConn {
	c.mu.Lock()
	conns := make([]*sseConn, 0, len(c.conns))
	for _, conn := range c.conns {
		conns = append(conns, conn)
	}
	c.mu.Unlock()
	var out []*sseConn
	for _, conn := range conns {
		conn.mu.Lock()
		sess := conn.sess
		conn.mu.Unlock()
		if sess != nil && !keep(sess) {
			out = append(out, conn)
		}
	}
	return out
}
