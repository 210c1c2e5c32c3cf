package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/benchfig"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// ctlVariant is one gateway the control plane measurement compares.
type ctlVariant struct {
	name     string
	store    bool // a SQLite store in a temp data dir (spend log, budgets, store keys)
	storeKey bool // called with a store key (else the master key)
	observe  bool // metrics (else app.WithoutObservation)
	traces   bool // tracing on, 5 % of traces sampled
	url      string
	body     []byte
	h        http.Header
}

// TestControlPlaneCost measures the gateway's own CPU per modern tools/call (this process's
// CPU per call, the gateway's and the client's, minus a direct call's: the client's alone;
// the go-sdk fixture runs in its own process) on the bare path (no store, no observation,
// the master key) and with the control plane on: metrics; metrics and traces (5 % sampled,
// exported over OTLP/HTTP to an in-process receiver that discards them); and a SQLite store
// with a store key, metrics and traces. Rounds of MCPGW_CTLCOST_CALLS calls (default 500)
// per variant, every variant in each round in a rotating order, so the machine's changing
// load falls on all alike; the paired figure is the median over rounds of each round's
// ratio to the bare path. Rounds of many calls (not call by call) keep the spend writer's
// batched commits inside the round that queued them. A measurement, not a check: it runs only
// with MCPGW_CTLCOST_ROUNDS set, see docs/benchmarks.md.
func TestControlPlaneCost(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("MCPGW_CTLCOST_ROUNDS"))
	if rounds <= 0 {
		t.Skip("a measurement: set MCPGW_CTLCOST_ROUNDS to run it")
	}
	if processCPU() < 0 {
		t.Skip("process CPU time cannot be read here")
	}
	calls := 500
	if n, err := strconv.Atoi(os.Getenv("MCPGW_CTLCOST_CALLS")); err == nil && n > 0 {
		calls = n
	}
	fixture := testpeers.StartGoFixtureHTTP(t, true)
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(otlp.Close)
	variants := []*ctlVariant{
		{name: "direct"},
		{name: "bare"},
		{name: "metrics", observe: true},
		{name: "metrics+traces", observe: true, traces: true},
		{name: "store-key+metrics+traces", store: true, storeKey: true, observe: true, traces: true},
	}
	if os.Getenv("MCPGW_CTLCOST_STORE_ONLY") != "" {
		variants = []*ctlVariant{variants[0], variants[1],
			{name: "store", store: true, observe: true}, {name: "store-key", store: true, storeKey: true, observe: true}, variants[4]}
	}
	var dials, clientDials atomic.Int64
	client := countingClient(&clientDials)
	var buf bytes.Buffer
	for _, v := range variants {
		tool, key := "fx-test_simple_text", benchKey
		if v.name == "direct" {
			v.url, tool, key = fixture, "test_simple_text", ""
		} else {
			v.url = ctlGateway(t, fixture, v, otlp.URL, &dials)
			if v.storeKey {
				key = storeKey(t, v.url)
			}
		}
		v.body, v.h = modernCall(tool)
		if key != "" {
			v.h.Set("Authorization", "Bearer "+key)
		}
		for range 50 { // warm: listings, pooled connections, caches
			if err := post(client, v.url, v.body, v.h, &buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	load0 := benchfig.LoadAverage()
	cpu := make([][]float64, len(variants)) // this process's µs per call, per variant and round
	for r := range rounds {
		for k := range variants {
			i := (r + k) % len(variants)
			v := variants[i]
			c0 := processCPU()
			for range calls {
				if err := post(client, v.url, v.body, v.h, &buf); err != nil {
					t.Fatal(err)
				}
			}
			cpu[i] = append(cpu[i], float64(processCPU()-c0)/float64(time.Microsecond)/float64(calls))
		}
	}
	t.Log("\n" + ctlReport(variants, cpu, rounds, calls, load0))
}

// ctlReport is the table of TestControlPlaneCost: per variant the process's and the gateway's
// CPU per call (medians over rounds) and the paired ratios to the bare path.
func ctlReport(variants []*ctlVariant, cpu [][]float64, rounds, calls int, load0 string) string {
	var out strings.Builder
	fmt.Fprintf(&out, "%d rounds x %d calls per variant; load average before %s, after %s\n", rounds, calls, load0, benchfig.LoadAverage())
	gw := func(i, r int) float64 { return cpu[i][r] - cpu[0][r] }
	for i, v := range variants {
		if i == 0 {
			fmt.Fprintf(&out, "%-26s process cpu-µs/call median %.0f (the client alone) rounds %v\n", v.name, benchfig.Median(cpu[0]), benchfig.Rounded(cpu[0]))
			continue
		}
		procRatio, gwRatio, gwAbs := make([]float64, rounds), make([]float64, rounds), make([]float64, rounds)
		for r := range rounds {
			procRatio[r] = cpu[i][r] / cpu[1][r]
			gwRatio[r] = gw(i, r) / gw(1, r)
			gwAbs[r] = gw(i, r)
		}
		fmt.Fprintf(&out, "%-26s process cpu-µs/call median %.0f (paired %+.1f %% vs bare); gateway cpu-µs/call median %.0f (paired %+.1f %% vs bare) rounds %v\n",
			v.name, benchfig.Median(cpu[i]), 100*(benchfig.Median(procRatio)-1), benchfig.Median(gwAbs), 100*(benchfig.Median(gwRatio)-1), benchfig.Rounded(cpu[i]))
	}
	return out.String()
}

// ctlGateway serves a gateway for v over the fixture at upstreamURL; spans go to otlpURL.
func ctlGateway(tb testing.TB, upstreamURL string, v *ctlVariant, otlpURL string, dials *atomic.Int64) string {
	tb.Helper()
	yaml := "general_settings:\n  master_key: " + benchKey + "\n"
	env := map[string]string{seal.SaltKeyEnv: benchSalt}
	if v.traces {
		yaml += "litellm_settings:\n  callbacks: [\"otel\"]\n"
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlpURL
		env["OTEL_TRACES_SAMPLER"], env["OTEL_TRACES_SAMPLER_ARG"] = "traceidratio", "0.05"
	}
	yaml += "mcp_servers:\n  fx:\n    url: " + upstreamURL + "\n"
	lookup := func(k string) (string, bool) { s, ok := env[k]; return s, ok }
	cfg, problems, err := config.Parse([]byte(yaml), app.ConfigOptions(lookup))
	if err != nil {
		tb.Fatalf("config: %v %v", err, problems)
	}
	opts := []app.Option{app.WithLookupEnv(lookup), app.WithVersion("bench"), app.WithUpstreamHTTPClient(countingClient(dials))}
	if v.store {
		opts = append(opts, app.WithDataDir(tb.TempDir()))
	}
	if !v.observe {
		opts = append(opts, app.WithoutObservation())
	}
	return serveApp(tb, cfg, opts...)
}

// BenchmarkControlPlane: one modern tools/call at a time through each gateway of
// TestControlPlaneCost, one sub-benchmark per variant: for profiles (-cpuprofile) and
// allocations per call of one variant; compare CPU with TestControlPlaneCost, which
// interleaves.
func BenchmarkControlPlane(b *testing.B) {
	fixture := testpeers.StartGoFixtureHTTP(b, true)
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(otlp.Close)
	var dials, clientDials atomic.Int64
	client := countingClient(&clientDials)
	for _, v := range []*ctlVariant{
		{name: "bare"},
		{name: "metrics", observe: true},
		{name: "metrics+traces", observe: true, traces: true},
		{name: "store-key+metrics", store: true, storeKey: true, observe: true},
		{name: "store-key+metrics+traces", store: true, storeKey: true, observe: true, traces: true},
	} {
		b.Run(v.name, func(b *testing.B) {
			v.url = ctlGateway(b, fixture, v, otlp.URL, &dials)
			key := benchKey
			if v.storeKey {
				key = storeKey(b, v.url)
			}
			body, h := modernCall("fx-test_simple_text")
			h.Set("Authorization", "Bearer "+key)
			var buf bytes.Buffer
			if err := post(client, v.url, body, h, &buf); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if err := post(client, v.url, body, h, &buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
		})
	}
}
