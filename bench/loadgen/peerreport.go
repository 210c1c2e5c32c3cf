package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgw/mcpgw/internal/benchfig"
)

// runPeerReport prints bench/peers.sh's side-by-side table from the JSON
// lines of one run: per era, each target's median requests/s over the
// rounds with its range, the ratios to direct and to the ReverseProxy
// reference (each from the medians), and the proxy's own CPU per call. A
// stdio target (named stdio-…) runs the upstream as the proxy's child: its
// proxy CPU includes the child's (measured as upstream), it has no direct or
// ReverseProxy reference, and its ÷ TBXark columns compare it with
// stdio-tbxark (an HTTP target's with tbxark). Those columns compare medians; the paired
// table under it compares each round's target with its leg's reference in the same round
// (the ReverseProxy on the HTTP leg, TBXark on the stdio leg), which cancels the load that
// moves both, and the verdict lines decide issue 20's targets 1 and 3 from those ratios
// (benchfig.MedianCI, benchfig.Decide).
func runPeerReport(args []string) error {
	fs := flag.NewFlagSet("peerreport", flag.ContinueOnError)
	in := fs.String("in", "", "JSON lines written by call -out")
	header := fs.String("header", "", "first line of the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rs, err := readResults(*in)
	if err != nil {
		return err
	}
	fmt.Print(peerReport(rs, *header))
	return nil
}

// peerReport is the report of runPeerReport: the side-by-side table, the paired ratios and
// the verdicts on issue 20's targets.
func peerReport(rs []Result, header string) string {
	var b strings.Builder
	if header != "" {
		b.WriteString(header + "\n\n")
	}
	b.WriteString("| era | target | C | req/s (median) | req/s per round (min–max) | ÷ direct | ÷ ReverseProxy | ÷ TBXark | proxy CPU µs/call (min–max) | proxy CPU ÷ ReverseProxy's | ÷ TBXark's | upstream CPU µs/call | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var targets []string
	for _, r := range rs {
		if r.Kind == "call" && !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
	}
	for _, era := range []string{"modern", "legacy"} {
		med := map[string]peerRow{}
		for _, t := range targets {
			if row, ok := peerRowOf(rs, era, t); ok {
				med[t] = row
			}
		}
		for _, t := range targets {
			row, ok := med[t]
			if !ok {
				continue
			}
			stdio := strings.HasPrefix(t, "stdio-")
			direct, rp, tbx := "direct", "reverseproxy", "tbxark"
			if stdio {
				direct, rp, tbx = "", "", "stdio-tbxark"
			}
			ratio := func(ref string, v float64, refOf func(peerRow) float64) string {
				if r, ok := med[ref]; ok && refOf(r) > 0 {
					return f2(v / refOf(r))
				}
				return "—"
			}
			rps := func(r peerRow) float64 { return r.rps }
			cpuOf := func(r peerRow) float64 { return r.cpu }
			cpu, cpuRange, cpuRatio, cpuTbx := "—", "", "—", "—"
			if t != "direct" {
				cpu, cpuRange = f0(row.cpu), " ("+f0(row.cpuMin)+"–"+f0(row.cpuMax)+")"
				cpuRatio, cpuTbx = ratio(rp, row.cpu, cpuOf), ratio(tbx, row.cpu, cpuOf)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s–%s | %s | %s | %s | %s%s | %s | %s | %s | %d / %d |\n",
				eraName(era), t, row.c, f0(row.rps), f0(row.rpsMin), f0(row.rpsMax),
				ratio(direct, row.rps, rps), ratio(rp, row.rps, rps), ratio(tbx, row.rps, rps),
				cpu, cpuRange, cpuRatio, cpuTbx, f0(row.upCPU), row.errors, row.requests+row.errors)
		}
	}
	pairedTable(&b, rs, targets)
	verdicts(&b, rs)
	return b.String()
}

type peerRow struct {
	c                                        int
	rps, rpsMin, rpsMax, cpu, cpuMin, cpuMax float64
	upCPU                                    float64
	requests, errors                         int
}

func peerRowOf(rs []Result, era, target string) (peerRow, bool) {
	var row peerRow
	var rps, cpu, up []float64
	for _, r := range rs {
		if r.Kind != "call" || r.Era != era || r.Target != target {
			continue
		}
		row.c = r.C
		row.requests += r.Requests
		row.errors += r.Errors
		if r.Requests == 0 {
			continue // a run that served nothing has no figures (its errors are counted)
		}
		rps = append(rps, r.RPS)
		cpu = append(cpu, proxyCPU(r))
		up = append(up, r.CPUPerReq["upstream"])
	}
	if len(rps) == 0 {
		return row, false
	}
	row.rps, row.rpsMin, row.rpsMax = benchfig.Median(rps), slices.Min(rps), slices.Max(rps)
	row.cpu, row.cpuMin, row.cpuMax = benchfig.Median(cpu), slices.Min(cpu), slices.Max(cpu)
	row.upCPU = benchfig.Median(up)
	return row, true
}

func eraName(era string) string {
	if era == "modern" {
		return "2026-07-28 stateless"
	}
	return "2025-11-25 sessionful"
}
