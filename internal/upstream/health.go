package upstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// ErrNotStarted is Ping's answer for a stdio upstream whose child is not
// running: asking it would mean starting one.
var ErrNotStarted = errors.New("upstream not started")

// Ping checks that the upstream answers, within ctx, with the lightest
// request its era has: ping for a legacy upstream, server/discover for a
// 2026-07-28 one (which has no ping). It uses the client's shared session
// (the one callers without credentials of their own use), opening it when
// there is none, except on stdio, where a session is a child process: there
// only a running, set-up shared session is asked, and ErrNotStarted returned
// when there is none. A session the upstream ended is replaced once, as a
// call's would be. The request bypasses Config.Middleware, so a health
// check is never counted against the server's rpm or its in-flight bound.
func (c *Client) Ping(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		var s *session
		if c.cfg.Transport == TransportStdio {
			if s = c.running(); s == nil {
				return ErrNotStarted
			}
		} else {
			var err error
			if s, err = c.session(ctx, Options{}); err != nil {
				return err
			}
		}
		method, params := mcp.MethodPing, json.RawMessage(nil)
		if s.info.Era == mcp.EraModern {
			method, params = mcp.MethodDiscover, json.RawMessage(`{}`)
		}
		_, err := s.request(ctx, method, params, nil, nil)
		c.unuse(s)
		if err == nil || !s.expired() {
			return err
		}
		c.drop(s)
		if attempt > 0 || !sessionEnded(err) || c.cfg.Transport == TransportStdio {
			return err
		}
		// The upstream restarted and forgot the session: one new one.
	}
}

// running returns a pooled session shared by callers (no Owner) that is set
// up and not ended, held (see unuse); nil when there is none.
func (c *Client) running() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	for _, s := range c.sessions {
		if !s.owned() && !s.gone() && s.isReady() && !s.expired() {
			c.useLocked(s)
			return s
		}
	}
	return nil
}
