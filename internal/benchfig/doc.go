// Package benchfig holds the small figures the benchmarks and the overhead tests report
// beside their measurements: the machine's load average, medians, rounded series, and the
// statistics that decide a paired comparison (SignedRankCI, MedianCI, Decide).
//
// Design decisions:
//   - A comparison of two targets measured in the same rounds is decided on the per-round
//     ratios (target ÷ reference in the same round), not on the ratio of the two medians: on a
//     shared machine the load moves both members of a round together, and a ratio cancels what
//     they share.
//   - The interval that decides is the Wilcoxon signed-rank one (Hodges–Lehmann), on the
//     logarithms of the ratios; the sign test's interval of the median is reported beside it.
//     Both are exact and need no distribution shape; the signed-rank one assumes the log
//     ratios symmetric about their centre, and in return shows a real difference about twice
//     as often with the rounds a benchmark affords. Simulated (log-normal ratios, σ = 0.1 in
//     the logarithm, 4,000 samples): with a true ratio of 1.07, "≥ 1.0 shown" in 46 % of
//     10-round runs and 67 % of 16-round runs against the sign test's 25 % and 41 %; with a
//     true ratio of 1.0, wrongly shown in 2.9 % and 2.3 % (sign test 1.4 %, 0.9 %), at most the
//     2.5 % a two-sided 95 % interval allows on one side plus sampling error; with one round
//     in ten stalled (its ratio halved), wrongly shown in under 1 %.
//   - Rejected: a percentile bootstrap of the median over rounds (what TestControlPlaneCost
//     uses). With 6–20 rounds (log-normal, σ = 0.15, 3,000 samples) its 95 % interval held the
//     true median in only 92.7–94.5 % of the samples (the sign test's in 95.4–99.2 %), and
//     its steps are as coarse as the sign test's. A t interval on the log ratios: one stalled round is not normal, and it
//     would move the interval as much as every other round together.
//   - Both intervals need at least six rounds at 95 % (all of five values on one side of their
//     centre happens with probability 2/32).
//   - "Shown" means the whole two-sided 95 % interval is on the target's side of the
//     threshold, so a one-sided error rate of at most 2.5 %; "shown missed" is the mirror; in
//     between the run cannot tell, whatever its medians say.
package benchfig
