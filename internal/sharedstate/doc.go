// Package sharedstate keeps, in Redis, the state that the gateway's replicas
// must share so that a load balancer without stickiness serves a caller as
// one replica would: ended legacy sessions (Tombstones), a legacy caller's
// answers to the gateway's requests (Relay), and the upstream notifications
// that make every replica's caches stale (Hub). Each implements the seam
// its user defines (front.Tombstones, front.Relay, notify.Hub); without
// Redis internal/app uses the in-memory ones and a replica is on its own.
// Everything uses the one redisconn.Conn internal/app builds, under a key
// and channel prefix ("mcpgw:").
//
// # What crosses replicas, and how
//
//   - Tombstones: one key per ended session, prefix + "tomb:" + SHA-256 of
//     the sealed id (ids are long; the digest keeps keys short and out of
//     the id's reach), SET with NX (the first record stays) and PXAT the
//     sealed id's expiry, so Redis drops it when the id could not open any
//     more and a restarted replica still sees it. Only a session's end
//     for every replica goes there (its caller's DELETE, or state only the
//     closing replica held); one a replica ended for reasons of its own
//     (idle there, evicted, expired) is remembered there only (BuryHere),
//     since another replica may be serving it. A legacy request costs
//     one EXISTS unless this replica buried the id itself (its own record
//     answers first).
//   - Relay: each replica subscribes to its own channel (prefix +
//     "relay:" + its name). The ids of the requests a replica sends to legacy
//     callers name it ("mcpgw-<replica>.<n>"), so the replica that
//     receives an answer it does not hold publishes it on the holder's
//     channel: no Redis command per request asked, one PUBLISH per answer
//     that lands elsewhere, and only the holder receives it. (A broadcast
//     channel would wake every replica per answer; a Redis key per request
//     would cost a write per request asked.) The holder delivers it only to
//     its live session of the id the answer was posted on (named on the
//     channel by a digest of the id, never the sealed id). One answer is
//     at most DefaultMaxRelayBytes (1 MiB) as published; a larger one is
//     not forwarded, and the request waits as if unanswered.
//   - Hub: one channel (prefix + "notify") for every replica; events are
//     tagged with the publishing replica's name and a replica ignores its
//     own echo. Only list changes (tools, prompts, resources) cross: every
//     replica's catalog caches those lists, and its listeners follow them.
//     resources/updated and notifications/message stay on the replica that
//     heard them: a replica whose callers follow a resource or a server's
//     log holds its own upstream session, which hears them itself. Publish
//     delivers locally at once and queues the Redis publish (at most 256
//     waiting, each at most DefaultMaxEventBytes, 64 KiB; beyond either an
//     event stays local), so an upstream's notification never waits on
//     Redis. A list change that crosses may reach a replica that also heard
//     it from the upstream: the second invalidation is harmless.
//
// The modern era holds nothing on a replica between requests: a
// multi-round-trip call's state rides in its sealed continuation, which any
// replica with the same salt key resumes, so nothing of it goes through
// Redis.
//
// # Redis down
//
// Every part degrades to a single replica's semantics and recovers by
// itself; the outage is logged once (WARN) and its end once (INFO) by the
// Conn. Tombstones keep this replica's burials in memory (bounded as
// front.MemoryTombstones) and answer from them alone; while Redis is down
// they try it at most once a second, so requests do not each wait on a
// dead server, and one tombstone command waits at most 500 ms (the front
// holds its session lock meanwhile). Burials made during an outage stay on their replica. A
// forwarded answer fails (its request waits until its own timeout, as with
// an answer that never came). Events stay local. Each subscription (one
// connection per Relay and per Hub) reconnects with a backoff from 100 ms
// to 2 s and subscribes again; while idle it pings every 15 s so a
// connection that died silently is noticed. Messages published while a
// subscriber was away are lost (pub/sub keeps nothing): catalogs that
// missed a list change refresh at their cache's own expiry.
//
// # Goroutines
//
// A Relay and a Hub each run one subscriber goroutine (a Hub also runs one
// publisher); a panic in handling a message is logged without its value and
// the goroutine goes on. Close ends them and waits.
package sharedstate
