package front

import (
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// maxTargetBytes bounds the target name a record carries: it comes from the
// caller.
const maxTargetBytes = observe.MaxTarget

// observeRequest starts the observation of req, a decoded request arriving
// on transport: req.r then carries the record (observe.RequestFrom) and,
// unless the answer goes elsewhere (legacy SSE), req.w notes the answer's
// status. The span is ended by the caller once the request is answered; the
// zero span when nothing observes, or req is not a request.
func (h *MCP) observeRequest(req *request, transport string) observe.RequestSpan {
	if !h.cfg.Observer.Enabled() || req.msg.Kind() != jsonrpc.KindRequest {
		return observe.RequestSpan{}
	}
	msg := req.msg
	rec := &observe.Request{Method: msg.Method, Transport: transport, RequestID: msg.ID.String(),
		Caller: observedCaller(req.caller), Session: req.r.Header.Get(mcp.HeaderSessionID)}
	if key := mcp.NameParam(msg.Method); key != "" {
		rec.Target, _ = stringMember(msg.Params, key)
	} else if msg.Method == mcp.MethodResourcesSubscribe || msg.Method == mcp.MethodResourcesUnsubscribe {
		rec.Target, _ = stringMember(msg.Params, "uri")
	}
	rec.Target = observe.Clip(rec.Target, maxTargetBytes)
	rec.Protocol = observe.Clip(strings.TrimSpace(req.r.Header.Get(mcp.HeaderProtocolVersion)), maxTargetBytes)
	rec.Header = req.r.Header
	if h.cfg.Observer.ReadsMeta() {
		rec.Meta = jsonrpc.Member(msg.Params, "_meta")
	}
	ctx, span := h.cfg.Observer.Request(req.r.Context(), rec)
	req.r = reqscope.Request(ctx, req.r)
	req.obs = rec
	if transport == observe.TransportSSE {
		rec.Status = http.StatusAccepted // the answer rides the connection's stream
	} else {
		req.w = &observedWriter{ResponseWriter: req.w, rec: rec}
	}
	return span
}

// observeREST starts the observation of a REST request standing for method;
// w and r are those to answer it with (see observeRequest).
func (h *MCP) observeREST(w http.ResponseWriter, r *http.Request, caller *identity.Caller, method string) (http.ResponseWriter, *http.Request, observe.RequestSpan) {
	if !h.cfg.Observer.Enabled() {
		return w, r, observe.RequestSpan{}
	}
	rec := &observe.Request{Method: method, Transport: observe.TransportREST, Caller: observedCaller(caller), Header: r.Header}
	ctx, span := h.cfg.Observer.Request(r.Context(), rec)
	return &observedWriter{ResponseWriter: w, rec: rec}, reqscope.Request(ctx, r), span
}

// observedCaller is the record's view of a caller.
func observedCaller(c *identity.Caller) observe.Caller {
	if c == nil {
		return observe.Caller{}
	}
	return observe.Caller{KeyHash: c.KeyHash, KeyAlias: c.KeyAlias, Team: c.TeamID, TeamAlias: c.TeamAlias,
		User: c.UserID, EndUser: c.EndUserID, Org: c.OrgID}
}

// noteOutcome records what the core answered: its fault class, or a tool
// result with isError set.
func noteOutcome(rec *observe.Request, out gateway.Outcome) {
	if rec == nil {
		return
	}
	if out.Fault != nil {
		rec.Fault = out.Fault.Class
		return
	}
	if rec.Method == mcp.MethodToolsCall && string(jsonrpc.Member(out.Result, "isError")) == "true" {
		rec.InBandError = true
	}
}

// observedWriter notes the status of the answer it carries, and the code of
// a JSON-RPC error written through writeRPCError. It unwraps for
// http.ResponseController (flushes, deadlines).
type observedWriter struct {
	http.ResponseWriter
	rec   *observe.Request
	wrote bool
}

func (w *observedWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		w.rec.Status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *observedWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.wrote = true
		w.rec.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap is the writer underneath, for http.ResponseController.
func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteRPCError records the code of a JSON-RPC error answered on w.
func noteRPCError(w http.ResponseWriter, e *jsonrpc.Error) {
	if ow, ok := w.(*observedWriter); ok && e != nil {
		ow.rec.ErrorCode = e.Code
	}
}
