package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/policy"
)

// ruleFilter is the listing side of Config.Rules: it hides a tool a rule
// refuses without its arguments (nil when there are no rules). A rule whose
// verdict depends on args does not decide at listing.
func (g *Gateway) ruleFilter(op *Operation) func(server string, tool json.RawMessage) bool {
	if g.cfg.Rules.Len() == 0 {
		return nil
	}
	return func(server string, def json.RawMessage) bool {
		name, _ := jsonrpc.StringMember(def, "name")
		_, denied := g.cfg.Rules.Denying(policy.Subject{Caller: op.Caller, Server: server, Tool: name, Definition: def})
		return !denied
	}
}

// ruleRefusal is the calling side of Config.Rules: the in-band refusal of
// a tools/call a rule refuses (nil when none does). The tool's definition
// comes from the server's list as the caller sees it; when that list cannot
// be had the rules see the name alone (every annotation at its default).
func (g *Gateway) ruleRefusal(ctx context.Context, op *Operation, q catalog.Query, server, bare string) json.RawMessage {
	if g.cfg.Rules.Len() == 0 {
		return nil
	}
	def, _ := g.cfg.Catalog.Tool(ctx, q, server, bare)
	rule, denied := g.cfg.Rules.Denying(policy.Subject{Caller: op.Caller, Server: server, Tool: bare, Definition: def,
		Calling: true, Args: jsonrpc.Member(op.Params, "arguments")})
	if !denied {
		return nil
	}
	return fault.ToolError("Tool '" + bare + "' is refused by policy rule '" + rule + "' on server '" + server + "'. Contact proxy admin for access.")
}

// Explanation says whether a caller may use one tool and what decided it.
type Explanation struct {
	Allowed bool   `json:"allowed"`
	Server  string `json:"server"` // the server's name ("" when unknown)
	Tool    string `json:"tool"`
	// Permission is the object_permission chain (policy.Policy.Explain);
	// PermissionAllowed its verdict.
	Permission        []policy.Step `json:"permission"`
	PermissionAllowed bool          `json:"permission_allowed"`
	// Rules is every mcp_policies rule's outcome, in config order.
	Rules []policy.RuleOutcome `json:"rules"`
	// Calling says arguments were given (the answer is a tools/call's);
	// without them it is the listing's, where a rule needing args does not
	// decide.
	Calling bool `json:"calling"`
	// DefinitionKnown says the tool's definition (its annotations) was
	// found in the server's list; without it rules saw defaults.
	DefinitionKnown bool `json:"definition_known"`
}

// Explain answers whether caller may list (args nil) or call (args set) tool
// on server (its name, id or alias), with every permission level and rule
// that decided it. It decides exactly as listing and calling do.
func (g *Gateway) Explain(ctx context.Context, caller *identity.Caller, server, tool string, args json.RawMessage) Explanation {
	s := g.lookupServer(server)
	ex := Explanation{Tool: tool, Calling: args != nil, Rules: []policy.RuleOutcome{}}
	if s != nil {
		ex.Server = s.Name
		server = s.Name
	}
	ex.Permission = g.cfg.Policy.Explain(caller, server, tool)
	ex.PermissionAllowed = len(ex.Permission) > 0 && ex.Permission[len(ex.Permission)-1].Passed
	if s == nil {
		return ex
	}
	var def json.RawMessage
	if ex.PermissionAllowed && g.cfg.Rules.Len() > 0 {
		op := &Operation{Caller: caller}
		def, ex.DefinitionKnown = g.cfg.Catalog.Tool(ctx, g.query(op, g.visible(op)), server, tool)
	}
	if out := g.cfg.Rules.Explain(policy.Subject{Caller: caller, Server: server, Tool: tool, Definition: def, Calling: args != nil, Args: args}); out != nil {
		ex.Rules = out
	}
	ex.Allowed = ex.PermissionAllowed
	for _, o := range ex.Rules {
		ex.Allowed = ex.Allowed && !o.Denies
	}
	return ex
}

// lookupServer finds a server by name, then id, then alias.
func (g *Gateway) lookupServer(key string) *Server {
	if s := g.servers[key]; s != nil {
		return s
	}
	for _, match := range [...]func(*Server) bool{
		func(s *Server) bool { return s.ID == key },
		func(s *Server) bool { return s.Alias == key },
	} {
		for _, s := range g.cfg.Servers {
			if key != "" && match(s) {
				return s
			}
		}
	}
	return nil
}
