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

// BenchmarkSampledCall: one downstream tools/call with its upstream call, every trace
// recorded, exported over OTLP/HTTP to a receiver that discards the body (the export
// flushed at the end, inside the timing): what a sampled call costs the gateway.
func BenchmarkSampledCall(b *testing.B) {
	for _, tc := range []struct{ name, sampler, arg string }{{"untraced", "", ""}, {"always", "always_on", ""}, {"ratio=0.05", "traceidratio", "0.05"}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.sampler == "" {
				benchCalls(b, nil)
				return
			}
			sampler, err := parseSampler(tc.sampler, tc.arg)
			if err != nil {
				b.Fatal(err)
			}
			benchCalls(b, sampler)
		})
	}
}

func benchCalls(b *testing.B, sampler sdktrace.Sampler) {
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
	for b.Loop() {
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
