// Package gateway is the era-neutral core: an Operation (one downstream request, either
// protocol era) in, an Outcome out. It routes calls by prefixed name or resource URI, aggregates
// lists through internal/catalog, answers server/discover, seals MRTR continuations, bridges
// interactions (elicitation, sampling) and serves subscriptions/listen.
//
// Design decisions:
//
//   - server/discover and the probes a listen starts with go through the catalog's per-server
//     breakers and patience (see internal/catalog): a server that recently timed out is skipped
//     at once, a slow one costs at most the patience, and the result's _meta carries
//     "litellm.ai/server_outcomes" ({server: {status}}) as aggregate lists do.
//   - A SubscriptionFilter from outside is validated by ParseFilter before anything is
//     acknowledged: at most MaxResourceSubscriptions (64) resourceSubscriptions, each an
//     absolute URI of at most 4096 bytes (an empty entry would match every URI). A bad filter is
//     -32602 with HTTP 400 and a message naming the entry.
//   - No goroutine the gateway starts may take the process down: each recovers a panic, logs it
//     at ERROR with its stack (never the panic value, which may quote arguments or tokens) and
//     ends only the work it belongs to; listen events, which arrive on upstream goroutines, are
//     guarded the same way and a panic ends that listen.
//   - The input rounds the gateway drives itself for one request are bounded (10).
//   - Results a modern caller can rely on: every complete result of a cacheable method
//     (server/discover, the four lists, resources/read) carries ttlMs and cacheScope, whatever
//     the upstream's era. The upstream's own values are kept when valid (an integer 0 ≤ ttlMs <
//     10^15, cacheScope "public" or "private"); otherwise, and for every 2025-era upstream,
//     they are ttlMs 0 and cacheScope "private": immediately stale and never shared across
//     callers, the conservative reading of a server that said nothing. Aggregated lists are
//     always 0/"private" (they are filtered per caller). The other results' required members
//     (content, messages, completion) are the upstream's in both eras; resultType is added by
//     the front.
//   - A single-server endpoint (/{server}/mcp) looks like its server: a legacy initialize
//     advertises only the features the server offers (tools, prompts, resources, completions,
//     logging), each with the gateway's own list-changed and subscribe promises, which it
//     keeps by refreshing; server/discover aggregates that one server's capabilities; both
//     carry the server's instructions as they are (at most MaxInstructionsBytes, 32 KiB, per
//     server). The aggregate /mcp advertises every feature at initialize (the servers behind
//     it change) and combines the instructions of the servers the caller may see, in config
//     order, each under a "## <server>" heading. Instructions come from the same probe as
//     discovery (breakers and patience apply), so a server that does not answer in time
//     contributes none. serverInfo always names the gateway: the caller's session, names,
//     errors and limits are the gateway's, and a client keying workarounds on serverInfo must
//     not apply a server's to the gateway.
//   - Unknown names: a tools/call for a name no server the caller may use here serves (no such
//     prefix, a server the caller cannot see, or a tool its server did not list) never reaches
//     an upstream. A legacy caller gets LiteLLM's isError result "Tool '<name>' not found"; a
//     modern caller gets -32602 with HTTP 400 (2026-07-28); the REST route keeps -32602/400. A
//     hidden tool reads exactly like an unknown one. A tool refused by policy (allowed_tools,
//     disallowed_tools, the caller's tool permissions) is LiteLLM's in-band isError refusal in
//     every era. Unknown prompts are -32602 in every era.
//   - Upstream failures on the REST route (Operation.REST) are answered with their fault
//     class's HTTP status (upstream.Classify): timeout 504, unreachable and upstream errors
//     502, upstream 429/503 as sent, 401/403 with the upstream's challenge. MCP routes keep
//     their era's status rules.
//   - A legacy caller that keeps state upstream (it declared roots, elicitation or sampling at
//     initialize, or sent logging/setLevel, which then goes to its own session) has its calls run
//     on an upstream session of its own (upstream.Interactions.Owner, the caller's downstream
//     session): server→client requests (roots, elicitation, sampling) are answered by the caller
//     whose call is in flight, and what an upstream keeps per session (roots it cached, the
//     logging/setLevel level) never reaches another caller, even one presenting the same key.
//     Other legacy callers share the session of their credentials (no child process per caller
//     on stdio). See internal/upstream for the bound on owners' sessions.
//   - Notifications an upstream session sends outside any request (list changes, log lines,
//     elicitation/complete, resource updates) go only to the listens following it
//     (upstream.OwnerKey, Notify): an owner's session's to that owner alone; the shared
//     session's to the followers with those credentials that have no session of their own on
//     that server (Filter.Owner), so none hears a list change twice; resource updates from the
//     shared session, where legacy resources/subscribe subscribes, to every follower whose
//     filter names the URI. Log lines go to followers whose Filter.Log is set, at or above the
//     level it returns: a legacy caller's session sets it from its logging/setLevel (every
//     level until it sets one).
//     A 2026-07-28 listen never carries log lines (the spec sends them only on the stream of
//     the request that opted in with _meta logLevel). Nothing is queued here: each line is
//     handed to the follower's stream, whose own bound applies.
//   - Elicitation modes: every legacy upstream session that may elicit offers both form and
//     URL mode (it is shared by callers with the same credentials, and servers register
//     URL-mode tools only for clients that declare it). A request in a mode the caller of the
//     call in flight did not declare ({} alone means form only) is answered to the upstream
//     with -32602, and never reaches the caller; a 2026-07-28 upstream's input request in
//     such a mode answers the caller -32021 naming the capability ({"elicitation":{"url":{}}}).
//     A URL-mode request reaching a 2025-era caller without an elicitationId gets a random one
//     (as LiteLLM does); notifications/elicitation/complete from a legacy upstream session
//     follows the legacy sessions that declared URL mode (Filter.ElicitationComplete). A
//     legacy upstream's -32042 (URL elicitation required) reaches a legacy caller as sent; a
//     2026-07-28 caller, which must never see that code, gets an isError result naming the
//     URLs to open before retrying.
package gateway
