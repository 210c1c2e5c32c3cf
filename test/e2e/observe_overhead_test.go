package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/benchfig"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// overheadVariant is one way of observing the gateway the overhead
// measurement compares.
type overheadVariant struct {
	name string
	yaml string
	env  map[string]string
	opts []app.Option
}

// TestObservationOverhead measures the CPU one modern tools/call costs this
// process (the gateway and the measuring client; the go-sdk fixture runs in
// its own process) with observation off (app.WithoutObservation), with the
// metrics sink (the default) and with metrics and traces (callbacks otel,
// 5 % of traces sampled, spans exported over OTLP/HTTP to an in-process
// receiver), in interleaved rounds (each round runs every variant, in a
// rotating order) so a machine's changing load falls on all of them alike.
// It is a measurement, not a check: it runs only with
// MCPGW_OBSERVE_OVERHEAD_ROUNDS set (MCPGW_OBSERVE_OVERHEAD_CALLS calls per
// variant and round, default 1000), see docs/benchmarks.md.
func TestObservationOverhead(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("MCPGW_OBSERVE_OVERHEAD_ROUNDS"))
	if rounds <= 0 {
		t.Skip("a measurement: set MCPGW_OBSERVE_OVERHEAD_ROUNDS to run it")
	}
	calls := 1000
	if n, err := strconv.Atoi(os.Getenv("MCPGW_OBSERVE_OVERHEAD_CALLS")); err == nil && n > 0 {
		calls = n
	}
	upstream := testpeers.StartGoFixtureHTTP(t, true)
	rc := startOTLPReceiver(t)
	otel := "litellm_settings:\n  callbacks: [\"otel\"]\n"
	variants := []overheadVariant{
		{name: "off", opts: []app.Option{app.WithoutObservation()}},
		{name: "metrics"},
		{name: "metrics+traces", yaml: otel, env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.url,
			"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.05"}},
	}
	urls := make([]string, len(variants))
	for i, v := range variants {
		url, stop := overheadGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\n%smcp_servers:\n  fx:\n    url: %s\n", testKey, v.yaml, upstream), v.env, v.opts...)
		t.Cleanup(stop)
		urls[i] = url + "/mcp"
		for range 50 { // warm: lists, pooled connections
			overheadCall(t, urls[i])
		}
	}
	load0 := benchfig.LoadAverage()
	cpu := make([][]float64, len(variants)) // µs per call, per variant, per round
	for r := range rounds {
		for k := range variants {
			i := (r + k) % len(variants)
			c0 := processCPU()
			for range calls {
				overheadCall(t, urls[i])
			}
			cpu[i] = append(cpu[i], float64((processCPU()-c0).Microseconds())/float64(calls))
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d rounds x %d calls per variant; load average before %s, after %s\n", rounds, calls, load0, benchfig.LoadAverage())
	base := benchfig.Median(cpu[0])
	for i, v := range variants {
		ratios := make([]float64, rounds)
		for r := range rounds {
			ratios[r] = cpu[i][r] / cpu[0][r]
		}
		fmt.Fprintf(&out, "%-15s cpu-µs/call median %.0f (%+.1f %% vs off; median of per-round ratios %+.1f %%) rounds %v\n",
			v.name, benchfig.Median(cpu[i]), 100*(benchfig.Median(cpu[i])/base-1), 100*(benchfig.Median(ratios)-1), benchfig.Rounded(cpu[i]))
	}
	t.Log("\n" + out.String())
}

// overheadCall posts one modern tools/call to url.
func overheadCall(t *testing.T, url string) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx-test_simple_text","arguments":{},` + modernMeta + `}}`)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernAs(testKey, "tools/call", "fx-test_simple_text") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// overheadGateway serves the gateway for yaml with opts (a discarding logger first, so opts
// may replace it); stop closes it, flushing spans.
func overheadGateway(t testing.TB, yaml string, env map[string]string, opts ...app.Option) (string, func()) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, problems, err := config.Load(path, app.ConfigOptions(lookup))
	if err != nil {
		t.Fatalf("config: %v %v", err, problems)
	}
	opts = append([]app.Option{app.WithLookupEnv(lookup), app.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	a, err := app.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = a.Server()
	srv.Start()
	a.Start()
	return srv.URL, func() {
		a.Drain()
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	}
}
