package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Handler answers one server→client request: it returns the raw result, or an
// error (a *jsonrpc.Error is sent as is; any other error becomes -32603).
type Handler func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// Interactions is what the caller of one operation offers the upstream while
// that operation runs. A nil field is not offered: the matching capability is
// not advertised, and a request for it is answered with a JSON-RPC error.
type Interactions struct {
	Elicit Handler // elicitation/create
	Sample Handler // sampling/createMessage
	Roots  Handler // roots/list
	// Progress receives notifications/progress params for this operation,
	// with the caller's own progress token.
	Progress func(params json.RawMessage)
	// Log receives the notifications/message the upstream sends while this
	// operation runs; nil leaves them to Config.OnLog.
	Log func(params json.RawMessage)
	// Notify receives every other notification sent for this operation (a
	// listen stream's events); nil leaves them to Config.OnNotification.
	Notify func(method string, params json.RawMessage)
	// Owner names the caller these interactions answer for (its
	// downstream session). A non-empty Owner runs the operation on a
	// pooled session of that owner's own, so what an upstream keeps per
	// session (roots it cached, a log level) never reaches another caller.
	// Empty shares the session with every caller of the same credentials.
	Owner string
}

// Offer names client capabilities every legacy session of an upstream
// advertises, whatever the call that opens it can answer, so callers with and
// without them share one session. A request the current call cannot answer
// gets a JSON-RPC error.
type Offer struct {
	Elicitation, Sampling, Roots bool
}

// capabilities returns the ClientCapabilities JSON these interactions (plus
// what offer always advertises) justify, and a short key naming that set.
// Both come from a table built once: the JSON is shared and must not be
// modified.
func (in *Interactions) capabilities(offer Offer) (json.RawMessage, string) {
	set := in.capBits(offer)
	return capSets[set].json, capSets[set].key
}

// capBits names the capability set of capabilities as an index of capSets.
func (in *Interactions) capBits(offer Offer) int {
	var set int
	if offer.Elicitation || (in != nil && in.Elicit != nil) {
		// Both modes: the gateway refuses a mode the caller of the call in
		// flight did not declare.
		set |= capElicit
	}
	if offer.Roots || (in != nil && in.Roots != nil) {
		set |= capRoots
	}
	if offer.Sampling || (in != nil && in.Sample != nil) {
		set |= capSample
	}
	return set
}

// The capability bits of capSets' index.
const (
	capElicit = 1 << iota
	capRoots
	capSample
)

// capSet is one set of client capabilities: its JSON and its key.
type capSet struct {
	json json.RawMessage
	key  string
}

// capSets holds every capability set by its bits (capElicit, capRoots,
// capSample), members in that order. It is built once and only read.
var capSets = func() (sets [8]capSet) {
	for bits := range sets {
		buf := []byte{'{'}
		key := ""
		add := func(name, val, k string) {
			if len(buf) > 1 {
				buf = append(buf, ',')
			}
			buf = append(append(append(append(buf, '"'), name...), `":`...), val...)
			key += k
		}
		if bits&capElicit != 0 {
			add("elicitation", `{"form":{},"url":{}}`, "e")
		}
		if bits&capRoots != 0 {
			add("roots", `{}`, "r")
		}
		if bits&capSample != 0 {
			add("sampling", `{}`, "s")
		}
		sets[bits] = capSet{json: append(buf, '}'), key: key}
	}
	return sets
}()

// exchange is one request in flight: it receives the server→client traffic the
// upstream sends for that request.
type exchange struct {
	cred     string // names the session for its notifications (OwnerKey)
	env      *env
	in       *Interactions
	method   string
	token    json.RawMessage // the caller's progress token, if any
	upToken  json.RawMessage // the token as sent upstream (rewritten on shared streams)
	handlers sync.WaitGroup
	inflight atomic.Int32 // server→client requests being served (see startHandler)
}

// canServe reports whether this exchange's caller offered a handler for a
// server→client request method.
func (ex *exchange) canServe(method string) bool {
	if ex.in == nil {
		return false
	}
	switch method {
	case mcp.MethodElicitationCreate:
		return ex.in.Elicit != nil
	case mcp.MethodSamplingCreateMessage:
		return ex.in.Sample != nil
	case mcp.MethodRootsList:
		return ex.in.Roots != nil
	}
	return false
}

// canServeStray reports whether this exchange may answer a server→client
// request that arrived outside any call's own stream (a shared stdio or
// HTTP+SSE stream, a streamable HTTP GET stream), where nothing ties it to
// this call. roots/list is one a server sends on its own timer (after
// initialize, on roots/list_changed) and caches for its session: only a
// caller whose session is its own (Interactions.Owner) may answer it, since
// on a session shared by several callers their answer would become every
// caller's roots, and a modern caller's unrelated call would be cancelled
// for a question it was never asked.
func (ex *exchange) canServeStray(method string) bool {
	if method == mcp.MethodRootsList && (ex.in == nil || ex.in.Owner == "") {
		return false
	}
	return ex.canServe(method)
}

// strayRefusal is the reply to a server→client request from outside any
// call's stream that no call in flight may answer.
func strayRefusal(m *jsonrpc.Message) []byte {
	if m.Method == mcp.MethodRootsList {
		return jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
			"%s is not answered on a session shared by several callers", m.Method))
	}
	return jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "the client does not support %s", m.Method))
}

// serveRequest answers a server→client request and returns the encoded reply.
func (ex *exchange) serveRequest(ctx context.Context, m *jsonrpc.Message) []byte {
	var h Handler
	switch m.Method {
	case mcp.MethodPing:
		return jsonrpc.EncodeResult(m.ID, json.RawMessage(`{}`))
	case mcp.MethodElicitationCreate:
		if ex.in != nil {
			h = ex.in.Elicit
		}
	case mcp.MethodSamplingCreateMessage:
		if ex.in != nil {
			h = ex.in.Sample
		}
	case mcp.MethodRootsList:
		if ex.in != nil {
			h = ex.in.Roots
		}
	}
	if h == nil {
		ex.env.msgDebug("refused server request", "method", m.Method)
		return jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
			"the client does not support %s", m.Method))
	}
	res, err := ex.env.runHandler(ctx, h, m)
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s failed", m.Method)
		}
		return jsonrpc.EncodeError(m.ID, je)
	}
	if !json.Valid(res) {
		return jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s produced an invalid result", m.Method))
	}
	return jsonrpc.EncodeResult(m.ID, res)
}

// notify delivers a notification that arrived for this request. A panic in
// the caller's callback drops that notification only.
func (ex *exchange) notify(m *jsonrpc.Message) {
	defer ex.env.recoverPanic("notification callback", nil)
	if m.Method == mcp.NotifProgress {
		if ex.in == nil || ex.in.Progress == nil {
			return
		}
		params := m.Params
		if ex.upToken != nil && ex.token != nil && string(ex.upToken) != string(ex.token) {
			params = replaceMember(params, "progressToken", ex.token)
		}
		ex.in.Progress(params)
		return
	}
	if m.Method == mcp.NotifMessage && ex.in != nil && ex.in.Log != nil {
		ex.in.Log(m.Params)
		return
	}
	if ex.in != nil && ex.in.Notify != nil {
		ex.in.Notify(m.Method, m.Params)
		return
	}
	ex.env.deliver(m, ex.cred)
}

// replaceMember returns obj with its top-level member key set to val.
func replaceMember(obj json.RawMessage, key string, val json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return obj
	}
	m[key] = val
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}
