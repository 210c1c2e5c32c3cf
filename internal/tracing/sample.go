package tracing

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgw/mcpgw/internal/observe"
)

// hasIncoming reports whether r may carry the caller's trace context: a
// traceparent, tracestate or baggage header, or one of those names anywhere
// in params._meta (a cheap, conservative test: a request it lets through is
// read in full by remote).
func hasIncoming(r *observe.Request) bool {
	for _, k := range [...]string{"Traceparent", "Tracestate", "Baggage"} {
		if len(r.Header[k]) > 0 {
			return true
		}
	}
	if len(r.Meta) == 0 {
		return false
	}
	for _, k := range metaKeys {
		if bytes.Contains(r.Meta, []byte(k)) {
			return true
		}
	}
	return false
}

// traceIDKey carries, on a context, the trace id rootSampled chose for a
// root span it sampled, for idGenerator to give that span.
type traceIDKey struct{}

// rootSampled asks the sampler about a root span of kind, with a new trace
// id, before any span is built. Sampled out, it reports false and ctx is
// returned as it is: the span is never started, so it costs no allocation,
// and nothing is propagated upstream for it (W3C Trace Context lets a
// sampled-out trace with no incoming context go unpropagated). Sampled, it
// returns ctx carrying the trace id, so the span the SDK then starts (and
// samples again, alike: every configurable sampler decides a root by its
// trace id alone) gets the id that was sampled. The sampler is asked with
// the parent context, trace id and kind; the span's name and attributes are
// not built for the question (no configurable sampler reads them).
func (t *Tracer) rootSampled(ctx context.Context, kind trace.SpanKind) (context.Context, bool) {
	tid := newTraceID()
	res := t.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Kind: kind})
	if res.Decision == sdktrace.Drop {
		return ctx, false
	}
	return context.WithValue(ctx, traceIDKey{}, tid), true
}

// idGenerator is the SDK's random id generator, except that a root span
// started on a context carrying traceIDKey gets that trace id.
type idGenerator struct{}

// NewIDs returns the trace id on ctx (or a new one) and a new span id.
func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, ok := ctx.Value(traceIDKey{}).(trace.TraceID)
	if !ok || !tid.IsValid() {
		tid = newTraceID()
	}
	return tid, newSpanID()
}

// NewSpanID returns a new span id.
func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newTraceID() trace.TraceID {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid
}

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
