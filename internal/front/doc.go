// Package front is the gateway's HTTP front: /mcp for both protocol eras,
// the scoped /{server}/mcp, the legacy HTTP+SSE transport on /mcp/sse, the
// REST routes /mcp-rest/tools/list and /mcp-rest/tools/call, and the health
// endpoints.
//
// Legacy (handshake-era) sessions have sealed ids that any replica with the
// same salt key can open; the state a replica holds for a session it serves
// (requests in flight, its GET stream, background listens for list changes
// and resources/subscribe) is "live" and bounded as below. A session this
// replica ended (DELETE, idle, evicted to make room, or past its sealed
// expiry) answers 404 here, so its client re-initializes; the id is
// remembered until it expires or until it is the oldest beyond the cap, after
// which the still-valid sealed id would open again with fresh state, as on
// another replica.
//
// A long-lived stream (a legacy GET stream, an /mcp/sse connection, a
// subscriptions/listen) re-authenticates its caller periodically and ends
// when the caller is refused or its visible servers change.
//
// A listing that spans several servers (REST tools/list without server_id)
// is a multi-server request: the caller's Authorization goes to none of
// them, as on /mcp.
//
// Bounds and their defaults (MCPConfig.Sessions is a SessionConfig; a zero
// field takes the default):
//
//   - one POSTed message: MCPConfig.MaxBodyBytes, default DefaultMaxBodyBytes
//     (4 MiB); larger: 413.
//   - live legacy sessions: SessionConfig.MaxLive, default 10000; opening
//     one more ends the least recently used. Per caller:
//     SessionConfig.MaxLivePerCaller, default 1000; one more ends that
//     caller's least recently used.
//   - idle legacy sessions: SessionConfig.IdleTimeout, default 30 min. Idle
//     means no request (POST of any kind, GET, DELETE) and no open GET
//     stream for that long; requests in flight hold the session,
//     subscriptions do not. Sweeps run every min(1 min, IdleTimeout/2)
//     while sessions are live.
//   - a legacy session's life: 24 h from initialize (sealed in its id and
//     re-checked on every use).
//   - ended sessions' ids: SessionConfig.MaxDeleted, default 100000, oldest
//     forgotten first; each is dropped once its sealed id has expired.
//   - resources/subscribe per legacy session: 64.
//   - open /mcp/sse connections: SessionConfig.MaxSSEConns, default 10000,
//     and SessionConfig.MaxSSEConnsPerCaller, default 1000; beyond either
//     /mcp/sse answers 503. A connection holds one session; re-initializing
//     ends the previous one.
//   - a stream's outgoing queue: 64 messages; a message that does not fit
//     (a stuck client) is dropped. Keepalive comments every 15 s.
//   - re-authentication of long-lived streams: SessionConfig.RecheckInterval,
//     default 10 s.
//   - REST tools/list: at most 8 servers listed at once per request.
//
// A panic in a goroutine the front starts is recovered and logged at ERROR
// with its type and stack frames, never its value; the request it served,
// if any, is answered with an internal error.
package front
