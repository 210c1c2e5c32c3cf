package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// mcpMethods are the MCP methods the catalog page sends through /ui/mcp:
// the four aggregate lists, and the three that act on one item. Nothing
// long-lived (no subscriptions/listen) and nothing that changes a session.
var mcpMethods = map[string]bool{
	"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true,
	"tools/call": true, "prompts/get": true, "resources/read": true,
}

// maxMCPBody bounds a request to /ui/mcp (the gateway's own body bound
// applies again to the message it builds).
const maxMCPBody = 1 << 20

// uiProgressToken is the progressToken of a call the page asked progress
// for: the answer stream is the request's own, so one token is enough.
const uiProgressToken = "mcpgw-ui"

// mcpRequest is what the catalog page posts to /ui/mcp.
type mcpRequest struct {
	// Method is one of mcpMethods.
	Method string `json:"method"`
	// Params are the request's params without _meta (any sent is replaced).
	Params json.RawMessage `json:"params"`
	// Progress asks for notifications/progress (a progressToken is sent).
	Progress bool `json:"progress"`
	// InputSchema is, for tools/call, the tool's inputSchema: the
	// Mcp-Param-* headers its x-mcp-header annotations name are sent.
	InputSchema json.RawMessage `json:"input_schema"`
}

// rpcRequest is the JSON-RPC request /ui/mcp sends to the gateway's /mcp.
type rpcRequest struct {
	JSONRPC string                     `json:"jsonrpc"`
	ID      int                        `json:"id"`
	Method  string                     `json:"method"`
	Params  map[string]json.RawMessage `json:"params"`
}

// mcp serves POST /ui/mcp: one MCP request of the catalog page, sent to the
// gateway's own /mcp (2026-07-28: stateless, one request, one answer) with
// the session's key, in-process. The answer is the gateway's, passed on as
// it is written: JSON, or an SSE stream when the gateway sends
// notifications (progress) before the result, which the page reads as it
// arrives. Same origin and the session's CSRF token are required.
func (u *UI) mcp(w http.ResponseWriter, r *http.Request) {
	_, sess, _, ok := u.signedIn(r)
	if !ok {
		refuse(w, http.StatusUnauthorized, "not signed in")
		return
	}
	if !u.changeAllowed(w, r, sess, nil) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxMCPBody)
	var in mcpRequest
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		refuse(w, http.StatusBadRequest, "invalid request")
		return
	}
	if !mcpMethods[in.Method] {
		refuse(w, http.StatusBadRequest, "method not offered by the UI")
		return
	}
	body, hdr, err := buildMCP(in)
	if err != nil {
		refuse(w, http.StatusBadRequest, "invalid params")
		return
	}
	out := r.Clone(r.Context())
	out.URL.Path, out.URL.RawPath, out.URL.RawQuery, out.RequestURI = "/mcp", "", "", ""
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.Header = hdr
	out.Header.Set("Authorization", "Bearer "+sess.key)
	u.cfg.API.ServeHTTP(w, out)
}

// buildMCP turns the page's request into a modern JSON-RPC request and its
// headers: MCP-Protocol-Version, Mcp-Method, Mcp-Name for a method naming
// one item, and a tool's Mcp-Param-* headers.
func buildMCP(in mcpRequest) ([]byte, http.Header, error) {
	params := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(in.Params)) > 0 && !bytes.Equal(bytes.TrimSpace(in.Params), []byte("null")) {
		if err := json.Unmarshal(in.Params, &params); err != nil {
			return nil, nil, err
		}
		if params == nil {
			params = map[string]json.RawMessage{}
		}
	}
	meta := map[string]any{
		mcp.MetaProtocolVersion:    mcp.V20260728,
		mcp.MetaClientCapabilities: map[string]any{},
		mcp.MetaClientInfo:         map[string]string{"name": "mcpgw-ui", "version": "1"},
	}
	if in.Progress {
		meta[mcp.MetaProgressToken] = uiProgressToken
	}
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, err
	}
	params["_meta"] = m
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: 1, Method: in.Method, Params: params})
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set(mcp.HeaderProtocolVersion, mcp.V20260728)
	h.Set(mcp.HeaderMethod, in.Method)
	if key := mcp.NameParam(in.Method); key != "" {
		var name string
		if err := json.Unmarshal(params[key], &name); err != nil || name == "" {
			return nil, nil, errors.New("ui: the request names no " + key)
		}
		h.Set(mcp.HeaderName, mcp.EncodeHeaderValue(name))
	}
	if in.Method == "tools/call" && len(in.InputSchema) > 0 {
		if specs, err := mcp.ParseParamSpecs(in.InputSchema); err == nil {
			for k, v := range mcp.ParamHeaderValues(specs, params["arguments"]) {
				h[k] = v
			}
		}
	}
	return body, h, nil
}
