package upstream

import (
	"context"
	"encoding/json"
)

// CallFunc sends one request to the upstream and returns its result: the
// shape of Client.Call.
type CallFunc func(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error)

// Middleware wraps the path of every request sent through Client.Call
// (Config.Middleware): metrics, traces, limits and guardrails observe or
// change the method, params, result and error there, or answer without
// calling next. An error a middleware returns is logged and classified
// (Classify) like one from the upstream.
//
// What passes through it: every Call, so the typed helpers (CallTool,
// GetPrompt, ReadResource, Complete), Listen, Discover's server/discover,
// and every page of a list walk (List and its shorthands, pooled or
// ephemeral, including the tools/list a stale Mcp-Param header makes the
// client fetch again). What does not: the conversation's own requests (the
// era probe, the server/discover that starts a modern conversation,
// initialize, notifications/cancelled), Info, and the answers to
// server→client requests.
//
// A result's Raw may be shared: an unchanged list page comes back as the
// very bytes the client keeps for the next walk and other callers' listings
// were read from. A middleware that changes a result replaces Raw (a copy
// it made); it never writes into it.
type Middleware func(next CallFunc) CallFunc

// chain wraps end in mws, the first outermost; nil when there are none, so
// a client without middleware calls end directly.
func chain(mws []Middleware, end CallFunc) CallFunc {
	if len(mws) == 0 {
		return nil
	}
	f := end
	for i := len(mws) - 1; i >= 0; i-- {
		f = mws[i](f)
	}
	return f
}
