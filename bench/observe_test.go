package bench

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// startObservedGateway serves a gateway over fx at upstreamURL, observed as
// the default build is (metrics on; access log on with an INFO logger when
// accessLog) or, with off, not at all (app.WithoutObservation).
func startObservedGateway(tb testing.TB, upstreamURL string, off bool) string {
	tb.Helper()
	env := map[string]string{seal.SaltKeyEnv: benchSalt}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, problems, err := config.Parse([]byte("general_settings:\n  master_key: "+benchKey+"\nmcp_servers:\n  fx:\n    url: "+upstreamURL+"\n"), app.ConfigOptions(lookup))
	if err != nil {
		tb.Fatalf("config: %v %v", err, problems)
	}
	opts := []app.Option{app.WithLookupEnv(lookup), app.WithVersion("bench")}
	if off {
		opts = append(opts, app.WithoutObservation())
	}
	return serveApp(tb, cfg, opts...)
}

// BenchmarkObservation: one modern tools/call at a time through the
// in-process gateway, with observation off (no metrics, no access log) and
// on as built by default (the metrics sink: LiteLLM's counters and both
// semantic-convention histograms; the test logger writes no INFO lines, so
// no access log). cpu-µs/op is this process's CPU per call (client and
// gateway; the fixture runs in its own process).
func BenchmarkObservation(b *testing.B) {
	fixture := testpeers.StartGoFixtureHTTP(b, true)
	for _, tc := range []struct {
		name string
		off  bool
	}{{"off", true}, {"metrics", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var dials atomic.Int64
			url := startObservedGateway(b, fixture, tc.off)
			client := countingClient(&dials)
			body, h := modernCall("fx-test_simple_text")
			h.Set("Authorization", "Bearer "+benchKey)
			var buf bytes.Buffer
			if err := post(client, url, body, h, &buf); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0, n := processCPU(), 0
			for b.Loop() {
				if err := post(client, url, body, h, &buf); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
			}
		})
	}
}
