// Package guardrail runs LiteLLM's generic guardrail API around MCP tool calls and on tool
// descriptions at listing.
//
// A guardrail is a top-level guardrails entry with litellm_params.guardrail
// generic_guardrail_api: the gateway POSTs {texts, tools, request_data, input_type,
// litellm_call_id, additional_provider_specific_params} to {api_base}/beta/litellm_basic_guardrail_api
// (headers, and api_key as x-api-key) and honours {action, blocked_reason, texts}: BLOCKED
// refuses, GUARDRAIL_INTERVENED replaces the texts, NONE passes.
//
// Design decisions:
//
//   - Modes: pre_mcp_call (or pre_call) judges a call's arguments before it is sent;
//     during_mcp_call (or during_call) judges them while the upstream call runs and refuses
//     the result when it blocks (its rewrites are not applied: the call is on its way);
//     post_mcp_call (or post_call) judges the result (input_type response) and may refuse it
//     (the caller gets an error instead) or rewrite it. Other modes do not apply to MCP and
//     are warned about at load.
//   - Texts: a call's texts are the string values of its arguments, a result's the text of
//     each text content item followed by the strings of structuredContent, in a fixed order
//     (object members by name); rewritten texts go back to the same places one for one, so
//     a guardrail redacting a value changes only that value. An answer with a different
//     number of texts is a failure of the guardrail.
//   - Which apply: every default_on guardrail, plus those a server names in its guardrails
//     list (mcpgw's extension), plus those the caller's key or team names in its metadata's
//     guardrails (LiteLLM's per-key and per-team guardrails; identity.Caller.Guardrails, read
//     by identity.MetadataGuardrails): a key's guardrails add to the server's, never remove
//     one, and a name no configured guardrail has is ignored. Tool descriptions at listing are
//     judged by the server's guardrails only (the catalog is shared by every caller). Per
//     request selection (LiteLLM's request metadata) is not offered: MCP callers cannot send
//     it. Pre- and post-call guardrails run in configuration order, each seeing
//     the previous one's rewrite; during-call ones run in parallel.
//   - Failures: a guardrail that times out (timeout, default 5 s), cannot be reached, answers
//     a non-2xx status or something that is not its answer fails closed (the call is
//     refused with "could not be checked"; unreachable_fallback fail_closed, the default) or
//     open (the call goes on as if it had answered NONE; unreachable_fallback: fail_open).
//     Either is a WARN naming the guardrail, mode, server and tool and why (timed out,
//     unreachable, HTTP status), never the texts or the answer.
//   - Bounds: at most Config.MaxConcurrent (DefaultMaxConcurrent, 64) guardrail requests in
//     flight at once across guardrails; a request waits for room within its own timeout. An
//     answer is read up to 4 MiB. During-call checks end with their timeout.
//   - Descriptions (Describe): at listing, the pre-call guardrails of the server judge each
//     new tool description (input_type request, texts the description); internal/pinning
//     quarantines a tool whose description is blocked.
//   - Refusals are JSON-RPC errors: a block is invalid_params (-32602; HTTP 400 on the modern
//     era and REST) with "Content blocked by guardrail '<name>': <blocked_reason>"; a
//     fail-closed failure is unavailable (HTTP 503 on REST).
package guardrail
