package catalog

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Tool returns the definition server lists for its upstream tool bare, as
// q's caller sees the list (from the cache when the upstream allowed it,
// else fetched); false when the list cannot be had or does not name it.
func (c *Catalog) Tool(ctx context.Context, q Query, server, bare string) (json.RawMessage, bool) {
	s := c.servers[server]
	if s == nil || bare == "" {
		return nil, false
	}
	items, err := c.fetch(ctx, q, s, mcp.MethodToolsList)
	if err != nil {
		return nil, false
	}
	for _, it := range items {
		if name, ok := stringMember(it, "name"); ok && name == bare {
			return it, true
		}
	}
	return nil, false
}
