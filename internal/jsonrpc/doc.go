// Package jsonrpc is the JSON-RPC 2.0 envelope as the gateway needs it: ids kept
// as raw bytes, payloads kept as the sender's bytes, strict shape checks with
// precise reasons.
//
// Design decisions:
//
//   - Ids are raw JSON text. The go-sdk's jsonrpc package routes ids through
//     float64, so 9007199254740993 comes back as …992 and a gateway that
//     rewrites ids would answer the wrong request. A string id stays a string.
//   - Decoding reads the message once: the pass that validates it also
//     locates the top-level members (validMembers); params and result are
//     sub-slices of the input. The check is our own and accepts exactly what
//     json.Valid and utf8.Valid together accept (a differential fuzz test
//     holds it to that) at several times their speed: they were a tenth of a
//     tools/list's CPU, and a second pass to find the members another
//     twentieth (FuzzDecodeOnePass holds Decode to the two-pass answer). Only
//     bytes it refuses go through the two, to say why. Decoding into a struct
//     with RawMessage fields was rejected: it
//     copies every payload and encoding/json matches keys case-insensitively, so
//     "ID" would pass for "id".
//   - Scanning copies no member name the gateway reads on every message: the
//     JSON-RPC and common MCP names come back as constants, and lookups by name
//     (Member, Members, SetMember) compare the raw key in place. The scanners
//     (EachMember, Members, …) assume valid JSON and do not validate again.
//   - Encoding splices raw params/results into a fixed envelope instead of
//     re-marshalling them (re-marshalling validates and compacts megabytes again).
//   - Unknown top-level members are tolerated (forward compatibility); duplicate
//     known members, a request carrying result/error, a response with both or
//     neither, a null request id and a non-integer numeric id are rejected.
//   - Batches are refused by Decode with a clear reason: only the 2025-03-26
//     revision allowed them, and the gateway answers one message per request.
package jsonrpc
