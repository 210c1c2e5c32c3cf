package policy

import (
	"slices"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// Step is one check of the object_permission chain and its verdict.
type Step struct {
	// Check names what was checked: "server_exists", "master", "no_mcp_servers",
	// "allow_all_keys", "level_grants_server", "allowed_tools", "disallowed_tools",
	// "mcp_tool_permissions", "blocked_tools".
	Check string `json:"check"`
	// Level is the level the check read: "key" (the caller's own lists), "team", "user",
	// "end_user", "organization", or "server" for the server's own settings.
	Level string `json:"level"`
	// Passed says the check let the tool through.
	Passed bool `json:"passed"`
	// Detail says why, in words (names of servers and tools only).
	Detail string `json:"detail,omitempty"`
}

// Explain traces ToolAllowed for caller, server and tool: every check it made in order, ending
// at the first that refused (or after the last, when the tool is allowed). Its verdict is
// ToolAllowed's: the last step passed exactly when ToolAllowed is true.
func (p *Policy) Explain(c *identity.Caller, server, tool string) []Step {
	i, ok := p.lookup(server)
	if !ok || tool == "" || c == nil {
		return []Step{{Check: "server_exists", Level: "server", Detail: "no such server (or no tool, or no caller)"}}
	}
	s := &p.servers[i]
	steps, ok := p.explainGranted(c, s)
	if !ok {
		return steps
	}
	add := func(st Step) bool { steps = append(steps, st); return st.Passed }
	if !add(Step{Check: "disallowed_tools", Level: "server", Passed: !slices.Contains(s.DisallowedTools, tool)}) {
		return steps
	}
	if !add(Step{Check: "allowed_tools", Level: "server", Passed: len(s.AllowedTools) == 0 || slices.Contains(s.AllowedTools, tool),
		Detail: listDetail(len(s.AllowedTools) == 0)}) {
		return steps
	}
	levels := append([]identity.Grant{{Level: "key", ToolPermissions: c.ToolPermissions, BlockedTools: c.BlockedTools}}, c.Grants...)
	for _, g := range levels {
		if !add(Step{Check: "mcp_tool_permissions", Level: g.Level, Passed: toolPermitted(g.ToolPermissions, s, tool)}) {
			return steps
		}
		if !add(Step{Check: "blocked_tools", Level: g.Level, Passed: !p.blocked(g.BlockedTools, s, tool)}) {
			return steps
		}
	}
	return steps
}

func listDetail(empty bool) string {
	if empty {
		return "no list: every tool"
	}
	return ""
}

// explainGranted traces granted; ok is its verdict.
func (p *Policy) explainGranted(c *identity.Caller, s *Server) (steps []Step, ok bool) {
	switch {
	case c.IsMaster:
		return []Step{{Check: "master", Level: "key", Passed: true, Detail: "the master key sees every server"}}, true
	case denies(c):
		return []Step{{Check: "no_mcp_servers", Level: "any", Detail: NoServers + " at some level denies every server"}}, false
	case s.AllowAllKeys && !(p.opts.AllowAllKeysRespectsScope && hasLists(c.Servers, c.AccessGroups)):
		return []Step{{Check: "allow_all_keys", Level: "server", Passed: true, Detail: "allow_all_keys server"}}, true
	}
	own := levelGrants(c.Servers, c.AccessGroups, s, p.opts.RequireKeyAccessDefined)
	steps = append(steps, Step{Check: "level_grants_server", Level: "key", Passed: own, Detail: grantDetail(c.Servers, c.AccessGroups, p.opts.RequireKeyAccessDefined)})
	if !own {
		return steps, false
	}
	for _, g := range c.Grants {
		required := p.opts.RequireEndUserAccessDefined && g.Level == identity.LevelEndUser
		ok := levelGrants(g.Servers, g.AccessGroups, s, required)
		steps = append(steps, Step{Check: "level_grants_server", Level: g.Level, Passed: ok, Detail: grantDetail(g.Servers, g.AccessGroups, required)})
		if !ok {
			return steps, false
		}
	}
	return steps, true
}

func grantDetail(servers, groups []string, required bool) string {
	switch {
	case !hasLists(servers, groups) && required:
		return "no lists, and lists are required at this level"
	case !hasLists(servers, groups):
		return "no lists: no restriction"
	case slices.Contains(servers, AllServers):
		return AllServers
	}
	return "mcp_servers / mcp_access_groups"
}
