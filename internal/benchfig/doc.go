// Package benchfig holds the small figures the benchmarks and the overhead tests report
// beside their measurements: the machine's load average, medians, rounded series, and the
// statistics that decide a paired comparison (MedianCI, Decide).
//
// Design decisions:
//   - A comparison of two targets measured in the same rounds is decided on the per-round
//     ratios (target ÷ reference in the same round), not on the ratio of the two medians: on a
//     shared machine the load moves both members of a round together, and a ratio cancels what
//     they share.
//   - The interval for the median of those ratios is the sign test's (order statistics, exact
//     binomial coverage), not a bootstrap. With the 5–10 rounds a benchmark affords, a
//     percentile bootstrap of the median undercovers: simulated with ten log-normal ratios
//     (σ = 0.15, 3,000 samples), its 95 % interval held the median in 92.7–94.5 % of samples
//     for 6–20 rounds, the sign-test interval in 95.4–99.2 %. The sign test needs no shape
//     assumption (a t interval on log ratios would, and one round with a stalled process is
//     not normal); its price is that at least six rounds are needed at 95 %, and that the
//     interval moves in steps of whole rounds (with ten rounds, a ratio ≥ 1 is shown only if
//     nine of them are above 1).
//   - "Shown" means the whole two-sided 95 % interval is on the target's side of the
//     threshold, so a one-sided error rate of at most 2.5 %; "shown missed" is the mirror; in
//     between the run cannot tell, whatever its medians say.
package benchfig
