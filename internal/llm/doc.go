// Package llm fulfils MCP sampling requests (sampling/createMessage) from upstream servers
// by calling a model from LiteLLM's model_list through an OpenAI-compatible
// /chat/completions endpoint. The gateway answers these requests itself, so the caller
// never sees them.
//
// # Flow
//
// CreateMessage validates the request before anything else (messages non-empty, maxTokens
// a positive integer, roles and content blocks well formed, nothing unsupported), then
// resolves the model, then makes exactly one non-streaming POST to
// {api_base}/chat/completions. There are no retries: a sampling request may be costly
// and non-idempotent, and every provider call counts. A request refused for
// its shape therefore never reaches the provider.
//
// # Model choice
//
// Resolve follows LiteLLM's _resolve_model_from_preferences, in hint order: for each
// non-empty modelPreferences.hints[].name, an exact model_name match, then the first
// model_name containing the hint case-insensitively; the first hint that matches wins.
// Otherwise default_mcp_sampling_model, otherwise the first model_list entry, otherwise
// ErrNoModel with LiteLLM's text. Duplicate model_name entries are allowed (LiteLLM
// load-balances them); the first one is used.
//
// Priority scoring (costPriority, speedPriority, intelligencePriority) is deliberately
// skipped: LiteLLM scores with its cost and throughput tables, which mcpgw does not carry,
// and scores computed from nothing would only make the choice look principled. The
// priorities are read by no one; hints, the default and file order decide.
//
// # Mapping
//
// Request: systemPrompt becomes a leading "system" message; each MCP message keeps its
// role. Text-only content (one block or an array of blocks, MCP 2025-11-25+) becomes a
// string, array texts joined by "\n" — the plain form every compatible server accepts.
// Content containing an image becomes the content-part array with the image as a
// data: URL ({"type":"image_url","image_url":{"url":"data:<mimeType>;base64,<data>"}});
// images are accepted in user messages only, as chat completions defines. maxTokens →
// max_tokens, temperature → temperature, stopSequences → stop, and the model id is
// litellm_params.model after its first "/" ("openai/gpt-x" → "gpt-x").
//
// Refused with ErrUnsupported, before any provider call: audio content (chat
// completions' input_audio needs a format the MCP mimeType does not reliably give, and
// few compatible servers accept it), tool_use/tool_result content and tools (the gateway
// does not declare sampling.tools, and a tool loop would need more than one provider
// call). includeContext and metadata are ignored: the gateway has no conversation
// context to add, and metadata is provider-specific.
//
// Response: choices[0].message.content (a string, or an array of text parts, which is
// concatenated) becomes the result text; the provider's model, else our model_name,
// becomes result.model; finish_reason "stop" → "endTurn", "length" → "maxTokens", any
// other value as is, absent → no stopReason.
//
// max_tokens rather than max_completion_tokens is sent: it is what LiteLLM, vLLM, Ollama
// and older OpenAI models accept. OpenAI reasoning models that reject it need a LiteLLM
// proxy in front (api_base pointing at it), which translates.
//
// # Endpoints and keys
//
// api_base must be an http(s) URL (checked in New). An empty api_base means
// https://api.openai.com/v1 for "openai/..." or unprefixed models, as in LiteLLM; for other
// providers New still succeeds (the config may list models used for other purposes) and a
// sampling request routed to such a model fails with ErrProvider. The api_key is sent as
// "Authorization: Bearer"; Model's String and GoString omit it.
//
// The caller's request headers and client IP are not forwarded to the provider, unlike
// LiteLLM's sub-call: the provider credential is the gateway's, and forwarding the
// caller's headers would hand their credentials to a third party.
//
// # Errors
//
// Every error is one of ErrInvalidRequest, ErrUnsupported, ErrNoModel, ErrProvider, or
// the caller's context error, matched with errors.Is, so the gateway can answer an
// upstream with invalid params or a tool error as appropriate. Error texts never contain
// the provider's response body, the API key or any prompt or answer text: a non-2xx
// status is reported as "sampling provider answered HTTP <code>", a malformed answer as
// "sampling provider returned an invalid response" (the JSON decoder's message, which can
// quote the body, is dropped), and transport errors without their URL. Provider responses
// are read up to MaxResponseBytes. Each call is bounded by Config.Timeout (default 60 s)
// through a context deadline with its own cause, so our timeout ("timed out after 60s") is
// told apart from the caller's cancellation. Each call logs one record (model, status,
// duration; never content).
//
// # Rejected alternatives
//
//   - github.com/openai/openai-go (an OpenAI-compatible chat
//     completions client): official and well kept, but about 232k lines of generated Go with
//     cloud SDKs in its module graph, ~40 s of cold compile and ~20 MB of binary for one
//     endpoint. A thin net/http client also tolerates "compatible" servers (vLLM, Ollama,
//     LiteLLM) that deviate from OpenAI's schema, and is trivially faked with httptest.
//     Worth revisiting if streaming, tool calls or the Responses API are needed.
//   - github.com/sashabaranov/go-openai: unofficial, same weight argument.
//   - Decoding params into the go-sdk's sampling types: that ties validation and content
//     shapes to one SDK release, while the bridge needs only a few fields, must accept
//     both the single block and the 2025-11-25 array form, and must refuse unsupported
//     blocks with its own clear text before any provider call.
//   - Retrying failed provider calls: sampling is not idempotent in cost, every call
//     counts, and the upstream can retry if it wants to.
//
// A Sampler holds no mutable state after New and is safe for concurrent use; the package
// has no package-level mutable state (its variables are sentinel errors).
package llm
