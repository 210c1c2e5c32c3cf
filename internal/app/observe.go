package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// observeCalls is the client middleware that records every request the
// client sends to server, innermost (after the limits), so a call a limit
// refused is not counted as sent. Its context carries what sinks derive
// (a CLIENT span), nested under the downstream request's.
func observeCalls(o *observe.Observer, server string) upstream.Middleware {
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			c := &observe.Call{Server: server, Method: method, Target: callTarget(method, params)}
			ctx, span := o.Call(ctx, c)
			res, err := next(ctx, method, params, opts)
			if err != nil {
				c.Fault = callFault(err)
			}
			span.End()
			return res, err
		}
	}
}

// callTarget is the tool or prompt name or resource URI params name.
func callTarget(method string, params json.RawMessage) string {
	key := mcp.NameParam(method)
	if key == "" {
		return ""
	}
	s, _ := jsonrpc.StringMember(params, key)
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}

// callFault classifies an upstream call's failure as the gateway answers it
// (see gateway's failure): the upstream's own JSON-RPC error, a fault a
// middleware answered with, or the class of the transport failure.
func callFault(err error) fault.Class {
	var re *upstream.RPCError
	if errors.As(err, &re) {
		return fault.UpstreamRPC
	}
	var own *fault.Fault
	if errors.As(err, &own) {
		return own.Class
	}
	return catalog.UpstreamFault(upstream.Classify(err), "").Class
}

// newObserver builds the observer every generation reports to: the access
// log (when the logger writes INFO lines), then the sinks the
// other observers add; nil (nothing observed, nothing spent) when there are none.
func newObserver(o options, extra ...observe.Sink) *observe.Observer {
	var sinks []observe.Sink
	if o.log.Enabled(context.Background(), slog.LevelInfo) {
		sinks = append(sinks, observe.NewAccessLog(o.log))
	}
	return observe.New(append(sinks, extra...)...)
}
