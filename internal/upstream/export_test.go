package upstream

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Conveniences the package's tests use to drive a Client by method.

// Name returns the configured server name.
func (c *Client) Name() string { return c.cfg.Name }

// CallTool calls a tool. An input_required result is returned as is.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodToolsCall, namedParams("name", name, "arguments", args), opts)
}

// GetPrompt gets a prompt.
func (c *Client) GetPrompt(ctx context.Context, name string, args json.RawMessage, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodPromptsGet, namedParams("name", name, "arguments", args), opts)
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, uri string, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodResourcesRead, namedParams("uri", uri, "", nil), opts)
}

// Complete asks for argument completions; params is the completion/complete
// params object.
func (c *Client) Complete(ctx context.Context, params json.RawMessage, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodCompletionComplete, params, opts)
}

// ListPrompts returns every prompt; none when the upstream does not offer
// prompts.
func (c *Client) ListPrompts(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	r, err := c.List(ctx, mcp.MethodPromptsList, opts)
	return r.Items, err
}

// ListResources returns every resource; none when the upstream does not offer
// resources.
func (c *Client) ListResources(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	r, err := c.List(ctx, mcp.MethodResourcesList, opts)
	return r.Items, err
}

// ListResourceTemplates returns every resource template; none when the
// upstream does not offer resources.
func (c *Client) ListResourceTemplates(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	r, err := c.List(ctx, mcp.MethodResourcesTemplatesList, opts)
	return r.Items, err
}

// inUse reports the bytes taken.
func (b *ByteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// poolSize reports the sessions pooled.
func (c *Client) poolSize() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}
