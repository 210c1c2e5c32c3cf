package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// GuardedCall names one tools/call for the guardrails.
type GuardedCall struct {
	Caller *identity.Caller
	Server string // the server's name
	Tool   string // the upstream (bare) tool name
}

// CallGuard runs guardrails around tool calls (internal/guardrail, wired by internal/app).
// Each method answers at once when no guardrail of its mode applies to the call.
type CallGuard interface {
	// Pre judges the arguments before the call: the arguments to send (nil: unchanged) or
	// the refusal.
	Pre(ctx context.Context, call GuardedCall, args json.RawMessage) (json.RawMessage, *fault.Fault)
	// During starts the checks that run alongside the upstream call; wait returns their
	// verdict once the call answered (nil: none refused). wait is nil when none apply.
	During(ctx context.Context, call GuardedCall, args json.RawMessage) (wait func() *fault.Fault)
	// Post judges the result: the result to answer with (nil: unchanged) or the refusal
	// that replaces it.
	Post(ctx context.Context, call GuardedCall, result json.RawMessage) (json.RawMessage, *fault.Fault)
}

// quarantined refuses a call to a tool the catalog's vetter hides (a changed definition
// not yet approved, a description a guardrail blocked): the upstream is not contacted.
func (g *Gateway) quarantined(ctx context.Context, server, bare, name string) (Outcome, bool) {
	reason, hidden := g.cfg.Catalog.Quarantined(ctx, server, bare)
	if !hidden {
		return Outcome{}, false
	}
	why := "its definition changed since it was approved"
	switch reason {
	case "guardrail":
		why = "a guardrail blocked its description"
	case "unchecked":
		why = "its description could not be checked by the guardrails"
	}
	data, _ := json.Marshal(map[string]string{"tool": name, "server": server, "quarantine": reason})
	return Failed(&fault.Fault{Class: fault.InvalidParams, Subject: name, Data: data,
		Message: "Tool '" + name + "' is quarantined: " + why + "; a proxy admin must approve it (POST /v1/mcp/server/{server_id}/pin)"}), true
}

// guardedForward is forward for a tools/call with the guardrails around it: pre-call
// checks may refuse the call or rewrite its arguments, during-call checks run alongside it
// and may refuse its result, post-call checks may refuse or rewrite the result.
func (g *Gateway) guardedForward(ctx context.Context, op *Operation, server, bare string, servers []string, params json.RawMessage) Outcome {
	gd := g.cfg.Guard
	call := GuardedCall{Caller: op.Caller, Server: server, Tool: bare}
	args := jsonrpc.Member(params, "arguments")
	rewritten, refused := gd.Pre(ctx, call, args)
	if refused != nil {
		return Failed(refused)
	}
	if rewritten != nil {
		p, err := jsonrpc.SetMember(params, "arguments", rewritten)
		if err != nil {
			return fail(fault.Internal, "guardrail rewrite could not be applied")
		}
		params, args = p, rewritten
	}
	wait := gd.During(ctx, call, args)
	out := g.forward(ctx, op, server, servers, params)
	if wait != nil {
		if f := wait(); f != nil {
			return Failed(f)
		}
	}
	if out.Fault != nil || out.Result == nil || out.InputRequired {
		return out
	}
	res, refused := gd.Post(ctx, call, out.Result)
	if refused != nil {
		return Failed(refused)
	}
	if res != nil {
		out.Result = res
	}
	return out
}

// resumeRefused refuses a resumed tools/call of a tool quarantined since the call began
// (params carry the upstream name).
func (g *Gateway) resumeRefused(ctx context.Context, op *Operation, server string, params json.RawMessage) (Outcome, bool) {
	bare, _ := stringMember(params, "name")
	name, _ := stringMember(op.Params, "name")
	return g.quarantined(ctx, server, bare, name)
}

// resumeChecked runs the post-call guardrails on a resumed tools/call's result; the
// arguments were checked when the call began.
func (g *Gateway) resumeChecked(ctx context.Context, op *Operation, server string, params json.RawMessage, out Outcome) Outcome {
	if g.cfg.Guard == nil || out.Fault != nil || out.Result == nil || out.InputRequired {
		return out
	}
	bare, _ := stringMember(params, "name")
	res, refused := g.cfg.Guard.Post(ctx, GuardedCall{Caller: op.Caller, Server: server, Tool: bare}, out.Result)
	if refused != nil {
		return Failed(refused)
	}
	if res != nil {
		out.Result = res
	}
	return out
}
