package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mcpgw/mcpgw/internal/benchfig"
)

// pairedConf is the confidence of the paired intervals and verdicts.
const pairedConf = 0.95

// pairedRef names the reference a target's per-round ratios are taken against: the leg's
// reference in the same era, the ReverseProxy on the HTTP leg and TBXark on the stdio leg;
// "" for a reference itself.
func pairedRef(target string) string {
	switch {
	case target == "reverseproxy" || target == "stdio-tbxark":
		return ""
	case strings.HasPrefix(target, "stdio-"):
		return "stdio-tbxark"
	}
	return "reverseproxy"
}

// proxyCPU is a result's proxy CPU per call in µs; a stdio target's includes its child's
// (measured as upstream).
func proxyCPU(r Result) float64 {
	c := r.CPUPerReq["proxy"]
	if strings.HasPrefix(r.Target, "stdio-") {
		c += r.CPUPerReq["upstream"]
	}
	return c
}

// roundsOf is one target's measurements in one era by round: the last of a round's, and none
// that served no request.
func roundsOf(rs []Result, era, target string) map[int]Result {
	m := map[int]Result{}
	for _, r := range rs {
		if r.Kind == "call" && r.Era == era && r.Target == target && r.Requests > 0 && r.RPS > 0 {
			m[r.Round] = r
		}
	}
	return m
}

// pairedSeries is one target's ratios to its reference in one era, round by round, over the
// rounds where both ran.
type pairedSeries struct {
	era, target, ref string
	rounds           []int
	rps, cpu         []float64 // target ÷ reference in the same round (cpu: rounds where both have a figure)
	own, refRPS      []float64 // the two sides' req/s, for their variation
}

// pairedOf pairs target with ref in era; the series has no rounds when they share none.
func pairedOf(rs []Result, era, target, ref string) pairedSeries {
	s := pairedSeries{era: era, target: target, ref: ref}
	own, refs := roundsOf(rs, era, target), roundsOf(rs, era, ref)
	for round := range own {
		if _, ok := refs[round]; ok {
			s.rounds = append(s.rounds, round)
		}
	}
	slices.Sort(s.rounds)
	for _, round := range s.rounds {
		t, r := own[round], refs[round]
		s.rps = append(s.rps, t.RPS/r.RPS)
		s.own, s.refRPS = append(s.own, t.RPS), append(s.refRPS, r.RPS)
		if tc, rc := proxyCPU(t), proxyCPU(r); tc > 0 && rc > 0 {
			s.cpu = append(s.cpu, tc/rc)
		}
	}
	return s
}

// ratioCI is the Hodges–Lehmann estimate of a series of ratios and its signed-rank interval
// (benchfig.SignedRankCI), taken on their logarithms: a ratio and its inverse are equally far
// from 1 there, so the symmetry the test assumes is about the log of the typical ratio.
func ratioCI(v []float64) (est, lo, hi, coverage float64, ok bool) {
	logs := make([]float64, len(v))
	for i, x := range v {
		logs[i] = math.Log(x)
	}
	c, l, h, cov, ok := benchfig.SignedRankCI(logs, pairedConf)
	return math.Exp(c), math.Exp(l), math.Exp(h), cov, ok
}

// figure is "median; estimate (lo–hi)" of a series of ratios: the median, and the
// Hodges–Lehmann estimate with its signed-rank 95 % interval, or why there is none.
func figure(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	est, lo, hi, _, ok := ratioCI(v)
	if !ok {
		return f2(benchfig.Median(v)) + "; too few rounds"
	}
	return f2(benchfig.Median(v)) + "; " + f2(est) + " (" + f2(lo) + "–" + f2(hi) + ")"
}

// series is v as a report prints it: two decimals, in round order.
func series(v []float64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = f2(x)
	}
	return strings.Join(out, " ")
}

// logSD is the standard deviation of the logarithms of v (about the relative standard
// deviation for small ones): how much one side, or the ratio, moved between rounds. 0 for
// fewer than two values.
func logSD(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range v {
		mean += math.Log(x)
	}
	mean /= float64(len(v))
	ss := 0.0
	for _, x := range v {
		d := math.Log(x) - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// pairedTable writes the paired ratios of every target of rs that has a reference in its leg
// and era, in the order targets first appear.
func pairedTable(b *strings.Builder, rs []Result, targets []string) {
	b.WriteString("\n**Paired ratios** (each round's target ÷ its leg's reference in the same round; over the rounds, their median, and the Hodges–Lehmann estimate with its Wilcoxon signed-rank 95 % interval, on the logarithms; variation = the standard deviation of the logarithms over the rounds, ≈ relative: pairing cancelled the load's drift where the ratio's is below both sides'):\n\n")
	b.WriteString("| era | target | ÷ | rounds | req/s ratio per round | median; estimate (95 % CI) | proxy CPU ratio per round | median; estimate (95 % CI) | req/s variation: target, reference, ratio |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, era := range []string{"modern", "legacy"} {
		for _, t := range targets {
			ref := pairedRef(t)
			if ref == "" {
				continue
			}
			s := pairedOf(rs, era, t, ref)
			if len(s.rounds) == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s, %s, %s |\n",
				eraName(era), t, ref, len(s.rounds), series(s.rps), figure(s.rps), series(s.cpu), figure(s.cpu),
				f2(logSD(s.own)), f2(logSD(s.refRPS)), f2(logSD(s.rps)))
		}
	}
	var loads []float64
	for _, r := range rs {
		if r.Kind == "call" && r.Load1 > 0 {
			loads = append(loads, r.Load1)
		}
	}
	if len(loads) > 0 {
		fmt.Fprintf(b, "\nLoad average (1 min) as each run ended: %.2f–%.2f, median %.2f.\n", slices.Min(loads), slices.Max(loads), benchfig.Median(loads))
	}
}

// peerCheck is one figure of a target of issue 20 that the peers run can decide.
type peerCheck struct {
	goal        string // the target, as the verdict line names it
	era, target string
	cpu         bool    // the proxy CPU ratio, ≤ threshold; else the req/s ratio, ≥ threshold
	threshold   float64 // in the ratio to the leg's reference
	aside       string  // set when the figure is reported beside the target, not part of it
}

// peerChecks are the figures of issue 20's targets 1 (both eras, the default and the bare
// configuration) and 3 (the default configuration over stdio, the era TBXark serves).
func peerChecks() []peerCheck {
	var cs []peerCheck
	for _, era := range []string{"modern", "legacy"} {
		for _, t := range []string{"mcpgw", "mcpgw-bare"} {
			goal := "target 1, " + eraName(era) + ", " + t
			cs = append(cs, peerCheck{goal: goal, era: era, target: t, threshold: 1.15},
				peerCheck{goal: goal, era: era, target: t, cpu: true, threshold: 0.8})
		}
	}
	goal := "target 3, stdio, default configuration (stdio-mcpgw), 2025-11-25 caller"
	return append(cs, peerCheck{goal: goal, era: "legacy", target: "stdio-mcpgw", threshold: 1.0},
		peerCheck{goal: goal, era: "legacy", target: "stdio-mcpgw", cpu: true, threshold: 1.0, aside: " (beside the target, not part of it)"})
}

// verdicts writes one line per check that rs holds both sides of.
func verdicts(b *strings.Builder, rs []Result) {
	var lines []string
	for _, c := range peerChecks() {
		s := pairedOf(rs, c.era, c.target, pairedRef(c.target))
		v, what, rel := s.rps, "req/s", "≥"
		if c.cpu {
			v, what, rel = s.cpu, "proxy CPU per call", "≤"
			if strings.HasPrefix(c.target, "stdio-") {
				what = "proxy + child CPU per call"
			}
		}
		if len(v) == 0 {
			continue
		}
		est, lo, hi, cov, ok := ratioCI(v)
		verdict := benchfig.Decide(lo, hi, ok, c.threshold, !c.cpu)
		figures := fmt.Sprintf("median %s", f2(benchfig.Median(v)))
		if ok {
			figures += fmt.Sprintf(", estimate %s, 95 %% CI %s–%s (coverage %.3f)", f2(est), f2(lo), f2(hi), cov)
		}
		if mlo, mhi, mcov, mok := benchfig.MedianCI(v, pairedConf); mok {
			figures += fmt.Sprintf("; the sign test's interval of the median, which assumes no symmetry: %s–%s (%.3f), %s",
				f2(mlo), f2(mhi), mcov, benchfig.Decide(mlo, mhi, mok, c.threshold, !c.cpu))
		}
		lines = append(lines, fmt.Sprintf("- %s: %s %s %.2f× %s's%s: **%s** (%s; %d rounds)",
			c.goal, what, rel, c.threshold, refName(s.ref), c.aside, verdict, figures, len(v)))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\n**Issue 20, as this run decides it** (on the signed-rank interval of the paired ratios; shown: the whole 95 % interval is on the target's side; shown missed: on the other side; not shown: it holds the threshold):\n\n")
	b.WriteString(strings.Join(lines, "\n") + "\n")
}

// refName is a reference target as a verdict line names it.
func refName(ref string) string {
	if ref == "stdio-tbxark" {
		return "TBXark"
	}
	return "ReverseProxy"
}
