// Package fault is the closed set of ways a request to the gateway can fail
// (Class) and the one table that says how each is answered on each surface.
//
// A Fault is what the core returns instead of a result: its class, a
// message safe to show (never an upstream body or a secret), and what some
// encodings need (Subject, Data, the upstream's Challenge, or for
// UpstreamRPC the upstream's own JSON-RPC error). The core never picks an
// HTTP status or an era-specific code; Encode does, once, for every caller.
//
// The table (status / JSON-RPC code; "in-band" is a tools/call result with
// isError set, "detail" LiteLLM's {"detail": message} body; legacy SSE
// answers ride the session's stream and have no status of their own):
//
//	class              legacy          legacy SSE   modern           REST
//	invalid_params     200 -32602      -32602       400 -32602       400 -32602
//	method_not_found   200 -32601      -32601       404 -32601       404 -32601
//	header_mismatch    200 -32020      -32020       400 -32020       400 -32020
//	unknown_tool       200 in-band     in-band      400 -32602       400 -32602
//	unknown_prompt     200 -32602      -32602       400 -32602       400 -32602
//	resource_not_found 200 -32002      -32002       400 -32602       400 -32002
//	missing_capability 200 in-band     in-band      400 -32021       200 in-band
//	target_revoked     403 -32600      -32600       403 detail       403 detail
//	auth_required      401 -32603      -32603       401 -32603       401 -32603
//	forbidden          403 -32603      -32603       403 -32603       403 -32603
//	timeout            200 -32603      -32603       200 -32603       504 -32603
//	unreachable        200 -32603      -32603       200 -32603       502 -32603
//	upstream_error     200 -32603      -32603       200 -32603       502 -32603
//	rate_limited       200 -32603      -32603       200 -32603       429 -32603
//	unavailable        200 -32603      -32603       200 -32603       503 -32603
//	upstream_internal  200 -32603      -32603       200 -32603       500 -32603
//	upstream_rpc       200 own code    own code     see below        502 own code
//	relay              200 -32603      -32603       200 -32603       502 -32603
//	internal           200 -32603      -32603       500 -32603       500 -32603
//	limit_exceeded     429 -32603      -32603       429 -32603       429 -32603
//	limits_unavailable 503 -32603      -32603       503 -32603       503 -32603
//
// Auth refusals carry the upstream's WWW-Authenticate wherever a status is
// sent, and limit_exceeded (the gateway's own limit, so the request never
// left; an upstream's own 429 is rate_limited) a Retry-After in whole
// seconds, at least 1, with LiteLLM's x-ratelimit-{limit,remaining,reset}-<kind>
// headers when the fault names its limit (Fault.Limit; kind "requests" or
// "max_parallel_requests", reset in the same seconds as Retry-After). An upstream's own JSON-RPC error (upstream_rpc)
// reaches legacy callers as sent; a modern caller sees the legacy
// resource-not-found code (-32002) as -32602, and instead of the legacy URL-elicitation-required
// code (-32042) an in-band result naming the URLs to open (tools/call) or
// -32602 with that text (prompts/get, resources/read); its status is its
// code's (ModernErrorStatus). REST answers it 502, or 400 for -32602.
package fault
