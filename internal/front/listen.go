package front

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// serveListen answers a modern subscriptions/listen: an SSE stream that
// opens with the acknowledgement and carries every event tagged with the
// listen's id, until the client leaves; at shutdown it ends with the
// graceful final response.
func (h *MCP) serveListen(req *request, op gateway.Operation) {
	w, r, msg := req.w, req.r, req.msg
	filter := jsonrpc.Member(msg.Params, "notifications")
	if len(filter) == 0 || filter[0] != '{' {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.notifications must be a SubscriptionFilter object"))
		return
	}
	if !acceptsSSE(r) {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "subscriptions/listen needs Accept: text/event-stream"))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel) // gateway shutdown ends the listen
	defer stop()

	sse.SetHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	out := sse.NewWriter(w)
	var mu sync.Mutex
	write := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		_ = out.WriteEvent(sse.Event{Type: "message", Data: b})
	}
	tagged := func(params json.RawMessage) json.RawMessage {
		if len(params) == 0 || params[0] != '{' {
			params = json.RawMessage(`{}`)
		}
		meta := jsonrpc.Member(params, "_meta")
		if len(meta) == 0 || meta[0] != '{' {
			meta = []byte(`{}`)
		}
		meta, err := jsonrpc.SetMember(meta, mcp.MetaSubscriptionID, msg.ID.Raw())
		if err != nil {
			return params
		}
		if p, err := jsonrpc.SetMember(params, "_meta", meta); err == nil {
			return p
		}
		return params
	}
	go keepalive(ctx, &mu, out)
	h.cfg.Gateway.Listen(ctx, op, filter,
		func(honoured json.RawMessage) {
			params := []byte(`{"notifications":`)
			params = append(append(params, honoured...), '}')
			write(jsonrpc.EncodeNotification(mcp.NotifSubscriptionsAcknowledged, tagged(params)))
		},
		func(method string, params json.RawMessage) {
			write(jsonrpc.EncodeNotification(method, tagged(params)))
		})
	if r.Context().Err() == nil { // we end it, not the client: say so
		write(jsonrpc.EncodeResult(msg.ID, h.modernResult(tagged(json.RawMessage(`{}`)))))
	}
}

// keepalive writes an SSE comment every 15 s until ctx ends.
func keepalive(ctx context.Context, mu *sync.Mutex, out *sse.Writer) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			mu.Lock()
			err := out.WriteComment("keepalive")
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// follow runs a listen for a legacy session in the background, sending its
// events (untagged: legacy notifications carry no subscription id) on the
// session's GET stream when one is open. It ends with stop or the session.
func (h *MCP) follow(sess *live, op gateway.Operation, filter gateway.Filter) (acked <-chan struct{}, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(h.ctx)
	ack := make(chan struct{})
	raw, _ := json.Marshal(filter)
	sess.work.Add(1)
	go func() {
		defer sess.work.Done()
		defer cancel()
		go func() {
			select {
			case <-sess.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		var once sync.Once
		h.cfg.Gateway.Listen(ctx, op, raw,
			func(json.RawMessage) { once.Do(func() { close(ack) }) },
			func(method string, params json.RawMessage) {
				if st := sess.currentStream(); st != nil {
					st.send(jsonrpc.EncodeNotification(method, params))
				}
			})
		once.Do(func() { close(ack) })
	}()
	return ack, cancel
}

// subscribe serves a legacy resources/subscribe: updates for uri follow the
// session to its GET stream until resources/unsubscribe or the session ends.
func (h *MCP) subscribe(sess *live, op gateway.Operation, uri string) {
	sess.subMu.Lock()
	if _, ok := sess.subs[uri]; ok {
		sess.subMu.Unlock()
		return
	}
	sess.subMu.Unlock()
	acked, stop := h.follow(sess, op, gateway.Filter{ResourceSubscriptions: []string{uri}})
	sess.subMu.Lock()
	if sess.subs == nil {
		sess.subs = map[string]context.CancelFunc{}
	}
	sess.subs[uri] = stop
	sess.subMu.Unlock()
	<-acked
}

// unsubscribe ends a legacy resources/subscribe.
func (h *MCP) unsubscribe(sess *live, uri string) {
	sess.subMu.Lock()
	stop := sess.subs[uri]
	delete(sess.subs, uri)
	sess.subMu.Unlock()
	if stop != nil {
		stop()
	}
}
