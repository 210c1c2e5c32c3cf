package tracing

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// flakyExporter fails while down is set.
type flakyExporter struct {
	sdktrace.SpanExporter
	down bool
}

func (f *flakyExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	if f.down {
		return errors.New("503 from the collector: secret body")
	}
	return nil
}

// TestExportOutageLoggedOnce: an outage is one WARN (no error text), its
// end one INFO, and no failure reaches the SDK.
func TestExportOutageLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	f := &flakyExporter{down: true}
	g := &guardedExporter{SpanExporter: f, log: slog.New(slog.NewTextHandler(&buf, nil)), endpoint: "c:4318"}
	for range 3 {
		if err := g.ExportSpans(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	f.down = false
	_ = g.ExportSpans(context.Background(), nil)
	_ = g.ExportSpans(context.Background(), nil)
	out := buf.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "recovered") != 1 || strings.Contains(out, "secret") {
		t.Fatalf("log:\n%s", out)
	}
}

// TestShutdownCancelsHungExport: a collector that never answers holds no
// export past Shutdown's time: Shutdown returns inside it and leaves no
// exporter goroutine behind (the export is cancelled abortLead before).
func TestShutdownCancelsHungExport(t *testing.T) {
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // so the server sees the client hang up
		<-r.Context().Done()
	}))
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()
	tr, err := New(Settings{Endpoint: srv.URL + "/v1/traces", ServiceName: "test"}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.tracer.Start(context.Background(), "call")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = tr.Shutdown(ctx)
	if took := time.Since(start); took > 1500*time.Millisecond+abortLead {
		t.Fatalf("Shutdown took %v past its 1.5 s deadline", took)
	}
	if received.Load() == 0 {
		t.Fatal("the span was never sent, so nothing was hung")
	}
	goleak.VerifyNone(t, ignore)
}
