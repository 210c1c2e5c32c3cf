package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/benchfig"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/spend"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// ctlVariant is one gateway the control plane measurement compares.
type ctlVariant struct {
	name     string
	store    bool   // a SQLite store in a temp data dir (spend log, budgets, store keys)
	storeKey bool   // called with a store key (else the master key)
	observe  bool   // metrics (else app.WithoutObservation)
	traces   bool   // tracing on, 5 % of traces sampled
	bin      string // TestControlPlaneCost: the test binary serving it ("": this one)
	ref      int    // TestControlPlaneCost: the index of the variant its ratio is to
	url      string
	body     []byte
	h        http.Header
}

// TestControlPlaneCost measures the gateway's own CPU per modern tools/call on the bare path
// (no store, no observation, the master key) and with the control plane on: metrics; metrics
// and traces (5 % sampled, exported over OTLP/HTTP to a receiver in this process that discards
// them); a SQLite store with a store key, metrics and traces. Each gateway runs in a process of
// its own (this test binary re-run as TestControlPlaneGateway), so its CPU is read exactly
// (getrusage in that process, on request over a pipe) with nothing else in it: no load
// generator, no fixture (the go-sdk fixture has its own process), no OTLP receiver. This process
// is the load generator: one pooled client, the same for every gateway.
//
// Each gateway process runs with GOMAXPROCS=1 (MCPGW_CTLCOST_GOMAXPROCS changes it): the load
// generator has one call in flight, so a second P adds no throughput, only idle spinning (an
// idle P looks for work before it sleeps) whose CPU follows the machine's load rather than the
// code; at 2 it doubled the round-to-round spread (docs/benchmarks.md).
//
// Rounds: in each round every gateway serves MCPGW_CTLCOST_CALLS calls (default 200), in an
// order shuffled per round; a gateway's CPU for round r is what its process spent from the
// start of its calls in round r to the start of its calls in round r+1 (the last round ends
// with a reading after the spend writer's free-row interval and 1.5 s more), so work a call
// leaves behind (the spend writer's batched commit, the span batch, GC of its garbage) falls
// to the gateway that made it. Each reading forces a GC in the gateway first. The figures
// are, per variant, the median over rounds of the round's ratio to the bare gateway, with a
// bootstrap 95 % interval (rounds resampled), and the ratio of the totals over all rounds:
// work deferred past a round (a spend commit every few seconds) lands in some rounds only,
// which the median skips and the total counts. Two bare gateways run: "bare-AA" against
// "bare" is the A/A comparison, which
// must come out ≈ 0 % and shows the run's noise. A measurement, not a check: it runs only
// with MCPGW_CTLCOST_ROUNDS set, see docs/benchmarks.md.
func TestControlPlaneCost(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("MCPGW_CTLCOST_ROUNDS"))
	if rounds <= 0 {
		t.Skip("a measurement: set MCPGW_CTLCOST_ROUNDS to run it")
	}
	if processCPU() < 0 {
		t.Skip("process CPU time cannot be read here")
	}
	calls := 200
	if n, err := strconv.Atoi(os.Getenv("MCPGW_CTLCOST_CALLS")); err == nil && n > 0 {
		calls = n
	}
	fixture := testpeers.StartGoFixtureHTTP(t, true)
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(otlp.Close)
	variants := ctlVariants()
	var clientDials atomic.Int64
	client := countingClient(&clientDials)
	var buf bytes.Buffer
	procs := make([]*ctlProcess, len(variants))
	for i, v := range variants {
		procs[i] = startCtlProcess(t, v, fixture, otlp.URL)
		v.url = procs[i].url
		key := benchKey
		if v.storeKey {
			key = storeKey(t, v.url)
		}
		v.body, v.h = modernCall("fx-test_simple_text")
		v.h.Set("Authorization", "Bearer "+key)
		for range 200 { // warm: listings, pooled connections, caches, the key's cache entry
			if err := post(client, v.url, v.body, v.h, &buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	load0 := benchfig.LoadAverage()
	rng := rand.New(rand.NewPCG(20, 5))
	// at[i][r]: gateway i's CPU at the start of its calls in round r; at[i][rounds]: at the end.
	at := make([][]time.Duration, len(variants))
	order := make([]int, len(variants))
	for i := range order {
		order[i] = i
	}
	for range rounds {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for i := range variants {
			at[i] = append(at[i], procs[i].cpu(t))
		}
		for range calls {
			for _, i := range order {
				if err := post(client, variants[i].url, variants[i].body, variants[i].h, &buf); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The last rounds' batched spend commits (free rows wait spend.DefaultFreeFlushInterval)
	// and span exports.
	time.Sleep(spend.DefaultFreeFlushInterval + 1500*time.Millisecond)
	for i := range variants {
		at[i] = append(at[i], procs[i].cpu(t))
	}
	cpu := make([][]float64, len(variants)) // gateway µs per call, per variant and round
	for i := range variants {
		for r := range rounds {
			cpu[i] = append(cpu[i], float64(at[i][r+1]-at[i][r])/float64(time.Microsecond)/float64(calls))
		}
	}
	t.Log("\n" + ctlReport(variants, cpu, calls, load0))
}

// ctlVariants is the gateways TestControlPlaneCost compares (MCPGW_CTLCOST_STORE_ONLY and
// MCPGW_CTLCOST_BASE change the set: the base binary serves its own bare gateway and the
// store key + metrics + traces one, and with MCPGW_CTLCOST_BASE_OBSERVE set its metrics and
// metrics + traces gateways too, each compared with the base's bare).
func ctlVariants() []*ctlVariant {
	variants := []*ctlVariant{
		{name: "bare"},
		{name: "bare-AA"},
		{name: "metrics", observe: true},
		{name: "metrics+traces", observe: true, traces: true},
		{name: "store-key+metrics+traces", store: true, storeKey: true, observe: true, traces: true},
	}
	if os.Getenv("MCPGW_CTLCOST_STORE_ONLY") != "" {
		variants = []*ctlVariant{variants[0], variants[1],
			{name: "store", store: true, observe: true}, {name: "store-key", store: true, storeKey: true, observe: true}, variants[4]}
	}
	if base := os.Getenv("MCPGW_CTLCOST_BASE"); base != "" {
		same := []*ctlVariant{variants[4]}
		if os.Getenv("MCPGW_CTLCOST_BASE_OBSERVE") != "" {
			same = []*ctlVariant{variants[2], variants[3], variants[4]}
		}
		ref := len(variants)
		variants = append(variants, &ctlVariant{name: "base:bare", bin: base, ref: ref})
		for _, v := range same {
			variants = append(variants, &ctlVariant{name: "base:" + v.name, bin: base, ref: ref,
				store: v.store, storeKey: v.storeKey, observe: v.observe, traces: v.traces})
		}
	}
	return variants
}

// ctlReport is the table of TestControlPlaneCost: per variant the gateway's CPU per call
// (median over rounds), the median of the per-round ratios to the bare gateway with its
// bootstrap 95 % interval, and the ratio of the totals over all rounds.
func ctlReport(variants []*ctlVariant, cpu [][]float64, calls int, load0 string) string {
	var out strings.Builder
	rounds := len(cpu[0])
	fmt.Fprintf(&out, "%d rounds x %d calls per gateway; load average before %s, after %s\n", rounds, calls, load0, benchfig.LoadAverage())
	for i, v := range variants {
		if i == v.ref {
			fmt.Fprintf(&out, "%-31s gateway cpu-µs/call median %.1f, rounds %v\n", v.name, benchfig.Median(cpu[i]), benchfig.Rounded(cpu[i]))
			continue
		}
		ratio := make([]float64, rounds)
		for r := range rounds {
			ratio[r] = cpu[i][r] / cpu[v.ref][r]
		}
		lo, hi := bootstrapMedian(ratio, 2000)
		fmt.Fprintf(&out, "%-31s gateway cpu-µs/call median %.1f; paired vs %s %+.1f %% (95 %% CI %+.1f … %+.1f %%), total %+.1f %%, rounds %v\n",
			v.name, benchfig.Median(cpu[i]), variants[v.ref].name, 100*(benchfig.Median(ratio)-1), 100*(lo-1), 100*(hi-1),
			100*(sum(cpu[i])/sum(cpu[v.ref])-1), benchfig.Rounded(cpu[i]))
	}
	return out.String()
}

// sum is the sum of v.
func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

// bootstrapMedian is the 2.5th and 97.5th percentiles of the median of v over n resamples of
// v with replacement (a fixed seed: the same v gives the same interval).
func bootstrapMedian(v []float64, n int) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, n)
	s := make([]float64, len(v))
	for k := range meds {
		for j := range s {
			s[j] = v[rng.IntN(len(v))]
		}
		meds[k] = benchfig.Median(s)
	}
	slices.Sort(meds)
	return meds[n*25/1000], meds[n*975/1000]
}

// ctlProcess is one gateway of TestControlPlaneCost in its own process.
type ctlProcess struct {
	url string
	in  io.Writer
	out *bufio.Scanner
}

// ctlChildEnv names the variant a re-run test binary serves as TestControlPlaneGateway.
const ctlChildEnv = "MCPGW_CTLCOST_CHILD"

// startCtlProcess runs this test binary as TestControlPlaneGateway serving v over the fixture
// at upstreamURL and waits for its URL; the process ends when the test does.
func startCtlProcess(tb testing.TB, v *ctlVariant, upstreamURL, otlpURL string) *ctlProcess {
	tb.Helper()
	spec := v.name + "|" + strconv.FormatBool(v.store) + "|" + strconv.FormatBool(v.observe) + "|" +
		strconv.FormatBool(v.traces) + "|" + upstreamURL + "|" + otlpURL
	bin := v.bin
	if bin == "" {
		bin = os.Args[0]
	}
	cmd := exec.Command(bin, "-test.run=^TestControlPlaneGateway$", "-test.count=1")
	cmd.Env = append(os.Environ(), ctlChildEnv+"="+spec)
	procs := os.Getenv("MCPGW_CTLCOST_GOMAXPROCS")
	if procs == "" {
		procs = "1" // see the doc comment of TestControlPlaneCost
	}
	cmd.Env = append(cmd.Env, "GOMAXPROCS="+procs)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	p := &ctlProcess{in: in, out: bufio.NewScanner(outPipe)}
	p.url = p.line(tb, "url ")
	return p
}

// line is the next line of the child's output that starts with prefix, without it.
func (p *ctlProcess) line(tb testing.TB, prefix string) string {
	tb.Helper()
	for p.out.Scan() {
		if s, ok := strings.CutPrefix(p.out.Text(), "ctlcost "+prefix); ok {
			return s
		}
	}
	tb.Fatalf("gateway process ended: %v", p.out.Err())
	return ""
}

// cpu is the gateway process's CPU time so far, read after a forced GC.
func (p *ctlProcess) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	if _, err := io.WriteString(p.in, "cpu\n"); err != nil {
		tb.Fatal(err)
	}
	ns, err := strconv.ParseInt(p.line(tb, "cpu "), 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ns)
}

// TestControlPlaneGateway is one gateway process of TestControlPlaneCost (it runs only as
// that test's child): it serves the variant named in MCPGW_CTLCOST_CHILD, prints its URL, and
// answers each line on stdin with its CPU time after a forced GC, until stdin closes.
func TestControlPlaneGateway(t *testing.T) {
	spec := os.Getenv(ctlChildEnv)
	if spec == "" {
		t.Skip("the child process of TestControlPlaneCost")
	}
	f := strings.Split(spec, "|")
	if len(f) != 6 {
		t.Fatalf("bad %s %q", ctlChildEnv, spec)
	}
	v := &ctlVariant{name: f[0], store: f[1] == "true", observe: f[2] == "true", traces: f[3] == "true"}
	var dials atomic.Int64
	url := ctlGateway(t, f[4], v, f[5], &dials)
	if dir := os.Getenv("MCPGW_CTLCOST_PROFILES"); dir != "" {
		prof, err := os.Create(filepath.Join(dir, strings.ReplaceAll(v.name, ":", "-")+".cpu"))
		if err != nil {
			t.Fatal(err)
		}
		defer prof.Close()
		if err := pprof.StartCPUProfile(prof); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("ctlcost url %s\n", url)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		runtime.GC()
		fmt.Printf("ctlcost cpu %d\n", processCPU())
	}
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
