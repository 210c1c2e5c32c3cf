package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// metaKeys are the params._meta keys trace context travels in, per the
// convention (the W3C header names).
var metaKeys = [...]string{"traceparent", "tracestate", "baggage"}

// metaCarrier reads trace context from a params._meta object.
type metaCarrier json.RawMessage

// Get returns the string member key of the object, "" when absent.
func (m metaCarrier) Get(key string) string {
	s, _ := jsonrpc.StringMember(m, key)
	return s
}

// Set does nothing: the carrier is read-only.
func (metaCarrier) Set(string, string) {}

// Keys lists the keys the propagators read.
func (metaCarrier) Keys() []string { return metaKeys[:] }

// Peer is where an upstream request goes, for the CLIENT span.
type Peer struct {
	Address   string // host name or IP; "" for stdio
	Port      int    // 0 when unknown
	Transport string // "tcp" (HTTP) or "pipe" (stdio)
}

// Outgoing prepares a request sent upstream within ctx's CLIENT span: it
// notes peer on the span and returns the span's trace context as HTTP
// headers and params with it in params._meta (the caller's other _meta keys
// kept, nothing else re-encoded). Params that are not a JSON object are
// returned as they are.
//
// With no span context and no baggage on ctx (a request sampled out at its
// root, see rootSampled) there is nothing to propagate: no header, params as
// they are, no allocation.
func (t *Tracer) Outgoing(ctx context.Context, peer Peer, params json.RawMessage) (http.Header, json.RawMessage) {
	span := trace.SpanFromContext(ctx)
	if !span.SpanContext().IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return nil, params
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String(attrTransport, peer.Transport))
		if peer.Address != "" {
			span.SetAttributes(attribute.String(attrServerAddress, peer.Address))
			if peer.Port != 0 {
				span.SetAttributes(attribute.Int(attrServerPort, peer.Port))
			}
		}
	}
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil, params
	}
	h := make(http.Header, len(carrier))
	for k, v := range carrier {
		h.Set(k, v)
	}
	return h, withMeta(params, carrier)
}

// withMeta sets the carrier's keys in params._meta by splicing: the rest of
// params is copied as it is. On anything unexpected params are returned
// unchanged (the headers still carry the context).
func withMeta(params json.RawMessage, carrier propagation.MapCarrier) json.RawMessage {
	obj := bytes.TrimSpace(params)
	if len(obj) == 0 || bytes.Equal(obj, []byte("null")) {
		obj = []byte("{}")
	}
	if obj[0] != '{' {
		return params
	}
	meta := jsonrpc.Member(obj, "_meta")
	if meta == nil {
		meta = []byte("{}")
	} else if meta[0] != '{' {
		return params
	}
	var err error
	for _, k := range metaKeys {
		v, ok := carrier[k]
		if !ok {
			continue
		}
		if meta, err = jsonrpc.SetMember(meta, k, jsonrpc.AppendString(nil, v)); err != nil {
			return params
		}
	}
	out, err := jsonrpc.SetMember(obj, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}
