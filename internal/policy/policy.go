package policy

import (
	"slices"

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

// Policy decides which servers and tools a caller may use; it is immutable and safe for
// concurrent use.
type Policy struct {
	servers []Server
	byName  map[string]int
	byID    map[string]int
	byAlias map[string]int
}

// New returns the policy over servers, keeping their (config) order. The slice and its
// contents are copied. When two servers share a name, id or alias the first one wins lookups.
func New(servers []Server) *Policy {
	p := &Policy{
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
		if granted(c, s) && (scope == nil || p.inScope(i, scope)) {
			out = append(out, s.Name)
		}
	}
	return out
}

// ToolAllowed reports whether the caller may see/call upstream tool (bare name) on server (its
// name, id or alias): the server must be visible to the caller; the server's disallowed_tools
// must not list the tool and a non-empty allowed_tools must; and the caller's
// mcp_tool_permissions entries for the server's id and for its name (absent or empty = no
// restriction; both present = both must list the tool) must list it.
func (p *Policy) ToolAllowed(c *identity.Caller, server, tool string) bool {
	i, ok := p.lookup(server)
	if !ok || tool == "" {
		return false
	}
	s := &p.servers[i]
	if !granted(c, s) {
		return false
	}
	if slices.Contains(s.DisallowedTools, tool) {
		return false
	}
	if len(s.AllowedTools) > 0 && !slices.Contains(s.AllowedTools, tool) {
		return false
	}
	for _, key := range [...]string{s.ID, s.Name} {
		if key == "" {
			continue
		}
		if list := c.ToolPermissions[key]; len(list) > 0 && !slices.Contains(list, tool) {
			return false
		}
	}
	return true
}

// granted reports whether the caller's permissions make server s visible (scope aside).
func granted(c *identity.Caller, s *Server) bool {
	switch {
	case c == nil:
		return false
	case c.IsMaster:
		return true
	case slices.Contains(c.Servers, NoServers) || slices.Contains(c.AccessGroups, NoServers):
		return false
	case s.AllowAllKeys:
		return true
	case len(c.Servers) == 0 && len(c.AccessGroups) == 0:
		return true // no lists at all: every server
	case slices.Contains(c.Servers, AllServers):
		return true
	}
	for _, e := range c.Servers {
		if names(s, e) || inGroup(s, e) {
			return true
		}
	}
	for _, g := range c.AccessGroups {
		if inGroup(s, g) {
			return true
		}
	}
	// c.ToolPermissions is deliberately not consulted: its keys restrict tools, never grant
	// servers (LiteLLM issues #21954, #33397).
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
