package catalog

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Vetter judges the tool definitions upstreams list (internal/pinning, wired by
// internal/app): every tools/list fresh from an upstream is vetted before it is served or
// cached, and a tool it hides is left out of every listing (cached or not) and refused when
// called, so listing and calling agree.
type Vetter interface {
	// Vet is given server's tools/list as the upstream sent it.
	Vet(ctx context.Context, server string, items []json.RawMessage)
	// Hidden reports, from what this replica holds, whether tool is kept from callers.
	Hidden(server, tool string) (reason string, hidden bool)
	// Check is Hidden for a call: it may read shared state first.
	Check(ctx context.Context, server, tool string) (reason string, hidden bool)
}

// vetList vets a fresh list of server when it is a tools/list and a Vetter is set.
func (c *Catalog) vetList(ctx context.Context, server, method string, items []json.RawMessage) {
	if c.vet != nil && method == mcp.MethodToolsList {
		c.vet.Vet(ctx, server, items)
	}
}

// vetHidden reports whether a listed tool is kept from callers.
func (c *Catalog) vetHidden(server, tool string) bool {
	if c.vet == nil {
		return false
	}
	_, hidden := c.vet.Hidden(server, tool)
	return hidden
}

// Quarantined reports whether a call to server's tool must be refused because the Vetter
// hides it, and why ("changed", "guardrail", "unchecked").
func (c *Catalog) Quarantined(ctx context.Context, server, tool string) (string, bool) {
	if c.vet == nil {
		return "", false
	}
	return c.vet.Check(ctx, server, tool)
}
