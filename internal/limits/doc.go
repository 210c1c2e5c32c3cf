// Package limits counts requests against limits: a Counter decides, one
// request at a time, whether a key (a server, a store key or a team) may
// make another request within its limit, and Memory is the in-process
// Counter; Slots bound how many requests of one key are in flight at once,
// and MemorySlots is the in-process Slots. A Gate decides one request
// against several limits at once, all or nothing: Local is the in-process
// Gate (over a Memory and a MemorySlots), Redis the Gate shared by every
// replica using one Redis. Usage carries what the limits that admitted a
// request have left, for LiteLLM's x-ratelimit-* headers on a success.
//
// # One admission per call
//
// A tool call must pass up to five limits (its key's or team's
// max_parallel_requests, mcp_rpm_limit and rpm_limit, then its server's
// max_concurrent_requests and rpm). Gate.Admit checks them together: a
// call refused by any of them is counted by none (no limit is spent by a
// call that was not sent), and an admitted one is counted by all. The
// first check that refuses is the one reported. With Redis this is one
// script, so one round trip decides the call whatever the number of
// limits; the slots it took are given back by one more command
// (Admission.Release).
//
// # The seam
//
// Counter is what every layer that enforces a limit uses; internal/app
// builds the Counter and hands it out. Memory counts for one process, so
// each replica enforces a limit on its own share of the traffic; a Counter
// shared by replicas (the same interface over a shared store) makes a limit
// hold for all of them together. Take checks and counts in one step, which
// a shared store does atomically (one script per Take), and gets the time
// from its caller, so every implementation decides the same way for the
// same sequence of requests and the conformance tests (package limitstest)
// need no sleeping.
//
// # The rule: a sliding window
//
// A limit of n per window w allows a request when fewer than n requests
// were allowed in the w before it. So no interval of length w ever sees
// more than n allowed requests, whatever the timing: "rpm: 60" never sends
// the upstream a 61st request within any minute. A refused request is not
// counted, so a caller retrying too early does not push its own turn back.
// RetryAfter is exact: the time until the oldest request that must leave
// the window does.
//
// Rejected:
//
//   - Fixed windows (a counter per calendar minute): up to 2n requests
//     around a window boundary.
//   - A token bucket, or GCRA, its single-timestamp form: O(1) state per
//     key, but with a burst of n they allow n at once and then one every
//     w/n, so one interval of length w can see 2n-1 requests; an upstream
//     that enforces the same rpm itself would refuse some of them. Without
//     the burst (one request per w/n) "rpm: 2" would refuse the second
//     request of a minute.
//   - A sliding-window counter (two fixed windows, the previous one
//     weighted): O(1) state, but an estimate that assumes the previous
//     window's requests were spread evenly, so it both over- and
//     under-admits.
//
// The cost of exactness is state: Memory keeps the times of the requests
// allowed in the window, 8 bytes each, so a key with limit n holds at most
// n of them (a shared store would keep them in a sorted set per key, pruned
// on each Take).
//
// # Bounds
//
// Memory holds at most the number of keys NewMemory was given
// (DefaultMaxKeys by default). A new key beyond that evicts the least
// recently used one: the key whose last Take is oldest, whose window has
// most likely passed.
// An evicted key whose window had not passed forgets its count, so it may
// be allowed up to its limit again at once; with keys naming configured
// servers this never happens below that many servers. Memory starts no
// goroutine: expired times are dropped by the Take that finds them. Local
// holds two Memories of that size: the keys of servers (ServerPrefix) apart
// from the others, so callers' keys cannot evict servers' counts.
//
// # Requests in flight
//
// Slots is a semaphore per key whose size is given on every Acquire (so a
// changed limit holds from the next request). A request over it is refused
// at once, never queued: a queue would hold the caller's connection and a
// goroutine for an unknown time, and a caller told to retry can decide for
// itself. MemorySlots holds an entry only while a key has a request in
// flight and drops it on the last release, so it never holds more entries
// than there are requests in flight and needs no eviction. Acquire's force
// counts a request that must not be refused (a retry of an admitted one).
// Like Counter, Slots is a seam: a shared implementation makes a bound hold
// across replicas.
//
// # Redis
//
// Redis keeps the same sliding window log as Memory, in a sorted set per
// key (member: the admitted request's token, score: its time in
// microseconds), pruned by the script that reads it, and the same slots,
// as a sorted set per key of the requests in flight scored by when their
// lease ends. The script (admitScript) runs atomically in Redis: it prunes
// and counts every check, returns the first refusal with its exact
// RetryAfter, and only when all pass adds the request to every set. It
// decides by the Redis server's clock (TIME), the one clock every replica
// shares, so replicas whose clocks disagree still count one window;
// RedisOptions.CallerClock decides by the caller's time instead (the
// conformance tests, which give times). The script's writes are effects
// (Redis 7 replicates them, not the script), so TIME is allowed.
//
// Why the exact window rather than GCRA (one timestamp per key) in Redis
// too: the reasons above hold across replicas as well, and the cost is
// bounded the same way: a key holds at most its limit of members, each
// window key expires (PEXPIRE) a second after its window once idle, and
// each slot key twice its lease.
//
// A slot is a lease: it holds for DefaultLease (30 s) and the replica
// holding it renews every slot it holds every lease/3 (one script per 500
// slots, from one goroutine per Redis gate, ended by Close), so a slot is
// held as long as its request runs; a replica that dies (SIGKILL, a lost
// network) stops renewing, and its slots are free within one lease: a
// killed replica does not leak slots. A release is one ZREM; should it
// fail, the lease ends the slot. Keys: RedisOptions.Prefix (DefaultPrefix
// "mcpgw:limit:"), then "w:" (windows) or "s:" (slots), then the key the
// caller named: a server's name, a store key's hash or a team's id, never
// a secret.
//
// What the gate does while Redis is unreachable (fall back to Local, or
// refuse) is the caller's policy (internal/app); Redis only reports the
// error.
package limits
