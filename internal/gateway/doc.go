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
//   - A legacy caller's calls run on an upstream session of its own (upstream.Interactions.Owner,
//     the caller's downstream session): server→client requests (roots, elicitation, sampling) are
//     answered by the caller whose call is in flight, and what an upstream keeps per session
//     (roots it cached, the logging/setLevel level, subscriptions) never reaches another caller,
//     even one presenting the same key. See internal/upstream for the bound on such sessions.
package gateway
