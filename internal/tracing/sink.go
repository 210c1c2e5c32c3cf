package tracing

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
)

// Attribute keys of the MCP semantic convention (and the gateway's own).
const (
	attrMethod         = "mcp.method.name"
	attrSession        = "mcp.session.id"
	attrProtocol       = "mcp.protocol.version"
	attrResourceURI    = "mcp.resource.uri"
	attrToolName       = "gen_ai.tool.name"
	attrPromptName     = "gen_ai.prompt.name"
	attrOperation      = "gen_ai.operation.name"
	attrRequestID      = "jsonrpc.request.id"
	attrRPCStatus      = "rpc.response.status_code"
	attrErrorType      = "error.type"
	attrTransport      = "network.transport"
	attrProtocolName   = "network.protocol.name"
	attrServerAddress  = "server.address"
	attrServerPort     = "server.port"
	attrHTTPStatus     = "http.response.status_code"
	attrUpstreamServer = "mcpgw.server.name"
)

var _ observe.Sink = (*Tracer)(nil)

// ReadsPropagatedContext marks the Tracer as reading Request.Meta.
func (t *Tracer) ReadsPropagatedContext() {}

// StartRequest starts the SERVER span of a downstream request. Its parent
// is the trace context in params._meta when valid, else the one in the HTTP
// headers; when both are sent and differ, the header one is a link (the
// convention: the MCP context is the parent, the transport's is linked).
//
// A request with no incoming trace context is sampled first, before any span
// work: sampled out, it gets no span and nothing is propagated for it (see
// rootSampled).
func (t *Tracer) StartRequest(ctx context.Context, r *observe.Request) context.Context {
	parent, link := ctx, trace.SpanContext{}
	if hasIncoming(r) {
		parent, link = t.remote(ctx, r)
	} else { // nothing to extract: the request is a root
		var ok bool
		if parent, ok = t.rootSampled(ctx, trace.SpanKindServer); !ok {
			return ctx
		}
	}
	opts := []trace.SpanStartOption{t.serverKind, trace.WithTimestamp(r.Start),
		trace.WithAttributes(requestAttrs(r)...)}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	ctx, _ = t.tracer.Start(parent, spanName(r.Method, r.Target), opts...)
	return ctx
}

// remote returns the context to start a request's span in (carrying the
// caller's span context and baggage, if any) and the span context to link.
func (t *Tracer) remote(ctx context.Context, r *observe.Request) (context.Context, trace.SpanContext) {
	var fromHeader context.Context
	if r.Header != nil {
		fromHeader = t.prop.Extract(ctx, propagation.HeaderCarrier(http.Header(r.Header)))
	}
	if len(r.Meta) > 0 {
		fromMeta := t.prop.Extract(ctx, metaCarrier(r.Meta))
		if sc := trace.SpanContextFromContext(fromMeta); sc.IsValid() {
			var link trace.SpanContext
			if fromHeader != nil {
				if hc := trace.SpanContextFromContext(fromHeader); hc.IsValid() && !hc.Equal(sc) {
					link = hc
				}
			}
			return fromMeta, link
		}
	}
	if fromHeader != nil {
		return fromHeader, trace.SpanContext{}
	}
	return ctx, trace.SpanContext{}
}

// requestAttrs are a request's attributes known when it starts.
func requestAttrs(r *observe.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String(attrMethod, r.Method),
		attribute.String(attrTransport, "tcp"), attribute.String(attrProtocolName, "http"))
	if r.Protocol != "" {
		attrs = append(attrs, attribute.String(attrProtocol, r.Protocol))
	}
	if r.Session != "" {
		attrs = append(attrs, attribute.String(attrSession, r.Session))
	}
	if id := requestID(r.RequestID); id != "" {
		attrs = append(attrs, attribute.String(attrRequestID, id))
	}
	if r.Method == mcp.MethodToolsCall {
		attrs = append(attrs, attribute.String(attrOperation, "execute_tool"))
	}
	return attrs
}

// EndRequest names the span (the target may be known only now, as on REST),
// adds the outcome and ends it at the record's end.
func (t *Tracer) EndRequest(ctx context.Context, r *observe.Request) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() { // sampled out: ending it records nothing
		return
	}
	if named, ok := span.(interface{ Name() string }); !ok || !isSpanName(named.Name(), r.Method, r.Target) {
		span.SetName(spanName(r.Method, r.Target))
	}
	// One SetAttributes call: one slice, and the span's attributes grown once.
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = appendTarget(attrs, r.Method, r.Target)
	if r.Server != "" {
		attrs = append(attrs, attribute.String(attrUpstreamServer, r.Server))
	}
	if r.Status != 0 {
		attrs = append(attrs, attribute.Int(attrHTTPStatus, r.Status))
	}
	if r.ErrorCode != 0 {
		attrs = append(attrs, attribute.String(attrRPCStatus, strconv.FormatInt(r.ErrorCode, 10)))
	}
	errType := r.ErrorType()
	if errType != "" {
		attrs = append(attrs, attribute.String(attrErrorType, errType))
	}
	if len(attrs) > 0 {
		span.SetAttributes(attrs...)
	}
	if errType != "" {
		span.SetStatus(codes.Error, errType)
	}
	span.End(trace.WithTimestamp(r.Start.Add(r.Duration)))
}

// StartCall starts the CLIENT span of a request sent upstream, a child of
// the downstream request's span.
//
// A call under a request that was sampled out at its root (a request in
// flight on ctx, no span) gets no span either; a call outside any request
// with no span on ctx is a root of its own, sampled first like a request.
func (t *Tracer) StartCall(ctx context.Context, c *observe.Call) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if observe.RequestFrom(ctx) != nil {
			return ctx
		}
		var ok bool
		if ctx, ok = t.rootSampled(ctx, trace.SpanKindClient); !ok {
			return ctx
		}
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, attribute.String(attrMethod, c.Method), attribute.String(attrUpstreamServer, c.Server))
	if c.Protocol != "" {
		attrs = append(attrs, attribute.String(attrProtocol, c.Protocol))
	}
	if c.Method == mcp.MethodToolsCall {
		attrs = append(attrs, attribute.String(attrOperation, "execute_tool"))
	}
	attrs = appendTarget(attrs, c.Method, c.Target)
	ctx, _ = t.tracer.Start(ctx, spanName(c.Method, c.Target), t.clientKind,
		trace.WithTimestamp(c.Start), trace.WithAttributes(attrs...))
	return ctx
}

// EndCall adds the call's outcome and ends its span.
func (t *Tracer) EndCall(ctx context.Context, c *observe.Call) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	setError(span, c.ErrorType())
	span.End(trace.WithTimestamp(c.Start.Add(c.Duration)))
}

// setError marks a failed span: error.type and the ERROR status.
func setError(span trace.Span, errType string) {
	if errType == "" {
		return
	}
	span.SetAttributes(attribute.String(attrErrorType, errType))
	span.SetStatus(codes.Error, errType)
}

// spanName is "{mcp.method.name} {target}" where the target is a tool or
// prompt name; resource URIs are left out of names (high cardinality).
func spanName(method, target string) string {
	if target != "" && (method == mcp.MethodToolsCall || method == mcp.MethodPromptsGet) {
		return method + " " + target
	}
	return method
}

// isSpanName reports whether name is spanName(method, target), without building it.
func isSpanName(name, method, target string) bool {
	if target == "" || (method != mcp.MethodToolsCall && method != mcp.MethodPromptsGet) {
		return name == method
	}
	return len(name) == len(method)+1+len(target) && name[:len(method)] == method && name[len(method)] == ' ' &&
		name[len(method)+1:] == target
}

// appendTarget appends to attrs the attribute naming what a request acts on, per the
// convention (none when it names nothing).
func appendTarget(attrs []attribute.KeyValue, method, target string) []attribute.KeyValue {
	if target == "" {
		return attrs
	}
	switch method {
	case mcp.MethodToolsCall:
		return append(attrs, attribute.String(attrToolName, target))
	case mcp.MethodPromptsGet:
		return append(attrs, attribute.String(attrPromptName, target))
	case mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe:
		return append(attrs, attribute.String(attrResourceURI, target))
	}
	return attrs
}

// requestID is a JSON-RPC id as the convention records it: a string id
// without its quotes; "" for none or null.
func requestID(raw string) string {
	if raw == "" || raw == "null" {
		return ""
	}
	if raw[0] == '"' {
		if s, err := strconv.Unquote(raw); err == nil {
			return s
		}
		return raw[1 : len(raw)-1]
	}
	return raw
}
