// Package upstream talks to one configured MCP server, whatever transport
// (streamable HTTP, legacy HTTP+SSE, stdio) and protocol era (legacy
// 2024-11-05 … 2025-11-25 with its initialize handshake, or the stateless
// 2026-07-28) it speaks. The rest of the gateway sees one Client with the
// same operations for every upstream.
//
// Layers, bottom up:
//
//   - transport: moves JSON-RPC bytes. httpTransport posts each message and
//     reads a JSON or SSE answer scoped to that request; mux correlates
//     requests and responses on one shared stream and is used by
//     stdioTransport (a child process) and sseTransport (legacy HTTP+SSE).
//   - session: one conversation: a transport plus what was negotiated on it
//     (legacy handshake, session id, protocol-version header) or, for modern
//     upstreams, the per-request _meta. Sessions are pooled in the Client,
//     keyed by the caller's credential headers (every map entry, whatever
//     the case of its key) and the capabilities the caller's interaction
//     callbacks justify, so a session is never shared between different
//     credentials and is initialised once, not per call.
//   - Client: era discovery (auto mode probes server/discover first and falls
//     back to initialize, then to HTTP+SSE, as the spec's dual-era client
//     rules say; the verdict is remembered and dropped when the upstream
//     answers in a way that contradicts it), paging walks, stdio restart
//     backoff.
//
// Design decisions:
//
//   - Results stay json.RawMessage; the client never decodes a tool result.
//     The go-sdk client was rejected for the forwarding path: its typed
//     results drop unknown fields and fail on unknown content types, its raw
//     transport merges all POST streams into one reader (losing per-request
//     correlation) and hides HTTP status (401, 404 session expiry).
//   - The client assigns its own JSON-RPC ids; callers' ids never reach the
//     upstream, so two callers cannot collide.
//   - Server→client requests are answered through per-operation Interactions.
//     On streamable HTTP they arrive on the request's own stream, so they are
//     attributed exactly. On shared streams (stdio, HTTP+SSE) nothing in the
//     protocol says which request they belong to: they go to the single
//     pending request whose caller can answer them and are refused when that
//     is ambiguous, because showing one caller's elicitation to another caller
//     would be a leak. Progress tokens are rewritten per request on shared
//     streams for the same reason, and restored before delivery.
//   - ping is answered by the client itself; a request with no handler gets a
//     JSON-RPC error, never silence.
//   - A session is set up at most once and never reused after it is
//     released (setup failed, the upstream ended it, Close). Concurrent
//     callers wait for one setup, each only within its own context; when
//     that setup fails, the waiters start a new session under their own
//     contexts rather than inherit the failure. Only whoever removes a
//     session from the pool releases it. Close also ends sessions still being
//     set up (their handshake is abandoned) and ephemeral ones in use.
//   - An ephemeral operation (Options.Ephemeral) is one conversation on a
//     session of its own: one handshake for a whole list walk or Info, and
//     one DELETE at the end. Its cleanup (closing the session, the DELETE
//     over a fresh connection) shares one deadline, counted from the moment
//     the operation was abandoned.
//   - Every wait has our own budget: the request timeout for each request
//     (initialize included), the listing timeout for a walk and for the
//     era probe and server/discover. A budget that passes while the caller's
//     own context is live is a TimeoutError with one warning naming the
//     upstream, by scheme, host and path only (userinfo and query may carry
//     credentials); the caller's own deadline is never reported as ours.
//   - Errors are typed (RPCError, StatusError, ProtocolError,
//     ConnectionError, TimeoutError) and never carry an upstream body: an
//     error answer's body is read only when it is a JSON-RPC error object.
//   - Redirects are followed only within the origin of the request, so
//     credentials cannot be carried to another host.
//   - A minted (OAuth2) credential refused with 401 is refreshed once and the
//     request retried once, on every transport: for legacy HTTP+SSE both the
//     stream's GET and each POST.
//   - A stdio child that dies fails its pending requests as unreachable and is
//     restarted on the next use, with exponential backoff (250 ms doubling to
//     30 s) so a crashing server is not respawned in a loop. Only exits the
//     gateway did not ask for count; any successful request clears the
//     backoff.
//   - stdio writes go through one writer goroutine, so a message is always
//     written whole while each caller waits only within its context; no lock
//     is held across a write, and closing stdin unblocks the writer. A
//     request the child never fully read is not followed by
//     notifications/cancelled. Stopping a child is bounded by the caller's
//     context at every step, and its output is read for at most a second
//     after it exits, so a descendant holding the pipes cannot keep it alive.
package upstream
