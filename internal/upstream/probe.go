package upstream

import (
	"context"
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Discover asks the upstream what it offers now, not what it said when the
// conversation Info reports started: a 2026-07-28 upstream gets a
// server/discover request of its own (through Config.Middleware, like any
// Call); a legacy one a fresh handshake on a session opened for this call
// alone and ended before it returns, whose initialize result is the answer.
// A legacy stdio upstream is the exception: a fresh handshake there would
// start another child process, and the running child's handshake is what
// that process offers, so its answer is Info's. Any failure is returned: a
// caller that promises notifications on the strength of the answer must not
// promise them on a guess.
func (c *Client) Discover(ctx context.Context, opts Options) (Info, error) {
	if !opts.Ephemeral || c.cfg.Transport == TransportStdio {
		opts.Ephemeral = false
		info, err := c.Info(ctx, opts)
		if err != nil {
			return Info{}, err
		}
		switch {
		case info.Era == mcp.EraModern:
			return c.discoverCall(ctx, opts)
		case c.cfg.Transport == TransportStdio:
			return info, nil
		}
	}
	opts.Ephemeral = true
	var info Info
	err := c.ownSession(ctx, opts, func(s *session) error {
		if s.info.Era != mcp.EraModern {
			info = s.info
			return nil
		}
		on := opts
		on.held = s
		var err error
		info, err = c.discoverCall(ctx, on)
		return err
	})
	return info, err
}

// discoverCall sends server/discover to a 2026-07-28 upstream and decodes
// its answer.
func (c *Client) discoverCall(ctx context.Context, opts Options) (Info, error) {
	res, err := c.Call(ctx, mcp.MethodDiscover, json.RawMessage(`{}`), opts)
	if err != nil {
		return Info{}, err
	}
	var d mcp.DiscoverResult
	if err := json.Unmarshal(res.Raw, &d); err != nil {
		return Info{}, protoErr("invalid MCP response to server/discover", err)
	}
	return discoverInfo(d), nil
}
