// Package metrics is the Prometheus side of the gateway: an observe.Sink
// that turns request and call records into series, a registry that also
// holds collectors reading the gateway's current state at scrape time, and
// the /metrics handler over it (prometheus/client_golang, text exposition).
//
// Series:
//
//   - litellm_mcp_tool_calls_total and litellm_mcp_tool_call_spend_metric_total,
//     LiteLLM's names and labels (mcp_tool_name, mcp_server_name,
//     hashed_api_key, api_key_alias, team, team_alias, user, end_user) so
//     its dashboards work: one count per tools/call the gateway routed to a
//     server (whatever the result), and the call's cost when it is above
//     zero (set by the spend sink before this one runs). The tool name is
//     the server's own (the caller's name without the server prefix).
//     Config.Labels narrows the label set (LiteLLM's
//     prometheus_metrics_config include_labels): a dropped label is not
//     exported at all.
//   - mcp_server_operation_duration_seconds (one per downstream request of
//     any transport) and mcp_client_operation_duration_seconds (one per
//     request sent upstream): the OpenTelemetry MCP semantic convention's
//     histograms, with its bucket boundaries and attributes in Prometheus
//     naming (mcp_method_name, error_type, gen_ai_tool_name,
//     gen_ai_prompt_name, rpc_response_status_code, gen_ai_operation_name,
//     mcp_protocol_version, network_protocol_name), plus mcp_transport
//     (streamable_http, sse, rest) on the server side and mcp_server_name
//     on the client side. error_type is the gateway's fault class when the
//     core failed the request (finer than the JSON-RPC code, which is
//     -32603 for most classes), else the JSON-RPC code, else the HTTP
//     status, else tool_error for a tool result with isError set.
//   - mcpgw_faults_total{fault, server}: failed downstream requests by fault
//     class and the server that failed them ("" when none did);
//     mcpgw_rate_limit_rejections_total{server}: the gateway's own limits
//     (limit_exceeded); mcpgw_webhook_duration_seconds{outcome}: each
//     custom_auth call (Webhook, wired as identity.Config.OnWebhook).
//   - Whatever collectors internal/app registers (MustRegister: the config
//     generation, reload status, upstream sessions open per server, listens
//     running, legacy sessions and streams held, each server's listing
//     breaker state, list cache hits and misses, counted by the catalog):
//     values read
//     when scraped, so the hot path pays nothing for them.
//
// A tools/call's two LiteLLM counters are resolved once per tool, server and
// caller and kept (at most maxResolved, 4 096, entries; past that, a new one
// takes an arbitrary old one's place, so names a caller makes up cannot fill
// it for good), so a
// repeated call costs one read-locked map lookup; the spend child is made on
// the first call that cost something, so free calls export no spend series.
// The two duration histograms' children are kept the same way, by the record fields
// their labels derive from (method, tool or prompt name, server, protocol, transport,
// fault, error code, failing status): deriving the labels takes the names cap's lock and
// the registry hashes and validates every label value, ~2 µs a request that a repeated
// request skips. Rejected: a lock-free (sync.Map or copy-on-write) table: the read lock
// is uncontended at these rates and the table must stay bounded.
//
// Cardinality is bounded. Label values that come from callers are never
// exported as sent: a method outside the protocol is "_OTHER", a protocol
// version the gateway does not know is "_OTHER", and a tool or prompt name
// is exported only once the gateway routed it to a server (so it is one
// the catalog listed); an unrouted name is "_OTHER". Distinct tool or
// prompt names are capped at Config.MaxNames (default DefaultMaxNames) and
// distinct caller label sets (key hash, alias, team, team alias, user) at
// Config.MaxCallers (default DefaultMaxCallers), and end users apart at the
// same number (they come from a header any key sets, so one key must not
// push every other caller to "_OTHER"): once a cap is reached, new values
// are exported as "_OTHER". An error code outside the JSON-RPC and MCP
// specs' own is "_OTHER". Label values are made valid UTF-8 (a name clipped
// mid-character, a header's raw bytes), which the registry otherwise
// panics on. Nothing is evicted: a
// series, once exported, stays until the process ends (a counter that
// vanished and came back would read as a reset).
package metrics
