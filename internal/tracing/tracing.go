package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Bounds of the export path.
const (
	// MaxQueueSize is the number of finished spans held for export; a span
	// ending while the queue is full is dropped (counted by the SDK), never
	// waited for.
	MaxQueueSize = 2048
	// MaxExportBatchSize is the most spans sent in one export request.
	MaxExportBatchSize = 512
	// BatchTimeout is the longest a finished span waits before its batch
	// is sent.
	BatchTimeout = 5 * time.Second
	// ExportTimeout bounds one export request, retries included.
	ExportTimeout = 10 * time.Second
	// ShutdownTimeout bounds the flush at close.
	ShutdownTimeout = 5 * time.Second
	// RetryMaxElapsed bounds the retries of one export (a 429, 502, 503 or
	// 504 answer, or a connection failure). It does not bound the flush at
	// close (the last wait may start just before it): Shutdown cancels the
	// exports still running abortLead before its own time is up.
	RetryMaxElapsed = 4 * time.Second
	// abortLead is how long before the flush's time is up the exports still
	// in flight are cancelled, so the span processor stops inside it.
	abortLead = 500 * time.Millisecond
)

// Tracer records spans for the observe seam and exports them over OTLP/HTTP.
// It is an observe.Sink; a nil Tracer is never installed.
type Tracer struct {
	provider *sdktrace.TracerProvider
	sampler  sdktrace.Sampler // the provider's, asked first about roots (rootSampled)
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	// serverKind and clientKind are the span kind options, made once (each is an allocation).
	serverKind, clientKind trace.SpanStartOption
	// abortExports cancels every export in flight or to come (nil when
	// the exporter is not ours); Shutdown calls it when the flush's time
	// is nearly up.
	abortExports context.CancelFunc
}

// New builds a Tracer exporting to s.Endpoint through a batch span processor
// (bounds above). client, when not nil, sends the exports; export failures
// are logged to log at WARN once per outage and never reach a call.
func New(s Settings, client *http.Client, log *slog.Logger) (*Tracer, error) {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(s.Endpoint), otlptracehttp.WithTimeout(ExportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond,
			MaxInterval: 2 * time.Second, MaxElapsedTime: RetryMaxElapsed})}
	if len(s.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(s.Headers))
	}
	if client != nil {
		opts = append(opts, otlptracehttp.WithHTTPClient(client))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	stop, abort := context.WithCancel(context.Background())
	t := build(s, sdktrace.WithBatcher(&guardedExporter{SpanExporter: exp, log: log, endpoint: endpointHost(s.Endpoint), stop: stop},
		sdktrace.WithMaxQueueSize(MaxQueueSize), sdktrace.WithMaxExportBatchSize(MaxExportBatchSize),
		sdktrace.WithBatchTimeout(BatchTimeout), sdktrace.WithExportTimeout(ExportTimeout)))
	t.abortExports = abort
	return t, nil
}

// build is the Tracer for s whose spans go to the span processor processor
// installs.
func build(s Settings, processor sdktrace.TracerProviderOption) *Tracer {
	sampler := s.Sampler
	if sampler == nil {
		sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	res := resource.NewSchemaless(attribute.String("service.name", s.ServiceName),
		attribute.String("service.version", s.ServiceVersion))
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
		sdktrace.WithIDGenerator(idGenerator{}),
		processor,
	)
	return &Tracer{
		provider:   provider,
		sampler:    sampler,
		tracer:     provider.Tracer("github.com/mcpgw/mcpgw"),
		prop:       propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		serverKind: trace.WithSpanKind(trace.SpanKindServer),
		clientKind: trace.WithSpanKind(trace.SpanKindClient),
	}
}

// Shutdown exports the spans still queued and stops the exporter, within
// ShutdownTimeout at most (or ctx's deadline, if sooner). An export still
// retrying or waiting on a slow collector is cancelled abortLead before
// that, so no export goroutine outlives Shutdown.
func (t *Tracer) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	if t.abortExports != nil {
		deadline, _ := ctx.Deadline()
		abort := time.AfterFunc(time.Until(deadline)-abortLead, t.abortExports)
		defer abort.Stop()
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flushing spans: %w", err)
	}
	return nil
}

// guardedExporter keeps export failures from the SDK's global error
// handler: the first failure of an outage is logged at WARN, the recovery
// at INFO, nothing in between.
type guardedExporter struct {
	sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string
	failing  atomic.Bool
	// stop ends every export when Shutdown's time is nearly up.
	stop context.Context
}

// ExportSpans sends spans; a failure drops them (the SDK does not retry a
// batch the exporter gave up on).
func (e *guardedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stop != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer context.AfterFunc(e.stop, cancel)()
		defer cancel()
	}
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		if !e.failing.Swap(true) {
			e.log.Warn("trace export failing; spans are dropped until it recovers",
				"endpoint", e.endpoint, "reason", failureReason(err))
		}
		return nil
	}
	if e.failing.Swap(false) {
		e.log.Info("trace export recovered", "endpoint", e.endpoint)
	}
	return nil
}

// failureReason names an export failure without its text, which may quote
// the receiver's answer.
func failureReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne):
		return "unreachable"
	}
	return "rejected"
}
