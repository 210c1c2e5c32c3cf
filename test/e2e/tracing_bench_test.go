package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// BenchmarkTracingToolsCall: one modern tools/call through the gateway to
// the go-sdk fixture (its own process), with tracing off and on (every call
// sampled, spans exported to an in-process OTLP/HTTP receiver) and on with
// every trace sampled out (spans not recorded, context still propagated),
// in the same run. cpu-µs/op is this process's CPU (user+system) per call: the gateway,
// the benchmark's client and, with tracing on, the receiver decoding the
// exports.
func BenchmarkTracingToolsCall(b *testing.B) {
	upstream := testpeers.StartGoFixtureHTTP(b, true)
	rc := startOTLPReceiver(b)
	for _, tc := range []struct {
		name string
		yaml string
		env  map[string]string
	}{
		{"off", "", nil},
		{"on", "litellm_settings:\n  callbacks: [\"otel\"]\n", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.url}},
		{"on-sampled-out", "litellm_settings:\n  callbacks: [\"otel\"]\n", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.url,
			"OTEL_TRACES_SAMPLER": "always_off"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url, stop := benchGateway(b, fmt.Sprintf("general_settings:\n  master_key: %s\n%smcp_servers:\n  fx:\n    url: %s\n", testKey, tc.yaml, upstream), tc.env)
			defer stop()
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx-test_simple_text","arguments":{},` + modernMeta + `}}`)
			call := func() {
				req, _ := http.NewRequest(http.MethodPost, url+"/mcp", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range modernHeaders("tools/call", "fx-test_simple_text") {
					req.Header.Set(k, v)
				}
				req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			call() // the upstream's tools are listed before timing
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				call()
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchGateway serves the gateway for yaml as startGateway does, for a
// benchmark; stop closes it (flushing spans).
func benchGateway(b *testing.B, yaml string, env map[string]string) (string, func()) {
	b.Helper()
	return overheadGateway(b, yaml, env)
}
