package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// scenario is one attack.
type scenario struct {
	name, title string
	run         func(ctx context.Context, h *harness, r *result) error
}

// result is what one scenario measured.
type result struct {
	name, title       string
	base, peak, after figures
	notes             []string
	outcome           string
	seconds           float64
	wait              time.Duration // the longest settle
	back              time.Duration // when goroutines and fds were back near the baseline; 0 for never

	g       *gateway
	sampler func() figures
}

func (r *result) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// begin takes the baseline (after a collection) and starts sampling.
func (r *result) begin(h *harness, g *gateway) {
	r.g, r.wait = g, h.wait
	r.base = g.measure(true)
	r.sampler = g.sample(h.rssLimitKB)
}

// endPeak stops sampling; the peak includes one last reading.
func (r *result) endPeak() {
	if r.sampler == nil {
		return
	}
	r.peak = r.sampler()
	r.sampler = nil
	r.peak.maxOf(r.base)
	if r.g != nil {
		r.peak.maxOf(r.g.measure(false))
	}
}

// settle stops sampling, waits at least least (the attack's connections are
// gone by then), then until goroutines and fds are back near the baseline or
// -wait has passed since the attack ended, and takes the after figures
// (after a collection).
func (r *result) settle(ctx context.Context, least time.Duration) {
	r.endPeak()
	start := time.Now()
	sleepUntil(ctx, start.Add(least))
	for ctx.Err() == nil && r.g.alive() {
		if f := r.g.measure(false); r.nearBase(f) {
			r.back = time.Since(start)
			break
		}
		if time.Since(start) >= r.wait {
			break
		}
		sleepUntil(ctx, time.Now().Add(time.Second))
	}
	r.after = r.g.measure(true)
}

// nearBase reports goroutines and fds back within a few of the baseline.
func (r *result) nearBase(f figures) bool {
	return f.Alive && f.FDs <= r.base.FDs+4 && (f.Goroutines < 0 || f.Goroutines <= r.base.Goroutines+8)
}

// runScenario runs s; a gateway that died or was killed is the result, not
// an error of the harness.
func (h *harness) runScenario(ctx context.Context, s scenario) *result {
	r := &result{name: s.name, title: s.title, base: figures{Goroutines: -1}, peak: figures{Goroutines: -1}, after: figures{Goroutines: -1}}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	err := s.run(sctx, h, r)
	cancel()
	r.endPeak()
	r.seconds = time.Since(start).Seconds()
	switch {
	case r.g != nil && r.g.death() != "":
		r.outcome = r.g.death()
		for _, l := range r.g.log.lastLines(3) {
			logf("  gateway log: %s", clip(l, 300))
		}
	case err != nil:
		r.outcome = "harness error: " + err.Error()
	case r.back > 0:
		r.outcome = fmt.Sprintf("survived; goroutines and fds back to baseline %.0f s after the attack", r.back.Seconds())
	case r.after.Alive:
		r.outcome = fmt.Sprintf("survived; goroutines or fds **not back** to baseline %.0f s after the attack", r.wait.Seconds())
	default:
		r.outcome = "survived"
	}
	if r.g != nil {
		r.g.stop()
	}
	return r
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// renderTable prints the results as markdown.
func renderTable(results []*result, h *harness, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Soak run %s on %d cores, %s/%s, %s; gateway %s; -wait %s; took %.0f s; load average at the start %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(),
		describeBinary(h), h.wait, took.Seconds(), h.loadAtStart)
	b.WriteString("| scenario | attack | VmRSS MB base / peak / after | VmHWM MB | goroutines base / peak / after | fds base / peak / after | heap in use MB base / peak / after | scenario figures | gateway |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, r.title,
			triple(r, func(f figures) string { return mb(f.RSSKB * 1024) }),
			ifAlive(r.peak, mb(r.peak.HWMKB*1024)),
			triple(r, func(f figures) string { return count(f.Goroutines) }),
			triple(r, func(f figures) string { return count(f.FDs) }),
			triple(r, func(f figures) string { return ifKnown(f.Goroutines, mb(int64(f.HeapInuse))) }),
			strings.ReplaceAll(strings.Join(r.notes, "; "), "|", "/"), r.outcome)
	}
	return b.String()
}

func triple(r *result, show func(figures) string) string {
	return ifAlive(r.base, show(r.base)) + " / " + ifAlive(r.peak, show(r.peak)) + " / " + ifAlive(r.after, show(r.after))
}

func ifAlive(f figures, s string) string {
	if !f.Alive {
		return "—"
	}
	return s
}

func ifKnown(goroutines int, s string) string {
	if goroutines < 0 {
		return "—"
	}
	return s
}

func mb(b int64) string { return fmt.Sprintf("%.1f", float64(b)/1e6) }

func count(n int) string {
	if n < 0 {
		return "—"
	}
	return fmt.Sprint(n)
}

// describeBinary names what was measured: the commit it was built from, or
// the binary given with -bin.
func describeBinary(h *harness) string {
	if h.bin != "" && !strings.HasPrefix(h.bin, h.tmp) {
		return "binary " + h.bin
	}
	out, err := exec.Command("git", "-C", h.repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "commit unknown"
	}
	desc := "commit " + strings.TrimSpace(string(out))
	if st, _ := exec.Command("git", "-C", h.repo, "status", "--porcelain", "--", "cmd", "internal").Output(); len(st) > 0 {
		desc += " (+ uncommitted changes)"
	}
	return desc
}
