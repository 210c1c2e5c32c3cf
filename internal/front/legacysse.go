package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// sseConn is one legacy HTTP+SSE connection: its stream lives on this
// replica, so its session state does too.
type sseConn struct {
	binding string
	stream  *streamSink
	ctx     context.Context // ends with the stream
	work    sync.WaitGroup  // requests being answered onto the stream

	mu   sync.Mutex
	sess *live // set by initialize
}

// sseConns holds this replica's HTTP+SSE connections.
type sseConns struct {
	mu    sync.Mutex
	conns map[string]*sseConn
}

func (c *sseConns) add(id string, conn *sseConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[string]*sseConn{}
	}
	c.conns[id] = conn
}

func (c *sseConns) get(id string) *sseConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[id]
}

func (c *sseConns) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.conns, id)
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
	caller, ok := h.authenticate(w, r, nil)
	if !ok {
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	id := hex.EncodeToString(raw)
	ctx, cancel := context.WithCancel(r.Context())
	conn := &sseConn{binding: caller.Binding(), ctx: ctx}
	keepOpen(w, r)
	conn.stream = newStreamSink(w)
	h.sseConns.add(id, conn) // before the client learns the id
	defer func() {
		h.sseConns.remove(id)
		cancel()
		conn.work.Wait()
		conn.mu.Lock()
		sess := conn.sess
		conn.mu.Unlock()
		if sess != nil { // the session lives as long as its stream
			close(sess.done)
			sess.work.Wait()
		}
	}()
	if conn.stream.w.WriteEvent(sse.Event{Type: "endpoint", Data: []byte("/mcp/sse/messages?session_id=" + id)}) != nil {
		return
	}
	conn.stream.run(ctx, nil)
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
		h.initializeSSE(req, conn)
	case sess == nil:
		conn.stream.send(jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "initialize first")))
	case msg.Kind() != jsonrpc.KindRequest:
		h.legacyNotification(sess, msg)
	default:
		req.r = r.Clone(conn.ctx) // the answer outlives this POST
		conn.work.Add(1)
		go func() {
			defer conn.work.Done()
			h.dispatchLegacy(conn.ctx, req, sess, conn.stream)
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
		conn.mu.Lock()
		conn.sess = &live{claims: claims{Binding: conn.binding, Version: version, Caps: caps}, done: make(chan struct{}), stream: conn.stream}
		conn.mu.Unlock()
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
