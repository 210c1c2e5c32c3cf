package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	distinctHeaders = 2000    // distinct X-Request-Id values
	floodRequests   = 100_000 // server→client requests in one answer
	bigCallers      = 20
	bigBytes        = 30_000_000
	garbageWindow   = 7 * time.Second
)

// stdioEnv: a stdio upstream reports which of the gateway's secrets it sees
// in its environment.
func stdioEnv(ctx context.Context, h *harness, r *result) error {
	cfg := fmt.Sprintf(`general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
mcp_servers:
  envchk:
    transport: stdio
    command: %q
    args: ["stdio-server"]
    protocol_version: "2025-11-25"
`, h.self)
	g, err := h.startGateway(r, cfg, "LITELLM_MASTER_KEY="+h.key,
		"OPENAI_API_KEY=sk-soak-canary-"+randHex(8), "SOAK_CANARY_SECRET="+randHex(8))
	if err != nil {
		return err
	}
	h.listTools(ctx, g) // starts the child
	r.begin(h, g)
	a := h.callTool(ctx, g, g.client, "envchk-env", `{}`, nil)
	r.endPeak()
	m := regexp.MustCompile(`seen=([A-Z_,]*);vars=(\d+)`).FindSubmatch(a.head)
	switch {
	case m == nil:
		r.note("no answer from the stdio child (HTTP %d, %v)", a.status, a.err)
	case len(m[1]) == 0:
		r.note("leaked: **no** (the child has %s variables, none of %s)", m[2], strings.Join(secretNames(), ", "))
	default:
		r.note("leaked: **yes**: the child sees %s (%s variables in all)", strings.ReplaceAll(string(m[1]), ",", ", "), m[2])
	}
	r.settle(ctx, time.Second)
	return nil
}

// upstreamSessions: every distinct value of a forwarded header
// (extra_headers) is a new upstream credential set.
func upstreamSessions(ctx context.Context, h *harness, r *result) error {
	fx, stop, err := h.startFixture(false)
	if err != nil {
		return err
	}
	defer stop()
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n    extra_headers: [\"X-Request-Id\"]\n", h.key, fx)
	g, err := h.startGateway(r, cfg)
	if err != nil {
		return err
	}
	if a := h.callTool(ctx, g, g.client, "fx-test_simple_text", `{}`, map[string]string{"X-Request-Id": "warm-up"}); !a.ok() {
		r.note("warm-up call failed (HTTP %d, %v)", a.status, a.err)
	}
	r.begin(h, g)
	start := time.Now()
	var ok atomic.Int64
	c := newClient(16)
	defer c.CloseIdleConnections()
	parallel(ctx, distinctHeaders, 8, func(i int) {
		if h.callTool(ctx, g, c, "fx-test_simple_text", `{}`, map[string]string{"X-Request-Id": fmt.Sprintf("soak-%d", i)}).ok() {
			ok.Add(1)
		}
	})
	took := time.Since(start)
	r.endPeak()
	r.note("%d tools/call with distinct X-Request-Id: %d ok in %.1f s", distinctHeaders, ok.Load(), took.Seconds())
	r.note("fds +%d, VmRSS +%s MB at the peak", r.peak.FDs-r.base.FDs, mb((r.peak.RSSKB-r.base.RSSKB)*1024))
	c.CloseIdleConnections()
	r.settle(ctx, 2*time.Second)
	return nil
}

// requestFlood: an upstream answers a call with 100,000 roots/list requests
// on the call's stream; a well-behaved caller of another upstream measures
// its latency before and during.
func requestFlood(ctx context.Context, h *harness, r *result) error {
	fake, err := startFake(floodRequests, 0)
	if err != nil {
		return err
	}
	defer fake.close()
	fx, stop, err := h.startFixture(true)
	if err != nil {
		return err
	}
	defer stop()
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  hostile:\n    url: %s\n    protocol_version: \"2025-11-25\"\n  fx:\n    url: %s\n", h.key, fake.url, fx)
	g, err := h.startGateway(r, cfg)
	if err != nil {
		return err
	}
	h.listTools(ctx, g)
	r.begin(h, g)
	before := h.goodCaller(ctx, g, time.Now().Add(3*time.Second), nil)

	done := make(chan struct{})
	var flood answer
	var floodTook time.Duration
	go func() {
		defer close(done)
		fctx, cancel := context.WithTimeout(ctx, 50*time.Second)
		defer cancel()
		start := time.Now()
		flood = h.callTool(fctx, g, newClient(1), "hostile-flood", `{}`, nil)
		floodTook = time.Since(start)
	}()
	during := h.goodCaller(ctx, g, time.Now().Add(55*time.Second), done)
	<-done
	r.endPeak()
	how := "completed"
	if !flood.ok() {
		how = fmt.Sprintf("failed (HTTP %d, %s)", flood.status, failure(flood))
	}
	r.note("flood call %s in %.1f s; upstream sent %d requests, gateway POSTed back %d answers", how, floodTook.Seconds(), fake.floodOut.Load(), fake.answers.Load())
	r.note("other caller before: %s; during: %s", before, during)
	fake.dropIdle()
	r.settle(ctx, 2*time.Second)
	return nil
}

// goodCaller calls fx-test_simple_text one call at a time until deadline or
// stop, and summarises the latencies.
func (h *harness) goodCaller(ctx context.Context, g *gateway, deadline time.Time, stop <-chan struct{}) string {
	c := newClient(2)
	defer c.CloseIdleConnections()
	var lat []time.Duration
	errs := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-stop:
			deadline = time.Now()
			continue
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		start := time.Now()
		a := h.callTool(cctx, g, c, "fx-test_simple_text", `{}`, nil)
		cancel()
		if a.ok() {
			lat = append(lat, time.Since(start))
		} else {
			errs++
			time.Sleep(50 * time.Millisecond)
		}
	}
	p50, mx := latencies(lat)
	return fmt.Sprintf("p50 %.1f ms, max %.0f ms (%d calls, %d errors)", p50, mx, len(lat), errs)
}

// stdioGarbage: a stdio upstream writes non-JSON lines on stdout; what the
// gateway logs about them is counted for a fixed window.
func stdioGarbage(ctx context.Context, h *harness, r *result) error {
	cfg := fmt.Sprintf(`general_settings:
  master_key: %s
mcp_servers:
  junk:
    transport: stdio
    command: %q
    args: ["stdio-server", "-garbage-for", "10s"]
    protocol_version: "2025-11-25"
`, h.key, h.self)
	g, err := h.startGateway(r, cfg)
	if err != nil {
		return err
	}
	h.listTools(ctx, g) // starts the child
	r.begin(h, g)
	lines0, bytes0 := g.log.lines.Load(), g.log.bytes.Load()
	start := time.Now()
	a := h.callTool(ctx, g, g.client, "junk-garbage", `{}`, nil) // the child starts its garbage after answering
	sleepUntil(ctx, start.Add(garbageWindow))
	lines, size := g.log.lines.Load()-lines0, g.log.bytes.Load()-bytes0
	r.endPeak()
	if !a.ok() {
		r.note("the call that starts the garbage failed (HTTP %d, %s)", a.status, failure(a))
	}
	r.note("gateway stderr in the %s after the child's garbage began: %d lines, %.1f MB", garbageWindow, lines, float64(size)/1e6)
	r.settle(ctx, 4*time.Second) // the garbage stops 10 s after it began
	return nil
}

// bigAnswers: 20 callers at once call a tool whose upstream answer is 30 MB.
func bigAnswers(ctx context.Context, h *harness, r *result) error {
	fake, err := startFake(0, bigBytes)
	if err != nil {
		return err
	}
	defer fake.close()
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  hostile:\n    url: %s\n    protocol_version: \"2025-11-25\"\n", h.key, fake.url)
	g, err := h.startGateway(r, cfg)
	if err != nil {
		return err
	}
	h.listTools(ctx, g)
	r.begin(h, g)
	start := time.Now()
	var wg sync.WaitGroup
	var full, got atomic.Int64
	for range bigCallers {
		wg.Go(func() {
			c := newClient(1)
			c.Timeout = 150 * time.Second // 600 MB through a busy 2-core machine
			defer c.CloseIdleConnections()
			a := h.callTool(ctx, g, c, "hostile-big", `{}`, nil)
			got.Add(a.n)
			if a.ok() && a.n >= bigBytes {
				full.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	r.endPeak()
	r.note("%d callers × %d MB answers: %d answered in full (%.0f MB received) in %.1f s; VmHWM %s MB",
		bigCallers, bigBytes/1_000_000, full.Load(), float64(got.Load())/1e6, took.Seconds(), mb(r.peak.HWMKB*1024))
	fake.dropIdle()
	r.settle(ctx, 2*time.Second)
	return nil
}

// failure names why a call failed: the transport error or the JSON-RPC
// error message (the gateway's own, never an upstream body).
func failure(a answer) string {
	if a.err != nil {
		return a.err.Error()
	}
	if m := regexp.MustCompile(`"message":"([^"]{0,120})`).FindSubmatch(a.head); m != nil {
		return string(m[1])
	}
	return "no result"
}
