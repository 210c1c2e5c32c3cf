package main

// The closed loop of the call and list subcommands and the figures it reports.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/benchfig"
)

// loadFlags are the flags of the call and list subcommands.
type loadFlags struct {
	url, key, era, tool, expect string
	minItems, c                 int
	d, warm                     time.Duration
	target                      string
	round, upstreams, procs     int
	out, cpu                    string
}

// parseLoadFlags reads the flags of the call or list subcommand.
func parseLoadFlags(args []string, kind string) (*loadFlags, error) {
	var f loadFlags
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.StringVar(&f.url, "url", "", "MCP endpoint (loopback only)")
	fs.StringVar(&f.key, "key", "", "bearer token, if any")
	fs.StringVar(&f.era, "era", "modern", "modern (2026-07-28, no session) or legacy (2025-11-25 session per worker); call only")
	fs.StringVar(&f.tool, "tool", "test_simple_text", "tool name (call)")
	fs.StringVar(&f.expect, "expect", "This is a simple text response for testing.", "text every call answer must contain (call)")
	fs.IntVar(&f.minItems, "min-tools", 1, "tools every full listing must hold at least (list)")
	fs.IntVar(&f.c, "c", 10, "concurrent workers")
	fs.DurationVar(&f.d, "d", 5*time.Second, "measured duration")
	fs.DurationVar(&f.warm, "warmup", 500*time.Millisecond, "unmeasured warm-up before the measured duration")
	fs.StringVar(&f.target, "target", "", "label: direct or gateway")
	fs.IntVar(&f.round, "round", 0, "label: round number")
	fs.IntVar(&f.upstreams, "upstreams", 0, "label: configured upstreams (list)")
	fs.IntVar(&f.procs, "procs", 0, "label: fixture processes behind them (list)")
	fs.StringVar(&f.out, "out", "", "also append the JSON line to this file")
	fs.StringVar(&f.cpu, "cpu", "", "label=pid,… processes whose CPU time per request is reported")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &f, nil
}

// doer sends a worker's n-th request and validates the answer; list requests report the
// listing's tools and pages.
type doer func(ctx context.Context, buf *bytes.Buffer, n int) (items, pages int, err error)

// newDoer builds one worker's request function; a legacy worker opens its session first.
func newDoer(ctx context.Context, t *target, kind string, f *loadFlags) (doer, error) {
	switch {
	case kind == "call" && f.era == "modern":
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + strconv.Quote(f.tool) +
			`,"arguments":{},` + modernMeta() + `}}`)
		hdr := map[string]string{"MCP-Protocol-Version": modernVersion, "Mcp-Method": "tools/call", "Mcp-Name": f.tool}
		return func(ctx context.Context, buf *bytes.Buffer, _ int) (int, int, error) {
			resp, err := t.post(ctx, body, hdr, buf)
			return 0, 0, checkCall(resp, err, buf, f.expect)
		}, nil
	case kind == "call" && f.era == "legacy":
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		sid, err := t.session(sctx)
		if err != nil {
			return nil, err
		}
		hdr := legacyHeaders(sid)
		pre := []byte(`{"jsonrpc":"2.0","id":`)
		post := []byte(`,"method":"tools/call","params":{"name":` + strconv.Quote(f.tool) + `,"arguments":{}}}`)
		body := make([]byte, 0, len(pre)+len(post)+20)
		return func(ctx context.Context, buf *bytes.Buffer, n int) (int, int, error) {
			body = append(strconv.AppendInt(append(body[:0], pre...), int64(n+1), 10), post...)
			resp, err := t.post(ctx, body, hdr, buf)
			return 0, 0, checkCall(resp, err, buf, f.expect)
		}, nil
	case kind == "list":
		hdr := map[string]string{"MCP-Protocol-Version": modernVersion, "Mcp-Method": "tools/list"}
		return func(ctx context.Context, buf *bytes.Buffer, _ int) (int, int, error) {
			return listAll(ctx, t, hdr, buf, f.minItems)
		}, nil
	}
	return nil, fmt.Errorf("unknown era %q", f.era)
}

// workerOut is what one worker measured.
type workerOut struct {
	lat   []time.Duration
	errs  int
	first error
	items int
	pages int
}

// work runs one worker's closed loop until end; requests started before start are warm-up and
// not counted.
func (w *workerOut) work(ctx context.Context, do doer, start, end time.Time) {
	var buf bytes.Buffer
	w.lat = make([]time.Duration, 0, 1<<14)
	for n := 0; ; n++ {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		items, pages, err := do(rctx, &buf, n)
		cancel()
		if t0.Before(start) {
			continue // warm-up
		}
		if err != nil {
			w.errs++
			if w.first == nil {
				w.first = err
			}
			continue
		}
		w.lat = append(w.lat, time.Since(t0))
		w.items, w.pages = items, pages
	}
}

// runLoad runs the closed loop of the call and list subcommands.
func runLoad(args []string, kind string) error {
	f, err := parseLoadFlags(args, kind)
	if err != nil {
		return err
	}
	if err := loopback(f.url); err != nil {
		return err
	}
	procsCPU, err := parseCPU(f.cpu)
	if err != nil {
		return err
	}
	if f.c < 1 || f.d <= 0 {
		return errors.New("-c must be ≥ 1 and -d > 0")
	}
	if kind == "list" && f.era != "modern" {
		return errors.New("list is modern only")
	}
	t := &target{client: newClient(f.c), url: f.url, key: f.key}
	ctx := context.Background()

	outs := make([]workerOut, f.c)
	doers := make([]doer, f.c)
	for i := range doers {
		var err error
		if doers[i], err = newDoer(ctx, t, kind, f); err != nil {
			return fmt.Errorf("worker %d setup: %w", i, err)
		}
	}
	start := time.Now().Add(f.warm)
	end := start.Add(f.d)
	cpu0 := make(chan map[string]time.Duration, 1)
	opens0 := make(chan int64, 1)
	time.AfterFunc(time.Until(start), func() { opens0 <- activeOpens(); cpu0 <- cpuTimes(procsCPU) })
	var wg sync.WaitGroup
	for i := 0; i < f.c; i++ {
		wg.Add(1)
		go func(w *workerOut, do doer) {
			defer wg.Done()
			w.work(ctx, do, start, end)
		}(&outs[i], doers[i])
	}
	wg.Wait()
	cpu1 := cpuTimes(procsCPU)
	opens1 := activeOpens()

	r := Result{Kind: kind, Target: f.target, Round: f.round, C: f.c, Seconds: f.d.Seconds(), Upstreams: f.upstreams, Procs: f.procs}
	if kind == "call" {
		r.Era = f.era
	}
	summarize(&r, outs, f.d, <-opens0, opens1, <-cpu0, cpu1)
	r.Load1 = benchfig.Load1()
	if err := emit(r, f.out); err != nil {
		return err
	}
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "loadgen: %d errors; first: %s\n", r.Errors, r.FirstError)
	}
	if r.Requests == 0 {
		return errors.New("no request succeeded")
	}
	return nil
}

// summarize folds the workers' measurements over the measured duration d, and the TCP-open and
// CPU counters read before and after it, into r.
func summarize(r *Result, outs []workerOut, d time.Duration, opens0, opens1 int64, cpu0, cpu1 map[string]time.Duration) {
	var all []time.Duration
	for _, w := range outs {
		all = append(all, w.lat...)
		r.Errors += w.errs
		if w.first != nil && r.FirstError == "" {
			r.FirstError = clip(w.first.Error())
		}
		if w.items > 0 {
			r.Items, r.Pages = w.items, w.pages
		}
	}
	slices.Sort(all)
	if opens0 >= 0 && opens1 >= 0 && len(all)+r.Errors > 0 {
		r.OpensPerReq = round3(float64(opens1-opens0) / float64(len(all)+r.Errors))
	}
	if len(all)+r.Errors > 0 {
		r.CPUPerReq = map[string]float64{}
		for k, v := range cpu1 {
			if b, ok := cpu0[k]; ok {
				r.CPUPerReq[k] = round2(float64(v-b) / float64(time.Microsecond) / float64(len(all)+r.Errors))
			}
		}
	}
	r.Requests = len(all)
	r.RPS = round2(float64(len(all)) / d.Seconds())
	r.P50, r.P90, r.P99 = pct(all, 50), pct(all, 90), pct(all, 99)
	if len(all) > 0 {
		r.Max = ms(all[len(all)-1])
	}
}

// ms is d in milliseconds, rounded to three decimals.
func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

// pct is the nearest-rank percentile of sorted latencies, in milliseconds.
func pct(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100 // ceil(n·p/100)
	if i < 1 {
		i = 1
	}
	return ms(sorted[i-1])
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// clip shortens an error message for the JSON line.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
