package tracing

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpgw/mcpgw/internal/observe"
)

// BenchmarkSampledCall: one downstream tools/call with its upstream call through the trace
// sink, as the front and internal/app drive it: untraced (no tracer: the baseline), every
// trace recorded (always), 5 % recorded (the control plane measurement's setting), none
// (never); recorded spans are exported over OTLP/HTTP to a receiver that discards the body,
// flushed every ~50 spans inside the timing. cpu-ns/op is the process's CPU per call
// (the exporter's goroutine included, the receiver too).
func BenchmarkSampledCall(b *testing.B) {
	for _, tc := range []struct {
		name, sampler, arg string
		flush              int // calls between two exports: a batch of ~50 spans, as the gateway's
	}{{"untraced", "", "", 0}, {"always", "always_on", "", 25}, {"ratio=0.05", "traceidratio", "0.05", 500}, {"never", "always_off", "", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.sampler == "" {
				benchCalls(b, nil, 0)
				return
			}
			sampler, err := parseSampler(tc.sampler, tc.arg)
			if err != nil {
				b.Fatal(err)
			}
			benchCalls(b, sampler, tc.flush)
		})
	}
}

// benchCalls runs BenchmarkSampledCall's calls with sampler (nil: no tracer), exporting every
// flush calls (0: at the end only). 50 spans is the batch a gateway at ~110 calls/s sampling
// 5 % sends every BatchTimeout, the rate of TestControlPlaneCost.
func benchCalls(b *testing.B, sampler sdktrace.Sampler, flush int) {
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(rx.Close)
	tr, err := New(Settings{ServiceName: "bench", Endpoint: rx.URL, Sampler: sampler},
		nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	o := observe.New(tr)
	if sampler == nil {
		o = observe.New(observe.Base{})
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}}
	params := json.RawMessage(`{"name":"test_simple_text","arguments":{}}`)
	peer := NewPeer("127.0.0.1", 8080, "tcp")
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		if n++; flush > 0 && n%flush == 0 { // batches as the gateway's (no span dropped by a full queue)
			if err := tr.provider.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		r := &observe.Request{Method: "tools/call", Target: "fx-test_simple_text", Protocol: "2026-07-28",
			Transport: observe.TransportStreamable, RequestID: "7", Header: hdr, Status: 200}
		ctx, rs := o.Request(context.Background(), r)
		c := &observe.Call{Server: "fx", Method: "tools/call", Target: "test_simple_text", Protocol: "2026-07-28"}
		cctx, cs := o.Call(ctx, c)
		h, p := http.Header(nil), params
		if sampler != nil {
			h, p = tr.Outgoing(cctx, peer, params)
		}
		if len(p) == 0 {
			b.Fatal("no params")
		}
		_ = h
		cs.End()
		r.Server = "fx"
		rs.End()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.provider.ForceFlush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is this process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
