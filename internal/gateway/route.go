package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// callNamed routes tools/call or prompts/get to the one upstream that owns
// the served name, under its upstream name.
func (g *Gateway) callNamed(ctx context.Context, op *Operation, tool bool) Outcome {
	name, ok := stringMember(op.Params, "name")
	if !ok {
		return fail(fault.InvalidParams, "params.name is required")
	}
	servers := g.visible(op)
	server, bare, ok := g.cfg.Catalog.SplitName(name, servers, !op.Unprefixed)
	if !ok {
		return unknownName(tool, name)
	}
	if tool && !g.cfg.Policy.ToolAllowed(op.Caller, server, bare) {
		return Outcome{Result: toolRefusal(bare, server)}
	}
	if g.needsCallerToken(op, server) { // before anything contacts the server
		if out, proceed := g.authorizationRequired(ctx, op, server); !proceed {
			return out
		}
	}
	listMethod := mcp.MethodPromptsList
	if tool {
		listMethod = mcp.MethodToolsList
	}
	q := g.query(op, servers)
	if listed, known := g.cfg.Catalog.Knows(ctx, q, server, listMethod, bare); known && !listed {
		return unknownName(tool, name)
	}
	if tool {
		if refused := g.ruleRefusal(ctx, op, q, server, bare); refused != nil {
			return Outcome{Result: refused}
		}
		if out, refused := g.quarantined(ctx, server, bare, name); refused {
			return out
		}
	}
	if tool && op.modern() {
		specs := g.cfg.Catalog.ParamSpecs(q, server, bare)
		if why := mcp.CheckParamHeaders(specs, jsonrpc.Member(op.Params, "arguments"), op.ParamHeaders); why != "" {
			return fail(fault.HeaderMismatch, "Header mismatch: %s", why)
		}
	}
	params, err := jsonrpc.SetMember(op.Params, "name", jsonrpc.AppendString(nil, bare))
	if err != nil {
		return fail(fault.InvalidParams, "params must be an object")
	}
	if tool && g.cfg.AdmitCall != nil {
		observe.Served(ctx, server) // a refused call is the server's too
		admitted, release, refused := g.cfg.AdmitCall(ctx, op.Caller, server)
		if refused != nil {
			return Failed(refused)
		}
		ctx = admitted
		defer release() // also when the call panics or is cancelled
	}
	forward := func() Outcome { return g.forward(ctx, op, server, servers, params) }
	if tool && g.cfg.Guard != nil {
		forward = func() Outcome { return g.guardedForward(ctx, op, server, bare, servers, params) }
	}
	out := forward()
	if again, retry := g.refusedCallerToken(ctx, op, server, out); retry {
		out = forward() // the guardrails judge the retried call too
	} else {
		out = again
	}
	if tool {
		g.forgetLists(op, server)
	}
	return out
}

// unknownName answers a name no server the caller may use here serves. A
// tool of a server the caller cannot see reads the same.
func unknownName(tool bool, name string) Outcome {
	f := &fault.Fault{Class: fault.UnknownPrompt, Message: "Unknown prompt: " + name, Subject: name}
	if tool {
		f.Class, f.Message = fault.UnknownTool, "Unknown tool: "+name
	}
	return Failed(f)
}

// toolRefusal is LiteLLM's in-band answer for a tool the caller may not use.
func toolRefusal(tool, server string) json.RawMessage {
	return fault.ToolError("Tool '" + tool + "' is not allowed for your key/team on server '" + server + "'. Contact proxy admin for access.")
}

// forward sends op.Method with params to one server and maps its answer.
func (g *Gateway) forward(ctx context.Context, op *Operation, server string, servers []string, params json.RawMessage) Outcome {
	s := g.servers[server]
	observe.Served(ctx, server)
	if !mcp.MayReturnInputRequired(op.Method) {
		res, err := s.Client.Call(ctx, op.Method, params, g.options(s, op, len(servers) > 1))
		if err != nil {
			return g.failure(op, server, err)
		}
		return Outcome{Result: res.Raw}
	}
	return g.call(ctx, op, s, len(servers) > 1, params, continuation{})
}

// failure maps an upstream failure to the caller's answer. A JSON-RPC error
// from the upstream is the caller's to see, and so is a fault a client
// middleware answered with (a limit); any other failure is described by its
// fault class only.
func (g *Gateway) failure(op *Operation, server string, err error) Outcome {
	var re *upstream.RPCError
	if errors.As(err, &re) {
		e := *re.Err
		return Failed(fault.FromRPC(&e))
	}
	var own *fault.Fault
	if errors.As(err, &own) {
		g.cfg.Logger.Debug("upstream request refused before it was sent", "server", server, "method", op.Method, "reason", own.Message)
		return Failed(own)
	}
	cl := upstream.Classify(err)
	g.cfg.Logger.Warn("upstream request failed", "server", server, "method", op.Method, "fault", string(cl.Fault), "reason", cl.Message)
	return Failed(catalog.UpstreamFault(cl, "upstream "+server+": "+cl.Message))
}

func (g *Gateway) readResource(ctx context.Context, op *Operation) Outcome {
	uri, ok := stringMember(op.Params, "uri")
	if !ok {
		return fail(fault.InvalidParams, "params.uri is required")
	}
	servers := g.visible(op)
	server, fail := g.cfg.Catalog.ResourceOwner(ctx, g.query(op, servers), uri)
	if server == "" {
		return ownerMissing(uri, fail)
	}
	return g.forward(ctx, op, server, servers, op.Params)
}

// ownerMissing answers a URI no visible server serves: the auth refusal
// when every server refused the caller, else "not found".
func ownerMissing(uri string, refused *fault.Fault) Outcome {
	if refused != nil {
		return Failed(refused)
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return Failed(&fault.Fault{Class: fault.ResourceNotFound, Message: "Resource not found", Subject: uri, Data: data})
}

// complete routes completion/complete by its ref: a prompt by its served
// name, a resource template by the server that serves it.
func (g *Gateway) complete(ctx context.Context, op *Operation) Outcome {
	ref := jsonrpc.Member(op.Params, "ref")
	typ, _ := stringMember(ref, "type")
	servers := g.visible(op)
	switch typ {
	case "ref/prompt":
		name, _ := stringMember(ref, "name")
		server, bare, ok := g.cfg.Catalog.SplitName(name, servers, !op.Unprefixed)
		if !ok {
			return unknownName(false, name)
		}
		newRef, err := jsonrpc.SetMember(ref, "name", jsonrpc.AppendString(nil, bare))
		if err != nil {
			return fail(fault.InvalidParams, "invalid ref")
		}
		params, err := jsonrpc.SetMember(op.Params, "ref", newRef)
		if err != nil {
			return fail(fault.InvalidParams, "invalid params")
		}
		return g.forward(ctx, op, server, servers, params)
	case "ref/resource":
		uri, _ := stringMember(ref, "uri")
		server, fail := g.cfg.Catalog.ResourceOwner(ctx, g.query(op, servers), uri)
		if server == "" {
			return ownerMissing(uri, fail)
		}
		return g.forward(ctx, op, server, servers, op.Params)
	}
	return fail(fault.InvalidParams, "params.ref must be a ref/prompt or ref/resource")
}

// LegacyCapabilities is what the gateway advertises in a legacy initialize
// result: every list may change and resources may be subscribed, whatever
// the upstreams do, because the set of upstreams behind the gateway changes.
func LegacyCapabilities() json.RawMessage {
	return json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}}`)
}

// stringMember returns the string value of obj's top-level member key.
func stringMember(obj []byte, key string) (string, bool) { return jsonrpc.StringMember(obj, key) }

// setLevel passes a legacy caller's logging/setLevel to every visible legacy
// upstream that offers logging, concurrently; failures are logged, not
// returned: the level is a wish, and the caller's session is not at fault.
func (g *Gateway) setLevel(ctx context.Context, op *Operation) Outcome {
	servers := g.visible(op)
	var wg sync.WaitGroup
	for _, name := range servers {
		s := g.servers[name]
		opts := g.options(s, op, len(servers) > 1)
		// The level belongs to the upstream session this caller's calls
		// use, which the interactions on offer select.
		var flags legacyFlags
		opts.Interactions = g.upstreamInteractions(s, op, &flags)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.recovered("logging/setLevel", nil)
			info, err := s.Client.Info(ctx, opts)
			if err != nil || info.Era != mcp.EraLegacy || !info.Capabilities.HasLogging() {
				return
			}
			if _, err := s.Client.Call(ctx, mcp.MethodLoggingSetLevel, op.Params, opts); err != nil {
				g.cfg.Logger.Debug("upstream refused logging/setLevel", "server", name, "fault", string(upstream.Classify(err).Fault))
			}
		}()
	}
	wg.Wait()
	return Outcome{Result: json.RawMessage(`{}`)}
}
