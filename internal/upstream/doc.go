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
//     keyed by the caller's credential headers and the capabilities the
//     caller's interaction callbacks justify, so a session is never shared
//     between different credentials and is initialised once, not per call.
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
//   - Errors are typed (RPCError, StatusError, ProtocolError,
//     ConnectionError, TimeoutError) and never carry an upstream body: an
//     error answer's body is read only when it is a JSON-RPC error object.
//   - Redirects are followed only within the origin of the request, so
//     credentials cannot be carried to another host.
//   - A stdio child that dies fails its pending requests as unreachable and is
//     restarted on the next use, with exponential backoff (250 ms doubling to
//     30 s) so a crashing server is not respawned in a loop.
package upstream
