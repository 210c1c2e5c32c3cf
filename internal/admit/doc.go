// Package admit holds what every request passes before any handler runs, and the bound on
// open connections: it is wrapped once around the gateway's whole HTTP surface by internal/app,
// and the listener bound is installed by cmd/mcpgw.
//
// Admission, before any handler runs (Handler, wrapped once around the whole surface):
//
//   - HostGuard refuses DNS-rebinding requests on every route with 403: on a loopback listener
//     only loopback Host names and the configured extra hosts (general_settings.allowed_hosts,
//     "*.suffix" wildcards allowed) are served; an Origin, when present, must name the Host, a
//     configured extra host, or a configured origin (general_settings.allowed_origins).
//   - In-flight bound: at most MaxInflight requests (default DefaultMaxInflight, 256;
//     general_settings.max_inflight_requests) are served at once; beyond it 503 with
//     Retry-After: 1, at once, never queued. /health/* is exempt. A long-lived stream gives its
//     place back when it starts streaming; a request POSTed to /mcp/sse/messages keeps its
//     place until its answer is on the connection's stream.
//   - Body read deadline: a request body must be read within BodyReadTimeout (default
//     DefaultBodyReadTimeout, 30 s; general_settings.http_read_timeout) from when its handler
//     starts; a trickled body is cut. The deadline is lifted once the body is read to its end,
//     because net/http then watches the connection for the client leaving and a deadline firing
//     there would cancel the request. net/http's own ReadTimeout is left unset for that reason.
//   - LimitListener bounds open connections (default DefaultMaxConnections, 4096;
//     general_settings.max_connections); one accepted beyond the bound is answered 503 and
//     closed at once.
//
// Streams leave the bound on in-flight requests with KeepOpen (they are bounded by open
// connections instead); work that answers after its handler returned keeps its place with
// HoldSlot. Both find the request's place through its context, so a handler that never passed
// admission (a test serving a front directly) is unaffected.
//
// # Why a package of its own
//
// Admission used to live in front, which made front the first and the third package a request
// entered (front's admission, app's generation switch, front's routes). It knows nothing of MCP
// beyond the JSON-RPC shape of its two refusals, and front depends on it only for KeepOpen and
// HoldSlot; as a leaf it keeps the request path one-way.
package admit
