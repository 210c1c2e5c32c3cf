package gateway

import (
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// offers reports whether a server that described itself as info can tell a
// listen anything of part, the share of the listen's filter it serves: a
// list change it announces or a resource it lets be subscribed to (part
// holds only URIs whose server offers subscribe); for a legacy upstream,
// whose session is followed, also its log lines (when it logs) and URL-mode
// elicitation completions. A server that offers nothing of it gets no
// upstream listen or follow at all: it could only refuse one, or hold it
// open saying nothing.
func offers(info *upstream.Info, part *Filter) bool {
	if info == nil {
		return false
	}
	caps := info.Capabilities
	switch {
	case part.ToolsListChanged && caps.ToolsListChanged(),
		part.PromptsListChanged && caps.PromptsListChanged(),
		part.ResourcesListChanged && caps.ResourcesListChanged(),
		len(part.ResourceSubscriptions) > 0:
		return true
	}
	return info.Era == mcp.EraLegacy && ((part.Log != nil && caps.HasLogging()) || part.ElicitationComplete)
}

// forgetLists drops the lists of server cached for op's caller's
// credentials (as a scoped and as an aggregate request sends them): a call
// may change the server's catalog, and a server without list-changed
// notifications, or one nobody follows, will not say so, so the caller's
// next list asks the server again.
func (g *Gateway) forgetLists(op *Operation, server string) {
	s := g.servers[server]
	if s == nil {
		return
	}
	single, multi := credentialKey(g.options(s, op, false)), credentialKey(g.options(s, op, true))
	if single == multi {
		g.cfg.Catalog.Forget(server, single)
		return
	}
	g.cfg.Catalog.Forget(server, single, multi)
}
