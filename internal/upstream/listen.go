package upstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// ErrNotModern is returned by Listen for an upstream that speaks a legacy
// revision: its notifications arrive on its session instead (see
// Config.OnNotification).
var ErrNotModern = errors.New("upstream speaks a legacy revision: no subscriptions/listen")

// Listen opens a subscriptions/listen on a modern upstream with the given
// filter (the SubscriptionFilter object) and hands every event to onEvent,
// the upstream's own acknowledgement included, until ctx ends (then it
// returns nil) or the upstream ends the stream. No per-request timeout
// applies. A minted credential is renewed only while someone follows the
// upstream (FollowContext): the caller holds a follow for as long as the
// listen lasts, and ends the listen with it when the credential is lost.
func (c *Client) Listen(ctx context.Context, filter json.RawMessage, opts Options, onEvent func(method string, params json.RawMessage)) error {
	info, err := c.Info(ctx, opts)
	if err != nil {
		return err
	}
	if info.Era != mcp.EraModern {
		return ErrNotModern
	}
	in := &Interactions{}
	if opts.Interactions != nil {
		*in = *opts.Interactions
	}
	in.Notify = onEvent
	opts.Interactions = in
	params := []byte(`{"notifications":`)
	params = append(append(params, filter...), '}')
	_, err = c.Call(ctx, mcp.MethodSubscriptionsListen, params, opts)
	if ctx.Err() != nil {
		return nil
	}
	return err // nil when the upstream closed the listen gracefully
}
