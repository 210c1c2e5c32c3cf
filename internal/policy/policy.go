package policy

import (
	"slices"
	"strings"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// NoServers in a caller's mcp_servers denies every server, overriding access groups and
// allow_all_keys.
const NoServers = "no-mcp-servers"

// AllServers in a caller's mcp_servers grants every server.
const AllServers = "all-proxy-mcpservers"

// Server is what the policy needs to know about one configured MCP server.
type Server struct {
	// Name is the server name (the mcp_servers YAML key).
	Name string
	// ID is server_id; permissions refer to it or to Name.
	ID string
	// Alias is the display alias ("" when unset).
	Alias string
	// AccessGroups are the access groups the server belongs to.
	AccessGroups []string
	// AllowAllKeys makes the server visible to every caller not denied by NoServers.
	AllowAllKeys bool
	// AllowedTools, when non-empty, are the only upstream tool names served.
	AllowedTools []string
	// DisallowedTools are upstream tool names never served (they win over AllowedTools).
	DisallowedTools []string
}

// Options are the general_settings that change how levels combine; the zero value is LiteLLM's
// defaults.
type Options struct {
	// Separator joins a server's prefix and a tool's name in prefixed tool names, which
	// blocked_tools entries may use; "" means "-".
	Separator string
	// RequireKeyAccessDefined (require_key_mcp_access_defined): a caller whose own lists are
	// empty gets no server instead of inheriting its other levels' servers.
	RequireKeyAccessDefined bool
	// RequireEndUserAccessDefined (require_end_user_mcp_access_defined): an end-user level
	// without lists grants no server instead of restricting nothing.
	RequireEndUserAccessDefined bool
	// AllowAllKeysRespectsScope (mcp_allow_all_keys_respects_mcp_scope): allow_all_keys servers
	// are not added for a caller whose own lists are set; it sees them only when its levels
	// grant them.
	AllowAllKeysRespectsScope bool
}

// Policy decides which servers and tools a caller may use; it is immutable and safe for
// concurrent use.
type Policy struct {
	opts    Options
	servers []Server
	byName  map[string]int
	byID    map[string]int
	byAlias map[string]int
}

// New returns the policy over servers, keeping their (config) order. The slice and its
// contents are copied. When two servers share a name, id or alias the first one wins lookups.
func New(servers []Server, opts Options) *Policy {
	if opts.Separator == "" {
		opts.Separator = "-"
	}
	p := &Policy{
		opts:    opts,
		servers: make([]Server, len(servers)),
		byName:  make(map[string]int, len(servers)),
		byID:    make(map[string]int, len(servers)),
		byAlias: make(map[string]int, len(servers)),
	}
	for i, s := range servers {
		p.servers[i] = cloneServer(s)
		for _, idx := range [...]struct {
			m   map[string]int
			key string
		}{{p.byName, s.Name}, {p.byID, s.ID}, {p.byAlias, s.Alias}} {
			if _, dup := idx.m[idx.key]; idx.key != "" && !dup {
				idx.m[idx.key] = i
			}
		}
	}
	return p
}

func cloneServer(s Server) Server {
	s.AccessGroups = slices.Clone(s.AccessGroups)
	s.AllowedTools = slices.Clone(s.AllowedTools)
	s.DisallowedTools = slices.Clone(s.DisallowedTools)
	return s
}

func (p *Policy) lookup(key string) (int, bool) {
	if key == "" {
		return 0, false
	}
	for _, m := range [...]map[string]int{p.byName, p.byID, p.byAlias} {
		if i, ok := m[key]; ok {
			return i, true
		}
	}
	return 0, false
}

// Visible returns the names of servers the caller may use, in config order (nil when none).
// scope (server names, ids, aliases or access-group names from a scoped URL or x-mcp-servers;
// nil = no scoping) narrows, never grants; unknown scope entries match nothing. A nil caller
// sees nothing.
func (p *Policy) Visible(c *identity.Caller, scope []string) []string {
	var out []string
	for i := range p.servers {
		s := &p.servers[i]
		if p.granted(c, s) && (scope == nil || p.inScope(i, scope)) {
			out = append(out, s.Name)
		}
	}
	return out
}

// ToolAllowed reports whether the caller may see/call upstream tool (bare name) on server (its
// name, id or alias): the server must be visible to the caller; the server's disallowed_tools
// must not list the tool and a non-empty allowed_tools must; at every level (the caller's own
// and each of its Grants) the mcp_tool_permissions entries for the server's id and for its
// name (absent or empty = no restriction; both present = both must list the tool) must list
// it; and no level's blocked_tools may name it.
func (p *Policy) ToolAllowed(c *identity.Caller, server, tool string) bool {
	i, ok := p.lookup(server)
	if !ok || tool == "" {
		return false
	}
	s := &p.servers[i]
	if !p.granted(c, s) {
		return false
	}
	if slices.Contains(s.DisallowedTools, tool) {
		return false
	}
	if len(s.AllowedTools) > 0 && !slices.Contains(s.AllowedTools, tool) {
		return false
	}
	if !toolPermitted(c.ToolPermissions, s, tool) || p.blocked(c.BlockedTools, s, tool) {
		return false
	}
	for _, g := range c.Grants {
		if !toolPermitted(g.ToolPermissions, s, tool) || p.blocked(g.BlockedTools, s, tool) {
			return false
		}
	}
	return true
}

// toolPermitted reports whether one level's mcp_tool_permissions let tool be used on s.
func toolPermitted(perms map[string][]string, s *Server, tool string) bool {
	for _, key := range [...]string{s.ID, s.Name} {
		if key == "" {
			continue
		}
		if list := perms[key]; len(list) > 0 && !slices.Contains(list, tool) {
			return false
		}
	}
	return true
}

// blocked reports whether a blocked_tools list names tool on s: by its bare name, or by its
// prefixed name under any of the server's prefixes (alias, name, id; spaces as "_").
func (p *Policy) blocked(list []string, s *Server, tool string) bool {
	for _, e := range list {
		if e == tool {
			return true
		}
		prefix, bare, ok := strings.Cut(e, p.opts.Separator)
		if !ok || bare != tool {
			continue
		}
		for _, name := range [...]string{s.Alias, s.Name, s.ID} {
			if name != "" && prefix == strings.ReplaceAll(name, " ", "_") {
				return true
			}
		}
	}
	return false
}

// granted reports whether the caller's levels make server s visible (scope aside): the master
// caller sees everything; a deny sentinel at any level denies everything; allow_all_keys
// servers are visible to every other caller (unless AllowAllKeysRespectsScope and the caller's
// own lists are set); otherwise the caller's own lists and every Grant must each grant s.
func (p *Policy) granted(c *identity.Caller, s *Server) bool {
	switch {
	case c == nil:
		return false
	case c.IsMaster:
		return true
	case denies(c):
		return false
	case s.AllowAllKeys && !(p.opts.AllowAllKeysRespectsScope && hasLists(c.Servers, c.AccessGroups)):
		return true
	}
	if !levelGrants(c.Servers, c.AccessGroups, s, p.opts.RequireKeyAccessDefined) {
		return false
	}
	for _, g := range c.Grants {
		required := p.opts.RequireEndUserAccessDefined && g.Level == identity.LevelEndUser
		if !levelGrants(g.Servers, g.AccessGroups, s, required) {
			return false
		}
	}
	// No level's ToolPermissions is consulted: its keys restrict tools, never grant servers
	// (LiteLLM issues #21954, #33397).
	return true
}

// denies reports whether any level carries the NoServers sentinel.
func denies(c *identity.Caller) bool {
	if slices.Contains(c.Servers, NoServers) || slices.Contains(c.AccessGroups, NoServers) {
		return true
	}
	for _, g := range c.Grants {
		if slices.Contains(g.Servers, NoServers) || slices.Contains(g.AccessGroups, NoServers) {
			return true
		}
	}
	return false
}

func hasLists(servers, groups []string) bool { return len(servers) > 0 || len(groups) > 0 }

// levelGrants reports whether one level's lists grant s: no lists grant every server (unless
// required, when they grant none); AllServers in servers grants every server; otherwise a
// servers entry grants the server it names and the servers in the access group it names, and
// a groups entry the servers in that group.
func levelGrants(servers, groups []string, s *Server, required bool) bool {
	switch {
	case !hasLists(servers, groups):
		return !required
	case slices.Contains(servers, AllServers):
		return true
	}
	for _, e := range servers {
		if names(s, e) || inGroup(s, e) {
			return true
		}
	}
	for _, g := range groups {
		if inGroup(s, g) {
			return true
		}
	}
	return false
}

// names reports whether e is s's name, id or alias.
func names(s *Server, e string) bool {
	return e != "" && (e == s.Name || e == s.ID || e == s.Alias)
}

// inGroup reports whether s belongs to access group g.
func inGroup(s *Server, g string) bool {
	return g != "" && slices.Contains(s.AccessGroups, g)
}

// inScope reports whether server i is selected by one of the scope entries: the one server an
// entry names (with lookup's precedence, so another server's id or alias never selects it), or
// an access group it belongs to.
func (p *Policy) inScope(i int, scope []string) bool {
	for _, e := range scope {
		if j, ok := p.lookup(e); ok && j == i {
			return true
		}
		if inGroup(&p.servers[i], e) {
			return true
		}
	}
	return false
}
