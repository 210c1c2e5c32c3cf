// Package observe is the seam through which the data plane reports what it
// does: one Request record per downstream MCP request (every era, REST,
// legacy SSE) and one Call record per request the gateway sends upstream.
// Metrics, traces, spend and access logs are Sinks; the front and the
// upstream client path know nothing about them.
//
// Cost when nobody listens is one nil check: a nil *Observer (New with no
// sinks returns nil) starts nothing, allocates nothing and returns the
// context unchanged, so callers guard the building of a record with Enabled.
//
// A record is started with Observer.Request or Observer.Call, which give
// every sink a chance to derive a context (a trace span) before the work
// runs, and ended with the returned span's End, which stamps the duration
// and hands the finished record to every sink in order. Sinks run in the
// order given to New, on the request's goroutine, and must not block: a
// sink may fill a field later sinks read (the spend sink sets Cost before
// the metrics sink adds it). The record is the sinks' to read only until
// End returns; a sink keeping data copies it.
//
// The request in flight is reachable from its context (RequestFrom), so the
// core can annotate what only it knows (the server a tools/call went to,
// the fault class of its outcome) without importing any sink. Records carry
// names and ids only: never arguments, results or tokens. The exception is
// Request.Header and Request.Meta, references to what the caller sent, for a
// sink reading the context the caller propagates (W3C trace context); they
// are never recorded, and Meta is extracted only when a sink says it reads
// it (ContextReader), so other sinks pay no scan of the params.
//
// The access log (AccessLog) writes one JSON line per request. Through a
// slog.Logger it cost a record, an attribute slice, the JSONHandler's
// reflection-free but general encoding and one write system call per
// request, about a tenth of the default gateway's CPU per call (profile in
// docs/benchmarks.md, section h43-defaultpath). NewAccessLogLines encodes the
// same bytes by hand (the keys in slog's order, its string escaping,
// encoding/json's float format; a differential fuzz test holds it to slog's
// output) into a pooled buffer, and a Lines buffer writes them out in one
// write per DefaultLinesSize (64 KiB) or DefaultLinesInterval (100 ms),
// whichever comes first, and at Close. The price: the last 100 ms of access
// lines are lost if the process dies without closing (a crash, SIGKILL; a
// panic in a request is recovered and loses nothing), and access lines may
// reach the output up to 100 ms after log lines written meanwhile through
// the logger (each line stays whole: both go through one *os.File, whose
// writes are serialised). Rejected: a goroutine and channel per line (a
// hand-off per request costs what the write did), and a custom slog.Handler
// (the record and attributes are most of the encoding cost).
package observe
