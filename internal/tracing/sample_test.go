package tracing

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/observe"
)

// testTracer is a Tracer with sampler whose spans end up in the returned
// exporter as soon as they end.
func testTracer(t *testing.T, sampler sdktrace.Sampler) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr := build(Settings{ServiceName: "test", Sampler: sampler}, sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

// oneCall runs one downstream request with one upstream call through o, as
// the front and internal/app do, and returns what the call propagated.
func oneCall(o *observe.Observer, tr *Tracer, header http.Header, meta string) (http.Header, string) {
	r := &observe.Request{Method: "tools/call", Target: "t", Header: header, Start: time.Now()}
	if meta != "" {
		r.Meta = json.RawMessage(meta)
	}
	ctx, rs := o.Request(context.Background(), r)
	cctx, cs := o.Call(ctx, &observe.Call{Server: "s", Method: "tools/call", Target: "t"})
	h, params := tr.Outgoing(cctx, Peer{Transport: "tcp"}, json.RawMessage(`{"name":"t"}`))
	cs.End()
	rs.End()
	return h, string(params)
}

// TestSampledOutRootCostsNothing: a request with no incoming trace context
// that the sampler drops gets no span, its upstream call none either, and
// nothing is propagated upstream: no header, params untouched, and no
// allocation by the tracer at all.
func TestSampledOutRootCostsNothing(t *testing.T) {
	tr, exp := testTracer(t, sdktrace.ParentBased(sdktrace.NeverSample()))
	o := observe.New(tr)
	h, params := oneCall(o, tr, http.Header{"Content-Type": {"application/json"}}, `{"progressToken":1}`)
	if h != nil || params != `{"name":"t"}` {
		t.Fatalf("a sampled-out root propagated %v %s", h, params)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans exported", n)
	}
	r := &observe.Request{Method: "tools/call", Target: "t", Header: http.Header{}}
	c := &observe.Call{Server: "s", Method: "tools/call", Target: "t"}
	raw := json.RawMessage(`{"name":"t"}`)
	ctx := context.WithValue(context.Background(), struct{}{}, 1)
	allocs := allocstest.Least(100, func() {
		rctx := tr.StartRequest(ctx, r)
		cctx := tr.StartCall(rctx, c)
		_, _ = tr.Outgoing(cctx, Peer{}, raw)
		tr.EndCall(cctx, c)
		tr.EndRequest(rctx, r)
	})
	if allocs != 0 {
		t.Fatalf("a sampled-out root costs %v allocations", allocs)
	}
}

// TestSampledOutIncomingStillPropagates: a request carrying the caller's
// trace context is propagated even when sampled out (W3C: the context goes
// on, with the sampled flag as decided), from the header and from _meta.
func TestSampledOutIncomingStillPropagates(t *testing.T) {
	tr, exp := testTracer(t, sdktrace.NeverSample())
	const tid = "0af7651916cd43dd8448eb211c80319c"
	h, params := oneCall(observe.New(tr), tr, http.Header{"Traceparent": {"00-" + tid + "-b7ad6b7169203331-01"}}, "")
	if tp := h.Get("traceparent"); !strings.HasPrefix(tp, "00-"+tid+"-") || !strings.HasSuffix(tp, "-00") {
		t.Fatalf("header traceparent %q, want the caller's trace, not sampled", tp)
	}
	if !strings.Contains(params, `"_meta":{"traceparent":"00-`+tid) {
		t.Fatalf("params %s", params)
	}
	h, _ = oneCall(observe.New(tr), tr, http.Header{}, `{"traceparent":"00-`+tid+`-b7ad6b7169203331-01"}`)
	if !strings.HasPrefix(h.Get("traceparent"), "00-"+tid+"-") {
		t.Fatalf("_meta's context not propagated: %v", h)
	}
	h, _ = oneCall(observe.New(tr), tr, http.Header{"Baggage": {"k=v"}}, "")
	if h.Get("baggage") != "k=v" {
		t.Fatalf("baggage not propagated: %v", h)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans exported though sampled out", n)
	}
}

// TestRootSamplingKeepsRatioAndTrace: with a trace-id ratio sampler, about
// that fraction of root requests is recorded (the early decision and the
// SDK's agree, so the rate is not squared), each recorded request's SERVER
// and CLIENT spans share one trace, and the context sent upstream is the
// CLIENT span's, sampled.
func TestRootSamplingKeepsRatioAndTrace(t *testing.T) {
	tr, exp := testTracer(t, sdktrace.TraceIDRatioBased(0.5))
	o := observe.New(tr)
	const n = 1000
	propagated := 0
	for range n {
		if h, _ := oneCall(o, tr, http.Header{}, ""); h != nil {
			propagated++
			if !strings.HasSuffix(h.Get("traceparent"), "-01") {
				t.Fatalf("a recorded trace propagated %q", h.Get("traceparent"))
			}
		}
	}
	spans := exp.GetSpans()
	if len(spans) != 2*propagated || propagated < n*35/100 || propagated > n*65/100 {
		t.Fatalf("%d of %d roots propagated, %d spans: want about half, two spans each", propagated, n, len(spans))
	}
	servers := map[string]string{} // trace id -> SERVER span id
	for _, s := range spans {
		if s.SpanKind.String() == "server" {
			servers[s.SpanContext.TraceID().String()] = s.SpanContext.SpanID().String()
		}
	}
	for _, s := range spans {
		if s.SpanKind.String() == "client" && servers[s.SpanContext.TraceID().String()] != s.Parent.SpanID().String() {
			t.Fatalf("CLIENT span %v not under its request's SERVER span", s.SpanContext)
		}
	}
}

// TestCallOutsideRequestIsItsOwnRoot: an upstream call with no request in
// flight (a background listing) is sampled as a root: recorded and
// propagated when sampled, nothing when not.
func TestCallOutsideRequestIsItsOwnRoot(t *testing.T) {
	for _, tc := range []struct {
		sampler sdktrace.Sampler
		spans   int
	}{{sdktrace.AlwaysSample(), 1}, {sdktrace.NeverSample(), 0}} {
		tr, exp := testTracer(t, tc.sampler)
		ctx, cs := observe.New(tr).Call(context.Background(), &observe.Call{Server: "s", Method: "tools/list"})
		h, _ := tr.Outgoing(ctx, Peer{}, nil)
		cs.End()
		if len(exp.GetSpans()) != tc.spans || (h != nil) != (tc.spans == 1) {
			t.Fatalf("%s: %d spans, header %v", tc.sampler.Description(), len(exp.GetSpans()), h)
		}
	}
}
