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
//   - Log lines (notifications/message) a legacy upstream session sends outside any request
//     go, like list changes, only to the listens following that upstream session (same
//     credentials) whose Filter.Log is set, at or above the level it returns: a legacy
//     caller's session sets it from its logging/setLevel (every level until it sets one).
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
