// Package sse reads and writes Server-Sent Events (text/event-stream).
//
// The gateway uses it on both sides: Reader parses the event streams of
// upstream MCP servers (Streamable HTTP and legacy SSE transports), Writer
// produces event streams for downstream clients.
//
// # Parsing
//
// Reader implements the WHATWG HTML "Parsing an event stream" and
// "Interpreting an event stream" algorithms:
//
//   - Lines end in CRLF, LF or a lone CR. A CR is treated as a complete line
//     end as soon as it is seen; whether an LF follows is checked lazily when
//     the next line is read. So an event terminated by CR CR is returned
//     without waiting for more input, and a CRLF split across two Read calls
//     is still one line end.
//   - A UTF-8 BOM at the start of the stream is skipped.
//   - The field name runs up to the first ':'; one leading space (only one)
//     is stripped from the value. A line without ':' is a field with an empty
//     value. Lines starting with ':' are comments and are
//     skipped. Unknown fields are ignored.
//   - "id" values containing NUL are ignored. "retry" is honoured only if it
//     is non-empty and all ASCII digits; values beyond MaxInt32 saturate.
//   - A blank line dispatches the event. LastEventID is updated at every
//     blank line, even when no event is dispatched, which is what makes
//     an id-only block such as "id: 7\n\n" advance the resumption point.
//   - At EOF an unterminated event, and an unterminated last line, are
//     discarded and Next returns io.EOF.
//
// # Events without data
//
// The spec dispatches an event only if its data buffer is non-empty. The
// buffer gets a trailing LF for every data field, so a block with no data
// field is not dispatched, but a block with one empty "data:" line is:
// its buffer is "\n", and the event is dispatched with empty data after the
// trailing LF is removed. (The spec's own example "data\n\ndata\ndata\n\n"
// fires an event with empty data and one with data "\n"; browsers agree.)
// We follow that exactly instead of inventing a rule of our own: MCP
// 2025-11-25 "priming" events ("id: X" with an empty data field) therefore
// reach the caller as events with len(Data) == 0, and the caller must skip
// them rather than try to decode them as JSON-RPC. Either way LastEventID
// reflects their id. Dropping empty-data events in the Reader was rejected
// because it would silently deviate from the spec and hide the event's
// Type/Retry from callers that care.
//
// Event.ID is the id received in that event's block (empty if the block had
// none); Reader.LastEventID is the spec's persistent "last event ID string",
// the value to send as Last-Event-ID when reconnecting. Event.Retry is the
// retry received in the block (0 if none, so "retry: 0" is indistinguishable
// from absence there); the Reader keeps the latest valid retry as the
// stream's reconnection time.
//
// Bytes are not UTF-8 decoded. The spec decodes the stream as UTF-8 with
// replacement characters; doing that would cost a pass over every payload
// and turn invalid JSON into different-but-valid-looking JSON. Payloads are
// passed through byte for byte and the JSON decoder downstream rejects bad
// encoding.
//
// # Limits
//
// One limit, maxEventBytes, bounds memory per stream: an event's data (as
// returned, newlines included) may not exceed it and a single line may not
// exceed it by more than LineOverhead bytes (room for the "data: " prefix).
// Lines are scanned inside a 32 KiB bufio buffer without copying; only lines
// spanning refills are assembled in a scratch buffer. Scratch buffers are
// reused between lines and events (and dropped if they grew past 1 MiB), so
// a typical event costs one allocation for Data plus one for a changed ID.
//
// Reset points a Reader at a new stream, keeping its read buffer and its
// scratch space (up to 64 KiB): the upstream client reads one short stream
// per request and keeps its Readers in a sync.Pool, so an answer costs one
// allocation (its Data) instead of a new buffer and scratch that grow line
// by line. Handing the scratch itself out as Data (no copy) was rejected:
// the next stream would then have to grow new scratch, which costs more
// than the copy. Scratch larger than 64 KiB is dropped at Reset, so a pooled
// Reader holds at most that plus its read buffer. NextShared hands the
// scratch out as Data for one event only (until the next call): the upstream
// client compares an answer there with the last one it kept: an unchanged
// list page costs no copy; any other message is copied whole (and decoded
// from the copy).
//
// Exceeding the limit yields ErrEventTooLarge and the Reader stays failed.
// Resynchronising (skipping to the next blank line) was rejected: the
// skipped event may be a JSON-RPC response, silently losing it would leave
// a request hanging, and skipping means consuming unbounded attacker
// controlled input. Failing the stream lets the caller reconnect with
// Last-Event-ID or report an error. All other errors are sticky as well;
// I/O errors are wrapped with context and still match errors.Is.
//
// The Reader never asks the underlying reader for more than it needs to
// finish the current event; it only keeps whatever a single Read returned
// beyond that in its buffer.
//
// # Writing
//
// Writer emits "event", "id", "retry" and then "data" fields, each as
// "name: value" (the space is always present so values that begin with a
// space survive), one event per Write call, and flushes after each event via
// http.ResponseController (which follows Unwrap chains of wrapped
// ResponseWriters) or a Flush method. A ResponseWriter that cannot flush is
// written to without flushing. Data is split on CRLF, LF and CR into data
// lines; a reader cannot tell these apart, so CRLF and CR read back as LF. At
// least one data line is always written so that every written event is
// dispatched. Type and ID containing CR or LF (and ID containing NUL) are
// rejected with ErrInvalidEvent rather than escaped or truncated, since any
// silent change would corrupt routing or resumption. An empty ID is not
// written, so the Writer cannot emit the "id:" line that resets a client's
// last event ID; the gateway has no use for that.
//
// Writer is safe for concurrent use so keepalive comments can be written
// from a timer goroutine; Reader is not.
//
// # Why not a library
//
// Third-party SSE packages were rejected: we need exact control of limits
// on both sides of the gateway (per-line and per-event, with a typed error),
// lazy CR/LF handling that never blocks on the next byte, and allocation
// behaviour suited to many long-lived streams, and a small, fully tested
// package is cheaper than auditing and pinning a dependency. The MCP Go SDK's
// own scanner (go-sdk mcp/event.go) is unexported, and differs from the spec
// in ways that matter to a gateway: it trims all surrounding whitespace from
// values, rejects lines without ':', does not treat a lone CR as a line end,
// and dispatches an unterminated event at EOF. bufio.Scanner was rejected
// because a split function must decide at a buffer boundary whether a CR is
// followed by LF, which means either blocking for another byte or
// mis-splitting CRLF across reads.
package sse
