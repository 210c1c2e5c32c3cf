// Package limits counts requests against limits: a Counter decides, one
// request at a time, whether a key (a server, a store key or a team) may
// make another request within its limit, and Memory is the in-process
// Counter; Slots bound how many requests of one key are in flight at once,
// and MemorySlots is the in-process Slots.
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
// goroutine: expired times are dropped by the Take that finds them.
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
package limits
