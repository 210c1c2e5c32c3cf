// Package tracing is the OpenTelemetry trace sink of the observe seam: a
// SERVER span per downstream request and a CLIENT span per request sent
// upstream, nested, with the attributes of the MCP semantic convention,
// exported over OTLP/HTTP.
//
// Design decisions and why:
//
//   - Off is free. The app builds a Tracer only when tracing is switched on
//     (FromEnv: litellm_settings.callbacks naming "otel", or an OTLP endpoint
//     in the OTEL_* environment); otherwise no sink is installed, the front
//     does not scan params for _meta (observe.ContextReader), and nothing is
//     added to what upstreams receive.
//   - No global state. The TracerProvider, propagators and error handling
//     belong to the Tracer; otel's globals (SetTracerProvider,
//     SetErrorHandler) are never touched, so several Apps in one process
//     (tests) stay apart.
//   - _meta wins. The caller's trace context is read from params._meta
//     (traceparent, tracestate, baggage) and from the HTTP headers of the
//     same names. The convention makes the MCP-level context the parent,
//     because one HTTP request may carry several MCP messages and one MCP
//     request may be retried over several HTTP requests; a different
//     header context is kept as a span link.
//   - Sampled out at the root costs nothing. A request (or an upstream call
//     outside any request) carrying no trace context of the caller's (no
//     traceparent, tracestate or baggage header, none of those names in
//     params._meta) is put to the sampler first, with a new trace id,
//     before any span is built. Dropped, it gets no span, its upstream
//     calls none, and nothing is sent upstream: W3C Trace Context lets a
//     sampled-out trace with no incoming context go unpropagated, and at a
//     5 % ratio this is 95 % of the calls. Sampled, the id travels on the
//     context to the provider's id generator, so the span the SDK starts
//     (and samples again, to the same answer: every configurable sampler
//     decides a root by its trace id) has it. A request that carries the
//     caller's context is traced as before, sampled or not, and its context
//     propagated with the sampled flag as decided. The early question leaves
//     out the span's name and attributes (no configurable sampler reads
//     them), so building them is spent on recorded spans only.
//   - Both ways out. Outgoing gives the CLIENT span's context as HTTP
//     headers (the app hands them to upstream.WithHeader) and in
//     params._meta, set with a byte-level splice (jsonrpc.SetMember) so the
//     forwarded params are not re-encoded; stdio upstreams get _meta only.
//   - Names and ids only. Attributes carry the method, tool or prompt name,
//     resource URI, ids, protocol revision, the fault class (error.type)
//     and the upstream's address; never arguments, results or credentials.
//     Span names use the tool or prompt name, never the resource URI (high
//     cardinality). The REST surface learns its target after the span
//     starts, so the name and target are set again at the end.
//   - A recorded call builds little (TestSampledCallAllocations, 62 → 46 allocations for
//     a request, its upstream call and the context sent upstream, the export apart): the
//     attributes a span gets at its end go in one SetAttributes call (one slice, the
//     span's attributes grown once), the span name is set again only when the target
//     changed it, the span kind options are made once per Tracer, a Peer made with
//     NewPeer carries its attributes (the app makes one per server), the trace context
//     is injected into a fixed three-slot carrier (no map, no header canonicalisation:
//     the header names are written canonical), a new _meta object is written in one
//     buffer, and a request with no incoming context skips the extraction (it finds
//     nothing). The exported spans are the same (TestSampledSpansExactly holds their
//     names, kinds, status and attributes in order). Left as it is: the OTLP exporter's
//     conversion to protobuf structs and their encoding, ~40 % of a recorded call's
//     allocations: replacing it means an OTLP/HTTP client of our own (retries,
//     Retry-After, partial success, compression), for ~0.5 µs a call at 5 % sampling.
//   - Bounded export. A batch span processor with a queue of MaxQueueSize
//     spans (dropped when full, never waited for), batches of
//     MaxExportBatchSize, sent every BatchTimeout; an export is bounded by
//     ExportTimeout and its retries by RetryMaxElapsed. Neither bounds the
//     flush at App close: the retry's last wait may start just before
//     RetryMaxElapsed and one attempt may hang for ExportTimeout, so an
//     outage let Shutdown return with the export still running (goleak saw
//     it). Shutdown therefore cancels every export abortLead before its
//     own time is up: the processor stops inside ShutdownTimeout and no
//     export goroutine outlives it (TestShutdownCancelsHungExport). Export failures go to the log, once per outage at
//     WARN, with the receiver's host and a reason but never its answer,
//     and never reach a call.
package tracing
