package front

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"sync"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/later"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// RegisterREST adds the REST routes that need no MCP client:
// GET /mcp-rest/tools/list[?server_id=] and POST /mcp-rest/tools/call.
func (h *MCP) RegisterREST(mux *http.ServeMux) {
	mux.HandleFunc("GET /mcp-rest/tools/list", h.restList)
	mux.HandleFunc("POST /mcp-rest/tools/call", h.restCall)
}

func writeJSONValue(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, b)
}

func restError(w http.ResponseWriter, status int, code, msg string) {
	writeJSONValue(w, status, map[string]string{"error": code, "message": msg})
}

// restOp builds a one-server operation for the REST routes: bare tool names.
func (h *MCP) restOp(r *http.Request, caller *identity.Caller, server, method string, params json.RawMessage) gateway.Operation {
	_, fromAuth := identity.Credential(r)
	return gateway.Operation{Method: method, Params: params, Caller: caller, Scope: []string{server},
		Unprefixed: true, Credentials: credentials(r.Header, fromAuth), Surface: fault.REST}
}

// restListConcurrency bounds the servers one REST listing asks at once.
const restListConcurrency = 8

// restList lists tools with their bare names, each tagged with its server.
func (h *MCP) restList(w http.ResponseWriter, r *http.Request) {
	caller, ok := h.authenticate(w, r, false)
	if !ok {
		return
	}
	w, r, span := h.observeREST(w, r, caller, mcp.MethodToolsList)
	defer span.End()
	var servers []string
	if id := r.URL.Query().Get("server_id"); id != "" {
		name, ok := h.cfg.Resolve(id)
		if !ok {
			restError(w, http.StatusNotFound, "not_found", "unknown server_id")
			return
		}
		servers = []string{name}
	} else {
		servers = h.cfg.Gateway.Visible(gateway.Operation{Caller: caller})
	}
	results := h.restListEach(r, caller, servers)
	tools := []json.RawMessage{}
	outcomes := map[string]json.RawMessage{}
	for i, s := range servers {
		tools = append(tools, results[i].tools...)
		if results[i].outcome != nil {
			outcomes[s] = results[i].outcome
		}
	}
	writeJSONValue(w, http.StatusOK, map[string]any{
		"tools": tools, "error": nil, "message": "Successfully retrieved tools", "server_outcomes": outcomes,
	})
}

// restListed is one server's part of a REST listing.
type restListed struct {
	tools   []json.RawMessage
	outcome json.RawMessage
}

// restListEach lists the tools of each server, at most restListConcurrency
// at once; results are in the order of servers. A listing that spans
// several servers is a multi-server request: the caller's Authorization
// goes to none of them.
func (h *MCP) restListEach(r *http.Request, caller *identity.Caller, servers []string) []restListed {
	results := make([]restListed, len(servers))
	sem := make(chan struct{}, restListConcurrency)
	var wg sync.WaitGroup
	for i, s := range servers {
		op := h.restOp(r, caller, s, mcp.MethodToolsList, nil)
		op.WholeList = true // a REST listing has no cursor: every tool at once
		if len(servers) > 1 {
			op.Credentials = op.Credentials.WithoutAuthorization()
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer recoverPanic(h.cfg.Logger, "REST listing", func() { results[i] = restListed{outcome: json.RawMessage(`{"status":"error"}`)} })
			results[i] = h.restListOne(r.Context(), s, op)
		}()
	}
	wg.Wait()
	return results
}

// restListOne lists one server's tools, tagged with its name.
func (h *MCP) restListOne(ctx context.Context, server string, op gateway.Operation) restListed {
	out := h.cfg.Gateway.Do(ctx, op)
	if out.Fault != nil {
		// The catalog answers with an error only when the server refused the
		// caller; its outcome names the fault class as aggregates do.
		switch out.Fault.Class {
		case fault.AuthRequired:
			return restListed{outcome: json.RawMessage(`{"status":"auth_required","http_status":401}`)}
		case fault.Forbidden:
			return restListed{outcome: json.RawMessage(`{"status":"forbidden","http_status":403}`)}
		}
		return restListed{outcome: json.RawMessage(`{"status":"error"}`)}
	}
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(out.Result, &res)
	info, _ := json.Marshal(map[string]string{"server_name": server})
	var got restListed
	for _, t := range res.Tools {
		if tagged, err := jsonrpc.SetMember(t, "mcp_info", info); err == nil {
			got.tools = append(got.tools, tagged)
		}
	}
	meta := jsonrpc.Member(jsonrpc.Member(out.Result, "_meta"), mcp.MetaServerOutcomes)
	got.outcome = jsonrpc.Member(meta, server)
	return got
}

// restCall calls one tool: {server_id, name, arguments}.
func (h *MCP) restCall(w http.ResponseWriter, r *http.Request) {
	caller, ok := h.authenticate(w, r, false)
	if !ok {
		return
	}
	w, r, span := h.observeREST(w, r, caller, mcp.MethodToolsCall)
	defer span.End()
	ctx, done := later.With(r.Context()) // see serve
	defer done()
	r = reqscope.Request(ctx, r)
	// A browser may send a cross-site text/plain or form POST without asking
	// first; only JSON, which it must ask for, runs a tool.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		restError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
		return
	}
	body, err := h.readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		restError(w, http.StatusRequestEntityTooLarge, "body_too_large", "the body is larger than the gateway accepts")
		return
	}
	if err != nil {
		restError(w, http.StatusBadRequest, "invalid_body", "could not read the body in time")
		return
	}
	var in struct {
		ServerID  string          `json:"server_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		restError(w, http.StatusBadRequest, "invalid_body", "body must be {server_id, name, arguments}")
		return
	}
	if in.ServerID == "" || in.Name == "" {
		restError(w, http.StatusBadRequest, "missing_parameter", "server_id and name are required")
		return
	}
	if rec := span.Record(); rec != nil {
		rec.Target = observe.Clip(in.Name, maxTargetBytes)
	}
	server, ok := h.cfg.Resolve(in.ServerID)
	if !ok {
		restError(w, http.StatusNotFound, "not_found", "unknown server_id")
		return
	}
	args := in.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if args[0] != '{' {
		restError(w, http.StatusBadRequest, "invalid_parameter", "arguments must be an object")
		return
	}
	params := []byte(`{"name":`)
	params = jsonrpc.AppendString(params, in.Name)
	params = append(append(append(params, `,"arguments":`...), args...), '}')
	ctx, usage := limits.WithUsage(r.Context())
	out := h.cfg.Gateway.Do(ctx, h.restOp(r, caller, server, mcp.MethodToolsCall, params))
	noteOutcome(span.Record(), out)
	a := answerOf(fault.REST, mcp.MethodToolsCall, out)
	switch {
	case a.detail != "":
		writeDetail(w, a)
		return
	case a.err != nil:
		setFaultHeaders(w, a)
		writeJSONValue(w, a.status, map[string]any{"error": a.err.Code, "message": a.err.Message})
		return
	}
	setUsageHeaders(w, usage)
	writeRaw(w, http.StatusOK, a.result)
}
