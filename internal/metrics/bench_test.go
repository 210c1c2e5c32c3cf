package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/observe"
)

// BenchmarkToolCallObserved: the metrics sink's work for one repeated tools/call: the
// downstream request's histogram and tool counter, the upstream call's histogram.
func BenchmarkToolCallObserved(b *testing.B) {
	m := New(Config{})
	caller := observe.Caller{KeyHash: "88e4b8e0b0a8c7f6d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4", KeyAlias: "bench", Team: "team-1"}
	r := &observe.Request{Method: "tools/call", Target: "fx-test_simple_text", Server: "fx", Protocol: "2026-07-28",
		Transport: observe.TransportStreamable, RequestID: "7", Caller: caller, Status: 200, Duration: 3 * time.Millisecond}
	c := &observe.Call{Server: "fx", Method: "tools/call", Target: "test_simple_text", Duration: 2 * time.Millisecond}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.EndCall(ctx, c)
		m.EndRequest(ctx, r)
	}
}
