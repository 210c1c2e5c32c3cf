package catalog

import (
	"context"
	"fmt"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// catalogMethods are a server's lists, in the order Read asks for them.
var catalogMethods = [...]string{mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList}

// Read asks server for its whole catalog for q's caller: tools, prompts,
// resources and resource templates, one after the other, from the upstream
// and never from the cache (which they refresh, as any fetch does). An
// optional list the server does not offer is empty. The first failure ends
// it and is returned (ErrSkipped when the server's breaker is open).
// Discovery reads the catalogs it describes.
func (c *Catalog) Read(ctx context.Context, q Query, server string) error {
	s := c.servers[server]
	if s == nil {
		return fmt.Errorf("unknown server %q", server)
	}
	cred := ""
	if q.CredentialKey != nil {
		cred = q.CredentialKey(server)
	}
	for _, method := range catalogMethods {
		key := ListKey{Server: server, Method: method, Binding: q.Binding, Credentials: cred}
		if _, err := c.load(ctx, q, s, method, key); err != nil {
			return err
		}
	}
	return nil
}

// forgetter is a ListCache that can drop one server's lists fetched with
// given credentials, without advancing the server's generations.
type forgetter interface {
	Forget(ctx context.Context, server, credentials string) error
}

// Forget drops server's cached lists fetched with the credentials named by
// credentials (every binding's): a call through the gateway may have changed
// the server's catalog, and a server that sends no list-changed
// notifications will not say so. A cache that cannot forget by credentials
// drops all of server's lists instead.
func (c *Catalog) Forget(server string, credentials ...string) {
	ctx := context.Background()
	if f, ok := c.cache.(forgetter); ok {
		for _, cred := range credentials {
			if err := f.Forget(ctx, server, cred); err != nil {
				c.log.Warn("list cache not cleared after a call; its entries live until they expire", "server", server, "error", err.Error())
			}
		}
		return
	}
	for _, method := range catalogMethods {
		c.invalidate(server, method)
	}
}

// Forget drops server's entries fetched with credentials, for every method
// and binding: it advances their Forget count, so those entries are stale
// at once and swept as they are met. The counts are bounded as the entries
// are: when maxCacheEntries of them are held, the cache starts over.
func (c *MemoryListCache) Forget(_ context.Context, server, credentials string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.forgets == nil:
		c.forgets = map[string]uint64{}
	case len(c.forgets) >= maxCacheEntries:
		c.forgets, c.entries = map[string]uint64{}, nil
	}
	c.forgets[forgetKey(server, credentials)]++
	return nil
}
