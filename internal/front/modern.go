package front

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// serveModern answers a 2026-07-28 request: validated _meta and headers, no
// session, one self-contained answer.
func (h *MCP) serveModern(req *request) {
	w, r, msg := req.w, req.r, req.msg
	supported := h.advertisedIn(mcp.EraModern)
	fail := func(status int, code int64, data any, format string, args ...any) {
		e := jsonrpc.Errorf(code, format, args...)
		if data != nil {
			e.Data, _ = json.Marshal(data)
		}
		writeRPCError(w, status, msg.ID, e)
	}
	if msg.IsResponse() {
		fail(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, nil, "a modern client sends no responses")
		return
	}
	var meta mcp.RequestMetaFields
	var metaErr error
	if raw := metaOf(msg.Params); raw != nil {
		meta, metaErr = mcp.ParseRequestMeta(raw)
	} else {
		metaErr = mcp.ErrMetaProtocolVersion
	}
	headerVersion := strings.TrimSpace(r.Header.Get(mcp.HeaderProtocolVersion))
	if headerVersion != "" && meta.ProtocolVersion != "" && headerVersion != meta.ProtocolVersion {
		fail(http.StatusBadRequest, mcp.CodeHeaderMismatch, nil, "Header mismatch: MCP-Protocol-Version '%s' != params._meta protocolVersion '%s'", clip(headerVersion), clip(meta.ProtocolVersion))
		return
	}
	requested := meta.ProtocolVersion
	if requested == "" {
		requested = headerVersion
	}
	if len(supported) == 0 || (requested != "" && !slices.Contains(supported, requested)) {
		fail(http.StatusBadRequest, mcp.CodeUnsupportedProtocolVersion,
			mcp.UnsupportedVersionData{Supported: h.cfg.Advertised, Requested: requested},
			"Unsupported MCP protocol version %q; this gateway serves %s", requested, strings.Join(h.cfg.Advertised, ", "))
		return
	}
	if metaErr != nil {
		fail(http.StatusBadRequest, jsonrpc.CodeInvalidParams, nil, "invalid params._meta: %v (protocolVersion and clientCapabilities are required)", metaErr)
		return
	}
	if err := checkHeaders(r, msg, meta.ProtocolVersion); err != "" {
		fail(http.StatusBadRequest, mcp.CodeHeaderMismatch, nil, "Header mismatch: %s", err)
		return
	}
	if msg.Kind() == jsonrpc.KindNotification {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !mcp.MethodInRevision(msg.Method, meta.ProtocolVersion) {
		fail(http.StatusNotFound, jsonrpc.CodeMethodNotFound, nil, "Method not found: %s is not part of %s", msg.Method, meta.ProtocolVersion)
		return
	}
	rp := newReply(w, r)
	op := h.operation(req, fault.Modern, meta.ProtocolVersion)
	op.ClientCaps = meta.ClientCapabilities
	if meta.LogLevel != "" { // the caller opted in to log notifications for this request
		op.Log = func(params json.RawMessage) {
			rp.send(jsonrpc.EncodeNotification(mcp.NotifMessage, params))
		}
	}
	if meta.ProgressToken != nil {
		op.Progress = func(params json.RawMessage) {
			rp.send(jsonrpc.EncodeNotification(mcp.NotifProgress, params))
		}
	}
	if msg.Method == mcp.MethodSubscriptionsListen {
		h.serveListen(req, op)
		return
	}
	ctx, usage := limits.WithUsage(r.Context())
	out := h.cfg.Gateway.Do(ctx, op)
	noteOutcome(req.obs, out)
	if out.Fault == nil {
		setUsageHeaders(w, usage)
	}
	h.answerModern(w, rp, msg, out)
}

// answerModern encodes an outcome for a 2026-07-28 caller: a fault through
// the fault table; a result with resultType, serverInfo and, when complete
// and cacheable, valid cache hints.
func (h *MCP) answerModern(w http.ResponseWriter, rp *reply, msg *jsonrpc.Message, out gateway.Outcome) {
	a := answerOf(fault.Modern, msg.Method, out)
	switch {
	case a.detail != "":
		writeDetail(w, a)
		return
	case a.err != nil:
		setFaultHeaders(w, a)
		rp.finish(a.status, jsonrpc.EncodeError(msg.ID, a.err))
		return
	}
	hints := !out.InputRequired && mcp.CacheableMethod(msg.Method)
	rp.finish(http.StatusOK, h.encodeModern(msg.ID, a.result, hints))
}

// encodeModern returns the response to id whose result is res as
// appendModern makes it, written once into a buffer of its size.
func (h *MCP) encodeModern(id jsonrpc.ID, res json.RawMessage, hints bool) []byte {
	if res == nil {
		return jsonrpc.EncodeResult(id, nil)
	}
	// The most appendModern adds besides serverInfo itself: the cache
	// hints, resultType and a _meta holding serverInfo.
	const added = len(`,"ttlMs":` + defaultTTLMs + `,"cacheScope":` + defaultCacheScope +
		`,"resultType":"complete","_meta":{"` + mcp.MetaServerInfo + `":}`)
	b := make([]byte, 0, 40+len(id.Raw())+len(res)+len(h.serverInfo)+added)
	b = h.appendModern(jsonrpc.AppendResultHead(b, id), res, hints)
	return append(b, '}')
}

// metaOf returns params._meta, or nil.
func metaOf(params json.RawMessage) json.RawMessage {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	return jsonrpc.Member(params, "_meta")
}

// checkHeaders validates the standard headers against the body; it returns
// what is wrong, or "".
func checkHeaders(r *http.Request, msg *jsonrpc.Message, version string) string {
	hv := r.Header.Get(mcp.HeaderProtocolVersion)
	if hv == "" {
		return "MCP-Protocol-Version header is missing"
	}
	if strings.TrimSpace(hv) != version {
		return "MCP-Protocol-Version '" + clip(hv) + "' != params._meta protocolVersion '" + clip(version) + "'"
	}
	if msg.Kind() == jsonrpc.KindNotification {
		return "" // header rules for notifications are left open by the spec
	}
	hm, ok := r.Header[http.CanonicalHeaderKey(mcp.HeaderMethod)]
	if !ok {
		return "Mcp-Method header is missing"
	}
	method, err := mcp.DecodeHeaderValue(hm[0])
	if err != nil {
		return "Mcp-Method header is malformed"
	}
	if method != msg.Method {
		return "Mcp-Method '" + clip(method) + "' != method '" + clip(msg.Method) + "'"
	}
	key := mcp.NameParam(msg.Method)
	if key == "" {
		return ""
	}
	hn, ok := r.Header[http.CanonicalHeaderKey(mcp.HeaderName)]
	if !ok {
		return "Mcp-Name header is missing"
	}
	name, err := mcp.DecodeHeaderValue(hn[0])
	if err != nil {
		return "Mcp-Name header is malformed"
	}
	return paramMismatch(msg.Params, key, name)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// paramMismatch says how the Mcp-Name header's name differs from
// params.key ("" when it is absent or not a string); "" when they match.
// The member is decoded only for the message.
func paramMismatch(params []byte, key, name string) string {
	if jsonrpc.StringMemberIs(params, key, name) {
		return ""
	}
	body, _ := stringMember(params, key)
	return "Mcp-Name '" + clip(name) + "' != params." + key + " '" + clip(body) + "'"
}

// stringMember returns the string value of obj's top-level member key.
func stringMember(obj []byte, key string) (string, bool) { return jsonrpc.StringMember(obj, key) }
