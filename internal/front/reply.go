package front

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// reply writes the answer to one JSON-RPC request: a plain JSON body, or,
// once a message must go out before the response (progress, a server→client
// request), an SSE stream scoped to that request.
type reply struct {
	w     http.ResponseWriter
	sseOK bool // the client accepts text/event-stream

	mu     sync.Mutex
	stream *sse.Writer
	done   bool
}

func newReply(w http.ResponseWriter, r *http.Request) *reply {
	return &reply{w: w, sseOK: acceptsSSE(r)}
}

func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") || strings.Contains(v, "*/*") {
			return true
		}
	}
	return false
}

// send writes a message that precedes the response. It reports false when
// the client cannot take it (no SSE) or the response was already written.
func (rp *reply) send(msg []byte) bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.done || !rp.sseOK {
		return false
	}
	if rp.stream == nil {
		// The answer is now a stream that may run as long as the call: the
		// write deadline of plain answers no longer applies.
		_ = http.NewResponseController(rp.w).SetWriteDeadline(time.Time{})
		sse.SetHeaders(rp.w.Header())
		rp.w.WriteHeader(http.StatusOK)
		rp.stream = sse.NewWriter(rp.w)
	}
	return rp.stream.WriteEvent(sse.Event{Type: "message", Data: msg}) == nil
}

// finish writes the response: on the stream when one is open, else as JSON
// with status.
func (rp *reply) finish(status int, msg []byte) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.done {
		return
	}
	rp.done = true
	if rp.stream != nil {
		_ = rp.stream.WriteEvent(sse.Event{Type: "message", Data: msg})
		return
	}
	writeRaw(rp.w, status, msg)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeRPCError answers with a JSON-RPC error and an HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	noteRPCError(w, e)
	writeRaw(w, status, jsonrpc.EncodeError(id, e))
}
