// Package front is the gateway's HTTP front: /mcp for both protocol eras, /{server}/mcp, the
// legacy HTTP+SSE transport (/mcp/sse), the REST routes (/mcp-rest/tools/list and
// /mcp-rest/tools/call), the key management routes (/key/*) and the health endpoints.
//
// The front owns everything era- and HTTP-specific; the core (internal/gateway) sees one
// Operation and returns one Outcome. Decoding: operation builds the Operation with the caller's
// surface and revision, the credentials it may forward (credentials: every header but the
// gateway key, which is x-litellm-api-key or Authorization when that carried it, and the
// caller's bearer token only when it is not the key), its Mcp-Param-* headers (modern), and a
// legacy session's Interactions. Encoding: answerOf turns a fault into its surface's answer
// through the one fault table (internal/fault): a JSON-RPC error with its status, an in-band
// isError result, or LiteLLM's {"detail": …} refusal; the challenge of an auth refusal becomes
// WWW-Authenticate. A modern result then gets resultType and the gateway's serverInfo, and a
// complete result of a cacheable method (server/discover, the four lists, resources/read) valid
// ttlMs and cacheScope (appendModern: the upstream's own when valid, an integer
// 0 ≤ ttlMs < 10^15 and "public" or "private"; else 0 and "private", immediately stale and
// never shared). REST answers errors as {"error": code, "message": …}.
//
// Admission (internal/admit) runs before any of these handlers: the host guard, the in-flight
// bound and the body read deadline. A stream calls admit.KeepOpen when it starts streaming, and
// a request POSTed to /mcp/sse/messages calls admit.HoldSlot to keep its in-flight place until
// its answer is on the connection's stream.
//
// The server itself (built by internal/app, App.Server) has ReadHeaderTimeout (10 s), WriteTimeout for answers
// that are not streams (300 s), IdleTimeout for keep-alive connections (60 s) and
// MaxHeaderBytes (64 KiB), all general_settings keys (see internal/config).
//
// Authentication comes first: every MCP and REST route establishes the caller from the headers
// alone (master key, or the custom_auth webhook) before it reads a body or resolves a /{server}
// segment, so a caller without a valid key costs no body read and learns nothing about which
// servers exist (401 whatever the segment; an unknown server is 404 only for a valid key). The
// webhook is told the method from Mcp-Method only on a POSTed MCP message (/mcp, /{server}/mcp,
// /mcp/sse/messages), where the message is then bound to it: one whose method differs from
// Mcp-Method, or whose params.name/uri differs from Mcp-Name when that header is sent (either
// era), is refused (400, -32020). Every other route (REST, GET /mcp/sse, a legacy session's
// GET and DELETE) tells the webhook its HTTP route and hides Mcp-Method and Mcp-Name from it. A body is bounded by MaxBodyBytes (default
// DefaultMaxBodyBytes, 4 MiB; general_settings.max_request_body_bytes): 413, before reading
// when Content-Length announces more.
//
// MCP headers that must appear once (MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Mcp-Session-Id, every Mcp-Param-*) are refused with 400 (-32020) when repeated, so no check
// reads one copy while an upstream acts on another. POST /mcp-rest/tools/call takes only
// Content-Type: application/json (else 415): a browser cannot send that cross-site without
// asking first.
//
// Streams (a legacy session's GET stream, subscriptions/listen, the /mcp/sse stream, and a
// POST answer once it turns into an SSE stream) lift their connection's read and write
// deadlines (admit.KeepOpen); they are bounded by max_connections and end when the client leaves or
// the gateway shuts down. A subscriptions/listen then bounds each of its own writes (30 s).
// A held stream's duties (writing its events, keepalives, re-checking its caller and, for a
// legacy session's follow, watching the session's end) run on the goroutine the listen runs
// on (gateway.Listener): a subscriptions/listen and a legacy GET stream run their listen on
// the request's handler goroutine, which writes each event straight to the stream after
// re-checking the caller, so a held stream costs that one goroutine (and the server's own per
// connection). Once such a stream (or an /mcp/sse stream) is open (acknowledged, its headers
// written, KeepOpen and Detach done), the handler hands the rest of it to the server
// (internal/handoff) and
// returns: with the gateway's server (internal/h1serve) the held part then runs on a
// goroutine the server starts for it (serveHeld), whose stack never grew, and does each
// wake's work (views, writes, re-checks) through internal/shallow on a goroutine of its own,
// so the held goroutine only waits, on the runtime's 2 KB minimum stack (a stack that once
// grew is never shrunk below 4 KB). net/http (MCPGW_HTTP_SERVER=stdlib) cannot continue a
// response: there the same code runs the held part in the handler, as before. The set-up
// stays in the handler, so a listen being set up counts among the requests in flight and the
// admission bound until it is open, as before; the after-work of the wrappers around the
// handler is done by then (KeepOpen gives back the admission slot, Detach the generation's
// count), and the one record that must see the stream's end (observe: the access log line,
// metrics, live counters, with the stream's duration) is ended through handoff.After when the
// held part returns. Rejected: a held stream with no goroutine at all, its writer driven by
// the upstream delivery callbacks and one timer (see internal/handoff); and a goroutine of
// its own for the held part (no smaller stack: a stack is set by how deep it waits). The
// re-check and the keepalive share one timer (duties), which wakes the stream on the one
// channel it waits on for its work (gateway.Listener.Wake: for a listen, a channel of its
// own; for a legacy GET or /mcp/sse stream, its queue's), not on a timer channel of its own:
// every channel a held goroutine waits on costs it a sudog. The held part keeps of the
// request only what its writes and re-checks need (a listen drops its body: its filter is
// parsed, its id and capabilities copied); its SSE writer is lean (sse.Writer.Lean: no
// buffer between events). Such a stream holds
// no context of its own: it ends by the core's (the request's context, a Listener answering
// false, Done). Queues (a stream's outgoing messages, the core's pending events) hold storage
// only while something is queued, so an idle held stream pays for no buffer of its own.
//
// Legacy (handshake-era) sessions have sealed ids that any replica with the
// same salt key can open; the state a replica holds for a session it serves
// (requests in flight, its GET stream, background listens for list changes
// and resources/subscribe) is "live" and bounded as below. A session this
// replica ended (DELETE, idle, evicted to make room, or past its sealed
// expiry) answers 404 here, so its client re-initializes; the id is
// remembered until it expires or until it is the oldest beyond the cap, after
// which the still-valid sealed id would open again with fresh state, as on
// another replica. Close (shutdown) also buries the sessions that hold state
// their sealed id cannot carry
// (resource subscriptions, a log level set with logging/setLevel): reopened
// they would silently lack it, so their clients get 404 and start over;
// sessions without such state reopen from their ids.
//
// Ended ids are kept by a Tombstones seam (SessionConfig.Tombstones; nil
// means a MemoryTombstones of SessionConfig.MaxDeleted ids, and internal/app
// injects one): Bury when a session ends, with the sealed id's expiry (or 24
// h from now for an id not live here), and Buried before a session is
// served. MemoryTombstones drops an id once that time passes and, beyond the
// cap, the oldest buried. A shared implementation (so that a session ended on
// one replica is not revived on another) must keep an id at least until its
// time, keep the first record when buried twice, and answer promptly
// (every legacy request waits for Buried). When Buried fails the front
// fails closed (the session is treated as ended: 404, and the client
// initializes again), because reviving a session its client deleted is the
// worse error; a failed Bury is logged and the session still ends here. The
// contract is in package fronttest. A shared Tombstones that also offers
// BuryHere (LocalTombstones) is told apart what ends a session for every
// replica (its caller's DELETE; at Close, the state only this replica held;
// at a hand-over, a server of its caller that moved)
// from what ends it here only (idle here, evicted to make room, expired):
// with no stickiness another replica may be serving a session this one has
// not seen for a while, and that one must not end with it.
//
// The tombstones are never called while the session lock is held, since a
// shared one is a network round trip and every legacy request takes that
// lock: a slow store must slow only the requests that wait for it. Under the
// lock the front decides what ends and records each such id as pending; it
// stores the burials after releasing the lock, then records them as stored
// in a ring of the last 256. open notes how many burials were stored, asks
// Buried without the lock, then under the lock treats the id as ended if it
// is pending or was stored since (a session ended here meanwhile: a DELETE,
// an eviction, a sweep or a hand-over, whose burial the tombstones may not
// have had when asked, or had only after); if more than the ring holds were
// stored meanwhile it asks again (three times at most, then 404). A session
// ended by another replica while open waited is served as if the request
// came just before the DELETE, as it could have without the wait. Two opens
// of the same id not live here still both re-check the live map after
// unsealing, so one admits it and the other finds it. The id a DELETE names
// but this replica never held is pending too, so a request racing the DELETE
// here is refused as before.
//
// A legacy caller's answer to a request the gateway sent it (elicitation,
// sampling, roots) is delivered to the request waiting on this replica's
// live session. With a Relay (SessionConfig.Relay; internal/app sets one
// when replicas share Redis) the ids of those requests name this replica
// ("mcpgw-<replica>.<n>"), and an answer that matches no request waiting
// here, but names another replica, is handed to that replica through the
// Relay, which delivers it to its live session of the same id; the POST is
// answered 202 either way. The relay names the session by a SHA-256 digest
// of its id (relayKey), never the sealed id itself: the id is what a caller
// presents on every request, and the relay's channel is readable by anyone
// who reads the shared Redis. Without a Relay the ids are "mcpgw-<n>" and an
// answer reaches only the replica it is posted to.
//
// Legacy sessions outlive a new config (internal/app's Apply). Their live
// state (sessions, GET streams, /mcp/sse connections, follows, resource
// subscriptions) is a Legacy that every front of the process shares
// (MCPConfig.Legacy), and the old front hands it to the new one (HandOver).
// A session is kept when every server its caller sees (under the scope of
// its latest request) is served by the new gateway with the same upstream
// client and the caller sees the same servers there
// (gateway.Gateway.Keeps, the rule a subscriptions/listen moves by): its
// stream stays open, its follows go on (the gateway's TakeOver moves them,
// telling list_changed when the caller's view changed), and its next
// requests are served by the new front. Any other session ends: a
// streamable HTTP session is buried (its GET stream closes; its next request
// gets 404 and its client initializes again); an /mcp/sse connection refuses
// new requests, answers those it is running (MCPConfig.Hold keeps each
// counted in flight on the generation that received it), then closes its
// stream. The old front's subscriptions/listen go on, served by the gateway
// that took them over (gateway.Gateway.TakeOver) or ended by it. Close
// (shutdown) ends every listen of that front and every legacy session. A
// stream tells MCPConfig.Detach once open (an acknowledged listen, a GET
// stream, an /mcp/sse stream), so the composition root stops counting it as
// a request in flight of the old config; a kept stream re-authenticates its
// caller through the newest front (its authenticator, its policy).
//
// A long-lived stream (a legacy GET stream, an /mcp/sse connection, a
// subscriptions/listen) re-authenticates its caller periodically and ends
// when the caller is refused (401, 403) or its identity or visible servers
// change. An authentication service that cannot answer (503: busy, down,
// restarting) does not end it: it is asked again at the next check, and the
// stream ends only once it has been unavailable for
// SessionConfig.AuthUnavailableGrace (default 60 s) in a row. A
// subscriptions/listen, and a legacy session's follow of its upstreams (its
// GET stream, its /mcp/sse stream, each resources/subscribe), also
// re-authenticate before delivering each event, so no event that arrived
// after the caller's identity or permissions changed reaches it: a verdict
// answers only for events that reached the gateway before its check began, so a burst
// arriving meanwhile costs the webhook one call and a later event asks again (one
// check in flight per stream at most). That call and the write happen on the listen's own
// goroutine: an upstream's goroutine (for a stdio server, the one reading
// its output) only queues the event in the core (64 at most; list changes
// coalesced), and it is dropped when that queue is full.
// A revoked caller's follow ends, closing its upstream listeners, and takes
// its GET stream or /mcp/sse connection with it.
//
// Subscription lifetimes. A subscriptions/listen answers nothing until the
// core has set up every upstream listener it needs (see
// gateway.ListenFilter): then the SSE stream opens with the acknowledgement,
// so a change made the moment the caller holds it is delivered. A listen
// that cannot be set up (the caller's listener capacity, an upstream that
// refuses or does not acknowledge in time) is answered with its error and
// never acknowledged. It ends when the client leaves, its caller is revoked,
// an upstream ends its listen (after the events the core delivered before
// are written), or the gateway shuts down (then with the graceful final
// response). A legacy session's GET stream opens once its
// follow is set up (503 with Retry-After when it cannot be); an /mcp/sse
// connection's initialize is answered once its follow is set up (a follow
// that cannot be is logged, and the session works without it); a legacy
// resources/subscribe is answered once the upstream subscription holds.
// A legacy session's follow is persistent (gateway.Filter.Persist): when an
// upstream ends a listen it relied on, the core sets it up again (the
// session cannot listen again itself) and delivers a change made meanwhile
// if the caller can see it; a follow that cannot be set up again ends, and
// so does the GET stream it served (the client opens another).
//
// A legacy session's GET stream, and an /mcp/sse connection's stream once
// initialized, follow the caller's upstreams: list changes, the log lines
// their sessions send outside any request (at the level the caller set with
// logging/setLevel on this replica; every level until then) and, for a
// caller that declared URL-mode elicitation, notifications/elicitation/complete.
// Each legacy session (an /mcp/sse connection included, under a random id)
// owns its upstream sessions once it keeps state there: it declared roots,
// elicitation or sampling at initialize, or sent logging/setLevel (the level
// goes to its own sessions, never to the shared one). It then hears what its
// own sessions send, and nothing another caller's do; until then it shares,
// and follows, the session of its credentials (see internal/gateway).
//
// Cancellation: a legacy caller's notifications/cancelled ends the request
// it names (the upstream is told notifications/cancelled for the gateway's
// own id; see internal/upstream) and no response follows: a POST answered as
// JSON gets 202 with no body, an SSE answer ends without a message, and
// nothing is written to an /mcp/sse stream. A 2026-07-28 caller cancels by
// closing the request's stream, which ends the upstream call the same way.
//
// A listing that spans several servers (REST tools/list without server_id)
// is a multi-server request: the caller's Authorization goes to none of
// them, as on /mcp.
//
// REST statuses: a request the gateway refuses is 400 (missing_parameter,
// invalid_body, invalid_parameter, an unknown tool), 404 (unknown server_id),
// 413, 415 or the authentication refusal; a failed upstream call takes its
// fault class's status (timeout 504, unreachable and upstream errors 502,
// 429/503 as the upstream sent them, 401/403 with its challenge). A REST
// listing's server_outcomes name the fault class as /mcp's _meta does.
//
// A legacy initialize on /{server}/mcp advertises the features that server
// offers and passes on its instructions; on /mcp and /mcp/sse it advertises
// every feature and labels each visible server's instructions (see
// internal/gateway). Answering initialize therefore probes the caller's
// servers, as server/discover does.
//
// Bounds and their defaults (MCPConfig.Sessions is a SessionConfig; a zero
// field takes the default):
//
//   - one POSTed message: MCPConfig.MaxBodyBytes, default DefaultMaxBodyBytes
//     (4 MiB); larger: 413. A body announcing at most 4 KB (maxSizedBody)
//     is read into a buffer of its announced size, allocated before it
//     arrives (so a listen's message keeps no slack); a larger one grows
//     as it arrives (io.ReadAll).
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
//   - requests of one /mcp/sse connection being answered at once:
//     SessionConfig.MaxSSEPending, default 32; beyond it the POST is
//     refused with 503 and Retry-After: 1 (each also counts against the
//     in-flight bound until answered).
//   - a stream's outgoing queue: 64 messages (streamQueue); a message that does not fit
//     (a stuck client) is dropped. Keepalive comments every 15 s.
//   - a subscriptions/listen's events waiting for delivery: the core's
//     queue, 64 events (list changes coalesced); an event that does not fit
//     is dropped. Each write on a listen's stream must finish within 30 s
//     (streamWriteTimeout), else the listen ends.
//   - re-authentication of long-lived streams: SessionConfig.RecheckInterval,
//     default 10 s; an unavailable authentication service is tolerated for
//     SessionConfig.AuthUnavailableGrace, default 60 s.
//   - REST tools/list: at most 8 servers listed at once per request.
//   - /key/* bodies: 1 MiB; ids, aliases and list entries 256 bytes; lists, tool-permission
//     and mcp_rpm_limit maps and keys per delete 1000 entries; metadata 64 KiB; duration
//     100 years. Each is a 400 naming the field.
//   - /v1/mcp/server bodies: 1 MiB; one string field 8 KiB; env and static_headers 256
//     entries; mcp_info 64 KiB; lists 1000 entries of 256 bytes.
//
// Narrowing (narrow.go): a request's scope is the servers its scoped URL
// (/{entry[,entry...]}/mcp: servers, access groups, mcp_aliases) selects,
// intersected with the union of what X-Mcp-Servers and X-Mcp-Access-Groups
// select when either is sent; the front resolves entries through
// MCPConfig.Expand and hands the core server names, which policy applies as
// a scope that narrows and never grants. An unknown URL entry is 404; an
// unknown header entry selects nothing. A legacy session is bound to its
// URL's selection only, since headers may differ per request.
//
// Key management (Keys, keys.go and keysdecode.go): LiteLLM's /key/generate, /key/info,
// /key/update, /key/list, /key/delete, /key/block, /key/unblock and /key/regenerate over
// internal/store; teams.go, orgs.go, users.go and endusers.go add LiteLLM's /team,
// /organization, /user and /customer routes with the same decoding and errors.
// Decisions:
//
//   - Authorization (authz.go) is LiteLLM's roles, decided in one place: managed() gives each
//     route the access it needs before reading rows (adminOnly, viewerRead, perResource), and
//     perResource routes ask a manager (mayKey, mayTeam, mayUser) about the rows they touch:
//     the proxy admin (the master key, or Role proxy_admin from the key's store user or from
//     a custom_auth identity) everything; proxy_admin_viewer reads; a team's admins (team
//     membership role admin, read through the store's cached team lookup) its keys and
//     members; internal_user its own keys; internal_user_viewer reads its own. Rejected:
//     letting team admins change their team's object_permission or limits, or mint keys for
//     admin-role users (the key would carry that user's role): both widen their own reach.
//     With custom_auth a webhook identity whose user_role is proxy_admin manages everything,
//     as in LiteLLM; without one, the master key remains the only way in until a proxy_admin
//     user exists.
//   - Guardrails (guardrailsauthz.go): a change of a key's or team's guardrail metadata
//     entries (LiteLLM's _GUARDRAIL_MODIFICATION_KEYS; the top-level guardrails field lands in
//     metadata.guardrails) is the proxy admin's, or anyone's who may make the rest of the
//     request unless the caller's own team or the key's (or the team's own) team says
//     metadata.guardrails.modify_guardrails: false (LiteLLM's can_modify_guardrails). The
//     refusal is 403 with LiteLLM's message first. A stricter default (only a team that says
//     true allows) was built and rejected: it refused LiteLLM's own key and team calls (an
//     internal user generating a key with guardrails), and an admin who wants a team's
//     guardrails out of its members' hands says so with false, as in LiteLLM. A change is a
//     difference in the decoded entries, not their mention, so a client sending a key's
//     metadata back unchanged (the UI does) is not refused.
//   - Errors use LiteLLM's ProxyException shape {"error": {"message", "type", "param",
//     "code"}} (code: the status as a string), not FastAPI's {"detail": ...}: it names the
//     field (param) and is what LiteLLM's key routes answer for their own checks. The routes
//     authenticate themselves, so a refusal there has the same shape.
//   - Bodies are decoded strictly: one JSON object, nothing after it, keys matched exactly
//     (encoding/json alone would take "KEY_ALIAS" for key_alias), unknown fields refused with
//     the list of known ones. LiteLLM fields mcpgw has no use for (models, soft_budget, ...; max_budget and budget_duration only on keys and teams)
//     are therefore 400, not silently dropped.
//   - /key/update: a field present replaces the stored value (null clears it), a field absent
//     is kept; object_permission is replaced whole (a merge could not remove an entry). The
//     store reads, changes and writes the key in one transaction.
//   - /key/list: page and size (at most 100) over keys oldest first; tokens by default,
//     key objects with return_full_object=true (never secrets); unknown query parameters are
//     400 like unknown body fields.
//   - A key is referred to by its secret (sk-...) or its token (the hex SHA-256); answers
//     carry the token, and only /key/generate's and /key/regenerate's answers carry a secret.
//   - /key/regenerate (keysregenerate.go; also LiteLLM's POST /key/{key}/regenerate, the body
//     then optional, the key named twice only if the same): a new secret for the same key, in
//     one store transaction, with any /key/update field applied. The token changes with the
//     secret (it is its hash), so the answer carries the new token as "token" and, as LiteLLM
//     names it there, "token_id". new_key (a caller-chosen secret) is refused: every secret is
//     256 random bits, which is what makes an unsalted SHA-256 safe to store. new_master_key is
//     refused: the master key lives in the config file. A secret in the path is replaced by its
//     token before authentication, so neither the custom_auth webhook (sent the path) nor a
//     refusal message ever holds it.
//
// Spend (spend.go, registered by Keys.RegisterSpend): GET /spend/logs with LiteLLM's query
// parameters (api_key as a token or a secret, user_id, request_id, start_date, end_date as
// UTC days, both included) and GET /spend/daily, the rollup. The proxy admin and
// proxy_admin_viewer read every row; another caller only its own key's (asking for another
// key is 403, not an empty list, so a typo is not mistaken for no spend). One answer holds at
// most maxSpendRows (1 000), newest first.
//
// Server registry (MCPServers, mcpservers*.go): LiteLLM's /v1/mcp/server routes,
// /v1/mcp/access_groups and /v1/mcp/tools over a ServerRegistry internal/app provides (the
// front validates the request's shape; the registry validates a server by the config file's
// rules, stores it and applies it). Writes are the proxy admin's, others get LiteLLM's 403
// message; reads show what the caller may see (MCPServersConfig.Visible, the policy listings
// use; everything for the proxy admin and proxy_admin_viewer). Credentials reach answers only
// masked (MaskedSecret), decode errors name fields and never values, and a registry error that
// is not a ServerError is answered 500 without its text.
//
// Server health and previews: GET /v1/mcp/server/health (mcphealth.go)
// answers LiteLLM's [{server_id, status, …}] for the servers the caller may
// see (every server for the proxy admin and proxy_admin_viewer, else the
// policy's Visible), narrowed by server_ids; ids it may not see are left
// out rather than refused, as LiteLLM does, so the answer reveals nothing
// beyond the caller's servers. The checks themselves are the composition
// root's (ServerHealthConfig.Check). POST /mcp-rest/test/connection and
// /mcp-rest/test/tools/list (preview.go) are the proxy admin's; the front
// authenticates, reads at most 1 MiB and renders LiteLLM's shapes, and
// PreviewConfig.Run does the rest, since the front may not build upstream
// clients. Readiness lists each server's health as "mcp_servers" and never
// fails on it (Health.Servers).
//
// Observation (MCPConfig.Observer, nil: none): every decoded request
// (both eras on /mcp and /{server}/mcp, each /mcp/sse message, the REST
// routes) gets an observe.Request once its message is read, carried on its
// context so the core can name the server that served it; the front notes
// the answer's status (a ResponseWriter wrapper that unwraps for
// http.ResponseController), the JSON-RPC code of the errors it writes
// itself (writeRPCError) and the fault class of the core's Outcome, and ends
// the record when the answer is written (a legacy SSE message's when its
// answer is on the stream; its status is the POST's 202). Requests refused
// before their message is read (credential, size) are not recorded. With no
// Observer none of this runs: no record, no wrapper.
//
// GET /metrics (Metrics) serves what internal/app hands it, behind the
// master key or a proxy_admin key unless Public.
//
// GET /.well-known/jwks.json (JWKS) serves the public keys of the signed
// identities sent upstream, without a credential (they are public); 404
// when the gateway has no signing key.
//
// A panic in a goroutine the front starts is recovered and logged at ERROR
// with its type and stack frames, never its value; the request it served,
// if any, is answered with an internal error.
//
// OAuth protected-resource metadata (ResourceMetadata, wellknown.go): with JWT auth on, the
// front serves RFC 9728 documents at /.well-known/oauth-protected-resource (the whole gateway),
// .../mcp and .../{server}/mcp (404 for an unknown server), naming the configured
// authorization servers; every 401 of the MCP routes adds resource_metadata="<that URL>" to its
// Bearer challenge, after any error= parameter, so MCP clients can run the authorization flow.
// The URLs are built from PublicURL (publicurl.go): the configured base (mcp_public_base_url
// or PROXY_BASE_URL) wins; otherwise X-Forwarded-Proto and X-Forwarded-Host (first element,
// http/https and a plain host only) are believed only when the connection's peer is in
// mcp_trusted_proxies; otherwise the request's Host (already checked against allowed_hosts) and
// TLS state. Rejected: believing X-Forwarded-* from anyone, which would let one client make the
// gateway advertise a host of its choosing in challenges and metadata.
//
// Client-run OAuth (ClientOAuth, oauthclient*.go): for authorization-code servers, an MCP
// client may run the flow itself, as LiteLLM lets it. The gateway is a per-server
// authorization server (issuer <base>/{server}; RFC 8414 metadata at the paths LiteLLM serves)
// that relays to the upstream's, under the server's configured client, and keeps nothing:
// registration seals the client's redirect URIs into its client_id (1 year), the authorize
// request's redirect URI, state and PKCE challenge are sealed into the upstream state (10 min,
// their own purpose, so /callback tells them from the vault's), and the upstream's code is
// handed to the client sealed with the server and redirect URI (10 min), so the token endpoint
// can check both before relaying the code with the client's verifier (the upstream checks PKCE
// against the challenge it was given). Rejected: returning the configured client_secret at
// registration (LiteLLM's stand-in client), which would hand any caller the gateway's upstream
// client; and relaying the upstream's token body verbatim: the answer is rebuilt from the
// parsed token (access, refresh, expires_in), so no upstream text reaches the client.
// An authorize request with OAuth client parameters (response_type, client_id,
// code_challenge) is the client-run flow; one with a ticket or the caller's key is the vault's.
package front
