package tracing

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

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
