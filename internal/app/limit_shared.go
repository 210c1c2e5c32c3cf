package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/redisconn"
)

// errLimitsUnavailable is sharedGate's answer while Redis is unreachable
// under redis_failure_mode: closed.
var errLimitsUnavailable = errors.New("limits: the shared counters are unreachable")

// sharedGate is the gate every limit goes through: the local one without
// Redis; with Redis, the Redis one, falling back while Redis is unreachable
// to the local one (redis_failure_mode: open) or to refusing
// (errLimitsUnavailable; closed). The outage is logged once (redisconn) and
// counted per call decided without Redis; Redis is tried again every
// redisconn.RetryEvery (Conn.Try) and used again as soon as it answers. Counts taken
// locally during an outage stay local: after it, Redis holds what it held.
type sharedGate struct {
	local  *limits.Local
	redis  *limits.Redis   // nil without Redis
	conn   *redisconn.Conn // nil without Redis
	closed bool            // fail closed
	local0 atomic.Uint64   // calls decided without Redis (fallbacks or refusals)
}

// newSharedGate builds the gate: local only when conn is nil.
func newSharedGate(conn *redisconn.Conn, mode config.RedisFailureMode, o limits.RedisOptions) *sharedGate {
	g := &sharedGate{local: limits.NewLocal(0)}
	if conn != nil {
		g.conn, g.closed = conn, mode == config.RedisFailClosed
		g.redis = limits.NewRedis(conn.Client(), o)
	}
	return g
}

// Admit decides one request (limits.Gate).
func (g *sharedGate) Admit(ctx context.Context, checks []limits.Check, now time.Time) (*limits.Admission, error) {
	if g.redis == nil {
		return g.local.Admit(ctx, checks, now)
	}
	if g.conn.Try() {
		a, err := g.redis.Admit(ctx, checks, now)
		switch {
		case ctx.Err() != nil: // the caller's own end says nothing about Redis
			return a, err
		case err == nil:
			g.conn.Observe(nil)
			return a, nil
		case !redisconn.Unavailable(err):
			g.conn.Observe(err)
			if g.closed { // Redis answered but cannot decide (OOM, ACL, script): no limit is checked
				g.local0.Add(1)
				return nil, errLimitsUnavailable
			}
			return a, err
		}
		g.conn.Observe(err)
	}
	g.local0.Add(1)
	if g.closed {
		return nil, errLimitsUnavailable
	}
	return g.local.Admit(ctx, checks, now)
}

// status is readiness's word on the limits while Redis is down.
func (g *sharedGate) status() string {
	mode := "counted per replica (redis_failure_mode: open)"
	if g.closed {
		mode = "refused (redis_failure_mode: closed)"
	}
	return fmt.Sprintf("limits %s; %d calls decided without redis", mode, g.local0.Load())
}

// close stops the Redis gate's lease renewal.
func (g *sharedGate) close() {
	if g.redis != nil {
		g.redis.Close()
	}
}
