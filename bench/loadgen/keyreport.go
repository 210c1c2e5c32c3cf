package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgw/mcpgw/internal/benchfig"
)

// runKeyReport prints the table of bench/storekey.sh: per concurrency, the gateway's CPU time
// per tools/call with the master key and with a store key, round by round (the two runs of a
// round are back to back), and the median of the per-round ratios.
func runKeyReport(args []string) error {
	fs := flag.NewFlagSet("keyreport", flag.ContinueOnError)
	in := fs.String("in", "", "JSON lines written by call -out, targets master and store-key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rs, err := readResults(*in)
	if err != nil {
		return err
	}
	var cs []int
	for _, r := range rs {
		if !slices.Contains(cs, r.C) {
			cs = append(cs, r.C)
		}
	}
	slices.Sort(cs)
	slices.Reverse(cs)
	var b strings.Builder
	b.WriteString("| C | round | gateway CPU µs/call, master key | store key | store/master | req/s master, store | p50 ms master, store | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, c := range cs {
		byRound := map[int]map[string]Result{}
		var rounds []int
		for _, r := range rs {
			if r.Kind != "call" || r.C != c {
				continue
			}
			if byRound[r.Round] == nil {
				byRound[r.Round] = map[string]Result{}
				rounds = append(rounds, r.Round)
			}
			byRound[r.Round][r.Target] = r
		}
		slices.Sort(rounds)
		var ratios, masters, stores []float64
		for _, round := range rounds {
			m, okM := byRound[round]["master"]
			s, okS := byRound[round]["store-key"]
			if !okM || !okS || m.CPUPerReq["gateway"] == 0 {
				continue
			}
			gm, gs := m.CPUPerReq["gateway"], s.CPUPerReq["gateway"]
			ratios, masters, stores = append(ratios, gs/gm), append(masters, gm), append(stores, gs)
			fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s, %s | %.2f, %.2f | %d, %d |\n", c, round, f0(gm), f0(gs),
				f3(gs/gm), f0(m.RPS), f0(s.RPS), m.P50, s.P50, m.Errors, s.Errors)
		}
		if len(ratios) > 0 {
			fmt.Fprintf(&b, "| %d | **median** | **%s** | **%s** | **%s** | | | |\n", c, f0(benchfig.Median(masters)), f0(benchfig.Median(stores)), f3(benchfig.Median(ratios)))
		}
	}
	fmt.Print(b.String())
	return nil
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }
