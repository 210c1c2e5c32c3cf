package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"

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

// Peer is where an upstream request goes, for the CLIENT span. NewPeer builds one with its
// span attributes made once (a literal Peer has them made per call).
type Peer struct {
	Address   string // host name or IP; "" for stdio
	Port      int    // 0 when unknown
	Transport string // "tcp" (HTTP) or "pipe" (stdio)
	attrs     []attribute.KeyValue
}

// NewPeer is the Peer at address and port over transport, with its span attributes built.
func NewPeer(address string, port int, transport string) Peer {
	p := Peer{Address: address, Port: port, Transport: transport}
	p.attrs = p.attributes()
	return p
}

// attributes are the CLIENT span's attributes naming p.
func (p Peer) attributes() []attribute.KeyValue {
	if p.attrs != nil {
		return p.attrs
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attribute.String(attrTransport, p.Transport))
	if p.Address != "" {
		attrs = append(attrs, attribute.String(attrServerAddress, p.Address))
		if p.Port != 0 {
			attrs = append(attrs, attribute.Int(attrServerPort, p.Port))
		}
	}
	return attrs
}

// headerKeys are metaKeys as canonical HTTP header names, in the same order.
var headerKeys = [len(metaKeys)]string{"Traceparent", "Tracestate", "Baggage"}

// injected is the trace context a propagator writes for one upstream request: the values of
// metaKeys, in place (no map, no header canonicalisation). A key outside metaKeys is dropped:
// the Tracer's propagators (W3C trace context and baggage) write none.
type injected [len(metaKeys)]string

// Get returns the value set for key, "" for none.
func (c *injected) Get(key string) string {
	if i := slices.Index(metaKeys[:], key); i >= 0 {
		return c[i]
	}
	return ""
}

// Set sets key's value.
func (c *injected) Set(key, value string) {
	if i := slices.Index(metaKeys[:], key); i >= 0 {
		c[i] = value
	}
}

// Keys lists the keys a propagator may set.
func (*injected) Keys() []string { return metaKeys[:] }

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
		span.SetAttributes(peer.attributes()...)
	}
	carrier := new(injected)
	t.prop.Inject(ctx, carrier)
	n := 0
	for _, v := range carrier {
		if v != "" {
			n++
		}
	}
	if n == 0 {
		return nil, params
	}
	h := make(http.Header, n)
	vals := make([]string, 0, n) // one backing array for every header's value
	for i, v := range carrier {
		if v != "" {
			vals = append(vals, v)
			h[headerKeys[i]] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	return h, withMeta(params, carrier)
}

// withMeta sets the carrier's keys (those with a value) in params._meta by splicing: the
// rest of params is copied as it is. On anything unexpected params are returned unchanged
// (the headers still carry the context).
func withMeta(params json.RawMessage, carrier propagation.TextMapCarrier) json.RawMessage {
	obj := bytes.TrimSpace(params)
	if len(obj) == 0 || bytes.Equal(obj, []byte("null")) {
		obj = []byte("{}")
	}
	if obj[0] != '{' {
		return params
	}
	meta := jsonrpc.Member(obj, "_meta")
	switch {
	case meta == nil: // the usual case: a new _meta object, written in one buffer
		meta = make([]byte, 0, 128)
		meta = append(meta, '{')
		for _, k := range metaKeys {
			if v := carrier.Get(k); v != "" {
				if len(meta) > 1 {
					meta = append(meta, ',')
				}
				meta = append(jsonrpc.AppendString(meta, k), ':')
				meta = jsonrpc.AppendString(meta, v)
			}
		}
		meta = append(meta, '}')
	case meta[0] != '{':
		return params
	default:
		var err error
		for _, k := range metaKeys {
			v := carrier.Get(k)
			if v == "" {
				continue
			}
			if meta, err = jsonrpc.SetMember(meta, k, jsonrpc.AppendString(nil, v)); err != nil {
				return params
			}
		}
	}
	out, err := jsonrpc.SetMember(obj, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}
