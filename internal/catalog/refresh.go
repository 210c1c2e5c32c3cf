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
	for _, method := range catalogMethods {
		key := q.listKey(server, method)
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
// and binding: it records the forget on the credentials' state, so those
// entries are stale at once (swept as they are met) and a fetch with these
// credentials begun before it stores nothing. It is one map update, not a
// sweep: Forget runs on every tools/call.
//
// Credentials with no entries leave a trace of the forget, for the fetches
// that may be in flight with them; traces are bounded: when the states of
// credentials reach maxCredStates, every trace is dropped at once and the
// floor they read as advances (a fetch then in flight with credentials
// without entries stores nothing). No entry is ever dropped for it, so
// forgetting unknown credentials cannot flush anyone's lists.
func (c *MemoryListCache) Forget(_ context.Context, server, credentials string) error {
	fk := forgetKey(server, credentials)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	if cs := c.creds[fk]; cs != nil {
		cs.forgot = c.clock
		return nil
	}
	if c.creds == nil {
		c.creds = map[string]*credState{}
	}
	if len(c.creds) >= maxCredStates {
		c.floor = c.clock
		for k, cs := range c.creds {
			c.tidyLocked(k, cs)
		}
		return nil // the new floor stales fk's fetches as a trace would
	}
	c.creds[fk] = &credState{forgot: c.clock}
	return nil
}

// maxCredStates bounds the credentials' states: one per credentials with
// entries (at most maxCacheEntries) plus forget traces.
const maxCredStates = 2 * maxCacheEntries
