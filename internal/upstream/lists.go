package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// ListTools returns every tool of the upstream, walking all pages.
func (c *Client) ListTools(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	return c.listAll(ctx, mcp.MethodToolsList, "tools", nil, opts)
}

// ListPrompts returns every prompt; none when the upstream does not offer
// prompts.
func (c *Client) ListPrompts(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	return c.listAll(ctx, mcp.MethodPromptsList, "prompts", mcp.ServerCapabilities.HasPrompts, opts)
}

// ListResources returns every resource; none when the upstream does not offer
// resources.
func (c *Client) ListResources(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	return c.listAll(ctx, mcp.MethodResourcesList, "resources", mcp.ServerCapabilities.HasResources, opts)
}

// ListResourceTemplates returns every resource template; none when the
// upstream does not offer resources.
func (c *Client) ListResourceTemplates(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	return c.listAll(ctx, mcp.MethodResourcesTemplatesList, "resourceTemplates", mcp.ServerCapabilities.HasResources, opts)
}

// ErrIncompleteList means a paginated walk could not reach its end; no
// partial list is ever returned.
var ErrIncompleteList = errors.New("incomplete list")

// listAll walks every page of a list method under the listing timeout. An
// optional list (offered is non-nil) is only asked for when the upstream
// advertised the capability, and a -32601 answer means "none".
func (c *Client) listAll(ctx context.Context, method, key string, offered func(mcp.ServerCapabilities) bool, opts Options) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ListTimeout)
	defer cancel()
	if offered != nil {
		info, err := c.Info(ctx, opts)
		if err != nil {
			return nil, c.walkErr(ctx, method, err)
		}
		// A modern upstream whose discover failed has unknown capabilities:
		// ask, and let -32601 say no.
		known := info.Era == mcp.EraLegacy || info.SupportedVersions != nil
		if known && !offered(info.Capabilities) {
			return nil, nil
		}
	}
	var items []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for page := 1; ; page++ {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params = namedParams("cursor", cursor, "", nil)
		}
		res, err := c.Call(ctx, method, params, opts)
		if err != nil {
			if re := rpcErr(err); offered != nil && page == 1 && re != nil && re.Code() == jsonrpc.CodeMethodNotFound {
				c.cfg.Logger.Debug("Optional list rejected by upstream", "method", method)
				return nil, nil
			}
			return nil, c.walkErr(ctx, method, err)
		}
		pageItems, next, err := parsePage(res.Raw, key)
		if err != nil {
			return nil, err
		}
		items = append(items, pageItems...)
		if next == "" {
			return items, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: upstream repeated a cursor after %d pages: %w", method, page, ErrIncompleteList)
		}
		if page >= c.cfg.MaxPages {
			return nil, fmt.Errorf("%s: more pages than the cap of %d: %w", method, c.cfg.MaxPages, ErrIncompleteList)
		}
		seen[next] = true
		cursor = next
	}
}

// walkErr turns the walk's own deadline into a TimeoutError.
func (c *Client) walkErr(ctx context.Context, method string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return c.timedOut(method, c.cfg.ListTimeout)
	}
	return err
}

// parsePage splits one list result into its items and next cursor.
func parsePage(raw json.RawMessage, key string) ([]json.RawMessage, string, error) {
	var page struct {
		NextCursor *string `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", protoErr("invalid MCP response: list result is not an object", nil)
	}
	var items []json.RawMessage
	if v := jsonrpc.Member(raw, key); v != nil && string(v) != "null" {
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, "", protoErr("invalid MCP response: "+key+" is not an array", nil)
		}
	}
	for _, it := range items {
		if len(it) == 0 || it[0] != '{' {
			return nil, "", protoErr("invalid MCP response: "+key+" holds a non-object", nil)
		}
	}
	next := ""
	if page.NextCursor != nil {
		next = *page.NextCursor
	}
	return items, next, nil
}
