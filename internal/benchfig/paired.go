package benchfig

import (
	"math"
	"slices"
)

// MedianCI is a distribution-free confidence interval for the median of v at confidence at
// least conf (0.95 for 95 %): the order statistics v₍k₎ and v₍n+1−k₎ of the sorted values, with
// k the largest such that P(B ≤ k−1) ≤ (1−conf)/2 for B ~ Binomial(n, ½). It is the interval
// a two-sided sign test inverts, and assumes only that the values are independent draws sharing
// one median (rounds of a benchmark, not their distribution's shape). coverage is the
// interval's exact coverage, 1 − 2·P(B ≤ k−1), which is at least conf. ok is false when v has
// too few values for any such interval (fewer than 6 at 95 %: all of five values on one side
// of the median happens with probability 2/32). v is left as it was.
func MedianCI(v []float64, conf float64) (lo, hi, coverage float64, ok bool) {
	n := len(v)
	alpha := (1 - conf) / 2
	k, tail := 0, 0.0 // k values cut from each end; tail = P(B ≤ k−1)
	for j := 0; j < n; j++ {
		next := tail + binomHalf(n, j)
		if next > alpha {
			break
		}
		k, tail = j+1, next
	}
	if k == 0 || k > n-k+1 {
		return 0, 0, 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[k-1], s[n-k], 1 - 2*tail, true
}

// binomHalf is P(B = j) for B ~ Binomial(n, ½), computed in logarithms so that a large n
// does not overflow.
func binomHalf(n, j int) float64 {
	ln := func(m int) float64 { v, _ := math.Lgamma(float64(m + 1)); return v }
	return math.Exp(ln(n) - ln(j) - ln(n-j) - float64(n)*math.Ln2)
}

// Verdict is what a confidence interval says about a target of the form ratio ≥ threshold
// (or ≤).
type Verdict int

// The verdicts of Decide.
const (
	// Undecided: too few rounds for an interval at the confidence asked.
	Undecided Verdict = iota
	// NotShown: the interval holds the threshold, so the run cannot tell.
	NotShown
	// Shown: the whole interval is on the target's side of the threshold.
	Shown
	// ShownMissed: the whole interval is on the wrong side of the threshold.
	ShownMissed
)

// String is the verdict as a report prints it.
func (v Verdict) String() string {
	switch v {
	case NotShown:
		return "not shown"
	case Shown:
		return "shown"
	case ShownMissed:
		return "shown missed"
	}
	return "undecided (too few rounds)"
}

// Decide is the verdict of the interval [lo, hi] (ok as MedianCI returned it) on the target
// ratio ≥ threshold when atLeast (a throughput), ratio ≤ threshold otherwise (a cost). An
// interval that touches the threshold from the target's side shows it.
func Decide(lo, hi float64, ok bool, threshold float64, atLeast bool) Verdict {
	switch {
	case !ok:
		return Undecided
	case atLeast && lo >= threshold, !atLeast && hi <= threshold:
		return Shown
	case atLeast && hi < threshold, !atLeast && lo > threshold:
		return ShownMissed
	}
	return NotShown
}

// SignedRankCI is the Hodges–Lehmann estimate of v's centre and its confidence interval at
// confidence at least conf, from the Wilcoxon signed-rank test: of the n(n+1)/2 Walsh
// averages (vᵢ+vⱼ)/2, i ≤ j, centre is the median and lo and hi the kth from each end, with k
// the largest such that P(T ≤ k−1) ≤ (1−conf)/2 for the signed-rank statistic T of n values
// under the null. It assumes the values are independent and symmetric about their centre
// (take logarithms of ratios), and in return needs fewer rounds than MedianCI to exclude a
// threshold. coverage is the interval's exact coverage; ok is false below 6 values at 95 %.
// v is left as it was.
func SignedRankCI(v []float64, conf float64) (centre, lo, hi, coverage float64, ok bool) {
	n := len(v)
	nw := n * (n + 1) / 2
	// ways[t]: subsets of the ranks 1…n summing to t, each sign pattern equally likely under the null.
	ways := make([]float64, nw+1)
	ways[0] = 1
	for r := 1; r <= n; r++ {
		for t := nw; t >= r; t-- {
			ways[t] += ways[t-r]
		}
	}
	all := math.Pow(2, float64(n))
	alpha := (1 - conf) / 2
	k, tail := 0, 0.0
	for t := 0; t < nw; t++ {
		next := tail + ways[t]/all
		if next > alpha {
			break
		}
		k, tail = t+1, next
	}
	if k == 0 || k > nw-k+1 {
		return 0, 0, 0, 0, false
	}
	w := make([]float64, 0, nw)
	for i := range v {
		for j := i; j < n; j++ {
			w = append(w, (v[i]+v[j])/2)
		}
	}
	slices.Sort(w)
	return Median(w), w[k-1], w[nw-k], 1 - 2*tail, true
}
