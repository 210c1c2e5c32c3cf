package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/reqscope"
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

// WithPublicBase returns ctx carrying the gateway's public base URL as the caller reached it,
// for the authorize URLs the gateway hands out, made by base when first asked for: most
// requests hand out none, and making it was two allocations per request.
func WithPublicBase(ctx context.Context, base func() string) context.Context {
	return reqscope.With(ctx, reqscope.PublicBase, base)
}

// PublicBase is the public base URL ctx carries; "" when none.
func PublicBase(ctx context.Context) string {
	if base, _ := reqscope.Value(ctx, reqscope.PublicBase).(func() string); base != nil {
		return base()
	}
	return ""
}

// resolveCallerTokens looks up, once per operation, the caller's tokens for the visible
// servers whose credential is the caller's own: the vault's token for the caller first; when
// there is none and the operation's scope is that one server, the bearer token the caller
// itself presented (a token its MCP client obtained through the client-run OAuth flow). A
// server the caller holds none for stays absent (options then sends no token and discovery
// skips it).
func (g *Gateway) resolveCallerTokens(ctx context.Context, op *Operation) {
	if op.callerTokens != nil || (g.cfg.CallerTokens == nil && op.Credentials.Bearer == "") {
		return
	}
	op.callerTokens = map[string]string{}
	visible := g.visible(op)
	for _, name := range visible {
		s := g.servers[name]
		if s == nil || !s.CallerToken {
			continue
		}
		if g.cfg.CallerTokens != nil {
			if tok, err := g.cfg.CallerTokens.Token(ctx, op.Caller, name); err == nil && tok != "" {
				op.callerTokens[name] = tok
				continue
			}
		}
		if len(visible) == 1 && op.Credentials.Bearer != "" {
			op.callerTokens[name] = op.Credentials.Bearer
		}
	}
}

// needsCallerToken reports whether server takes the caller's own token and the caller holds
// none.
func (g *Gateway) needsCallerToken(op *Operation, server string) bool {
	s := g.servers[server]
	return s != nil && s.CallerToken && op.callerTokens[server] == ""
}

// authorizeWait bounds how long a legacy caller's call waits, after its user accepted the
// URL elicitation, for the authorization to complete in the browser.
const authorizeWait = 2 * time.Minute

// authorizePoll is how often the vault is asked meanwhile.
const authorizePoll = 500 * time.Millisecond

// authorizeKey names the gateway's own URL-mode input request in a modern input_required.
const authorizeKey = "mcpgw/authorize"

// authorizationRequired answers a call to a server whose credential is the caller's own token
// when the caller holds none. A 2025-11-25 caller whose session declared URL-mode elicitation
// is sent elicitation/create (mode "url") naming the authorize link; once it accepts, the call
// waits (authorizeWait) for the authorization to complete and then proceeds (proceed true). A
// 2026-07-28 caller that declared URL-mode elicitation gets an input_required result asking
// for it, whose retry proceeds once the token is there. Any other caller, or one that declined,
// gets authorizationError.
func (g *Gateway) authorizationRequired(ctx context.Context, op *Operation, server string) (out Outcome, proceed bool) {
	link := ""
	if g.cfg.CallerTokens != nil {
		link = g.cfg.CallerTokens.AuthorizeURL(ctx, op.Caller, server)
	}
	_, urlMode := ElicitModes(op.ClientCaps)
	switch {
	case link == "" || !urlMode:
	case op.modern() && op.Method == mcp.MethodToolsCall && g.cfg.Continuations != nil:
		return g.askToAuthorize(op, server, link), false
	case op.Interactions != nil && op.Interactions.Elicit != nil:
		if g.elicitAuthorization(ctx, op, server, link) {
			return Outcome{}, true
		}
	}
	return authorizationError(server, link), false
}

// authorizeMessage is what the user is shown.
func authorizeMessage(server string) string {
	return "Authorize the gateway to use " + server + " on your behalf"
}

// authorizationError is the URL-elicitation-required error of 2025-11-25 (-32042,
// data.elicitations naming the authorize link in URL mode) with data.authorizeUrl and
// data.server; a modern caller sees it as the fault encoding turns -32042 into (a tool error
// naming the URL for tools/call, else -32602 naming it).
func authorizationError(server, link string) Outcome {
	msg := "Server '" + server + "' needs your authorization before it can be used"
	data := map[string]any{"server": server}
	if link != "" {
		msg += "; open " + link + " to authorize it, then retry"
		data["authorizeUrl"] = link
		data["elicitations"] = []map[string]string{{"mode": "url", "elicitationId": "authorize-" + server,
			"url": link, "message": authorizeMessage(server)}}
	}
	b, _ := json.Marshal(data)
	return Failed(&fault.Fault{Class: fault.UpstreamRPC, Message: msg,
		RPC: &jsonrpc.Error{Code: mcp.CodeURLElicitationRequiredLegacy, Message: msg, Data: b}})
}

// elicitAuthorization asks a legacy caller's user to open link and, once accepted, waits for
// the token (at most authorizeWait, within ctx); it reports whether the token arrived.
func (g *Gateway) elicitAuthorization(ctx context.Context, op *Operation, server, link string) bool {
	params, _ := json.Marshal(map[string]string{"mode": "url", "elicitationId": "authorize-" + server,
		"url": link, "message": authorizeMessage(server)})
	res, err := op.Interactions.Elicit(ctx, params)
	if action, _ := stringMember(res, "action"); err != nil || action != "accept" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, authorizeWait)
	defer cancel()
	tick := time.NewTicker(authorizePoll)
	defer tick.Stop()
	for {
		if tok, err := g.cfg.CallerTokens.Token(ctx, op.Caller, server); err == nil && tok != "" {
			op.callerTokens[server] = tok
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// askToAuthorize suspends a modern caller's call with a URL-mode elicitation naming link; its
// sealed continuation (Authorize) makes the retry run the call again once the token is there.
func (g *Gateway) askToAuthorize(op *Operation, server, link string) Outcome {
	digest, err := operationDigest(op.Method, op.Params)
	s := g.servers[server]
	if err != nil || s == nil {
		return authorizationError(server, link)
	}
	tok, err := g.seal(continuation{Principal: op.binding(), Operation: digest, Server: server, Target: s.TargetDigest,
		Authorize: true, Expires: time.Now().Add(continuationTTL).UnixMilli()})
	if err != nil {
		return authorizationError(server, link)
	}
	b, _ := json.Marshal(map[string]any{"resultType": mcp.ResultTypeInputRequired,
		"inputRequests": map[string]any{authorizeKey: map[string]any{"method": "elicitation/create",
			"params": map[string]string{"mode": "url", "message": authorizeMessage(server), "url": link}}},
		"requestState": tok})
	return Outcome{Result: b, InputRequired: true}
}

// resumeAuthorized runs again a call suspended by askToAuthorize: without the continuation's
// members, as the caller first sent it; a declined elicitation ends in authorizationError.
func (g *Gateway) resumeAuthorized(ctx context.Context, op *Operation, server string) Outcome {
	answer := jsonrpc.Member(jsonrpc.Member(op.Params, "inputResponses"), authorizeKey)
	if action, _ := stringMember(answer, "action"); action != "accept" {
		link := ""
		if g.cfg.CallerTokens != nil {
			link = g.cfg.CallerTokens.AuthorizeURL(ctx, op.Caller, server)
		}
		return authorizationError(server, link)
	}
	params, err := removeMember(op.Params, "requestState")
	if err == nil {
		params, err = removeMember(params, "inputResponses")
	}
	if err != nil {
		return invalidContinuation()
	}
	op.Params = params
	return g.callNamed(ctx, op, true)
}

// refusedCallerToken handles an upstream's 401 to the caller's own token: the vault refreshes
// it once (retry reports whether the operation may be sent again with the new token) or drops
// it, and the caller is then asked to authorize again.
func (g *Gateway) refusedCallerToken(ctx context.Context, op *Operation, server string, out Outcome) (Outcome, bool) {
	s := g.servers[server]
	if s == nil || !s.CallerToken || g.cfg.CallerTokens == nil || out.Fault == nil || out.Fault.Class != fault.AuthRequired {
		return out, false
	}
	if op.Credentials.Bearer != "" && op.callerTokens[server] == op.Credentials.Bearer {
		return out, false // the caller's own token: its client refreshes it, the vault holds none
	}
	tok, err := g.cfg.CallerTokens.Refused(ctx, op.Caller, server, op.callerTokens[server])
	if err == nil && tok != "" && tok != op.callerTokens[server] {
		op.callerTokens[server] = tok
		return out, true
	}
	delete(op.callerTokens, server)
	again, proceed := g.authorizationRequired(ctx, op, server)
	return again, proceed
}
