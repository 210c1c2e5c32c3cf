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

// callerLimits admits a tools/call within its caller's limits (a store
// key's and its team's: LiteLLM's rpm_limit, max_parallel_requests and
// mcp_rpm_limit) and its server's (rpm, max_concurrent_requests), all in
// one admission through the gate (one round trip to a shared store): a call
// refused by any limit counts against none.
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
// rpm_limit, then the server's max_concurrent_requests and rpm; the first
// that refuses is the one the caller is told about. The admitted call's
// context says its server's limits are taken, so the upstream client's
// middleware does not take them again. When the gate cannot decide, the
// call goes ahead (unless the gate fails closed).
type callerLimits struct {
	gate    limits.Gate
	rpms    *rpms
	resolve func(ref string) (string, bool)
	log     *slog.Logger
	now     func() time.Time
}

// parallelRetry is the Retry-After of a refusal for too many calls in flight:
// when one ends is not known, so the caller is asked to try again soon.
const parallelRetry = time.Second

// admit admits one tools/call by caller to server, returning the context to
// send it with and the release to call when the call is done, or the fault
// that refuses it.
func (c *callerLimits) admit(ctx context.Context, caller *identity.Caller, server string) (context.Context, func(), *fault.Fault) {
	checks, kinds := c.checks(caller, server)
	srv, srvKinds := serverChecks(server, int(c.rpms.of(server).Load()), int(c.rpms.maxOf(server).Load()), false)
	checks, kinds = append(checks, srv...), append(kinds, srvKinds...)
	ctx = context.WithValue(ctx, admittedKey{}, server)
	if len(checks) == 0 {
		return ctx, func() {}, nil
	}
	a, f := decide(ctx, c.gate, checks, kinds, c.now(), true, c.log)
	if f != nil {
		return nil, nil, f
	}
	return ctx, a.Release, nil
}

// checks are the caller's own checks for a call to server, in order, and
// what each refusal says.
func (c *callerLimits) checks(caller *identity.Caller, server string) ([]limits.Check, []refusal) {
	if caller == nil || (!caller.KeyLimits.Set() && !caller.TeamLimits.Set()) {
		return nil, nil
	}
	var checks []limits.Check
	var kinds []refusal
	if n, owner, who, ok := c.pick(caller, func(l identity.Limits) *int64 { return l.MaxParallel }); ok {
		checks = append(checks, limits.Check{Key: owner, Limit: int(n)})
		kinds = append(kinds, refusal{inFlight: true, limit: int(n),
			message: "parallel request limit reached for " + who + " (max_parallel_requests " + strconv.FormatInt(n, 10) + ")"})
	}
	perMinute := func(key string, n int64, what string) {
		checks = append(checks, limits.Check{Key: key, Limit: int(n), Window: time.Minute})
		kinds = append(kinds, refusal{limit: int(n),
			message: "request limit reached for " + what + strconv.FormatInt(n, 10) + " per minute)"})
	}
	if n, owner, who, ok := c.serverRPM(caller, server); ok {
		perMinute(owner, n, who+" on server "+server+" (mcp_rpm_limit ")
	}
	if n, owner, who, ok := c.pick(caller, func(l identity.Limits) *int64 { return l.RPM }); ok {
		perMinute(owner+"\x00rpm", n, who+" (rpm_limit ")
	}
	return checks, kinds
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

// keyOwner and teamOwner name the counters of a key (by its hash, never
// the secret) and of a team.
func keyOwner(caller *identity.Caller) string  { return "key\x00" + caller.KeyHash }
func teamOwner(caller *identity.Caller) string { return "team\x00" + caller.TeamID }
