package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// peerLine is one JSON line as `loadgen call -out` writes it, field names spelled out so that
// the test reads what the script's report reads.
func peerLine(era, target string, round int, requests int, rps, proxy, upstream, load float64) string {
	return fmt.Sprintf(`{"kind":"call","era":%q,"target":%q,"round":%d,"c":10,"seconds":3,"requests":%d,"errors":0,"rps":%g,"p50_ms":1,"p90_ms":2,"p99_ms":3,"max_ms":4,"cpu_us_per_req":{"proxy":%g,"upstream":%g,"loadgen":90},"tcp_opens_per_req":0,"load1":%g}`,
		era, target, round, requests, rps, proxy, upstream, load)
}

// peerFixture is a run of known ratios. Stdio, 2025-11-25: eleven rounds, TBXark's req/s
// drifting up by 10 % a round and the default mcpgw at the ratios below in the same rounds;
// TBXark's round 11 served nothing, so that round is not paired. Child included, mcpgw costs
// 530 µs per call against TBXark's 500 in every round. A modern-era stdio row has no
// reference. HTTP, 2026-07-28: six rounds of mcpgw against the ReverseProxy, and five of
// mcpgw-bare.
func peerFixture(t *testing.T) []Result {
	t.Helper()
	stdioRatios := []float64{1.10, 1.05, 1.08, 1.02, 1.12, 1.04, 1.06, 0.98, 1.09, 1.08}
	httpRatios := []float64{0.90, 1.00, 1.20, 0.95, 1.05, 1.10}
	var lines []string
	for i, r := range stdioRatios {
		round := i + 1
		tbx := 1000 * (1 + 0.1*float64(i))
		lines = append(lines, peerLine("legacy", "stdio-mcpgw", round, 3000, tbx*r, 230, 300, 4+float64(i)),
			peerLine("legacy", "stdio-tbxark", round, 3000, tbx, 200, 300, 4),
			peerLine("modern", "stdio-mcpgw", round, 3000, 900, 300, 450, 4))
	}
	lines = append(lines, peerLine("legacy", "stdio-mcpgw", 11, 3000, 5000, 230, 300, 4),
		peerLine("legacy", "stdio-tbxark", 11, 0, 0, 0, 0, 4), "")
	for i, r := range httpRatios {
		round := i + 1
		lines = append(lines, peerLine("modern", "reverseproxy", round, 2000, 800, 300, 500, 2),
			peerLine("modern", "mcpgw", round, 2000, 800*r, 210, 500, 2))
		if round <= 5 {
			lines = append(lines, peerLine("modern", "mcpgw-bare", round, 2000, 800*r, 200, 500, 2))
		}
	}
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := readResults(path)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestPairedOf(t *testing.T) {
	rs := peerFixture(t)
	s := pairedOf(rs, "legacy", "stdio-mcpgw", pairedRef("stdio-mcpgw"))
	if s.ref != "stdio-tbxark" || !slices.Equal(s.rounds, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("paired with %q over rounds %v; want stdio-tbxark over 1–10 (round 11's reference served nothing)", s.ref, s.rounds)
	}
	want := []float64{1.10, 1.05, 1.08, 1.02, 1.12, 1.04, 1.06, 0.98, 1.09, 1.08}
	for i, w := range want {
		if d := s.rps[i] - w; d > 1e-9 || d < -1e-9 {
			t.Fatalf("req/s ratio of round %d = %v, want %v", i+1, s.rps[i], w)
		}
		if d := s.cpu[i] - 530.0/500; d > 1e-9 || d < -1e-9 {
			t.Fatalf("CPU ratio of round %d = %v, want 1.06 (proxy and child on both sides)", i+1, s.cpu[i])
		}
	}
	if got := pairedOf(rs, "modern", "stdio-mcpgw", "stdio-tbxark"); len(got.rounds) != 0 {
		t.Fatalf("a modern stdio row was paired over rounds %v; TBXark serves no modern caller", got.rounds)
	}
	if got := logSD([]float64{1, math.E}); math.Abs(got-math.Sqrt(0.5)) > 1e-12 {
		t.Fatalf("logSD(1, e) = %v, want √½", got)
	}
	if got := logSD([]float64{7}); got != 0 {
		t.Fatalf("logSD of one value = %v, want 0", got)
	}
	for target, want := range map[string]string{"mcpgw": "reverseproxy", "tbxark": "reverseproxy", "direct": "reverseproxy",
		"reverseproxy": "", "stdio-mcpgw-bare": "stdio-tbxark", "stdio-tbxark": ""} {
		if got := pairedRef(target); got != want {
			t.Errorf("pairedRef(%q) = %q, want %q", target, got, want)
		}
	}
}

func TestPeerReportPairedAndVerdicts(t *testing.T) {
	out := peerReport(peerFixture(t), "Run X")
	for _, want := range []string{
		// The stdio row: ten paired rounds; the Hodges–Lehmann estimate and the 9th of the 55
		// Walsh averages of the log ratios from each end (computed apart from this code).
		"| 2025-11-25 sessionful | stdio-mcpgw | stdio-tbxark | 10 | 1.10 1.05 1.08 1.02 1.12 1.04 1.06 0.98 1.09 1.08 | 1.07; 1.06 (1.03–1.09) | 1.06 1.06 1.06 1.06 1.06 1.06 1.06 1.06 1.06 1.06 | 1.06; 1.06 (1.06–1.06) |",
		// The sign test's interval of ten: the 2nd to the 9th of the sorted ratios.
		"- target 3, stdio, default configuration (stdio-mcpgw), 2025-11-25 caller: req/s ≥ 1.00× TBXark's: **shown** (median 1.07, estimate 1.06, 95 % CI 1.03–1.09 (coverage 0.951); the sign test's interval of the median, which assumes no symmetry: 1.02–1.10 (0.979), shown; 10 rounds)",
		"- target 3, stdio, default configuration (stdio-mcpgw), 2025-11-25 caller: proxy + child CPU per call ≤ 1.00× TBXark's (beside the target, not part of it): **shown missed** (median 1.06, estimate 1.06, 95 % CI 1.06–1.06 (coverage 0.951); the sign test's interval of the median, which assumes no symmetry: 1.06–1.06 (0.979), shown missed; 10 rounds)",
		"- target 1, 2026-07-28 stateless, mcpgw: req/s ≥ 1.15× ReverseProxy's: **not shown** (median 1.02, estimate 1.02, 95 % CI 0.90–1.20 (coverage 0.969); the sign test's interval of the median, which assumes no symmetry: 0.90–1.20 (0.969), not shown; 6 rounds)",
		"- target 1, 2026-07-28 stateless, mcpgw: proxy CPU per call ≤ 0.80× ReverseProxy's: **shown** (median 0.70, estimate 0.70, 95 % CI 0.70–0.70 (coverage 0.969); the sign test's interval of the median, which assumes no symmetry: 0.70–0.70 (0.969), shown; 6 rounds)",
		"- target 1, 2026-07-28 stateless, mcpgw-bare: req/s ≥ 1.15× ReverseProxy's: **undecided (too few rounds)** (median 1.00; 5 rounds)",
		"| 2026-07-28 stateless | mcpgw-bare | reverseproxy | 5 | 0.90 1.00 1.20 0.95 1.05 | 1.00; too few rounds |",
		// The side-by-side table leaves a run that served nothing out of its figures.
		"| 2025-11-25 sessionful | stdio-tbxark | 10 | 1450 | 1000–1900 | — | — | 1.00 | 500 (500–500) |",
		"Load average (1 min) as each run ended: 2.00–13.00, median 4.00.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks\n%s\nreport:\n%s", want, out)
		}
	}
	// TBXark's drift (10 % a round) is in each side's variation but not in the ratio's.
	if !strings.Contains(out, "| 0.21, 0.21, 0.04 |") {
		t.Errorf("the stdio row's variations are not target 0.21, reference 0.21, ratio 0.04:\n%s", out)
	}
	for _, absent := range []string{"| 2026-07-28 stateless | stdio-mcpgw | stdio-tbxark", "2025-11-25 sessionful, mcpgw:"} {
		if strings.Contains(out, absent) {
			t.Errorf("the report has %q, which the run did not measure:\n%s", absent, out)
		}
	}
}
