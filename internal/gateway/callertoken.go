package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// CallerTokens supplies callers' own OAuth tokens for the servers whose credential is the
// caller's (Server.CallerToken): the per-user token vault.
type CallerTokens interface {
	// Token is caller's current token for server, refreshed when due; "" (and an error)
	// when the caller holds none.
	Token(ctx context.Context, caller *identity.Caller, server string) (string, error)
	// Refused reports that server refused token (HTTP 401): it returns a token to retry with,
	// or an error when the caller must authorize again (the token is then dropped).
	Refused(ctx context.Context, caller *identity.Caller, server, token string) (string, error)
	// AuthorizeURL is the URL at which caller authorizes server; "" when none can be made.
	AuthorizeURL(ctx context.Context, caller *identity.Caller, server string) string
}

type publicBaseKey struct{}

// WithPublicBase returns ctx carrying the gateway's public base URL as the caller reached it,
// for the authorize URLs the gateway hands out.
func WithPublicBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, publicBaseKey{}, base)
}

// PublicBase is the public base URL ctx carries; "" when none.
func PublicBase(ctx context.Context) string {
	s, _ := ctx.Value(publicBaseKey{}).(string)
	return s
}

// resolveCallerTokens looks up, once per operation, the caller's tokens for the visible
// servers whose credential is the caller's own; a server the caller holds none for stays
// absent (options then sends no token and discovery skips it).
func (g *Gateway) resolveCallerTokens(ctx context.Context, op *Operation) {
	if g.cfg.CallerTokens == nil || op.callerTokens != nil {
		return
	}
	op.callerTokens = map[string]string{}
	for _, name := range g.visible(op) {
		s := g.servers[name]
		if s == nil || !s.CallerToken {
			continue
		}
		if tok, err := g.cfg.CallerTokens.Token(ctx, op.Caller, name); err == nil && tok != "" {
			op.callerTokens[name] = tok
		}
	}
}

// needsCallerToken reports whether server takes the caller's own token and the caller holds
// none.
func (g *Gateway) needsCallerToken(op *Operation, server string) bool {
	s := g.servers[server]
	return s != nil && s.CallerToken && op.callerTokens[server] == ""
}

// authorizationRequired answers a request for a server whose credential is the caller's own
// token when the caller holds none: the URL-elicitation-required error of 2025-11-25
// (-32042, data.elicitations naming the authorize URL in URL mode) with data.authorizeUrl
// and data.server; a modern caller sees it as the fault encoding turns -32042 into (a tool
// error naming the URL for tools/call, else -32602 naming it).
func (g *Gateway) authorizationRequired(ctx context.Context, op *Operation, server string) Outcome {
	link := ""
	if g.cfg.CallerTokens != nil {
		link = g.cfg.CallerTokens.AuthorizeURL(ctx, op.Caller, server)
	}
	msg := "Server '" + server + "' needs your authorization before it can be used"
	data := map[string]any{"server": server}
	if link != "" {
		msg += "; open " + link + " to authorize it, then retry"
		data["authorizeUrl"] = link
		data["elicitations"] = []map[string]string{{"mode": "url", "elicitationId": "authorize-" + server,
			"url": link, "message": "Authorize the gateway to use " + server + " on your behalf"}}
	}
	b, _ := json.Marshal(data)
	return Failed(&fault.Fault{Class: fault.UpstreamRPC, Message: msg,
		RPC: &jsonrpc.Error{Code: mcp.CodeURLElicitationRequiredLegacy, Message: msg, Data: b}})
}

// refusedCallerToken handles an upstream's 401 to the caller's own token: the vault refreshes
// it once (retry reports whether the operation may be sent again with the new token) or drops
// it, and the caller is then asked to authorize again.
func (g *Gateway) refusedCallerToken(ctx context.Context, op *Operation, server string, out Outcome) (Outcome, bool) {
	s := g.servers[server]
	if s == nil || !s.CallerToken || g.cfg.CallerTokens == nil || out.Fault == nil || out.Fault.Class != fault.AuthRequired {
		return out, false
	}
	tok, err := g.cfg.CallerTokens.Refused(ctx, op.Caller, server, op.callerTokens[server])
	if err == nil && tok != "" && tok != op.callerTokens[server] {
		op.callerTokens[server] = tok
		return out, true
	}
	delete(op.callerTokens, server)
	return g.authorizationRequired(ctx, op, server), false
}
