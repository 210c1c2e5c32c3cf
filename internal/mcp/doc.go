// Package mcp is the MCP protocol vocabulary as data: revisions and eras, the method table,
// _meta keys, header names and header value encoding, MCP error codes, and the few JSON shapes
// the gateway reads or writes itself (capabilities, Implementation, initialize, server/discover).
// It does no I/O and has no package-level mutable state; the JSON-RPC envelope lives in
// internal/jsonrpc.
//
// Design decisions:
//
//   - Own stdlib structs, not the go-sdk types. The gateway forwards results it did not
//     produce. The go-sdk's typed results are plain structs that silently drop unknown
//     members, CallToolResult rejects unknown content block types ("unrecognized content
//     type"), Result is sealed with an unexported resultType, and its jsonrpc envelope routes
//     ids through float64. So everything the gateway does not interpret stays
//     json.RawMessage, and the shape types here keep unknown members in an Extra map that is
//     written back on marshal. Decoding matches member names exactly (encoding/json alone
//     would accept "Tools" for "tools").
//   - Capability presence is key presence: a capability is there when its key is present and
//     not JSON null, so {} counts and null does not. Nested settings (listChanged, subscribe,
//     elicitation modes, sampling.tools) are read on demand from the raw bytes.
//   - Eras are decided by date, not by membership: IsModern/EraOf compare a well-formed
//     YYYY-MM-DD string with 2026-07-28, so a future revision the package does not know is
//     still classified (modern), and a malformed string is EraUnknown. IsKnownRevision is the
//     membership test. A request without MCP-Protocol-Version may be taken as
//     AssumedRevisionWithoutHeader (2025-03-26) by the caller.
//   - One method table (specOf in methods.go) is the single source of truth; every predicate
//     (MethodInEra, MethodInRevision, NameParam, RouteOf, ...) reads it, and the gateway's
//     routers switch on RouteOf's small Route instead of on method names. MethodInEra is
//     client→server. The legacy era is the union of 2024-11-05…2025-11-25; MethodInRevision
//     narrows to one revision (core tasks are 2025-11-25 only, elicitation/create 2025-06-18
//     on). The modern column is 2026-07-28 core only: tasks/get, tasks/update, tasks/cancel
//     belong to the tasks extension (Mcp-Name = taskId) and are not in MethodInEra(…,
//     EraModern). elicitation/create, sampling/createMessage and roots/list are not modern
//     JSON-RPC methods; they survive as InputRequest objects (IsInputRequestMethod, with the
//     client capability each needs from InputRequestCapability).
//   - Header values (Mcp-Name, Mcp-Param-*): EncodeHeaderValue sends plain text only when it
//     reads back unchanged: bytes 0x20–0x7E, no leading/trailing space (tabs are control
//     characters), and not itself of the form =?base64?…?=; everything else is wrapped, so
//     the round trip is exact. DecodeHeaderValue trims SP/HTAB, rejects control characters
//     (interior HTAB included) and non-ASCII bytes in the raw value, treats only the lowercase
//     markers as an encoding (=?BASE64?…?= is literal text), and requires canonical padded
//     standard base64 (Strict) of valid UTF-8. The markers must not overlap: "=?base64?="
//     is literal. Errors are sentinels (ErrHeader*), all meaning 400 / -32020.
//   - MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id and every Mcp-Param-* may
//     appear once per request: RepeatedHeader names a repeat (same value or not), which callers
//     refuse with 400 / -32020, so no check reads one copy while a forwarder sends another.
//   - RequestMeta builds the modern request _meta bytes once per downstream request, in a
//     fixed key order, so they can be spliced into many upstream requests.
//   - Error codes: only -32020/-32021/-32022 identify a modern server by code alone
//     (IsModernErrorCode); -32601 needs HTTP 404 and is the caller's judgement.
package mcp
