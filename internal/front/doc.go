// Package front is the gateway's HTTP front: /mcp for both protocol eras, /{server}/mcp, the
// legacy HTTP+SSE transport (/mcp/sse), the REST routes (/mcp-rest/tools/list and
// /mcp-rest/tools/call) and the health endpoints.
//
// Admission, before any handler runs (Admission, wrapped once around the whole mux):
//
//   - HostGuard refuses DNS-rebinding requests on every route with 403: on a loopback listener
//     only loopback Host names and the configured extra hosts (general_settings.allowed_hosts,
//     "*.suffix" wildcards allowed) are served; an Origin, when present, must name the Host, a
//     configured extra host, or a configured origin (general_settings.allowed_origins).
//   - In-flight bound: at most MaxInflight requests (default DefaultMaxInflight, 256;
//     general_settings.max_inflight_requests) are served at once; beyond it 503 with
//     Retry-After: 1, at once, never queued. /health/* is exempt. A long-lived stream gives its
//     place back when it starts streaming.
//   - Body read deadline: a request body must be read within BodyReadTimeout (default
//     DefaultBodyReadTimeout, 30 s; general_settings.http_read_timeout) from when its handler
//     starts; a trickled body is cut. The deadline is lifted once the body is read to its end,
//     because net/http then watches the connection for the client leaving and a deadline firing
//     there would cancel the request. net/http's own ReadTimeout is left unset for that reason.
//   - LimitListener bounds open connections (default DefaultMaxConnections, 1024;
//     general_settings.max_connections); one accepted beyond the bound is answered 503 and
//     closed at once.
//
// The server itself (built in cmd/mcpgw) has ReadHeaderTimeout (10 s), WriteTimeout for answers
// that are not streams (300 s), IdleTimeout for keep-alive connections (60 s) and
// MaxHeaderBytes (64 KiB), all general_settings keys (see internal/config).
//
// Authentication comes first: every MCP and REST route establishes the caller from the headers
// alone (master key, or the custom_auth webhook told the method from Mcp-Method when present,
// else the HTTP route) before it reads a body or resolves a /{server} segment, so a caller
// without a valid key costs no body read and learns nothing about which servers exist (401
// whatever the segment; an unknown server is 404 only for a valid key). The caller is kept with
// the request; a POSTed message whose method differs from the Mcp-Method the caller was
// established for is refused (400, -32020). A body is bounded by MaxBodyBytes (default
// DefaultMaxBodyBytes, 4 MiB; general_settings.max_request_body_bytes): 413, before reading
// when Content-Length announces more.
//
// MCP headers that must appear once (MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Mcp-Session-Id, every Mcp-Param-*) are refused with 400 (-32020) when repeated, so no check
// reads one copy while an upstream acts on another. POST /mcp-rest/tools/call takes only
// Content-Type: application/json (else 415): a browser cannot send that cross-site without
// asking first.
//
// Streams (a legacy session's GET stream, subscriptions/listen, the /mcp/sse stream, and a
// POST answer once it turns into an SSE stream) lift their connection's read and write
// deadlines (keepOpen); they are bounded by max_connections and end when the client leaves or
// the gateway shuts down.
package front
