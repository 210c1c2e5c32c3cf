package app

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/limits"
)

// callerLimits admits a store key's tool calls within its key's and team's
// limits (LiteLLM's rpm_limit, max_parallel_requests and mcp_rpm_limit):
//
//   - each limit set on the key is counted for the key alone (under its key
//     hash), and wins over the same limit on its team;
//   - a limit set only on the team is counted for the team (under its id),
//     shared by every key of the team;
//   - mcp_rpm_limit names servers by name, alias or id, resolved as routes
//     are (resolve); a key's entry for the server wins over its team's, and
//     when several entries of one level name the same server the smallest
//     holds. Its count is per server (by name), whatever name the entry used;
//   - a value of 0 admits no call, as in LiteLLM; an unset one admits all.
//
// The checks run in this order: max_parallel_requests, mcp_rpm_limit,
// rpm_limit; a call refused by one is not counted by those after it (a
// call refused by rpm_limit still counts against mcp_rpm_limit). When the
// counter cannot decide, the call goes ahead.
type callerLimits struct {
	counter limits.Counter // per replica until a shared Counter is configured
	slots   limits.Slots   // max_parallel_requests
	resolve func(ref string) (string, bool)
	log     *slog.Logger
	now     func() time.Time
}

// parallelRetry is the Retry-After of a refusal for too many calls in flight:
// when one ends is not known, so the caller is asked to try again soon.
const parallelRetry = time.Second

// admit admits one tools/call by caller to server, returning the release to
// call when the call is done, or the fault that refuses it.
func (c *callerLimits) admit(ctx context.Context, caller *identity.Caller, server string) (func(), *fault.Fault) {
	if caller == nil || (!caller.KeyLimits.Set() && !caller.TeamLimits.Set()) {
		return func() {}, nil
	}
	release := func() {}
	if n, owner, who, ok := c.pick(caller, func(l identity.Limits) *int64 { return l.MaxParallel }); ok {
		r, admitted := c.slots.Acquire(owner, int(n), false)
		if !admitted {
			return nil, &fault.Fault{Class: fault.LimitExceeded, RetryAfter: parallelRetry,
				Limit:   &fault.Limit{Kind: fault.KindParallel, Limit: int(n)},
				Message: "parallel request limit reached for " + who + " (max_parallel_requests " + strconv.FormatInt(n, 10) + ")"}
		}
		release = r
	}
	if n, owner, who, ok := c.serverRPM(caller, server); ok {
		if f := c.take(ctx, owner, n, who+" on server "+server+" (mcp_rpm_limit "); f != nil {
			release()
			return nil, f
		}
	}
	if n, owner, who, ok := c.pick(caller, func(l identity.Limits) *int64 { return l.RPM }); ok {
		if f := c.take(ctx, owner+"\x00rpm", n, who+" (rpm_limit "); f != nil {
			release()
			return nil, f
		}
	}
	return release, nil
}

// pick is the limit field chooses: the key's when set, else its team's,
// with the counter it is counted under and the words that name its owner.
func (c *callerLimits) pick(caller *identity.Caller, field func(identity.Limits) *int64) (n int64, owner, who string, ok bool) {
	if v := field(caller.KeyLimits); v != nil {
		return *v, keyOwner(caller), "this key", true
	}
	if v := field(caller.TeamLimits); v != nil && caller.TeamID != "" {
		return *v, teamOwner(caller), "team " + strconv.Quote(caller.TeamID), true
	}
	return 0, "", "", false
}

// serverRPM is the mcp_rpm_limit that holds for server: the key's entries
// naming it, else its team's (the smallest when several do).
func (c *callerLimits) serverRPM(caller *identity.Caller, server string) (n int64, owner, who string, ok bool) {
	if n, ok := c.entryFor(caller.KeyLimits.ServerRPM, server); ok {
		return n, keyOwner(caller) + "\x00server\x00" + server, "this key", true
	}
	if caller.TeamID == "" {
		return 0, "", "", false
	}
	if n, ok := c.entryFor(caller.TeamLimits.ServerRPM, server); ok {
		return n, teamOwner(caller) + "\x00server\x00" + server, "team " + strconv.Quote(caller.TeamID), true
	}
	return 0, "", "", false
}

// entryFor is the smallest entry of m whose key resolves to server.
func (c *callerLimits) entryFor(m map[string]int64, server string) (int64, bool) {
	var n int64
	found := false
	for ref, v := range m {
		if name, ok := c.resolve(ref); ok && name == server && (!found || v < n) {
			n, found = v, true
		}
	}
	return n, found
}

// take counts one call against n per minute under key; over it (or with n
// 0) it returns the limit's fault, whose message is what followed by the
// limit.
func (c *callerLimits) take(ctx context.Context, key string, n int64, what string) *fault.Fault {
	refuse := func(after time.Duration) *fault.Fault {
		return &fault.Fault{Class: fault.LimitExceeded, RetryAfter: after,
			Limit:   &fault.Limit{Kind: fault.KindRequests, Limit: int(n)},
			Message: "request limit reached for " + what + strconv.FormatInt(n, 10) + " per minute)"}
	}
	if n <= 0 {
		return refuse(time.Minute)
	}
	d, err := c.counter.Take(ctx, key, int(n), time.Minute, c.now())
	switch {
	case err != nil:
		c.log.Warn("caller request limit not checked; the call goes ahead", "error", err.Error())
	case !d.Allowed:
		return refuse(d.RetryAfter)
	}
	return nil
}

// keyOwner and teamOwner name the counters of a key (by its hash, never
// the secret) and of a team.
func keyOwner(caller *identity.Caller) string  { return "key\x00" + caller.KeyHash }
func teamOwner(caller *identity.Caller) string { return "team\x00" + caller.TeamID }
