package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// limited reports whether a server's rpm counts method: the calls callers
// make. List pages, discovery, subscriptions and the client's own requests
// are never refused by it, so a listing never fails or waits on a limited
// server.
func limited(method string) bool {
	switch method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead, mcp.MethodCompletionComplete:
		return true
	}
	return false
}

// rpmLimit is the client middleware that holds a server to rpm calls per
// minute, counted by counter under the server's name: one count for all
// callers of this replica (of all replicas once the counter is shared). A
// call over the limit is not sent; it fails with a limit_exceeded fault
// saying when to retry. When the counter cannot decide, the call goes ahead.
func rpmLimit(counter limits.Counter, server string, rpm int, log *slog.Logger) upstream.Middleware {
	refusal := "upstream " + server + ": request limit reached (" + strconv.Itoa(rpm) + " per minute)"
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			if !limited(method) {
				return next(ctx, method, params, opts)
			}
			d, err := counter.Take(ctx, server, rpm, time.Minute, time.Now())
			switch {
			case err != nil:
				log.Warn("request limit not checked; the call goes ahead", "server", server, "error", err.Error())
			case !d.Allowed:
				return upstream.Result{}, &fault.Fault{Class: fault.LimitExceeded, Message: refusal, RetryAfter: d.RetryAfter}
			}
			return next(ctx, method, params, opts)
		}
	}
}
